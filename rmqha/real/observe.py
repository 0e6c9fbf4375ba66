"""What the harness sees of a real cluster while it runs: the Java tool's answers, read into typed snapshots.

The Java tool (``rmqha/real/java/RmqhaTool.java``) asks through RocketMQ's own admin API: each controller's
metadata (``getControllerMetaData``) and its replicas info for the broker set (``getInSyncStateData``: master,
masterEpoch, syncStateSetEpoch, the SyncStateSet, each broker's liveness), and each broker's runtime stats
(``fetchBrokerRuntimeStats``), HA status (``getBrokerHAStatus``) and epoch cache (``getBrokerEpochCache``). It runs
in the run's hub namespace, where every node's front address is reachable. One ``observe --once`` answers
``rmqha real status``; a long-running ``observe`` during ``rmqha real test`` writes the run's timeline of
controller and broker states (``events/observe.jsonl``).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from typing import Any

from . import maven, netns
from .spec import RealSpec

TOOL_JVM = ("-Xms32m", "-Xmx160m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
            "-Drocketmq.client.logUseSlf4j=false")


class ToolError(RuntimeError):
    """The Java tool could not run or gave no answer; one line."""


def tool_argv(spec: RealSpec, *args: str) -> list[str]:
    try:
        inst = maven.fetch(spec.version)  # cached: at once; after a change to the Java tool: compiled again
    except maven.FetchError as exc:
        raise ToolError(str(exc)) from None
    return [*netns.exec_prefix(spec.run, "hub"), "java", *TOOL_JVM, f"-Duser.home={spec.dir / 'clients'}",
            "-cp", inst.tool_classpath, maven.TOOL_CLASS, *args]


def run_tool(spec: RealSpec, *args: str, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Run the tool to its end; its JSON lines."""
    try:
        proc = subprocess.run(tool_argv(spec, *args, "--no-stdin-watch"), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ToolError(f"the Java tool ({args[0]}) gave no answer within {timeout:.0f} s") from None
    lines = parse_lines(proc.stdout)
    if proc.returncode != 0 and not lines:
        err = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ToolError(f"the Java tool ({args[0]}) failed: {err[:240]}")
    return lines


def parse_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for ln in text.splitlines():
        ln = ln.strip()
        if not ln.startswith("{"):
            continue
        try:
            d = json.loads(ln)
        except ValueError:
            continue  # a line cut by a kill
        if isinstance(d, dict):
            out.append(d)
    return out


def observe_args(spec: RealSpec, *, once: bool, interval_ms: int = 500, deadline_ms: int | None = None) -> list[str]:
    brokers = ",".join(f"{spec.host(b).front}:{spec.main_port(b)}" for b in spec.brokers)
    args = ["observe", "--controllers", spec.controller_addrs, "--set", spec.cfg.broker.broker_name,
            "--brokers", brokers, "--interval-ms", str(interval_ms), "--call-timeout-ms", "4000"]
    if once:
        args.append("--once")
    if deadline_ms is not None:
        args += ["--deadline-ms", str(deadline_ms)]
    return args


# --------------------------------------------------------------------------------------------- snapshots


@dataclass
class ControllerView:
    node: str
    ok: bool
    error: str = ""
    t: int | None = None  # when its last answer came (ms since the epoch; ``answered_at``)
    is_leader: bool = False
    leader: str | None = None  # the node the controller names as leader
    master: str | None = None  # the broker node the controller names as master
    master_id: int | None = None
    master_epoch: int | None = None
    sss_epoch: int | None = None
    sss: list[int] = field(default_factory=list)  # broker ids
    ids: dict[int, str] = field(default_factory=dict)  # broker id -> node
    alive: dict[int, bool] = field(default_factory=dict)


@dataclass
class BrokerView:
    node: str
    ok: bool
    error: str = ""
    t: int | None = None  # when its last answer came (ms since the epoch; ``answered_at``)
    broker_id: int | None = None
    role: str | None = None  # "MASTER" | "SLAVE" (the HA status's isMaster)
    max_offset: int | None = None
    confirm_offset: int | None = None
    epochs: list[tuple[int, int, int]] = field(default_factory=list)  # (epoch, start, end)
    in_sync_slaves: int | None = None
    ha_connections: list[dict[str, Any]] = field(default_factory=list)
    ha_client: dict[str, Any] | None = None


@dataclass
class Snapshot:
    t: int  # when the round's last answer came (ms since the epoch)
    controllers: dict[str, ControllerView]
    brokers: dict[str, BrokerView]
    t0: int = 0  # when its first answer came

    @property
    def leader(self) -> ControllerView | None:
        lead = [c for c in self.controllers.values() if c.ok and c.is_leader]
        return lead[0] if lead else None

    @property
    def master(self) -> str | None:
        """The master the leading controller names (None without a leader or a master)."""
        c = self.leader
        return c.master if c else None


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def answered_at(d: dict[str, Any]) -> int | None:
    """When what a line says was seen: the latest answer time of its calls (``"at"``: the tool records when each
    call's answer came); a line without them (a tool from before) only has when it was written, which can be seconds
    after its answers (a round's lines are written in order, each after the calls before it), so it gives none."""
    at = d.get("at")
    if not isinstance(at, dict):
        return None
    times = [x for x in (_int(v) for v in at.values()) if x is not None]
    return max(times) if times else None


def controller_view(spec: RealSpec, d: dict[str, Any]) -> ControllerView:
    node = spec.node_of_addr(str(d.get("addr", ""))) or str(d.get("addr"))
    v = ControllerView(node, bool(d.get("ok")), str(d.get("error") or ""), answered_at(d))
    meta = d.get("meta") or {}
    leader_addr = meta.get("controllerLeaderAddress")
    v.leader = spec.node_of_addr(leader_addr) if leader_addr else None
    v.is_leader = bool(meta.get("isLeader")) or (v.leader == node and bool(leader_addr))
    s = d.get("set") or {}
    if s:
        v.master_id = _int(s.get("masterBrokerId"))
        addr = s.get("masterAddress")
        v.master = spec.node_of_addr(addr) if addr else None
        v.master_epoch = _int(s.get("masterEpoch"))
        v.sss_epoch = _int(s.get("syncStateSetEpoch"))
        v.sss = sorted(int(x) for x in s.get("syncStateSet") or [])
        for b in s.get("brokers") or []:
            bid = _int(b.get("brokerId"))
            if bid is None:
                continue
            v.ids[bid] = spec.node_of_addr(str(b.get("address", ""))) or str(b.get("address"))
            v.alive[bid] = bool(b.get("alive"))
    return v


def broker_view(spec: RealSpec, d: dict[str, Any]) -> BrokerView:
    node = spec.node_of_addr(str(d.get("addr", ""))) or str(d.get("addr"))
    v = BrokerView(node, bool(d.get("ok")), str(d.get("error") or ""), answered_at(d))
    v.broker_id = _int(d.get("brokerId"))
    ha = d.get("ha") or {}
    if ha:
        v.role = "MASTER" if ha.get("master") or ha.get("isMaster") else "SLAVE"
        v.in_sync_slaves = _int(ha.get("inSyncSlaveNums"))
        v.ha_connections = list(ha.get("haConnectionInfo") or [])
        v.ha_client = ha.get("haClientRuntimeInfo")
    stats = d.get("stats") or {}
    v.max_offset = _int(stats.get("commitLogMaxOffset")) if stats else _int(d.get("maxOffset"))
    if v.max_offset is None:
        v.max_offset = _int(d.get("maxOffset"))
    for e in d.get("epochs") or []:
        ep, start, end = _int(e.get("epoch")), _int(e.get("startOffset")), _int(e.get("endOffset"))
        if ep is not None and start is not None:
            v.epochs.append((ep, start, end if end is not None else -1))
    return v


def snapshot_from(spec: RealSpec, lines: list[dict[str, Any]]) -> Snapshot:
    ctl: dict[str, ControllerView] = {}
    brk: dict[str, BrokerView] = {}
    t = 0
    t0 = min((int(d.get("t", 0)) for d in lines if d.get("k") in ("ctl", "brk")), default=0)
    for d in lines:
        if d.get("k") == "ctl":
            v = controller_view(spec, d)
            ctl[v.node] = v
        elif d.get("k") == "brk":
            b = broker_view(spec, d)
            brk[b.node] = b
        else:
            continue
        t = max(t, int(d.get("t", 0)))
    return Snapshot(t, ctl, brk, t0)


def snapshot(spec: RealSpec, timeout: float = 60.0) -> Snapshot:
    return snapshot_from(spec, run_tool(spec, *observe_args(spec, once=True), timeout=timeout))


def rounds(spec: RealSpec, lines: list[dict[str, Any]]) -> list[Snapshot]:
    """A long-running observer's lines, grouped into one snapshot per round."""
    by_round: dict[int, list[dict[str, Any]]] = {}
    for d in lines:
        r = _int(d.get("round"))
        if r is not None and d.get("k") in ("ctl", "brk"):
            by_round.setdefault(r, []).append(d)
    return [snapshot_from(spec, by_round[r]) for r in sorted(by_round)]
