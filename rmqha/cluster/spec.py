"""A local cluster's layout: its nodes, ports, folders and settings, kept in ``<dir>/cluster.json``.

Every node has an RPC listener and every broker an HA listener. Each listener has two ports: the node binds the
*inner* one; the loopback proxy (``proxy.py``) binds the *outer* one, which is what every peer dials, so that a
partition can cut a link in one direction or both. Everything binds 127.0.0.1 only.

``LOCAL_TIMING`` shortens RocketMQ's periods and timeouts (seconds, not tens of seconds) so that a failover
shows within a short test; a setting given in the user's config wins over it.
"""

from __future__ import annotations

import json
import random
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..impl.sim.children import process_start, same_process
from ..impl.sim.config import Config, ConfigError, config_from_dict

HOST = "127.0.0.1"
SPEC_FILE = "cluster.json"
RUN_FILE = "running"  # present while the cluster is up; every process of the cluster exits once it is gone
# RUN_FILE holds {"owner": pid, "ownerStart": ticks} while a kit process owns the cluster (``up`` while it starts
# it, ``test`` for the whole run): every process of the cluster exits once that owner is gone, SIGKILL included
CLIENTS = ("p1", "c1")

LOCAL_TIMING: dict[str, dict[str, Any]] = {
    "controller": {"scanNotActiveBrokerInterval": 1000, "scanInactiveMasterInterval": 1000},
    "broker": {"controllerHeartBeatTimeoutMills": 3000, "brokerHeartbeatInterval": 500,
               "syncBrokerMetadataPeriod": 1000, "checkSyncStateSetPeriod": 1000,
               "syncControllerMetadataPeriod": 2000, "registerNameServerPeriod": 2000},
    "store": {"haMaxTimeSlaveNotCatchup": 3000, "haSendHeartbeatInterval": 1000, "haHousekeepingInterval": 5000},
    "workload": {"route_refresh": 1000, "produce_interval": 100, "consume_interval": 300, "queues": 2},
}


def local_config(user: dict[str, Any]) -> Config:
    """``LOCAL_TIMING`` under the user's settings (file-style dict, a profile already applied)."""
    merged: dict[str, dict[str, Any]] = {sec: dict(vals) for sec, vals in LOCAL_TIMING.items()}
    for sec, vals in user.items():
        if isinstance(vals, dict):
            merged.setdefault(sec, {}).update(vals)
    cfg = config_from_dict(merged)
    if cfg.cluster.mode != "controller":
        raise ConfigError("rmqha cluster runs controller mode only ([cluster] mode = 'controller')")
    if cfg.sim.base_offset or cfg.sim.file_residue or cfg.sim.file_boundaries:
        raise ConfigError("rmqha cluster keeps real files: [sim] base_offset, file_residue and file_boundaries are "
                          "simulator-only")
    if cfg.sim.join_at or cfg.workload.produce_start:
        raise ConfigError("rmqha cluster starts every node and its workload at once: [sim] join_at and [workload] "
                          "produce_start are simulator-only")
    if cfg.faults.guards or cfg.faults.adversarial or cfg.sim.interleave:
        raise ConfigError("rmqha cluster plays its nemesis recipes on real processes: [faults] guards, adversarial "
                          "and [sim] interleave are simulator-only")
    return cfg


EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
LISTEN_SPAN = 12_000  # the ports below the ephemeral range the listeners are drawn from


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel gives outgoing connections (Linux ``ip_local_port_range``; its default elsewhere)."""
    try:
        lo, hi = (int(x) for x in EPHEMERAL.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return lo, hi


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports for listeners, below the ephemeral range: a port taken from the ephemeral
    range (``bind(0)``) and released can be handed to any outgoing connection on the machine before the listener
    binds it (seen: a proxy's ``address already in use`` while two other clusters ran), one outside it only to
    another listener. Each is checked by binding it; all are held until the last is found, then released. Where the
    ephemeral range leaves no room below it, the kernel's ``bind(0)``."""
    lo, _hi = ephemeral_range()
    start = max(1024, lo - LISTEN_SPAN)
    span = lo - start
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        if span >= 4 * n:
            first = random.SystemRandom().randrange(span)  # concurrent runs start at different places
            for k in range(span):
                if len(ports) == n:
                    break
                port = start + (first + k) % span
                s = socket.socket()
                try:
                    s.bind((HOST, port))
                except OSError:
                    s.close()
                    continue
                socks.append(s)
                ports.append(port)
        while len(ports) < n:
            s = socket.socket()
            s.bind((HOST, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


@dataclass
class ClusterSpec:
    dir: Path
    config: dict[str, Any]  # file-style, complete (Config.to_dict)
    seed: int
    bugs: list[str]
    nodes: list[str]
    controllers: list[str]
    brokers: list[str]
    nameserver: str
    ports: dict[str, dict[str, int]]  # node -> rpc / rpc_in / ha / ha_in
    proxy_port: int
    clock_base: float  # time.monotonic() at creation: every node's clock counts ms from it (one shared origin)
    max_lifetime: int  # seconds: every process of the cluster exits by itself after this long

    @property
    def cfg(self) -> Config:
        return config_from_dict(self.config)

    def node_dir(self, node: str) -> Path:
        return self.dir / "nodes" / node

    def trace_path(self, node: str) -> Path:
        return self.dir / "traces" / f"{node}.jsonl"

    def log_path(self, node: str) -> Path:
        return self.dir / "logs" / f"{node}.log"

    def to_json(self) -> dict[str, Any]:
        return {"config": self.config, "seed": self.seed, "bugs": self.bugs, "nodes": self.nodes,
                "controllers": self.controllers, "brokers": self.brokers, "nameserver": self.nameserver,
                "ports": self.ports, "proxyPort": self.proxy_port, "clockBase": self.clock_base,
                "maxLifetime": self.max_lifetime}

    def save(self) -> None:
        tmp = self.dir / (SPEC_FILE + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1), encoding="utf-8")
        tmp.replace(self.dir / SPEC_FILE)


def create(folder: Path, cfg: Config, *, seed: int = 1, bugs: frozenset[str] = frozenset(),
           max_lifetime: int = 3600) -> ClusterSpec:
    n_ctl = cfg.cluster.controllers
    controllers = ["ctl"] if n_ctl == 1 else [f"ctl{i + 1}" for i in range(n_ctl)]
    brokers = [f"b{i + 1}" for i in range(cfg.cluster.brokers)]
    nodes = ["ns", *controllers, *brokers, *CLIENTS]
    need = 2 * len(nodes) + 2 * len(brokers) + 1
    it = iter(free_ports(need))
    ports: dict[str, dict[str, int]] = {}
    for n in nodes:
        ports[n] = {"rpc": next(it), "rpc_in": next(it)}
        if n in brokers:
            ports[n].update(ha=next(it), ha_in=next(it))
    spec = ClusterSpec(folder.resolve(), cfg.to_dict(), seed, sorted(bugs), nodes, controllers, brokers, "ns", ports,
                       next(it), time.monotonic(), max_lifetime)
    for sub in ("nodes", "traces", "logs"):
        (spec.dir / sub).mkdir(parents=True, exist_ok=True)
    spec.save()
    return spec


def load(folder: Path) -> ClusterSpec:
    path = folder / SPEC_FILE
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        return ClusterSpec(folder.resolve(), d["config"], int(d["seed"]), list(d["bugs"]), list(d["nodes"]),
                           list(d["controllers"]), list(d["brokers"]), d["nameserver"],
                           {k: dict(v) for k, v in d["ports"].items()}, int(d["proxyPort"]), float(d["clockBase"]),
                           int(d["maxLifetime"]))
    except FileNotFoundError:
        raise ConfigError(f"no cluster in {folder} (run `rmqha cluster up --dir {folder}` first)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a cluster description ({exc})") from None


def write_run_file(folder: Path, owner: int | None) -> None:
    """Mark the cluster in ``folder`` as running, owned by process ``owner`` (None: by nobody, it lives on its own
    until ``rmqha cluster down`` or its lifetime)."""
    start = None if owner is None else process_start(owner)
    data = {} if owner is None or start is None else {"owner": owner, "ownerStart": start}
    tmp = folder / (RUN_FILE + ".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(folder / RUN_FILE)


def run_owner(folder: Path) -> tuple[int, int] | None:
    """The process that owns the cluster in ``folder`` (pid, start ticks), if one does."""
    try:
        data = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
        return (int(data["owner"]), int(data["ownerStart"])) if isinstance(data, dict) and data else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def why_stop(folder: Path) -> str | None:
    """Why a process of the cluster in ``folder`` must exit now (the run file is gone, or its owner is), or None."""
    if not (folder / RUN_FILE).exists():
        return "cluster down"
    owner = run_owner(folder)
    if owner is not None and not same_process(*owner):
        return f"its owner (pid {owner[0]}) is gone"
    return None
