"""A real cluster's layout: its nodes, their addresses and ports, the RocketMQ properties each one starts with.

Kept in ``<dir>/real.json``. The nodes: the nameserver ``ns``, the controllers ``c0`` (``c0 c1 c2`` for a group of
three), the brokers ``b1 .. bN`` of one broker set. Each runs in its own network namespace (``netns.py``) and
listens on its own address with RocketMQ's usual ports; it *advertises* its front address, where the run's proxy
listens for it, so that every connection between two nodes, and from the clients, passes the proxy.

The RocketMQ properties come from the kit's configuration (a profile, a ``--config`` file: the ``[controller]``,
``[broker]`` and ``[store]`` sections are RocketMQ settings under their Java names, ``docs/configuration.md``) over
``LOCAL_TIMING`` (the shortened periods ``rmqha cluster`` uses, so the two runtimes and the simulator compare on
the same timings). A kit setting that RocketMQ does not have (the kit's own knobs for the simulator, e.g.
``dledgerCommitLatencyMs``) is listed in ``kit_only`` and not passed on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cluster.spec import LOCAL_TIMING
from ..impl.sim.config import PROFILES, Config, ConfigError, config_from_dict
from .netns import Host
from .points import POINTS

SPEC_FILE = "real.json"
RUN_FILE = "running"  # present while the cluster is up; the supervisor ends the cluster once it is gone

NS_PORT = 9876
CTL_PORT = 9878  # the controller's remoting port (JRaft); a DLedger controller serves on its DLedger port
RAFT_PORT = 9880  # DLedger / JRaft peer port
BROKER_PORT = 10911
BROKER_FAST_PORT = 10909  # BrokerController's fast remoting server: listenPort - 2
HA_PORT = 10912

# Settings of the kit's RocketMQ sections that RocketMQ 5.x does not have (the simulator's own knobs).
KIT_ONLY = {"dledgerAppendWaitTimeoutMs", "dledgerCommitLatencyMs", "controllerRpcTimeoutMillis", "reputIntervalMs"}
# Java names whose property differs from the kit's spelling.
JAVA_PROPERTY = {"isProcessReadEvent": "processReadEvent"}
# JraftConfig fields (MixAll.properties2Object fills the JraftConfig from the same file).
JRAFT_FIELDS = {"jRaftScanWaitTimeoutMs"}

# Profiles a real cluster can take: those without simulator-only sections.
REAL_PROFILES = ("safe", "defaults", "unclean", "jraft")

# What a real run adds to RocketMQ's defaults, besides the timings: small files, explicit topics.
REAL_DEFAULTS: dict[str, dict[str, Any]] = {
    "store": {"mappedFileSizeCommitLog": 16 * 1024 * 1024},
}

JVM_OPTS = ("-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:-OmitStackTraceInFastThrow", "-Djava.net.preferIPv4Stack=true",
            "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/java.nio=ALL-UNNAMED",
            "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED")
MAIN_CLASS = {"ns": "org.apache.rocketmq.namesrv.NamesrvStartup",
              "controller": "org.apache.rocketmq.controller.ControllerStartup",
              "broker": "org.apache.rocketmq.broker.BrokerStartup"}


def run_id(folder: Path) -> str:
    """Six hex digits naming the run's namespaces: from the folder, so one folder is one run."""
    return hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:6]


def real_config(profile: str | None, user: dict[str, Any]) -> Config:
    """The kit's config of a real run: LOCAL_TIMING and REAL_DEFAULTS under the profile under the user's file."""
    if profile is not None and profile not in REAL_PROFILES:
        raise ConfigError(f"--profile {profile!r}: a real cluster takes {', '.join(REAL_PROFILES)} "
                          "(the others change simulator-only settings)")
    for sec in ("faults", "sim", "network"):
        if user.get(sec):
            raise ConfigError(f"[{sec}] is simulator-only: a real cluster takes its faults from the harness")
    # a profile's fault weights are the simulator's schedule: a real run takes its faults from the harness
    profile_cfg = {k: v for k, v in PROFILES.get(profile or "safe", {}).items() if k != "faults"}
    merged: dict[str, dict[str, Any]] = {}
    for layer in (LOCAL_TIMING, REAL_DEFAULTS, profile_cfg, user):
        for sec, vals in layer.items():
            if isinstance(vals, dict):
                merged.setdefault(sec, {}).update(vals)
    cfg = config_from_dict(merged)
    if cfg.cluster.mode != "controller":
        raise ConfigError("rmqha real runs controller mode only ([cluster] mode = 'controller')")
    if cfg.cluster.controllers not in (1, 3):
        raise ConfigError(f"[cluster] controllers = {cfg.cluster.controllers}: a real group has 1 or 3 controllers")
    if not 1 <= cfg.cluster.brokers <= 5:
        raise ConfigError(f"[cluster] brokers = {cfg.cluster.brokers}: a real broker set has 1 to 5 brokers")
    return cfg


def _java_settings(section: Any) -> dict[str, Any]:
    """A config section's RocketMQ settings as properties (Java names, Java spelling of booleans)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(section):
        name = f.metadata.get("java")
        if not name or name in KIT_ONLY:
            continue
        out[JAVA_PROPERTY.get(name, name)] = getattr(section, f.name)
    return out


def _prop(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class RealSpec:
    dir: Path
    run: str
    version: str
    controller_type: str  # "DLedger" | "jRaft"
    controllers: list[str]
    brokers: list[str]
    config: dict[str, Any]  # the kit config, file-style and complete (Config.to_dict)
    profile: str
    lifetime_s: int
    created_ms: int
    nameserver: str = "ns"
    kit_only: list[str] = field(default_factory=list)
    # the kit's Java agent, when the run asked for it (``agent.py``): {"jar", "agentVersion", "fixes",
    # "fixesAbsent", "maxPauseMs"}; None: every JVM starts exactly as without the agent
    agent: dict[str, Any] | None = None

    # ------------------------------------------------------------------ topology
    @property
    def nodes(self) -> list[str]:
        return [self.nameserver, *self.controllers, *self.brokers]

    @property
    def cfg(self) -> Config:
        return config_from_dict(self.config)

    def host(self, node: str) -> Host:
        if node == self.nameserver:
            return Host(node, 0)
        if node in self.controllers:
            return Host(node, 1 + self.controllers.index(node))
        if node in self.brokers:
            return Host(node, 11 + self.brokers.index(node))
        raise KeyError(node)

    def hosts(self) -> list[Host]:
        return [self.host(n) for n in self.nodes]

    def kind(self, node: str) -> str:
        if node == self.nameserver:
            return "ns"
        return "controller" if node in self.controllers else "broker"

    def ports(self, node: str) -> dict[str, int]:
        """The node's listeners by route kind ("remoting", "ha", "raft")."""
        k = self.kind(node)
        if k == "ns":
            return {"remoting": NS_PORT}
        if k == "controller":
            if self.controller_type == "jRaft":
                return {"remoting": CTL_PORT, "raft": RAFT_PORT}
            return {"remoting": RAFT_PORT}  # DLedger: one port serves the peers and the brokers
        return {"remoting": BROKER_PORT, "fast": BROKER_FAST_PORT, "ha": HA_PORT}

    def main_port(self, node: str) -> int:
        return self.ports(node)["remoting"]

    def front_addr(self, node: str) -> str:
        """``ip:port`` where a client reaches ``node`` (through the proxy)."""
        return f"{self.host(node).front}:{self.main_port(node)}"

    @property
    def namesrv_addr(self) -> str:
        return self.front_addr(self.nameserver)

    @property
    def controller_addrs(self) -> str:
        return ";".join(self.front_addr(c) for c in self.controllers)

    def node_of_addr(self, addr: str) -> str | None:
        """The node an advertised ``ip:port`` (or ``ip``) belongs to."""
        ip = addr.rsplit(":", 1)[0] if ":" in addr else addr
        for n in self.nodes:
            h = self.host(n)
            if ip in (h.front, h.addr):
                return n
        return None

    # ------------------------------------------------------------------ files
    def node_dir(self, node: str) -> Path:
        return self.dir / "nodes" / node

    def store_dir(self, node: str) -> Path:
        return self.node_dir(node) / "store"

    def out_path(self, node: str) -> Path:
        """The JVM's stdout and stderr."""
        return self.dir / "logs" / f"{node}.out"

    def rocketmq_log_dir(self, node: str) -> Path:
        """Where RocketMQ's own logback files go (``${user.home}/logs/rocketmqlogs``)."""
        return self.node_dir(node) / "home" / "logs" / "rocketmqlogs"

    def properties_path(self, node: str) -> Path:
        return self.node_dir(node) / f"{node}.properties"

    @property
    def control_sock(self) -> Path:
        return self.dir / "supervisor.sock"

    @property
    def proxy_sock(self) -> Path:
        return self.dir / "proxy.sock"

    def agent_sock(self, node: str) -> Path:
        """The node's agent control socket (a path: it reaches the JVM in its namespace)."""
        return self.dir / "agent" / f"{node}.sock"

    def agent_config_path(self, node: str) -> Path:
        return self.dir / "agent" / f"{node}.json"

    @property
    def agent_events(self) -> Path:
        return self.dir / "events" / "agent.jsonl"

    def write_agent_config(self, node: str, arms: list[dict[str, Any]] | None = None) -> Path:
        """The node's agent config (``Agent.premain`` reads it at each start): the catalogue, the fixes, and
        ``arms`` to set before RocketMQ's classes load (a point of the start-up, e.g. recovery)."""
        assert self.agent is not None
        path = self.agent_config_path(node)
        path.parent.mkdir(parents=True, exist_ok=True)
        cfg = {"node": node, "kind": self.kind(node), "socket": str(self.agent_sock(node)),
               "events": str(self.agent_events), "version": self.version,
               "agentVersion": self.agent["agentVersion"], "maxPauseMs": self.agent["maxPauseMs"],
               "fixes": list(self.agent["fixes"]), "points": [p.to_json() for p in POINTS], "arms": arms or [],
               "compat": bool(self.agent.get("compat"))}
        path.write_text(json.dumps(cfg, indent=1), encoding="utf-8")
        return path

    # ------------------------------------------------------------------ properties
    def properties(self, node: str) -> dict[str, str]:
        cfg = self.cfg
        h = self.host(node)
        k = self.kind(node)
        props: dict[str, Any]
        if k == "ns":
            props = {"listenPort": NS_PORT, "bindAddress": h.addr}
        elif k == "controller":
            props = _java_settings(cfg.controller)
            props.pop("controllerType", None)
            props.update(controllerStorePath=str(self.store_dir(node)), bindAddress=h.addr)
            jraft = {n: props.pop(n) for n in list(props) if n in JRAFT_FIELDS}
            if self.controller_type == "jRaft":
                fronts = [self.host(c).front for c in self.controllers]
                props.update(controllerType="jRaft", listenPort=CTL_PORT, jRaftGroupId="rmqha",
                             jRaftServerId=f"{h.front}:{RAFT_PORT}",
                             jRaftInitConf=",".join(f"{f}:{RAFT_PORT}" for f in fronts),
                             jRaftControllerRPCAddr=",".join(f"{f}:{CTL_PORT}" for f in fronts), **jraft)
            else:
                peers = ";".join(f"{c}-{self.host(c).front}:{RAFT_PORT}" for c in self.controllers)
                props.update(controllerDLegerGroup="rmqha", controllerDLegerPeers=peers,
                             controllerDLegerSelfId=node)
        else:
            props = {**_java_settings(cfg.broker), **_java_settings(cfg.store)}
            props.pop("brokerRole", None)  # the controller gives the role; a broker starts as a slave
            props.pop("haMaxGapNotInSync", None)  # 4.x mode only
            store = self.store_dir(node)
            props.update(brokerId=-1, brokerRole="SLAVE", enableControllerMode=True,
                         controllerAddr=self.controller_addrs, namesrvAddr=self.namesrv_addr,
                         listenPort=BROKER_PORT, haListenPort=HA_PORT, bindAddress=h.addr,
                         brokerIP1=h.front, brokerIP2=h.front, storePathRootDir=str(store),
                         storePathCommitLog=str(store / "commitlog"), autoCreateTopicEnable=False,
                         autoCreateSubscriptionGroup=True, fetchNamesrvAddrByAddressServer=False)
        return {key: _prop(v) for key, v in props.items()}

    def write_properties(self, node: str) -> Path:
        path = self.properties_path(node)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"# {node}: written by rmqha real from the kit's config (rmqha/real/spec.py)"]
        lines += [f"{k}={v}" for k, v in sorted(self.properties(node).items())]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def java_argv(self, node: str, classpath: str) -> list[str]:
        d = self.node_dir(node)
        agent = [f"-javaagent:{self.agent['jar']}={self.agent_config_path(node)}"] if self.agent else []
        return ["java", *JVM_OPTS, *agent, f"-Drocketmq.home.dir={d}", f"-Duser.home={d / 'home'}",
                "-cp", classpath, MAIN_CLASS[self.kind(node)], "-c", str(self.properties_path(node))]

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "version": self.version, "controllerType": self.controller_type,
                "controllers": self.controllers, "brokers": self.brokers, "config": self.config,
                "profile": self.profile, "lifetimeS": self.lifetime_s, "createdMs": self.created_ms,
                "kitOnly": self.kit_only, "agent": self.agent}

    def save(self) -> None:
        tmp = self.dir / (SPEC_FILE + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(self.dir / SPEC_FILE)


UNIX_PATH_MAX = 107  # sun_path's 108 bytes, less the terminating NUL


def create(folder: Path, cfg: Config, *, version: str, profile: str, lifetime_s: int,
           agent: dict[str, Any] | None = None) -> RealSpec:
    folder = folder.resolve()
    n_ctl = cfg.cluster.controllers
    ctype = "jRaft" if cfg.controller.controller_type.lower() == "jraft" else "DLedger"
    kit_only = sorted(n for sec in (cfg.controller, cfg.broker, cfg.store) for f in dataclasses.fields(sec)
                      if (n := f.metadata.get("java")) in KIT_ONLY and getattr(sec, f.name) != f.default)
    spec = RealSpec(folder, run_id(folder), version, ctype, [f"c{i}" for i in range(n_ctl)],
                    [f"b{i + 1}" for i in range(cfg.cluster.brokers)], cfg.to_dict(), profile, lifetime_s,
                    int(time.time() * 1000), kit_only=kit_only, agent=agent)
    for sub in ("nodes", "logs"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for n in spec.nodes:
        spec.write_properties(n)
        if agent is not None:
            sock = spec.agent_sock(n)
            if len(str(sock).encode()) > UNIX_PATH_MAX:
                raise ConfigError(f"the run folder {folder} is too long a path for the agent's socket {sock} "
                                  f"(at most {UNIX_PATH_MAX} bytes): choose a shorter --dir")
            spec.write_agent_config(n)
    spec.save()
    return spec


def load(folder: Path) -> RealSpec:
    path = folder / SPEC_FILE
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        return RealSpec(folder.resolve(), str(d["run"]), str(d["version"]), str(d["controllerType"]),
                        list(d["controllers"]), list(d["brokers"]), dict(d["config"]), str(d["profile"]),
                        int(d["lifetimeS"]), int(d["createdMs"]), kit_only=list(d.get("kitOnly", [])),
                        agent=dict(d["agent"]) if d.get("agent") else None)
    except FileNotFoundError:
        raise ConfigError(f"no real cluster in {folder} (run `rmqha real up --dir {folder}` first)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a real cluster description ({exc})") from None
