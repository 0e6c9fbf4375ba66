"""The failpoints of the kit's Java agent, as data, and the fix rules it carries (docs/real.md, "Inside the JVM").

A point is one place in one RocketMQ method: its entry or its normal exit (``at``), optionally only while the same
thread is inside another method (``inside``: a sub-step of it, e.g. the epoch append inside
``AutoSwitchHAService.changeToMaster``). It has a name, under the simulator's name where the simulator has the same
point (``sim``: ``crash-at role-change`` step 2, ``ctl-at unapplied``, ``slow-commit``; "none" where it has none),
the kind of JVM it sits in, and named arguments (``args``: alias -> path, read by the agent with getters or fields:
``arg0.brokerName``, ``self.storePath``) that conditions (``--when``) and the hit's event use.

Each point was placed by reading the method in RocketMQ 5.3.3 (the version the kit mirrors) and checked in the
jars of every version the kit knows (``rmqha real points --version V``: the agent's ``Check`` looks each method up
in the version's class files without loading them). This module holds the catalogue and the parsing of an arm
(action, trigger, conditions); it does no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

ACTIONS = ("crash", "delay", "pause", "throw")
KINDS = ("ns", "controller", "broker")
HALT_STATUS = 86  # Failpoints.HALT_STATUS: the exit status of a JVM the agent crashed

_RMQ = "org.apache.rocketmq."
REPLICAS = _RMQ + "broker.controller.ReplicasManager"
HA_SERVICE = _RMQ + "store.ha.autoswitch.AutoSwitchHAService"
EPOCH_CACHE = _RMQ + "store.ha.autoswitch.EpochFileCache"
HA_CLIENT = _RMQ + "store.ha.autoswitch.AutoSwitchHAClient"
HA_CONN = _RMQ + "store.ha.autoswitch.AutoSwitchHAConnection"
COMMIT_LOG = _RMQ + "store.CommitLog"
MAPPED_QUEUE = _RMQ + "store.MappedFileQueue"
OUTER_API = _RMQ + "broker.out.BrokerOuterAPI"
REPLICAS_INFO = _RMQ + "controller.impl.manager.ReplicasInfoManager"
HEARTBEATS = _RMQ + "controller.impl.heartbeat.DefaultBrokerHeartbeatManager"
DLEDGER_SM = _RMQ + "controller.impl.DLedgerControllerStateMachine"
DLEDGER_STORE = "io.openmessaging.storage.dledger.store.file.DLedgerMmapFileStore"
ROUTES = _RMQ + "namesrv.routeinfo.RouteInfoManager"

# Exceptions a ``throw`` names by their short name (any other: the full class name).
EXCEPTIONS = {
    "IOException": "java.io.IOException",
    "RuntimeException": "java.lang.RuntimeException",
    "IllegalStateException": "java.lang.IllegalStateException",
    "InterruptedException": "java.lang.InterruptedException",
    "RemotingCommandException": _RMQ + "remoting.exception.RemotingCommandException",
    "RemotingConnectException": _RMQ + "remoting.exception.RemotingConnectException",
    "RemotingTimeoutException": _RMQ + "remoting.exception.RemotingTimeoutException",
    "RemotingSendRequestException": _RMQ + "remoting.exception.RemotingSendRequestException",
    "MQBrokerException": _RMQ + "client.exception.MQBrokerException",
}


@dataclass(frozen=True)
class Point:
    name: str
    kind: str  # ns | controller | broker
    cls: str  # the Java class (binary name: Outer$Inner)
    method: str  # every overload of this name
    what: str  # where exactly, in words
    sim: str = "none"  # the simulator's point fault it corresponds to
    at: str = "enter"  # enter | exit (a normal return)
    inside: str | None = None  # "Class#method": only while the thread is inside it
    args: dict[str, str] = field(default_factory=dict)  # alias -> path

    @property
    def java(self) -> str:
        """``Class.method`` as the docs cite it (the simple class name)."""
        return f"{self.cls.rsplit('.', 1)[-1]}.{self.method}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "cls": self.cls, "method": self.method, "at": self.at,
                "inside": self.inside, "args": dict(self.args)}


def _p(name: str, kind: str, cls: str, method: str, what: str, **kw: Any) -> Point:
    return Point(name, kind, cls, method, what, **kw)


POINTS: tuple[Point, ...] = (
    # ---------------------------------------------------------------------------- broker: the role change
    _p("role-change.to-master", "broker", REPLICAS, "changeToMaster",
       "the broker is told it is master: ReplicasManager.changeToMaster entered (before its monitor)",
       args={"epoch": "arg0", "sssEpoch": "arg1", "sss": "arg2"}),
    _p("role-change.master.1", "broker", HA_SERVICE, "changeToMaster",
       "changeToMaster after the SyncStateSet and the slave synchronisation, before the HA service's switch "
       "(AutoSwitchHAService.changeToMaster entered)",
       sim="crash-at role-change step 1", inside=f"{REPLICAS}#changeToMaster", args={"epoch": "arg0"}),
    _p("role-change.master.2", "broker", EPOCH_CACHE, "appendEntry",
       "inside AutoSwitchHAService.changeToMaster: the new epoch appended (EpochFileCache.appendEntry returned), "
       "before the wait for the dispatch",
       sim="crash-at role-change step 2", at="exit", inside=f"{HA_SERVICE}#changeToMaster",
       args={"epoch": "arg0.epoch", "startOffset": "arg0.startOffset"}),
    _p("role-change.master.3", "broker", HA_SERVICE, "changeToMaster",
       "the HA service's switch done, dispatch waited for (AutoSwitchHAService.changeToMaster returned), before "
       "the store's role, the records and the registration",
       sim="crash-at role-change step 3", at="exit", inside=f"{REPLICAS}#changeToMaster", args={"epoch": "arg0"}),
    _p("role-change.to-slave", "broker", REPLICAS, "changeToSlave",
       "the broker is told it is a slave: ReplicasManager.changeToSlave entered",
       args={"master": "arg0", "epoch": "arg1", "masterId": "arg2"}),
    _p("role-change.slave.1", "broker", HA_SERVICE, "changeToSlave",
       "changeToSlave after the store's role, the records and the slave synchronisation, before the HA "
       "service's switch (AutoSwitchHAService.changeToSlave entered; the simulator changes the records after "
       "its step 1)",
       sim="crash-at role-change step 1", inside=f"{REPLICAS}#changeToSlave",
       args={"master": "arg0", "epoch": "arg1"}),
    _p("role-change.slave.2", "broker", HA_SERVICE, "changeToSlave",
       "the HA service switched to the new master (AutoSwitchHAService.changeToSlave returned), before the data "
       "version and the registration",
       sim="crash-at role-change step 2", at="exit", inside=f"{REPLICAS}#changeToSlave",
       args={"master": "arg0", "epoch": "arg1"}),
    # ---------------------------------------------------------------------------- broker: the epoch file
    _p("epoch.append", "broker", EPOCH_CACHE, "appendEntry",
       "an epoch entry appended and its file written (EpochFileCache.appendEntry returned): no byte under it yet",
       sim="crash-at empty-epoch", at="exit", args={"epoch": "arg0.epoch", "startOffset": "arg0.startOffset"}),
    _p("epoch.truncate-suffix", "broker", EPOCH_CACHE, "truncateSuffixByOffset",
       "the epoch file cut back to an offset (EpochFileCache.truncateSuffixByOffset entered)",
       args={"offset": "arg0"}),
    # ---------------------------------------------------------------------------- broker: HA
    _p("ha.client.handshake", "broker", HA_CLIENT, "sendHandshakeHeader",
       "a slave's HA client sends its handshake (AutoSwitchHAClient.sendHandshakeHeader entered)"),
    _p("ha.client.truncate", "broker", HA_CLIENT, "doTruncate",
       "a slave's HA client truncates to the consistent point (AutoSwitchHAClient.doTruncate entered)",
       args={"truncateOffset": "arg1"}),
    _p("ha.conn.handshake", "broker", f"{HA_CONN}$AbstractWriteSocketService", "handshakeWithSlave",
       "the master answers a slave's handshake with its epoch entries (AbstractWriteSocketService."
       "handshakeWithSlave entered)"),
    _p("ha.conn.transfer", "broker", f"{HA_CONN}$WriteSocketService", "transferData",
       "the master sends a batch of its commit log to a slave (WriteSocketService.transferData entered)",
       args={"size": "arg0", "from": "self.nextTransferFromWhere"}),
    _p("ha.remove-connection", "broker", HA_SERVICE, "removeConnection",
       "an HA connection goes: the master takes the slave out of its local SyncStateSet "
       "(AutoSwitchHAService.removeConnection entered)",
       args={"slaveId": "arg0.slaveId"}),
    # ---------------------------------------------------------------------------- broker: the store
    _p("store.truncate", "broker", MAPPED_QUEUE, "truncateDirtyFiles",
       "a mapped-file queue (commit log or consume queue) cut back (MappedFileQueue.truncateDirtyFiles entered)",
       args={"offset": "arg0", "path": "self.storePath"}),
    _p("store.recover-normally", "broker", COMMIT_LOG, "recoverNormally",
       "recovery after a clean shutdown starts (CommitLog.recoverNormally entered)",
       args={"maxPhyOffsetOfConsumeQueue": "arg0"}),
    _p("store.recover-abnormally", "broker", COMMIT_LOG, "recoverAbnormally",
       "recovery after a crash starts (CommitLog.recoverAbnormally entered)",
       args={"maxPhyOffsetOfConsumeQueue": "arg0"}),
    # ---------------------------------------------------------------------------- broker: calls to the controller
    _p("brk.ctl.alter-sss", "broker", OUTER_API, "alterSyncStateSet",
       "the master asks the controller to change the SyncStateSet (BrokerOuterAPI.alterSyncStateSet entered; "
       "throw: the request is lost)",
       sim="none (the proxy's drop-request CONTROLLER_ALTER_SYNC_STATE_SET is the outside one)",
       args={"controller": "arg0", "brokerName": "arg1", "masterId": "arg2", "masterEpoch": "arg3",
             "sssEpoch": "arg5"}),
    _p("brk.ctl.elect", "broker", OUTER_API, "brokerElect",
       "a broker asks the controller to elect (BrokerOuterAPI.brokerElect entered)",
       args={"controller": "arg0", "brokerName": "arg2", "brokerId": "arg3"}),
    _p("brk.ctl.register", "broker", OUTER_API, "registerBrokerToController",
       "a broker registers with the controller (BrokerOuterAPI.registerBrokerToController entered)",
       args={"controller": "arg4", "brokerName": "arg1", "brokerId": "arg2"}),
    _p("brk.ctl.heartbeat", "broker", OUTER_API, "sendHeartbeatToController",
       "a broker's heartbeat to the controller (BrokerOuterAPI.sendHeartbeatToController entered)",
       args={"controller": "arg0", "brokerName": "arg3", "brokerId": "arg4"}),
    # ---------------------------------------------------------------------------- controller
    _p("ctl.elect", "controller", REPLICAS_INFO, "electMaster",
       "the controller decides an election (ReplicasInfoManager.electMaster entered)",
       args={"brokerName": "arg0.brokerName", "brokerId": "arg0.brokerId"}),
    _p("ctl.alter-sss", "controller", REPLICAS_INFO, "alterSyncStateSet",
       "the controller decides a SyncStateSet change (ReplicasInfoManager.alterSyncStateSet entered)",
       args={"brokerName": "arg0.brokerName", "masterId": "arg0.masterBrokerId", "masterEpoch": "arg0.masterEpoch"}),
    _p("ctl.scan", "controller", HEARTBEATS, "scanNotActiveBroker",
       "the controller's scan for brokers whose heartbeats stopped (DefaultBrokerHeartbeatManager."
       "scanNotActiveBroker entered)"),
    _p("ctl.apply", "controller", DLEDGER_SM, "onApply",
       "a DLedger controller applies committed entries (DLedgerControllerStateMachine.onApply entered): "
       "committed, not yet applied",
       sim="ctl-at unapplied"),
    _p("ctl.dledger.commit", "controller", DLEDGER_STORE, "updateCommittedIndex",
       "a DLedger node moves its committed index (DLedgerMmapFileStore.updateCommittedIndex entered; on the "
       "leader from its quorum-ack checker); delay: a slow commit",
       sim="slow-commit", args={"term": "arg0", "index": "arg1"}),
    # ---------------------------------------------------------------------------- nameserver
    _p("ns.register", "ns", ROUTES, "registerBroker",
       "the nameserver takes a broker's registration (RouteInfoManager.registerBroker entered)",
       args={"cluster": "arg0", "addr": "arg1", "brokerName": "arg2", "brokerId": "arg3"}),
)

BY_NAME: dict[str, Point] = {p.name: p for p in POINTS}


@dataclass(frozen=True)
class FixRule:
    """A fix rule of the agent (``rmqha/real/java/agent/Fixes.java``: ``ALL``), as the CLI and the docs know it."""

    finding: str
    switch: str  # the kit's Python fix switch (impl/bugs.py)
    java: str  # the agent's class
    where: str  # Class.method the rule changes
    what: str


FIXES: tuple[FixRule, ...] = (
    FixRule("F-TRUNCATED-TAIL-RESURRECTS", "fix-truncate-clears-file", "FixTruncatedTailResurrects",
            "CommitLog.truncateDirtyFiles",
            "after a truncation of the commit log, zeros from the offset to the end of the mapped file holding it"),
)
FIX_IDS = tuple(f.finding for f in FIXES)


class ArmError(ValueError):
    """A bad arm (point, action, trigger, condition): one line for the user."""


_WHEN = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|!=|=|<|>|~)\s*(.*?)\s*$")
_PATH = re.compile(r"^(self|arg\d+)(\.[A-Za-z_]\w*)*$")


def point(name: str) -> Point:
    p = BY_NAME.get(name)
    if p is None:
        raise ArmError(f"no point {name!r} (rmqha real points lists them)")
    return p


def condition(p: Point, text: str) -> dict[str, str]:
    """``ARG=VALUE`` (or ``<``, ``<=``, ``>``, ``>=``, ``!=``, ``~`` contains): ARG is one of the point's named
    arguments or a path (``arg0.brokerName``, ``self.storePath``)."""
    m = _WHEN.match(text)
    if m is None:
        raise ArmError(f"--when {text!r}: ARG=VALUE, ARG<VALUE, ... (ARG: {', '.join(p.args) or 'argN.name'})")
    arg, op, value = m.groups()
    path = p.args.get(arg, arg)
    if not _PATH.match(path):
        names = ", ".join(p.args) or "none"
        raise ArmError(f"--when {text!r}: {arg!r} is not an argument of {p.name} (named: {names}; or a path "
                       "like arg0.name, self.name)")
    return {"path": path, "op": op, "value": value, "text": text.strip()}


def fix_ids(given: list[str] | tuple[str, ...]) -> list[str]:
    """``--fix`` values: finding ids the agent has a rule for, or ``all``; deduplicated, in the table's order."""
    out: set[str] = set()
    for g in given:
        if g == "all":
            out.update(FIX_IDS)
        elif g in FIX_IDS:
            out.add(g)
        else:
            raise ArmError(f"--fix {g!r}: the agent has rules for {', '.join(FIX_IDS)} (or all)")
    return [f for f in FIX_IDS if f in out]


def arm_request(point_name: str, action: str, *, ms: int | None = None, nth: int = 1, count: int = 1,
                when: list[str] | tuple[str, ...] = (), exception: str | None = None,
                arm_id: str | None = None) -> dict[str, Any]:
    """The agent's ``arm`` request for these options, checked; ``ArmError`` says what is wrong in one line."""
    p = point(point_name)
    if action not in ACTIONS:
        raise ArmError(f"--action {action!r}: one of {', '.join(ACTIONS)}")
    if action == "delay" and not ms:
        raise ArmError("--action delay needs --ms N (milliseconds)")
    if action in ("crash", "throw") and ms:
        raise ArmError(f"--action {action} takes no --ms")
    if exception is not None and action != "throw":
        raise ArmError("--exception goes with --action throw")
    if nth < 1:
        raise ArmError("--nth: 1 or more (the first hit after arming is 1)")
    if count < 0:
        raise ArmError("--count: 0 (every hit from the nth on) or more")
    exc = EXCEPTIONS.get(exception or "RuntimeException", exception or "")
    if action == "throw" and not re.match(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+$", exc):
        raise ArmError(f"--exception {exception!r}: a class name ({', '.join(EXCEPTIONS)}, or a full name)")
    req: dict[str, Any] = {"op": "arm", "id": arm_id or "", "point": p.name, "action": action, "nth": nth,
                           "count": count, "when": [condition(p, w) for w in when]}
    if ms:
        req["ms"] = ms
    if action == "throw":
        req["exception"] = exc
    return req


def markdown() -> str:
    """The points and fix rules as the tables of docs/real.md ("Inside the JVM"; ``tests/test_real_agent.py``
    checks the doc holds exactly this)."""
    rows = ["| point | JVM | where (Java) | simulator | named arguments |", "|---|---|---|---|---|"]
    for p in POINTS:
        where = f"`{p.java}`" + (" (exit)" if p.at == "exit" else "")
        if p.inside:
            cls, meth = p.inside.split("#")
            where += f" inside `{cls.rsplit('.', 1)[-1]}.{meth}`"
        args = ", ".join(f"`{a}` = `{path}`" for a, path in p.args.items()) or "-"
        rows.append(f"| `{p.name}` | {p.kind} | {where} | {p.sim} | {args} |")
    rows += ["", "| fix (`--fix`) | kit switch | rule (Java class) | where | what |", "|---|---|---|---|---|"]
    for f in FIXES:
        rows.append(f"| `{f.finding}` | `{f.switch}` | `{f.java}` | `{f.where}` (exit) | {f.what} |")
    return "\n".join(rows) + "\n"
