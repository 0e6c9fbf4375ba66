"""The observations: what the core (and its driver) tells the checkers and the trace, one typed record per kind.

An observation is what a node saw itself do (a controller event applied, a role change, a batch transferred,
a put answered, a message consumed...). It never changes behaviour. A node emits one with
``Actor.emit({"k": "brk.role", ...})``; the driver adds ``"n"`` (the node's name) and hands the step's
observations to the invariant checker (``impl/invariants``) and to the trace, where each is one element of
the step line's ``obs`` list (``docs/trace-format.md``). Real runs (``rmqha cluster``) write the same records,
with a wall-clock ``t``, to each node's log.

Rules:

* One ``TypedDict`` per kind, named after it; ``k`` is the kind (a literal, so that a type checker narrows a
  union on it and flags a misspelt kind), every other key is the RocketMQ-style field name the trace keeps.
* ``Observation`` is the union of every kind; ``ObsKind`` the union of their literals (``OBS_KINDS`` at run
  time). A new kind is one class here and one entry in ``Observation``.
* Keys that a kind carries only sometimes are ``NotRequired`` (absent, not null, when they do not apply):
  the trace's bytes depend on it.
* Kinds prefixed ``sim.`` and ``net.`` come from the driver (the simulator, or the real runtime), not from a node;
  ``ctl.state`` and ``brk.state`` from a real RocketMQ run's harness (what the admin API showed).

The nested records (a controller event, a broker set's snapshot) are the wire forms in ``impl/wire.py``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict, get_args, get_type_hints

from .wire import EventRecord, SetSnapshot

# ----------------------------------------------------------------------------------------------- controller


class CtlApply(TypedDict):
    """A controller node applied a committed event (``ReplicasInfoManager.applyEvent``). ``ctx`` is what the
    request was validated with (requester, epochs it named, liveness, unclean flag, time of validation)."""

    k: Literal["ctl.apply"]
    n: NotRequired[str]
    index: int
    event: EventRecord
    ctx: dict[str, Any]
    before: SetSnapshot | None
    after: SetSnapshot | None
    node: NotRequired[str]  # a replicated group: the node that applied it
    term: NotRequired[int]  # and the entry's term


class CtlResult(TypedDict):
    """A JRaft node's answer to a logged request, at the entry's index (every node computes one)."""

    k: Literal["ctl.result"]
    n: NotRequired[str]
    index: int
    op: str
    code: int
    event: EventRecord | None
    node: str
    term: int


class CtlValidate(TypedDict):
    """A replicated controller node validates a request on its applied state."""

    k: Literal["ctl.validate"]
    n: NotRequired[str]
    op: str
    applied: int
    commit: int
    term: int


class CtlError(TypedDict):
    k: Literal["ctl.error"]
    n: NotRequired[str]
    op: str
    error: str


class CtlAppendTimeout(TypedDict):
    """An append was not committed within the wait: the caller gets SYSTEM_ERROR, the entry stays in the log."""

    k: Literal["ctl.append-timeout"]
    n: NotRequired[str]
    op: str


class CtlLeader(TypedDict):
    k: Literal["ctl.leader"]
    n: NotRequired[str]
    node: str
    term: NotRequired[int]


class CtlFollower(TypedDict):
    k: Literal["ctl.follower"]
    n: NotRequired[str]
    node: str


class CtlCandidate(TypedDict):
    k: Literal["ctl.candidate"]
    n: NotRequired[str]
    term: int


CtlVote = TypedDict("CtlVote", {"k": Literal["ctl.vote"], "n": NotRequired[str], "term": int, "for": str})
"""A node of a replicated group granted its vote of ``term`` to candidate ``for``."""


class CtlElected(TypedDict):
    k: Literal["ctl.elected"]
    n: NotRequired[str]
    term: int


class CtlStepDown(TypedDict):
    k: Literal["ctl.step-down"]
    n: NotRequired[str]
    term: int


class CtlRole(TypedDict):
    """A replicated group's node became a follower, or changed the leader or term it knows (``_become_follower``):
    its term, leader and role before and after; a leader that stepped down also says how many members (itself
    included) answered its pushes within ``maxHeartBeatLeak`` heartbeats, and how long it led."""

    k: Literal["ctl.role"]
    n: NotRequired[str]
    term: int
    leader: str | None
    wasTerm: int
    was: str
    wasLeader: str | None
    acked: NotRequired[int]
    ledFor: NotRequired[int]


class CtlReplay(TypedDict):
    """A restarted controller node rebuilt its state from its log (a JRaft node with a snapshot: loaded it first,
    ``snapshot`` entries, and replayed the committed entries after it)."""

    k: Literal["ctl.replay"]
    n: NotRequired[str]
    entries: int
    state: dict[str, SetSnapshot]
    snapshot: NotRequired[int]


class CtlTermChanged(TypedDict):
    """A DLedger leader completed the pending appends of earlier terms with TERM_CHANGED
    (``QuorumAckChecker.doWork``): ``indexes`` of term ``oldTerm``, at the node's term ``term``."""

    k: Literal["ctl.term-changed"]
    n: NotRequired[str]
    node: str
    term: int
    oldTerm: int
    indexes: list[int]


class CtlSnapshot(TypedDict):
    """A JRaft node saved a snapshot of its applied state up to ``index`` and compacted its log below
    ``firstIndex`` (``SnapshotExecutorImpl.doSnapshot``, ``LogManagerImpl.setSnapshot``)."""

    k: Literal["ctl.snapshot"]
    n: NotRequired[str]
    node: str
    index: int
    firstIndex: int


class CtlInstallSnapshot(TypedDict):
    """A JRaft follower installed the leader's snapshot up to ``index`` (``kept``: its log after the snapshot
    stayed, the entry at the snapshot's last index having the snapshot's term)."""

    k: Literal["ctl.install-snapshot"]
    n: NotRequired[str]
    node: str
    index: int
    kept: bool


class CtlScanInactive(TypedDict):
    """The leader's inactive-master scan (``DLedgerController.scanInactiveMasterAndTriggerReelect``) found these
    broker sets, each with a named master that is not alive and a live replica, and notified the listeners of each."""

    k: Literal["ctl.scan-inactive"]
    n: NotRequired[str]
    brokerSets: list[str]


class CtlElectRequest(TypedDict):
    """``ControllerManager.triggerElectMaster`` called ``Controller.electMaster`` for ``brokerName`` (``requester``:
    ``controller``; a broker's or the admin's request is its message)."""

    k: Literal["ctl.elect-request"]
    n: NotRequired[str]
    brokerName: str
    requester: str


class CtlInactive(TypedDict):
    """The inactive-broker scan found a broker whose heartbeat expired (``brokerId`` null: the set's master)."""

    k: Literal["ctl.inactive"]
    n: NotRequired[str]
    brokerName: str
    brokerId: int | None


# --------------------------------------------------------------------------------------------------- broker


class BrkRole(TypedDict):
    """``ReplicasManager.changeToMaster`` / ``changeToSlave`` ran (``again``: the role it already had)."""

    k: Literal["brk.role"]
    n: NotRequired[str]
    role: str  # "MASTER" | "SLAVE"
    masterEpoch: int
    previous: int
    again: bool
    master: NotRequired[int | None]  # a slave: the master's broker id
    haAccepted: NotRequired[bool]
    aborted: NotRequired[str]


class BrkSss(TypedDict):
    """``ReplicasManager.changeSyncStateSet``: the broker adopted a SyncStateSet."""

    k: Literal["brk.sss"]
    n: NotRequired[str]
    syncStateSet: list[int]
    syncStateSetEpoch: int


class BrkAlter(TypedDict):
    """A master's alterSyncStateSet request and its answer (``code`` null: no reply)."""

    k: Literal["brk.alter"]
    n: NotRequired[str]
    proposal: list[int]
    masterEpoch: int
    syncStateSetEpoch: int
    code: int | None


class BrkAppend(TypedDict):
    """A producer message appended to the broker's commit log."""

    k: Literal["brk.append"]
    n: NotRequired[str]
    key: str
    offset: int
    size: int
    role: str
    fenced: bool
    masterEpoch: int
    lastEpoch: int
    queueId: NotRequired[int]  # with [workload] queues
    queueOffset: NotRequired[int]


class AckInfo(TypedDict):
    """What the master's ack wait saw when it finished (``GroupTransferService.doWaitTransfer``)."""

    local: list[int]
    remote: list[int]
    inFlight: bool
    acks: list[list[int]]  # [slave id, ack offset]


class BrkPutResult(TypedDict):
    k: Literal["brk.put-result"]
    n: NotRequired[str]
    key: str
    status: str
    masterEpoch: int
    end: NotRequired[int]  # the message's end offset, once appended
    ack: NotRequired[AckInfo]  # an allAck / inSyncReplicas wait


class BrkTopic(TypedDict):
    """The broker's topic config changed (``why``: admin, sync, sync-delete, or the fix's cover)."""

    k: Literal["brk.topic"]
    n: NotRequired[str]
    read: int
    write: int
    version: list[int]
    why: str


class BrkIdentity(TypedDict):
    k: Literal["brk.identity"]
    n: NotRequired[str]
    brokerId: int


class BrkFenced(TypedDict):
    k: Literal["brk.fenced"]
    n: NotRequired[str]
    fenced: bool


class BrkPoint(TypedDict):
    """A broker reached a sub-step boundary a ``crash-at`` action waits for (only then: ``impl/sim/world.py``), and
    waits there: the simulator crashes it at the end of the step."""

    k: Literal["brk.point"]
    n: NotRequired[str]
    point: str
    step: int


class BrkControllerUnreachable(TypedDict):
    """``ReplicasManager.scanAvailableControllerAddresses`` removed ``address`` from the available controller
    addresses: its reachability check got no connection (``waited``: ms from the check's start to its failure)."""

    k: Literal["brk.controller-unreachable"]
    n: NotRequired[str]
    address: str
    waited: int


# ---------------------------------------------------------------------------------------------------- store


class StoreDispatch(TypedDict):
    """The reput thread dispatched messages up to ``upto`` (consumers can read them)."""

    k: Literal["store.dispatch"]
    n: NotRequired[str]
    upto: int
    confirm: int
    reputEnd: int
    recovery: NotRequired[str]


class StoreTruncated(TypedDict):
    k: Literal["store.truncated"]
    n: NotRequired[str]
    offset: int
    max: int


class StoreTruncateInvalid(TypedDict):
    """``AutoSwitchHAService.truncateInvalidMsg`` cut the log."""

    k: Literal["store.truncate-invalid"]
    n: NotRequired[str]
    at: int
    before: int


# ------------------------------------------------------------------------------------------------------- HA


class HaAccept(TypedDict):
    k: Literal["ha.accept"]
    n: NotRequired[str]
    conn: int
    peer: str


class HaTransfer(TypedDict):
    """A master sent a TRANSFER batch; ``epoch``/``start`` are its header's (null: a heartbeat), ``entries`` the
    master's epoch entries when it sent it."""

    k: Literal["ha.transfer"]
    n: NotRequired[str]
    conn: int
    slave: int | None
    offset: int
    size: int
    epoch: int | None
    start: int | None
    entries: list[list[int]]
    max: int


class HaTransferStart(TypedDict):
    """A master's connection chose where its transfer to a slave starts (``position``: nextTransferFromWhere),
    from the slave's first reported offset (``request``; 0: an empty log), the slave's handshake flag
    isSyncFromLastFile (``lastFile``), and the master's log when it chose: its first offset (``min``), its end
    (``max``) and its mapped-file size (``fileSize``)."""

    k: Literal["ha.transfer-start"]
    n: NotRequired[str]
    conn: int
    slave: int
    request: int
    lastFile: bool
    min: int
    max: int
    fileSize: int
    position: int


class HaSlaveAppend(TypedDict):
    """A slave appended transferred bytes at ``offset`` (its log ended at ``max``)."""

    k: Literal["ha.slave-append"]
    n: NotRequired[str]
    offset: int
    size: int
    max: int


class HaHandshakeDone(TypedDict):
    k: Literal["ha.handshake-done"]
    n: NotRequired[str]
    conn: int | None
    point: int
    masterMax: int
    max: int


class HaTruncate(TypedDict):
    """A slave truncated to the consistent point of its handshake (``master``: the master's epoch entries)."""

    k: Literal["ha.truncate"]
    n: NotRequired[str]
    point: int
    before: int
    masterMax: int
    master: list[list[int]]


class HaTruncateUnaligned(TypedDict):
    k: Literal["ha.truncate-unaligned"]
    n: NotRequired[str]
    point: int


class HaNoConsistentPoint(TypedDict):
    k: Literal["ha.no-consistent-point"]
    n: NotRequired[str]
    master: list[list[int]]
    local: list[list[int]]


class HaEpochAppend(TypedDict):
    k: Literal["ha.epoch-append"]
    n: NotRequired[str]
    epoch: int
    start: int
    ok: bool
    path: str
    replaced: NotRequired[int | None]


class HaExpand(TypedDict):
    """A master proposes a slave for its SyncStateSet (``AutoSwitchHAService.maybeExpandInSyncStateSet``)."""

    k: Literal["ha.expand"]
    n: NotRequired[str]
    slave: int
    ack: int
    confirm: int
    epochStart: int
    proposal: list[int]


class HaShrink(TypedDict):
    k: Literal["ha.shrink"]
    n: NotRequired[str]
    proposal: list[int]
    local: list[int]


class HaLocalShrink(TypedDict):
    """With the upstream switch ``local-shrink-on-disconnect`` (5.4.0+, ``AutoSwitchHAService.removeConnection``,
    PR #9897): a master dropped ``slave`` from its local SyncStateSet when its connection closed, leaving ``local``,
    before the controller answered."""
    k: Literal["ha.local-shrink"]
    n: NotRequired[str]
    slave: int
    local: list[int]


class HaConnClosed(TypedDict):
    k: Literal["ha.conn-closed"]
    n: NotRequired[str]
    conn: int
    peer: str
    reason: str
    slaveId: NotRequired[int | None]


class HaClientClose(TypedDict):
    """A slave's HA client closed its connection to the master, or found it closed (``connection closed``)."""

    k: Literal["ha.client-close"]
    n: NotRequired[str]
    reason: str


class HaClientConnect(TypedDict):
    """A 4.x slave's HA client began a connect to its master's HA address (``HAClient.connectMaster``), or
    (``failed``) learnt that it failed."""

    k: Literal["ha.client-connect"]
    n: NotRequired[str]
    addr: str
    failed: NotRequired[bool]


class HaClientHousekeeping(TypedDict):
    k: Literal["ha.client-housekeeping"]
    n: NotRequired[str]
    idle: int


class HaFrameError(TypedDict):
    k: Literal["ha.frame-error"]
    n: NotRequired[str]
    side: str
    error: str
    conn: NotRequired[int]
    peer: NotRequired[str]


class HaNoEpochForOffset(TypedDict):
    k: Literal["ha.no-epoch-for-offset"]
    n: NotRequired[str]
    conn: int
    offset: int


class HaNoEpochEntry(TypedDict):
    k: Literal["ha.no-epoch-entry"]
    n: NotRequired[str]
    conn: int
    epoch: int
    bodySize: int


class HaNoNextEpoch(TypedDict):
    k: Literal["ha.no-next-epoch"]
    n: NotRequired[str]
    conn: int
    epoch: int


# ---------------------------------------------------------------------------------------- nameserver, clients


class NsRegister(TypedDict):
    k: Literal["ns.register"]
    n: NotRequired[str]
    brokerName: str
    brokerId: int
    addr: str
    version: int


class NsReject(TypedDict):
    """``RouteInfoManager.registerBroker`` ignored a registration: a live holder of the id has a higher
    stateVersion."""

    k: Literal["ns.reject"]
    n: NotRequired[str]
    brokerName: str
    brokerId: int
    addr: str
    version: int
    holder: str
    holderVersion: int


class ClientSend(TypedDict):
    k: Literal["client.send"]
    n: NotRequired[str]
    key: str
    target: str | None


class ClientSendResult(TypedDict):
    """What the producer got back (``status`` PUT_OK: acknowledged)."""

    k: Literal["client.send-result"]
    n: NotRequired[str]
    key: str
    status: str
    target: str | None
    offset: NotRequired[int | None]


class ClientSeen(TypedDict):
    """The consumer received a message."""

    k: Literal["client.seen"]
    n: NotRequired[str]
    key: str
    broker: str
    offset: int
    end: int
    confirm: int | None
    queueId: NotRequired[int]  # with [workload] queues
    queueOffset: NotRequired[int]


class AdminResult(TypedDict):
    k: Literal["admin.result"]
    n: NotRequired[str]
    code: int
    request: dict[str, Any]
    response: dict[str, Any] | None


# ------------------------------------------------------------------------------------------ from the driver


class SimCrash(TypedDict):
    """A process went (kill -9, power loss, or a clean stop; ``at``: a ``crash-at`` action's point, reached in this
    step)."""

    k: Literal["sim.crash"]
    node: str
    powerLoss: bool
    lostBytes: int
    clean: NotRequired[bool]
    at: NotRequired[str]


class NetDrop(TypedDict):
    k: Literal["net.drop"]
    src: str
    dst: str
    code: int
    why: str


class NetUnknownDestination(TypedDict):
    k: Literal["net.unknown-destination"]
    src: str
    dst: str


# ----------------------------------------------------------------------------- from a real RocketMQ run


class CtlState(TypedDict):
    """A real run (``rmqha/real``): the leading controller's view of the broker set, as RocketMQ's admin API showed
    it when it changed (``getControllerMetaData``, ``getInSyncStateData``); the SyncStateSet as node names."""

    k: Literal["ctl.state"]
    n: NotRequired[str]
    leader: str
    master: str | None
    masterEpoch: int | None
    syncStateSetEpoch: int | None
    sss: list[str]


class BrkState(TypedDict):
    """A real run: a broker as the admin API showed it when it changed (``fetchBrokerRuntimeStats``,
    ``getBrokerHAStatus``, ``getBrokerEpochCache``): its role, the last epoch of its cache, its commit log's end,
    its epoch entries [epoch, start], its HA connections [address, ack offset, in sync] and, as a slave, its
    master's HA address."""

    k: Literal["brk.state"]
    n: NotRequired[str]
    role: Literal["MASTER", "SLAVE"]
    masterEpoch: int
    maxOffset: int | None
    epochs: list[list[int]]
    haSlaves: list[list[Any]]
    haMaster: str | None


class AgentEvent(TypedDict):
    """A real run with the kit's agent (``rmqha/real/agent.py``): one line of ``events/agent.jsonl`` from inside a
    JVM: ``ev`` is ``started``, ``armed``, ``hit`` (an armed point reached; ``fired``: its action ran), ``done`` (a
    delay, pause or throw carried out), ``released``, ``disarmed``, ``fix`` (a fix rule acted), ``fix.installed``,
    ``fix.absent``, ``missing`` (a point whose method the class lacks), ``error``; ``data``: the line's other
    fields (the hit's arguments, the fix's offsets)."""

    k: Literal["agent.event"]
    n: str
    ev: str
    point: str | None
    id: str | None
    action: str | None
    data: dict[str, Any]


NodeObservation = (
    CtlApply | CtlResult | CtlValidate | CtlError | CtlAppendTimeout | CtlLeader | CtlFollower | CtlCandidate
    | CtlVote | CtlElected | CtlStepDown | CtlRole | CtlReplay | CtlTermChanged | CtlSnapshot | CtlInstallSnapshot
    | CtlInactive | CtlScanInactive | CtlElectRequest
    | BrkRole | BrkSss | BrkAlter | BrkAppend | BrkPutResult | BrkTopic | BrkIdentity | BrkFenced
    | BrkControllerUnreachable | BrkPoint
    | StoreDispatch | StoreTruncated | StoreTruncateInvalid
    | HaAccept | HaTransfer | HaTransferStart | HaSlaveAppend | HaHandshakeDone | HaTruncate | HaTruncateUnaligned
    | HaNoConsistentPoint | HaEpochAppend | HaExpand | HaShrink | HaLocalShrink | HaConnClosed | HaClientClose
    | HaClientConnect
    | HaClientHousekeeping | HaFrameError | HaNoEpochForOffset | HaNoEpochEntry | HaNoNextEpoch
    | NsRegister | NsReject | ClientSend | ClientSendResult | ClientSeen | AdminResult
)
"""What a node observes (``Actor.emit``)."""

RealObservation = CtlState | BrkState | AgentEvent
"""What a real run's harness saw of RocketMQ itself (``rmqha/real/report.py``), beside the client history."""

Observation = NodeObservation | SimCrash | NetDrop | NetUnknownDestination | RealObservation
"""Every observation kind: a node's, the driver's, or a real run's."""

ObsKind = Literal[
    "ctl.apply", "ctl.result", "ctl.validate", "ctl.error", "ctl.append-timeout", "ctl.leader", "ctl.follower",
    "ctl.candidate", "ctl.vote", "ctl.elected", "ctl.step-down", "ctl.role", "ctl.replay", "ctl.term-changed",
    "ctl.snapshot", "ctl.install-snapshot", "ctl.inactive", "ctl.scan-inactive", "ctl.elect-request",
    "brk.role", "brk.sss", "brk.alter", "brk.append", "brk.put-result", "brk.topic", "brk.identity", "brk.fenced",
    "brk.controller-unreachable", "brk.point",
    "store.dispatch", "store.truncated", "store.truncate-invalid",
    "ha.accept", "ha.transfer", "ha.transfer-start", "ha.slave-append", "ha.handshake-done", "ha.truncate",
    "ha.truncate-unaligned",
    "ha.no-consistent-point", "ha.epoch-append", "ha.expand", "ha.shrink", "ha.local-shrink", "ha.conn-closed",
    "ha.client-close", "ha.client-connect",
    "ha.client-housekeeping", "ha.frame-error", "ha.no-epoch-for-offset", "ha.no-epoch-entry", "ha.no-next-epoch",
    "ns.register", "ns.reject", "client.send", "client.send-result", "client.seen", "admin.result",
    "sim.crash", "net.drop", "net.unknown-destination", "ctl.state", "brk.state", "agent.event",
]
"""The kinds, as literals (``Observation``'s ``k``)."""

OBS_KINDS: tuple[str, ...] = get_args(ObsKind)


def kinds_of(union: Any) -> tuple[str, ...]:
    """The ``k`` literal of every class of a union of observation classes, in order (``tests/test_vocabulary.py``
    compares ``kinds_of(Observation)`` with ``OBS_KINDS``, so that the two lists cannot drift apart)."""
    return tuple(get_args(get_type_hints(cls)["k"])[0] for cls in get_args(union))
