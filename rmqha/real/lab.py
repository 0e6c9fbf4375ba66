"""A live real cluster to drive step by step: what a reproduction (``repro.py``) scripts a finding's mechanism with.

``with Lab(folder, cfg, version) as lab:`` brings the cluster up (owned by this process: it ends with the block,
however the block ends), starts the observer, and offers the harness's means as plain calls:

* what the cluster looks like: ``snap()`` (the latest admin snapshot), ``wait(pred, timeout, what)``, ``master()``,
  ``leader()``, ``ids()`` (broker id -> node);
* processes: ``kill``, ``stop`` (SIGTERM: a clean shutdown), ``pause``, ``resume``, ``restart``, ``start``;
* network: ``partition`` / ``heal`` (the proxy), ``proxy_fault`` (drop or delay one request code's request or
  response, cut an HA stream after N bytes), ``hold_conn`` (hold a node's open connections, their close included,
  past its process's death; ``lift`` releases them), ``netem`` / ``netem_clear`` (``tc`` on a node's link);
* clients: ``create_topic``, ``produce`` (N sends, synchronous), ``start_producer`` / ``stop_producer``,
  ``consume`` (pull every queue from 0 for a while), ``admin`` (electMaster, cleanBrokerData, ...);
* after or during the run: ``files()`` (every node's files, each broker's log up to its logical end),
  ``broker_log(node, pattern)`` (RocketMQ's own log lines), ``epochs(node)`` (the broker's epoch cache);
* the kit's agent (``Lab(..., agent=AgentOptions(...))``; ``agent.py``, ``points.py``): ``arm`` (a point of a
  node: crash, delay, pause, throw; the Nth hit, conditions on its arguments), ``release``, ``disarm``,
  ``arm_at_start`` (for the node's next start: a point of the start-up), ``agent_events`` (its lines);
* evidence: ``note(text)`` records a line of what happened, with the time, for the reproduction's report.

Every action is a line of ``events/faults.jsonl`` (``nemesis.Nemesis`` records it), so a reproduction leaves the
same outputs as ``rmqha real test``.
"""

from __future__ import annotations

import datetime
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..impl.sim.config import Config
from . import agent as A
from . import control as C
from .check import Files, read_files
from .clients import Client, Observer, Tail
from .nemesis import Nemesis, NemesisError
from .observe import Snapshot, observe_args, run_tool
from .points import ArmError, arm_request
from .spec import RealSpec

LOG_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
LOG_TZ = datetime.timezone(datetime.timedelta(hours=8))  # RocketMQ's logback patterns: %d{yyy-MM-dd HH:mm:ss,GMT+8}


def log_ms(line: str) -> int | None:
    """A RocketMQ log line's time in ms since the epoch (to the second: the pattern has no milliseconds)."""
    m = LOG_TIME.match(line)
    if m is None:
        return None
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=LOG_TZ)
    return int(t.timestamp() * 1000)


class LabError(RuntimeError):
    """The cluster did not do what a step waited for; one line naming the step."""


class Lab:
    def __init__(self, folder: Path, cfg: Config, version: str, *, profile: str = "safe",
                 say: Callable[[str], None] = lambda s: None, lifetime_s: int = 1800,
                 agent: A.AgentOptions | None = None) -> None:
        self.folder = folder
        self.cfg = cfg
        self.version = version
        self.profile = profile
        self.say = say
        self.lifetime_s = lifetime_s
        self.agent = agent
        self.notes: list[dict[str, Any]] = []
        self.clients: list[Client] = []
        self.producer: Client | None = None
        self._spec: RealSpec | None = None
        self._obs: Observer | None = None
        self._nem: Nemesis | None = None

    # ------------------------------------------------------------------------------------------ life
    def __enter__(self) -> Lab:
        self._spec = C.up(self.folder, self.cfg, version=self.version, profile=self.profile,
                          lifetime_s=self.lifetime_s, fresh=True, owner=None, say=self.say, agent=self.agent)
        obs_client = Client(self.spec, "observe", observe_args(self.spec, once=False, interval_ms=500))
        self.clients.append(obs_client)
        self._obs = Observer(self.spec, obs_client)
        self._nem = Nemesis(self.spec, self._obs, 0.0, self.say)
        return self

    def __exit__(self, *exc: object) -> None:
        for c in self.clients:
            if c.running():
                c.stop(3.0)
        if self._nem is not None:
            self._nem.close()
        if self._spec is not None:
            C.down(self._spec.dir)

    @property
    def spec(self) -> RealSpec:
        assert self._spec is not None, "the lab is not up"
        return self._spec

    @property
    def obs(self) -> Observer:
        assert self._obs is not None
        return self._obs

    @property
    def nem(self) -> Nemesis:
        assert self._nem is not None
        return self._nem

    def now(self) -> int:
        """ms since the run was created (the trace's clock)."""
        return int(time.time() * 1000) - self.spec.created_ms

    def note(self, text: str, **data: Any) -> None:
        self.notes.append({"t": self.now(), "text": text, **data})
        self.say(f"{self.now() / 1000:7.1f}s  {text}")

    # ------------------------------------------------------------------------------------------ looking
    def snap(self) -> Snapshot:
        s = self.obs.poll()
        if s is None:
            s = self.wait(lambda _s: True, 30, "a first admin snapshot")
        return s

    def fresh(self, timeout: float = 30, answered: list[str] | tuple[str, ...] = ()) -> Snapshot:
        """What the cluster looks like *now*: the second snapshot whose answers all came after this call (the
        first may hold answers to calls made before it); with ``answered``, one where each of those brokers
        answered (under load an admin call can fail, and a failed broker reads as empty)."""
        t = int(time.time() * 1000)
        seen: list[Snapshot] = []

        def second(s: Snapshot) -> bool:
            if s.t0 >= t and s not in seen and all(s.brokers.get(b) is not None and s.brokers[b].ok
                                                   for b in answered):
                seen.append(s)
            return len(seen) >= 2

        return self.wait(second, timeout, "an admin snapshot taken after this step")

    def wait(self, pred: Callable[[Snapshot], bool], timeout: float, what: str) -> Snapshot:
        s = self.obs.wait(pred, timeout)
        if s is None:
            raise LabError(f"waited {timeout:.0f} s for {what}")
        return s

    def try_wait(self, pred: Callable[[Snapshot], bool], timeout: float) -> Snapshot | None:
        return self.obs.wait(pred, timeout)

    def master(self) -> str | None:
        return self.snap().master

    def leader(self) -> str | None:
        lead = self.snap().leader
        return lead.node if lead else None

    def whole(self, timeout: float = 120) -> Snapshot:
        """Wait for a master whose SyncStateSet holds every broker."""
        n = len(self.spec.brokers)
        return self.wait(lambda s: s.leader is not None and s.leader.master is not None and len(s.leader.sss) == n,
                         timeout, "a master with the whole SyncStateSet")

    def ids(self) -> dict[int, str]:
        lead = self.snap().leader
        return dict(lead.ids) if lead else {}

    def sss_nodes(self, s: Snapshot | None = None) -> list[str]:
        lead = (s or self.snap()).leader
        return [lead.ids.get(i, str(i)) for i in lead.sss] if lead else []

    def epochs(self, node: str) -> list[tuple[int, int, int]]:
        b = self.snap().brokers.get(node)
        return list(b.epochs) if b else []

    # ------------------------------------------------------------------------------------------ processes
    def kill(self, node: str, why: str = "") -> None:
        self.nem.kill(node, why)

    def stop(self, node: str, timeout: float = 30) -> None:
        """SIGTERM: RocketMQ's shutdown hook runs (a clean stop: the abort file is removed)."""
        self.nem.act("stop", node=node)
        C.supervise(self.spec, {"op": "signal", "node": node, "signal": "TERM"})
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st = C.supervise(self.spec, {"op": "status"})["nodes"].get(node, {})
            if st.get("state") == "exited":
                return
            time.sleep(0.3)
        raise LabError(f"{node} did not stop within {timeout:.0f} s of SIGTERM")

    def pause(self, node: str) -> None:
        self.nem.pause(node)

    def resume(self, node: str) -> None:
        self.nem.resume(node)

    def restart(self, node: str, wait: bool = True) -> None:
        self.nem.act("restart", node=node)
        C.supervise(self.spec, {"op": "start", "node": node, "wait": wait}, timeout=C.UP_TIMEOUT_S)
        self.nem.dead.discard(node)

    # ------------------------------------------------------------------------------------------ network
    def partition(self, a: list[str], b: list[str], one_way: bool = False) -> str:
        if not one_way:
            return self.nem.partition(a, b)
        self.nem._n += 1
        pid = f"p{self.nem._n}"
        links = [[x, y] for x in a for y in b]
        self.nem.act("partition", id=pid, links=links)
        C.request(self.spec.proxy_sock, {"op": "partition", "id": pid, "links": links}, timeout=10)
        self.nem.partitions.add(pid)
        return pid

    def heal(self, pid: str | None = None) -> None:
        self.nem.heal(pid)

    def proxy_fault(self, op: str, **spec: Any) -> str:
        """A proxy fault (``drop-response``, ``delay-response``, ``drop-request``, ``delay-request``,
        ``cut-stream``, ``delay``); returns its id. See ``rmqha/real/proxy.py``."""
        self.nem._n += 1
        fid = spec.pop("id", None) or f"f{self.nem._n}"
        self.nem.act(op, id=fid, **{k: v for k, v in spec.items() if v is not None})
        ans = C.request(self.spec.proxy_sock, {"op": op, "id": fid, **spec}, timeout=10)
        if not ans.get("ok", True):
            raise LabError(f"proxy {op}: {ans.get('error')}")
        return fid

    def hold_conn(self, src: str, dst: str, code: str | None = None, ext: dict[str, str] | None = None,
                  route: str | None = None) -> tuple[str, list[int]]:
        """Hold the connections open now from ``src`` to ``dst`` (the proxy's ``hold-conn``): from their first
        request of ``code`` on (or from now, without one), what they carry that way and their close wait, whatever
        becomes of ``src``'s process, while later connections pass; ``lift`` releases the bytes, then the close.
        Returns the fault's id and the connections it holds (``LabError``: none open)."""
        self.nem._n += 1
        fid = f"f{self.nem._n}"
        req: dict[str, Any] = {"op": "hold-conn", "id": fid, "from": src, "to": dst, "code": code, "route": route}
        if ext:
            req["ext"] = ext
        self.nem.act("hold-conn", **{k: v for k, v in req.items() if k != "op" and v is not None})
        ans = C.request(self.spec.proxy_sock, req, timeout=10)
        if not ans.get("ok", True):
            raise LabError(f"proxy hold-conn: {ans.get('error')}")
        return fid, list(ans.get("fault", {}).get("conns", []))

    def lift(self, fid: str) -> None:
        self.nem.act("lift", id=fid)
        C.request(self.spec.proxy_sock, {"op": "lift", "id": fid}, timeout=10)

    def netem(self, node: str, args: list[str]) -> None:
        self.nem.net(node, args)

    def netem_clear(self, node: str) -> None:
        self.nem.net_clear(node)

    # ------------------------------------------------------------------------------------------ clients
    def tool(self, *args: str, timeout: float = 120) -> list[dict[str, Any]]:
        return run_tool(self.spec, *args, timeout=timeout)

    def create_topic(self, topic: str, queues: int, on: list[str] | None = None) -> None:
        nodes = on or [b for b in [self.master(), *self.spec.brokers] if b is not None]
        nodes = list(dict.fromkeys(nodes))
        lines = self.tool("admin", "update-topic", "--addr", ",".join(self.spec.front_addr(b) for b in nodes),
                          "--topic", topic, "--queues", str(queues))
        if not any(d.get("k") == "admin" and d.get("ok") for d in lines):
            raise LabError(f"update-topic {topic} on {nodes}: "
                           f"{next((d.get('error') for d in lines if d.get('error')), 'no answer')}")
        self.note(f"topic {topic}: {queues} queues on {', '.join(nodes)}")

    def _produce_args(self, topic: str, prefix: str, interval_ms: int, size: int,
                      timeout_ms: int | None = None) -> list[str]:
        wl = self.spec.cfg.workload
        return ["produce", "--namesrv", self.spec.namesrv_addr, "--topic", topic, "--group", f"p_{prefix}",
                "--interval-ms", str(interval_ms), "--size", str(size), "--key-prefix", prefix,
                "--timeout-ms", str(timeout_ms or wl.send_timeout), "--route-refresh-ms", str(wl.route_refresh)]

    def produce(self, topic: str, count: int, prefix: str, interval_ms: int = 20, size: int = 256,
                timeout: float = 180, timeout_ms: int | None = None) -> list[dict[str, Any]]:
        """``count`` sends, one at a time; their results (the Java tool's ``send-result`` lines). ``timeout_ms``:
        each send's client timeout (default the workload's)."""
        lines = self.tool(*self._produce_args(topic, prefix, interval_ms, size, timeout_ms), "--count", str(count),
                          timeout=timeout)
        self._keep(f"produce-{prefix}", lines)
        res = [d for d in lines if d.get("k") == "send-result"]
        ok = sum(1 for d in res if d.get("status") == "SEND_OK")
        self.note(f"produced {len(res)} to {topic} ({ok} SEND_OK)", prefix=prefix)
        return res

    def _keep(self, name: str, lines: list[dict[str, Any]]) -> None:
        """A synchronous client's lines, kept beside the background clients' (``clients/NAME.jsonl``)."""
        d = self.spec.dir / "clients"
        d.mkdir(exist_ok=True)
        with open(d / f"{name}.jsonl", "a", encoding="utf-8") as f:
            for x in lines:
                f.write(json.dumps(x, sort_keys=True) + "\n")

    def stop_producer(self) -> list[dict[str, Any]]:
        """Stop the background producer; its send results."""
        if self.producer is None:
            return []
        self.producer.stop()
        path = self.producer.path
        self.producer = None
        return [d for d in Tail(path).read() if d.get("k") == "send-result"]

    def start_producer(self, topic: str, prefix: str, interval_ms: int = 50, size: int = 256,
                       timeout_ms: int | None = None) -> Client:
        """A producer in the background (``timeout_ms``: the client's send timeout, default the workload's)."""
        c = Client(self.spec, f"producer-{prefix}", self._produce_args(topic, prefix, interval_ms, size, timeout_ms))
        self.clients.append(c)
        self.producer = c
        return c

    def consume(self, topic: str, seconds: float, group: str = "c_lab") -> list[dict[str, Any]]:
        """Pull every queue of ``topic`` from offset 0 for ``seconds``; the messages read (``seen`` lines)."""
        deadline = int(seconds * 1000)
        lines = self.tool("consume", "--namesrv", self.spec.namesrv_addr, "--topic", topic, "--group", group,
                          "--interval-ms", "200", "--deadline-ms", str(deadline), timeout=seconds + 60)
        self._keep(f"consume-{group}", lines)
        return [d for d in lines if d.get("k") == "seen"]

    def admin(self, op: str, *args: str) -> dict[str, Any]:
        lines = self.tool("admin", op, "--controllers", self.spec.controller_addrs, "--cluster",
                          self.spec.cfg.broker.cluster_name, "--set", self.spec.cfg.broker.broker_name, *args)
        ans = next((d for d in lines if d.get("k") == "admin"), None)
        if ans is None:
            raise LabError(f"admin {op}: no answer")
        self.note(f"admin {op} {' '.join(args)}: {'ok' if ans.get('ok') else ans.get('error')}")
        return ans

    # ------------------------------------------------------------------------------------------ the agent
    def arm(self, node: str, point: str, action: str, *, ms: int | None = None, nth: int = 1, count: int = 1,
            when: tuple[str, ...] = (), exception: str | None = None) -> str:
        """Arm ``point`` on ``node``'s agent; the arm's id (``release``, ``disarm``)."""
        try:
            req = arm_request(point, action, ms=ms, nth=nth, count=count, when=when, exception=exception)
        except ArmError as exc:
            raise LabError(str(exc)) from None
        try:
            return self.nem.arm(node, req)
        except (A.AgentError, NemesisError) as exc:
            raise LabError(f"arm {point} on {node}: {exc}") from None

    def release(self, aid: str) -> int:
        return self.nem.release(aid)

    def disarm(self, aid: str) -> None:
        self.nem.disarm(aid)

    def arm_at_start(self, node: str, point: str, action: str, **kw: Any) -> None:
        """Arm ``point`` from ``node``'s next start on (before RocketMQ's classes load: start-up points)."""
        if self.spec.agent is None:
            raise LabError("this lab runs without the agent")
        self.nem._n += 1
        req = {**arm_request(point, action, **kw), "id": f"a{self.nem._n}"}
        self.spec.write_agent_config(node, [req])
        self.nem.act("arm", node=node, id=req["id"], point=point, action=action, atStart=True)
        self.nem.arms[str(req["id"])] = node

    def agent_events(self, ev: str | None = None, node: str | None = None) -> list[dict[str, Any]]:
        """The agent's lines so far (``events/agent.jsonl``), of one kind and one node if given."""
        return [e for e in A.read_events(self.spec.agent_events)
                if (ev is None or e.get("ev") == ev) and (node is None or e.get("node") == node)]

    # ------------------------------------------------------------------------------------------ the proxy's record
    def frames(self, since_ms: float = 0.0) -> list[dict[str, Any]]:
        """The controller protocol's requests and responses the proxy recorded (``control.WATCH``), from
        ``since_ms`` (ms since the epoch): elections, role notifications, SyncStateSet changes, registrations."""
        return [d for d in Tail(self.spec.dir / "events" / "proxy.jsonl").read()
                if d.get("k") == "frame" and float(d.get("t", 0)) >= since_ms]

    def proxy_acts(self, fid: str) -> int:
        """How many frames or streams the proxy fault ``fid`` has acted on so far."""
        return sum(1 for d in Tail(self.spec.dir / "events" / "proxy.jsonl").read()
                   if d.get("k") == "act" and d.get("id") == fid)

    # ------------------------------------------------------------------------------------------ files and logs
    def files(self) -> Files:
        s = self.snap()
        ends = {b: (s.brokers[b].max_offset if b in s.brokers and s.brokers[b].ok else None)
                for b in self.spec.brokers}
        return read_files(self.spec, ends)

    def broker_log(self, node: str, pattern: str,
                   files: tuple[str, ...] = ("broker.log", "store.log", "broker_default.log", "remoting.log")
                   ) -> list[str]:
        """Lines of RocketMQ's own logs of ``node`` matching ``pattern`` (a regular expression). A controller writes
        its event queue's lines and DLedger's to ``broker_default.log``; ``log_ms`` reads a line's time."""
        rx = re.compile(pattern)
        d = self.spec.rocketmq_log_dir(node)
        out: list[str] = []
        for name in files:
            p = d / name
            if p.is_file():
                with open(p, encoding="utf-8", errors="replace") as f:
                    out.extend(line.rstrip("\n") for line in f if rx.search(line))
        return out
