"""The executable model of RocketMQ 5 controller mode, at the level of ``spec/RocketMQControllerMode.tla``.

Everything that affects transitions lives here: the state, every action with its guard, and the invariants.
Each action has the name of its TLA+ action in ``spec/RocketMQControllerMode.tla`` and cites the Java method
it abstracts; the two files are kept action for action, guard for guard, so that the model's BFS
(``models/explore.py``) and TLC find the same number of distinct states.

Rules (the abstraction; ``spec/README.md`` explains each choice):

* **Controller** (one sequential state machine, ``ReplicasInfoManager``): master, masterEpoch (mE), SyncStateSet
  (SSS), syncStateSetEpoch (sE), the registered ids. Its liveness oracle is instantaneous: a broker is alive for
  the controller iff it is up and can reach the controller (``DefaultBrokerHeartbeatManager``).
* **Elections** (``electMaster`` + ``DefaultElectPolicy``): triggered by the controller when its master is not
  alive (``scanNeedReelectBrokerSets``), by a broker that sees no master (``ReplicasManager.brokerElect``) and by
  the admin (designate). Candidates are SSS ∩ alive, then (unclean on) registered ∩ alive; the old master is
  preferred; among the others the best (lastEpoch, maxOffset) wins, ties broken nondeterministically (RocketMQ
  breaks them by hash-set order, which no symmetric model can express). A first election (mE = 0) takes the
  requester unchecked.
* **alterSyncStateSet**: checks 2-7 in RocketMQ's order; a request is a message (from, mE, sE, set) that the
  controller handles once, in any order and after any delay (a request never handled is a lost one).
* **Registration** is done before the first state: every broker is registered (ids are given; ``applyBrokerId``
  and ``cleanBrokerData`` are not modelled).
* **Replies and notifications** are not messages: a broker that can reach the controller adopts its state
  (``Sync``: ``schedulingSyncBrokerMetadata`` / ``changeBrokerRole``), guarded by the epochs as
  ``ReplicasManager`` guards it. A lost reply is a ``Sync`` that happens later.
* **Brokers**: role (the master id it follows, itself when master), local mE/sE, the local SSS and the in-flight
  (remote) proposal, log of (epoch written, message) entries, epoch file of (epoch, start), confirmOffset,
  flushed offset. Offsets count messages.
* **HA** (``AutoSwitchHAClient`` / ``AutoSwitchHAConnection``): one connection per slave; handshake truncates to
  ``findConsistentPoint``; transfer copies one message, labelled with the master's epoch entry covering it; an
  ack reports the slave's max offset and may expand the master's SSS (``maybeExpandInSyncStateSet``); shrink
  removes a disconnected or lagging member.
* **Producer** (``GroupTransferService``): a put is acknowledged when (allAck) every member of the ack set other
  than the master acked past it, or (allAck off, inSyncReplicas = 1) at once.
* **Perturbations**, bounded: crashes (with loss of the unflushed tail when ``PowerLoss``), broker-controller
  partitions, admin elections, shrinks of a lagging slave. Healing (restart, heal) is never bounded.

Theory of operation: a state is an immutable ``State``; ``successors(state)`` yields ``(label, next)`` pairs;
invariants are predicates on a state, action properties predicates on a transition. Brokers are ``0..N-1``;
symmetry permutes them (``permute``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

NONE = -1


T = TypeVar("T")

Label = tuple[str, *tuple[int, ...]]
"""An action's label: its name (a spec action's) and its arguments (broker indices, epochs, a set's mask, flags)."""


@dataclass(frozen=True)
class ModelConfig:
    """The constants of the spec (``CONSTANTS`` in a ``spec/*.cfg``), with the spec's names."""

    Brokers: int = 3
    MaxMsgs: int = 2
    MaxCrashes: int = 1
    MaxPartitions: int = 1
    MaxAdminElect: int = 0
    MaxLagShrinks: int = 0
    Unclean: bool = False
    AllAck: bool = True
    PowerLoss: bool = False
    # guards RocketMQ has (FALSE brings a bug back)
    GuardExpandConfirm: bool = True  # maybeExpandInSyncStateSet: ack >= confirmOffset
    GuardExpandEpochStart: bool = True  # maybeExpandInSyncStateSet: ack >= start of the last epoch entry
    GuardAlterMasterEpoch: bool = True  # alterSyncStateSet check 4
    GuardAlterSSSEpoch: bool = True  # alterSyncStateSet check 5
    GuardConsistentPointMin: bool = True  # findConsistentPoint takes min of the ends (FALSE: max)
    # model-only (the TLA+ spec does not carry it; TLC ignores it): DefaultElectPolicy's valid predicate
    # (FALSE: bug switch elect-ignores-liveness, candidates are not filtered by liveness; `rmqha prove` replays on it)
    GuardElectAlive: bool = True
    AckSetUnion: bool = True  # GroupTransferService counts local ∪ remote (#5663; FALSE: local only)
    # fixes of findings (FALSE: RocketMQ as it is)
    FixUnionKeepsAllProposals: bool = False  # F-GAP-UNION
    FixConfirmWaitsFirstAck: bool = False  # F-CONFIRM-SKIPS-NEW-CONNECTION
    FixFenceRequestsAcrossRestart: bool = False  # M-PROPOSAL-OUTLIVES-RESTART (found by this model)
    FixConfirmShortcutUsesUnion: bool = False  # F-CONFIRM-LOCAL-SHORTCUT
    FixKeepOwnEpochOnRestart: bool = False  # F-EPOCH-REBASE-ON-RESTART (its liveness side, found by this model)
    FixNoCommonEpochRestarts: bool = False  # M-NO-COMMON-EPOCH (liveness; found by this model)
    FixEpochEqReplacesEmpty: bool = False  # F-EPOCH-EQ-SPLICE: appendEntry replaces an empty last epoch
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @staticmethod
    def from_constants(constants: dict[str, Any]) -> ModelConfig:
        """Build from a cfg's CONSTANTS (``Brokers`` a set of model values: its size is what counts)."""
        known = {f for f in ModelConfig.__dataclass_fields__ if f != "extra"}
        kw: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for k, v in constants.items():
            if k == "Brokers":
                kw[k] = len(v) if not isinstance(v, int) else v
            elif k in known:
                kw[k] = v
            else:
                extra[k] = v
        return ModelConfig(**kw, extra=extra)


class State(NamedTuple):
    """One state. Per-broker fields are tuples indexed by broker; sets of brokers are bit masks."""

    ctlMaster: int
    ctlME: int
    ctlSSS: int
    ctlSE: int
    registered: int
    reqs: tuple[tuple[int, int, int, int], ...]  # sorted (from, mE, sE, set)
    alive: tuple[bool, ...]
    reach: tuple[bool, ...]
    role: tuple[int, ...]  # the master a broker follows (itself: master); NONE: no role yet
    bME: tuple[int, ...]
    bSE: tuple[int, ...]
    local: tuple[int, ...]  # local SSS (masters only; 0 otherwise)
    remote: tuple[int, ...]  # in-flight proposal (NONE: none)
    log: tuple[tuple[tuple[int, int], ...], ...]  # (epoch written, message id)
    epochs: tuple[tuple[tuple[int, int], ...], ...]  # epoch file: (epoch, start)
    flushed: tuple[int, ...]
    confirm: tuple[int, ...]
    conn: tuple[int, ...]  # the master a slave has a handshaken connection to (NONE: none)
    ack: tuple[int, ...]  # that connection's slaveAckOffset (-1: not reported yet)
    sent: int
    acked: int  # mask over message ids (bit m-1)
    pend: tuple[tuple[int, int], ...]  # sorted (writer, message) puts waiting for acks
    nCrash: int
    nPart: int
    nAdmin: int
    nShrink: int


def initial(cfg: ModelConfig) -> State:
    """Every broker up, reachable and registered (``registerBrokerToController`` done), no master (mE = sE = 0),
    empty logs."""
    n = cfg.Brokers
    return State(
        ctlMaster=NONE, ctlME=0, ctlSSS=0, ctlSE=0, registered=(1 << n) - 1, reqs=(),
        alive=(True,) * n, reach=(True,) * n, role=(NONE,) * n, bME=(0,) * n, bSE=(0,) * n, local=(0,) * n,
        remote=(NONE,) * n, log=((),) * n, epochs=((),) * n, flushed=(0,) * n, confirm=(0,) * n,
        conn=(NONE,) * n, ack=(-1,) * n, sent=0, acked=0, pend=(), nCrash=0, nPart=0, nAdmin=0, nShrink=0)


# ------------------------------------------------------------------------------------------ helpers


def _set(t: tuple[T, ...], i: int, v: T) -> tuple[T, ...]:
    return (*t[:i], v, *t[i + 1:])


def members(mask: int) -> Iterator[int]:
    i = 0
    while mask:
        if mask & 1:
            yield i
        mask >>= 1
        i += 1


def _bit(b: int) -> int:
    return 1 << b


def last_epoch(ep: tuple[tuple[int, int], ...]) -> int:
    """``EpochFileCache.lastEpoch``: -1 when empty."""
    return ep[-1][0] if ep else -1


def append_entry(ep: tuple[tuple[int, int], ...], e: int, start: int,
                 replace_empty: bool = False) -> tuple[tuple[int, int], ...]:
    """``EpochFileCache.appendEntry``: rejected (unchanged) unless both epoch and start grow (QUIRK-EPOCH-EQ).
    ``replace_empty`` (``FixEpochEqReplacesEmpty``, F-EPOCH-EQ-SPLICE): a greater epoch starting where the last entry
    starts replaces that entry, whose epoch holds no bytes."""
    if ep and replace_empty and ep[-1][1] == start and ep[-1][0] < e:
        return (*ep[:-1], (e, start))
    if ep and (ep[-1][0] >= e or ep[-1][1] >= start):
        return ep
    return (*ep, (e, start))


def truncate_suffix_by_epoch(ep: tuple[tuple[int, int], ...], e: int) -> tuple[tuple[int, int], ...]:
    """``EpochFileCache.truncateSuffixByEpoch``: drop entries with epoch >= e."""
    return tuple(x for x in ep if x[0] < e)


def truncate_suffix_by_offset(ep: tuple[tuple[int, int], ...], off: int) -> tuple[tuple[int, int], ...]:
    """``EpochFileCache.truncateSuffixByOffset``: drop entries with start >= off."""
    return tuple(x for x in ep if x[1] < off)


def entry_end(ep: tuple[tuple[int, int], ...], i: int, log_len: int) -> int:
    """End of entry ``i``: the next start, or (last entry) the log's max offset, as ``doTruncate`` builds it."""
    return ep[i + 1][1] if i + 1 < len(ep) else log_len


def consistent_point(local: tuple[tuple[int, int], ...], local_len: int, master: tuple[tuple[int, int], ...],
                     master_len: int, use_min: bool = True, replaced: bool = False) -> int:
    """``EpochFileCache.findConsistentPoint`` on the slave's cache against the master's; -1 if none. ``replaced``
    (``FixEpochEqReplacesEmpty``): a slave's entry whose epoch the master lacks, where the master holds a greater
    epoch at the same start right after the same previous entry (the master replaced it: it held no bytes there),
    is consistent up to its start."""
    for i in range(len(local) - 1, -1, -1):
        e, s = local[i]
        j = next((j for j, (e2, _) in enumerate(master) if e2 == e), None)
        if j is not None:
            if master[j][1] == s:
                a, b = entry_end(local, i, local_len), entry_end(master, j, master_len)
                return min(a, b) if use_min else max(a, b)
        elif replaced and replaced_at(local, i, master):
            return s
    return -1


def replaced_at(local: tuple[tuple[int, int], ...], i: int, master: tuple[tuple[int, int], ...]) -> bool:
    """The master holds, at the start of ``local[i]``, a greater epoch whose previous entry is ``local[i - 1]`` (or
    none, for both): what appendEntry's replacement of an empty last entry leaves (F-EPOCH-EQ-SPLICE's fix)."""
    e, s = local[i]
    for j, (e2, s2) in enumerate(master):
        if s2 == s and e2 > e:
            return (j == 0 and i == 0) or (j > 0 and i > 0 and master[j - 1] == local[i - 1])
    return False


def covering_entry(ep: tuple[tuple[int, int], ...], off: int, log_len: int) -> tuple[int, int] | None:
    """``findEpochEntryByOffset``: the entry with start <= off < end (the last ends at +inf)."""
    for i, (e, s) in enumerate(ep):
        end = ep[i + 1][1] if i + 1 < len(ep) else 1 << 62
        if s <= off < end:
            return (e, s)
    return None


def msgs_of(log: tuple[tuple[int, int], ...]) -> int:
    m = 0
    for _, x in log:
        m |= 1 << (x - 1)
    return m


def ctl_alive(s: State, b: int) -> bool:
    """The controller's liveness oracle (``isBrokerActive``): up and heartbeating to the controller."""
    return s.alive[b] and s.reach[b]


def ack_set(s: State, m: int, cfg: ModelConfig) -> int:
    """``AutoSwitchHAService.getSyncStateSet``: local ∪ remote while a proposal is in flight."""
    if s.remote[m] != NONE and cfg.AckSetUnion:
        return s.local[m] | s.remote[m]
    return s.local[m]


def ack_set_true(s: State, m: int) -> int:
    return s.local[m] | s.remote[m] if s.remote[m] != NONE else s.local[m]


def compute_confirm(s: State, m: int, cfg: ModelConfig) -> int:
    """``AutoSwitchHAService.computeConfirmOffset``: unchanged while a member has no connection; else the min of
    the master's max and the acks > 0 of the members' connections (acks <= 0 skipped: the GAP)."""
    S = ack_set_true(s, m)
    for x in members(S):
        if x != m and s.conn[x] != m:
            return s.confirm[m]
    val = len(s.log[m])
    for x in members(S):
        if x != m:
            a = s.ack[x]
            if a > 0:
                val = min(val, a)
            elif cfg.FixConfirmWaitsFirstAck:
                return s.confirm[m]
    return val


def get_confirm(s: State, m: int, cfg: ModelConfig) -> int:
    """``CommitLog.getConfirmOffset`` on a master: its max when alone in the local SSS or allAck is off."""
    alone = ack_set_true(s, m) if cfg.FixConfirmShortcutUsesUnion else s.local[m]
    if bin(alone).count("1") == 1 or not cfg.AllAck:
        return len(s.log[m])
    return s.confirm[m]


def _rank(s: State, b: int) -> tuple[int, int]:
    """``DefaultElectPolicy`` sort key: (lastEpoch, maxOffset) from the heartbeat, both descending."""
    return (last_epoch(s.epochs[b]), len(s.log[b]))


def _best(s: State, cands: list[int]) -> list[int]:
    top = max(_rank(s, c) for c in cands)
    return [c for c in cands if _rank(s, c) == top]


def elect_policy(s: State, cfg: ModelConfig, old: int, prefer: int) -> list[int]:
    """``DefaultElectPolicy.elect``: the possible results (``[]``: none; ``[old]``: master still exists)."""
    tiers = [[b for b in members(s.ctlSSS) if not cfg.GuardElectAlive or ctl_alive(s, b)]]
    if cfg.Unclean:
        tiers.append([b for b in members(s.registered) if not cfg.GuardElectAlive or ctl_alive(s, b)])
    for cands in tiers:
        if not cands:
            continue
        if old in cands and (prefer == NONE or prefer == old):
            return [old]
        if prefer != NONE:
            if prefer in cands:
                return [prefer]
            continue
        return _best(s, cands)
    return []


# ------------------------------------------------------------------------------------- controller acts


def _elected(s: State, new: int) -> State:
    """Apply ``ElectMasterEvent(elected)``: mE+1, SSS = {new}, sE+1."""
    return s._replace(ctlMaster=new, ctlME=s.ctlME + 1, ctlSSS=_bit(new), ctlSE=s.ctlSE + 1)


def controller_elect(s: State, cfg: ModelConfig) -> Iterator[tuple[Label, State]]:
    """ControllerElect: ``scanNeedReelectBrokerSets`` → ``triggerElectMaster``: the master is not alive and some
    registered broker is. Nothing electable: ``ElectMasterEvent(notElected)`` (master := null, mE+1)."""
    m = s.ctlMaster
    if m == NONE or ctl_alive(s, m) or not any(ctl_alive(s, b) for b in members(s.registered)):
        return
    res = elect_policy(s, cfg, m, NONE)
    if not res:
        yield ("ControllerElect", NONE), s._replace(ctlMaster=NONE, ctlME=s.ctlME + 1)
    for new in res:
        if new != m:
            yield ("ControllerElect", new), _elected(s, new)


def broker_elect(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """BrokerElect: ``ReplicasManager.brokerElect`` when the controller has no master. A first election takes
    the requester; otherwise nothing electable means ``ELECT_MASTER_FAILED`` (no event)."""
    if not (s.alive[b] and s.reach[b] and s.registered >> b & 1 and s.ctlMaster == NONE):
        return
    if s.ctlME == 0:
        yield ("BrokerElect", b, b), _elected(s, b)
        return
    for new in elect_policy(s, cfg, NONE, NONE):
        yield ("BrokerElect", b, new), _elected(s, new)


def admin_elect(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """AdminElect: ``mqadmin electMaster`` designating b (bounded). A first election takes b unchecked."""
    if s.nAdmin >= cfg.MaxAdminElect or not s.registered:
        return
    if s.ctlME == 0:
        new = b
    else:
        res = elect_policy(s, cfg, s.ctlMaster, b)
        if not res or res[0] == s.ctlMaster:
            return
        new = res[0]
    yield ("AdminElect", b), _elected(s, new)._replace(nAdmin=s.nAdmin + 1)


def alter_outcome(s: State, cfg: ModelConfig, req: tuple[int, int, int, int]) -> str:
    """``ReplicasInfoManager.alterSyncStateSet`` checks 2-7, in order: "" for success, else the failed check."""
    frm, me, se, new = req
    if new == s.ctlSSS:
        return "2-same-set"
    if s.ctlMaster == NONE or s.ctlMaster != frm:
        return "3-not-master"
    if cfg.GuardAlterMasterEpoch and me != s.ctlME:
        return "4-master-epoch"
    if cfg.GuardAlterSSSEpoch and se != s.ctlSE:
        return "5-sss-epoch"
    for x in members(new):
        if not s.registered >> x & 1 or not ctl_alive(s, x):
            return "6-not-alive"
    if not new >> s.ctlMaster & 1:
        return "7-no-master"
    return ""


def controller_alter(s: State, cfg: ModelConfig,
                     req: tuple[int, int, int, int]) -> Iterator[tuple[Label, State]]:
    """ControllerAlter: the controller handles one alterSyncStateSet request (removed from the network)."""
    rest = tuple(r for r in s.reqs if r != req)
    if alter_outcome(s, cfg, req) == "":
        yield ("ControllerAlter", *req), s._replace(reqs=rest, ctlSSS=req[3], ctlSE=s.ctlSE + 1)
    else:
        yield ("ControllerAlter", *req), s._replace(reqs=rest)


# ---------------------------------------------------------------------------------------- broker acts


def _drop_connections_to(s: State, m: int) -> State:
    """``destroyConnections`` on m: every slave connected to m loses its connection."""
    if m not in s.conn:
        return s
    conn = tuple(NONE if c == m else c for c in s.conn)
    ack = tuple(-1 if c == m else a for c, a in zip(s.conn, s.ack))
    return s._replace(conn=conn, ack=ack)


def _change_sss(s: State, cfg: ModelConfig, b: int, sss: int, se: int) -> State:
    """``ReplicasManager.changeSyncStateSet`` → ``AutoSwitchHAService.setSyncStateSet``: only for a greater sE;
    clears the proposal and recomputes confirmOffset."""
    if se <= s.bSE[b]:
        return s
    s = s._replace(bSE=_set(s.bSE, b, se), local=_set(s.local, b, sss), remote=_set(s.remote, b, NONE))
    return s._replace(confirm=_set(s.confirm, b, compute_confirm(s, b, cfg)))


def _change_to_master(s: State, cfg: ModelConfig, b: int) -> State:
    """``ReplicasManager.changeToMaster`` + ``AutoSwitchHAService.changeToMaster`` (or, already master,
    ``changeToMasterWhenLastRoleIsMaster``, which keeps connections)."""
    me = s.ctlME
    was_master = s.role[b] == b
    s = s._replace(bME=_set(s.bME, b, me))
    s = _change_sss(s, cfg, b, s.ctlSSS, s.ctlSE)
    ep = s.epochs[b]
    if me < last_epoch(ep):  # the HA switch returns false; ReplicasManager ignores it
        return s._replace(role=_set(s.role, b, b))
    if not was_master:
        s = _drop_connections_to(s, b)
        s = s._replace(conn=_set(s.conn, b, NONE), ack=_set(s.ack, b, -1))
        s = s._replace(confirm=_set(s.confirm, b, compute_confirm(s, b, cfg)))
    if not (cfg.FixKeepOwnEpochOnRestart and last_epoch(ep) == me):
        # F-EPOCH-REBASE-ON-RESTART: back as master in the epoch it last led (a restart the controller did not see),
        # the entry of that epoch is dropped and (mE, max offset) appended: offsets below it lose their entry
        if last_epoch(ep) >= me:
            ep = truncate_suffix_by_epoch(ep, me)
        ep = append_entry(ep, me, len(s.log[b]), cfg.FixEpochEqReplacesEmpty)
    return s._replace(epochs=_set(s.epochs, b, ep), role=_set(s.role, b, b))


def _change_to_slave(s: State, cfg: ModelConfig, b: int, m: int) -> State:
    """``ReplicasManager.changeToSlave`` + ``AutoSwitchHAService.changeToSlave``. A broker that stops being master
    forgets its SSS views and its waiting puts (their producers time out)."""
    me = s.ctlME
    s = s._replace(bME=_set(s.bME, b, me))
    if s.role[b] == m:
        return s
    was_master = s.role[b] == b
    s = s._replace(role=_set(s.role, b, m), local=_set(s.local, b, 0), remote=_set(s.remote, b, NONE))
    if was_master:
        s = s._replace(pend=tuple(p for p in s.pend if p[0] != b))
    if me < last_epoch(s.epochs[b]):
        return s
    s = _drop_connections_to(s, b)
    return s._replace(conn=_set(s.conn, b, NONE), ack=_set(s.ack, b, -1))


def sync(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """Sync: the broker adopts the controller's view (a reply, a role-change notification or the periodic
    ``schedulingSyncBrokerMetadata``): a role change for a greater mE, an SSS for a greater sE."""
    if not (s.alive[b] and s.reach[b] and s.registered >> b & 1):
        return
    if s.ctlME > s.bME[b] and s.ctlMaster != NONE:
        if s.ctlMaster == b:
            yield ("Sync", b), _change_to_master(s, cfg, b)
        else:
            yield ("Sync", b), _change_to_slave(s, cfg, b, s.ctlMaster)
    elif s.ctlME == s.bME[b] and s.role[b] == b and s.ctlSE > s.bSE[b]:
        yield ("Sync", b), _change_sss(s, cfg, b, s.ctlSSS, s.ctlSE)


def _propose(s: State, cfg: ModelConfig, m: int, new: int) -> State:
    """``markSynchronizingSyncStateSet`` + ``doReportSyncStateSetChanged``: the proposal becomes the remote set
    (overwriting the previous one: GAP-UNION; the fix accumulates) and is sent if the controller is reachable."""
    rem = s.remote[m]
    if cfg.FixUnionKeepsAllProposals and rem != NONE:
        rem = rem | new
    else:
        rem = new
    s = s._replace(remote=_set(s.remote, m, rem))
    if s.reach[m]:
        req = (m, s.bME[m], s.bSE[m], new)
        if req not in s.reqs:
            s = s._replace(reqs=tuple(sorted((*s.reqs, req))))
    return s


def produce(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """Produce: a put on a master (``CommitLog.asyncPutMessage``): appended, then waiting for its acks."""
    if not (s.alive[b] and s.role[b] == b and s.sent < cfg.MaxMsgs):
        return
    m = s.sent + 1
    s = s._replace(log=_set(s.log, b, (*s.log[b], (s.bME[b], m))), sent=m,
                   pend=tuple(sorted((*s.pend, (b, m)))))
    yield ("Produce", b), s


def put_acked(s: State, cfg: ModelConfig, b: int, i: int) -> bool:
    """Whether a put ending at offset i may return PUT_OK (``GroupTransferService.doWaitTransfer``)."""
    if cfg.PowerLoss and s.flushed[b] < i:  # SYNC_FLUSH
        return False
    if not cfg.AllAck:
        return True  # needAck = inSyncReplicas = 1
    S = ack_set(s, b, cfg)
    n = bin(S).count("1")
    if n <= 1:
        return True
    count = 1 + sum(1 for x in members(S) if x != b and s.conn[x] == b and s.ack[x] >= i)
    return count >= n


def ack_put(s: State, cfg: ModelConfig, p: tuple[int, int]) -> Iterator[tuple[Label, State]]:
    """AckPut: the producer sees PUT_OK."""
    b, m = p
    if not (s.alive[b] and s.role[b] == b):
        return
    pos = next((i + 1 for i, (_, x) in enumerate(s.log[b]) if x == m), 0)
    if pos and put_acked(s, cfg, b, pos):
        yield ("AckPut", b, m), s._replace(pend=tuple(q for q in s.pend if q != p), acked=s.acked | 1 << (m - 1))


def handshake(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """Handshake: ``AutoSwitchHAClient`` connects to its master and truncates to ``findConsistentPoint``
    (``doTruncate``); an empty epoch cache truncates nothing; no consistent point fails (retried)."""
    m = s.role[b]
    if not (s.alive[b] and m != NONE and m != b and s.conn[b] == NONE and s.alive[m] and s.role[m] == m):
        return
    log, ep = s.log[b], s.epochs[b]
    if ep:
        p = consistent_point(ep, len(log), s.epochs[m], len(s.log[m]), cfg.GuardConsistentPointMin,
                             cfg.FixEpochEqReplacesEmpty)
        if p < 0:
            # M-NO-COMMON-EPOCH: doTruncate fails, retried for ever; the fix truncates everything and starts at 0
            if not cfg.FixNoCommonEpochRestarts:
                return
            p = 0
        if p < len(log):
            log = log[:p]
        ep = truncate_suffix_by_offset(ep, p)
    s = s._replace(log=_set(s.log, b, log), epochs=_set(s.epochs, b, ep),
                   confirm=_set(s.confirm, b, min(s.confirm[b], len(log))),
                   flushed=_set(s.flushed, b, min(s.flushed[b], len(log))),
                   conn=_set(s.conn, b, m), ack=_set(s.ack, b, -1))
    yield ("Handshake", b), s


def transfer(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """Transfer: the master's ``WriteSocketService`` sends the next message once the slave has reported; the
    header names the master's epoch entry covering it; the slave records a new epoch (``appendEntry``) and takes
    confirmOffset = min(header, own max)."""
    m = s.conn[b]
    if m == NONE or s.ack[b] < 0:
        return
    off = len(s.log[b])
    if off >= len(s.log[m]):
        return
    hdr = covering_entry(s.epochs[m], off, len(s.log[m]))
    if hdr is None:
        return
    ep = s.epochs[b]
    if not ep or ep[-1][0] != hdr[0]:
        ep = append_entry(ep, hdr[0], hdr[1], cfg.FixEpochEqReplacesEmpty)
    log = (*s.log[b], s.log[m][off])
    c = min(get_confirm(s, m, cfg), len(log))
    yield ("Transfer", b), s._replace(log=_set(s.log, b, log), epochs=_set(s.epochs, b, ep),
                                      confirm=_set(s.confirm, b, c))


def slave_ack(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """SlaveAck: the slave reports its max offset; the master (``HAServerReader``) records it, may propose the
    slave for its SSS (``maybeExpandInSyncStateSet``) and recomputes confirmOffset for a local member."""
    m = s.conn[b]
    if m == NONE:
        return
    a = len(s.log[b])
    s = s._replace(ack=_set(s.ack, b, a))
    if not s.local[m] >> b & 1:
        ok = True
        if cfg.GuardExpandConfirm and a < get_confirm(s, m, cfg):
            ok = False
        if cfg.GuardExpandEpochStart and s.epochs[m] and a < s.epochs[m][-1][1]:
            ok = False
        if ok:
            s = _propose(s, cfg, m, s.local[m] | _bit(b))
    # updateConfirmOffsetWhenSlaveAck: for a member of the local set (the fix: of the ack set)
    if (ack_set_true(s, m) if cfg.FixConfirmShortcutUsesUnion else s.local[m]) >> b & 1:
        s = s._replace(confirm=_set(s.confirm, m, compute_confirm(s, m, cfg)))
    yield ("SlaveAck", b), s


def shrink(s: State, cfg: ModelConfig, m: int, b: int) -> Iterator[tuple[Label, State]]:
    """Shrink: the master proposes its SSS without a member whose connection is gone (``removeConnection``) or,
    a bounded number of times (a slow slave is a perturbation), one that has not caught up
    (``maybeShrinkSyncStateSet``, the 15 s timeout abstracted)."""
    if not (s.alive[m] and s.role[m] == m and b != m and s.local[m] >> b & 1):
        return
    if s.conn[b] != m:
        yield ("Shrink", m, b), _propose(s, cfg, m, s.local[m] & ~_bit(b))
    elif s.ack[b] < len(s.log[m]) and s.nShrink < cfg.MaxLagShrinks:
        yield ("Shrink", m, b), _propose(s, cfg, m, s.local[m] & ~_bit(b))._replace(nShrink=s.nShrink + 1)


def flush(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """Flush: the commit log is forced to disk (only matters with ``PowerLoss``)."""
    if cfg.PowerLoss and s.alive[b] and s.flushed[b] < len(s.log[b]):
        yield ("Flush", b), s._replace(flushed=_set(s.flushed, b, len(s.log[b])))


# ------------------------------------------------------------------------------------- perturbations


def _crashed(s: State, cfg: ModelConfig, b: int, lose_tail: bool) -> State:
    s = _drop_connections_to(s, b)
    log = s.log[b][:s.flushed[b]] if lose_tail else s.log[b]
    return s._replace(
        alive=_set(s.alive, b, False), role=_set(s.role, b, NONE), bME=_set(s.bME, b, 0), bSE=_set(s.bSE, b, 0),
        local=_set(s.local, b, 0), remote=_set(s.remote, b, NONE), conn=_set(s.conn, b, NONE),
        ack=_set(s.ack, b, -1), log=_set(s.log, b, log),
        confirm=_set(s.confirm, b, min(s.confirm[b], len(log))),
        pend=tuple(p for p in s.pend if p[0] != b), nCrash=s.nCrash + 1,
        reqs=tuple(r for r in s.reqs if r[0] != b) if cfg.FixFenceRequestsAcrossRestart else s.reqs)


def crash(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """Crash: kill -9 (the page cache survives) or, with ``PowerLoss``, a power loss (the unflushed tail is
    lost). Volatile state goes; the log, the epoch file and the confirmOffset checkpoint stay."""
    if not s.alive[b] or s.nCrash >= cfg.MaxCrashes:
        return
    yield ("Crash", b, False), _crashed(s, cfg, b, False)
    if cfg.PowerLoss and s.flushed[b] < len(s.log[b]):
        yield ("Crash", b, True), _crashed(s, cfg, b, True)


def restart(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """Restart: the broker comes back with no role (fenced until it learns one)."""
    if not s.alive[b]:
        yield ("Restart", b), s._replace(alive=_set(s.alive, b, True))


def partition(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """Partition: the broker and the controller cannot reach each other (bounded)."""
    if s.reach[b] and s.nPart < cfg.MaxPartitions:
        yield ("Partition", b), s._replace(reach=_set(s.reach, b, False), nPart=s.nPart + 1)


def heal(s: State, cfg: ModelConfig, b: int) -> Iterator[tuple[Label, State]]:
    """Heal: the partition ends."""
    if not s.reach[b]:
        yield ("Heal", b), s._replace(reach=_set(s.reach, b, True))


# --------------------------------------------------------------------------------------- next-state

PER_BROKER: tuple[Callable[[State, ModelConfig, int], Iterator[tuple[Label, State]]], ...] = (
    produce, handshake, transfer, slave_ack, flush, sync, broker_elect, admin_elect, crash, restart, partition, heal)


def successors(s: State, cfg: ModelConfig) -> Iterator[tuple[Label, State]]:
    """Every enabled action instance, as (label, next state). Labels are tuples: (action name, *arguments)."""
    yield from controller_elect(s, cfg)
    for req in s.reqs:
        yield from controller_alter(s, cfg, req)
    for p in s.pend:
        yield from ack_put(s, cfg, p)
    n = cfg.Brokers
    for b in range(n):
        for act in PER_BROKER:
            yield from act(s, cfg, b)
        for x in range(n):
            yield from shrink(s, cfg, b, x)


ACTIONS = ("ControllerElect", "ControllerAlter", "AckPut", "Produce", "Handshake", "Transfer",
           "SlaveAck", "Flush", "Sync", "BrokerElect", "AdminElect", "Crash", "Restart", "Partition",
           "Heal", "Shrink")
