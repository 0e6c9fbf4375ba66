"""SyncStateSet and acknowledgement invariants (SYNC-*): when a master may answer PUT_OK (``GroupTransferService``),
whom it may propose for its SyncStateSet (``AutoSwitchHAService.maybeExpandInSyncStateSet``), and what its
confirmOffset promises (``computeConfirmOffset``)."""

from __future__ import annotations

import bisect

from ..broker.broker import BrokerNode
from ..codes import BrokerRole
from ..observations import BrkAlter, BrkPutResult, CtlApply, HaConnClosed, HaExpand
from ..store.offsets import base_of
from .client import LAST_FILE_HISTORY
from .context import Context, HeldCache, SetMembers, ShrinkPending
from .registry import Violated, invariant, violated


@invariant("SYNC-ACK-ALL", layer="sync", on=("brk.put-result",),
           source="GroupTransferService.doWaitTransfer (ALL branch); AutoSwitchHAService.getSyncStateSet",
           exceptions="acks mean bytes in the slave's page cache, not on its disk")
def ack_all(ctx: Context, obs: BrkPutResult) -> Violated | None:
    """In allAck mode a put returns PUT_OK only when every member of the master's ack set (local ∪ remote while a
    proposal is in flight) has acked past the message."""
    ack = obs.get("ack")
    if obs["status"] != "PUT_OK" or ack is None:
        return None
    node = ctx.world.broker(obs.get("n", ""))
    if not isinstance(node, BrokerNode):
        return None
    self_id = node.replicas.broker_controller_id
    members = set(ack["local"]) | (set(ack["remote"]) if ack["inFlight"] else set())
    if len(members) <= 1:
        return None
    end = obs.get("end")
    if end is None:
        return None
    best: dict[int, int] = {}
    for sid, off in ack["acks"]:
        best[sid] = max(best.get(sid, -1), off)
    missing = [m for m in sorted(members) if m != self_id and best.get(m, -1) < end]
    if missing:
        return violated(f"{obs.get('n')} acked {obs['key']} (end {end}) though SSS members {missing} had not acked "
                        f"it (ack set {sorted(members)}, acks {ack['acks']})", obs=obs)
    return None


@invariant("SYNC-EXPAND-SAFE", layer="sync", on=("ha.expand",),
           source="AutoSwitchHAService.maybeExpandInSyncStateSet (ack >= confirmOffset, >= epoch start)")
def expand_safe(ctx: Context, obs: HaExpand) -> Violated | None:
    """A master proposes a slave for its SyncStateSet only when the slave holds every message it has acknowledged
    (ack >= end of every PUT_OK message in its log)."""
    node = ctx.world.broker(obs.get("n", ""))
    if node is None or node.store.role != BrokerRole.SYNC_MASTER or node.store.fenced:
        return None  # every broker accepts HA connections; only a master's proposal can reach the controller
    log = node.store.commitlog
    need = 0
    for key in ctx.acked:
        offsets = log.keys.get(key)
        if offsets:  # the first copy is the one that had to be acked
            i = bisect.bisect_left(log.ends, offsets[0] + 1)
            need = max(need, log.ends[i])
    if obs["ack"] < need:
        return violated(f"{obs.get('n')} proposes slave {obs['slave']} with ack {obs['ack']} but has acknowledged "
                        f"messages up to {need} (confirmOffset it saw: {obs['confirm']})", obs=obs)
    return None


@invariant("SYNC-CONFIRM-BOUND", layer="sync", reads=("brokers",),
           source="AutoSwitchHAService.computeConfirmOffset; AutoSwitchHAClient (min(header, max))",
           exceptions="a power loss on a slave can lose page-cache bytes it had acked")
def confirm_bound(ctx: Context) -> Violated | None:
    """Every message ending at or before a master's confirmOffset is whole in the log of every member of its
    SyncStateSet (allAck mode); a slave's confirmOffset never passes its own log end."""
    world = ctx.world
    for b in world.brokers:
        node = world.broker(b)
        if not isinstance(node, BrokerNode):
            continue
        store = node.store
        if store.role == BrokerRole.SLAVE:
            if store.confirm_offset > store.max_phy_offset:
                return violated(f"slave {b} has confirmOffset {store.confirm_offset} past its log end "
                                f"{store.max_phy_offset}", broker=node.status())
            continue
        if store.fenced or not world.store_config.all_ack_in_sync_state_set:
            continue
        local = node.ha.sync_state_set
        if len(local) <= 1:
            continue
        confirm = store.get_confirm_offset_directly()
        ends = store.commitlog.ends
        k = bisect.bisect_right(ends, confirm)
        if k == 0:
            continue
        need = ends[k - 1]
        for member in sorted(local):
            if member == node.replicas.broker_controller_id:
                continue
            holder = ctx.broker_by_id(member)
            if holder is None:
                continue
            whole = ctx.whole_end(holder)
            if whole < need:
                return violated(f"master {b} confirms up to {confirm} (messages to {need}) but SSS member {member} "
                                f"({holder}) holds whole messages only to {whole}", master=node.status(),
                                member=holder)
    return None


@invariant("SYNC-SSS-HOLDS-ACKED", layer="sync", reads=("brokers", "controller", "history"),
           source="AutoSwitchHAService.maybeExpandInSyncStateSet + ReplicasInfoManager.alterSyncStateSet fencing",
           exceptions="as SYNC-NO-ACK-LOSS (this is what makes a clean election safe); not expected on a member: "
                      + LAST_FILE_HISTORY)
def sss_holds_acked(ctx: Context) -> Violated | None:
    """Every member of the controller's SyncStateSet holds every message a producer saw PUT_OK for."""
    world = ctx.world
    ctl = world.controller_node()
    if ctl is None or not ctx.acked:
        return None
    info = ctl.rim.sync_state_set_info_table.get(world.broker_name)
    if info is None:
        return None
    acked = ctx.acked_list
    for member in sorted(info.sync_state_set):
        name = ctx.broker_by_id(member)
        if name is None:
            continue
        node = world.broker(name)
        disk = world.disks[name]
        gen: tuple[int | None, ...]
        if node is not None:
            keys, gen = node.store.commitlog.keys, (world.inc[name], disk.generation)
        else:
            keys, gen = ctx.disk_keys(name), (None, disk.generation, len(disk.commitlog))
        start = 0
        cached = ctx.sss_verified.get(member)
        if cached is not None and cached[0] == gen:
            start = cached[1]
            if start == len(acked):
                continue
        first = base_of(disk.commitlog)
        for key in acked[start:]:
            if key not in keys and not (first and ctx.before_log(key, first)):
                return violated(f"SSS member {member} ({name}) lacks {key}, which was acknowledged PUT_OK "
                                f"(controller SSS {sorted(info.sync_state_set)}, mE {info.master_epoch})", key=key,
                                member=name, broker=node.status() if node is not None else None)
        ctx.sss_verified[member] = (gen, len(acked))
    return None


# ------------------------------------------------------------------------------------- set-wide checks

_SET_EXCEPTIONS = ("allAckInSyncStateSet=false (a master confirms its own max offset) and unclean election (a master "
                   "from outside the SyncStateSet): the expected losses; a power loss on a member can lose "
                   "page-cache bytes it had acked; a member's log that starts later (syncFromLastFile) is compared "
                   "from its first offset")


def _set_members(ctx: Context) -> SetMembers | None:
    """The controller's SyncStateSet as the set-wide checks read it, once per step: each member's id, broker, log
    and log generation, a key of all that, and the set's (SSS, mE) for the messages; None when the checks do not
    apply (4.x, allAck off, unclean election, no controller or no set)."""
    world = ctx.world
    cached = ctx.held_members
    if cached is not None and cached[0] == world.step:
        return cached[1]
    out: SetMembers | None = None
    ctl = world.controller_node() if not world.legacy and world.store_config.all_ack_in_sync_state_set else None
    if ctl is not None and not ctl.rim.enable_elect_unclean_master:
        info = ctl.rim.sync_state_set_info_table.get(world.broker_name)
        if info is not None and info.sync_state_set:
            disks = world.disks  # a broker's log is its files' bytes, up or down (Context.logs)
            members = tuple((m, name, disks[name].commitlog, disks[name].generation)
                            for m in sorted(info.sync_state_set) if (name := ctx.broker_by_id(m)) is not None)
            out = (members, tuple((m, n, g) for m, n, _, g in members), (sorted(info.sync_state_set),
                                                                        info.master_epoch))
    ctx.held_members = (world.step, out)
    return out


def _set_lacks(ctx: Context, b: str, upto: int, what: str) -> Violated | None:
    """``upto`` of broker ``b``'s log is confirmed set-wide: every member of the controller's SyncStateSet holds
    the bytes below it (its files while it is down), the same bytes as ``b``'s own (compared where ``b`` has them).
    What held stays held until ``upto``, a log's generation (it lost bytes) or the set changes (``Context.held_ok``);
    the verified prefix of each pair is kept until either log loses bytes (``HeldCache``)."""
    got = _set_members(ctx)
    if got is None:
        return None
    members, members_key, (sss, epoch) = got
    world = ctx.world
    gen = world.disks[b].generation
    memo = (upto, gen, members_key)
    if ctx.held_ok.get((b, what)) == memo:
        return None
    data = world.disks[b].commitlog
    base = base_of(data)
    if upto <= base:
        return None
    hi = min(upto, len(data))
    for member, name, mdata, mgen in members:
        if len(mdata) < upto:
            return violated(f"{b} {what} {upto}, but SSS member {member} ({name}) holds only {len(mdata)} bytes "
                            f"(controller SSS {sss}, mE {epoch})", broker=b, member=name, upto=upto)
        if name == b:
            continue
        key = (gen, mgen)
        cached = ctx.held.get((b, name))
        # a member whose log starts later (it synced from its master's last file: syncFromLastFile) holds nothing
        # below its first offset, as a log whose first files expired: compared from there
        lo = max(base, base_of(mdata))
        if cached is not None and cached.key == key:
            lo = max(lo, min(cached.verified, hi))
        if hi > lo and data[lo:hi] != mdata[lo:hi]:
            at = next(j for j in range(lo, hi) if data[j] != mdata[j])
            ctx.held.pop((b, name), None)
            return violated(f"{b} {what} {upto}, but SSS member {member} ({name}) holds other bytes from {at} "
                            f"(controller SSS {sss}, mE {epoch})", broker=b, member=name, upto=upto, at=at)
        if cached is None or cached.key != key or hi > cached.verified:
            ctx.held[(b, name)] = HeldCache(max(hi, lo), key)
    ctx.held_ok[(b, what)] = memo
    return None


@invariant("SYNC-CONFIRM-HELD", layer="sync", reads=("brokers", "controller"),
           source="AutoSwitchHAService.computeConfirmOffset (the minimum of the SyncStateSet's acks); "
                  "AutoSwitchHAClient (min(header confirmOffset, maxPhyOffset)); DefaultMessageStore.loadCheckPoint "
                  "(StoreCheckpoint.confirmPhyOffset) + CommitLog.recoverAbnormally / recoverNormally (confirmOffset "
                  "clamped to the last confirmed whole message / to the scan's end)",
           exceptions=_SET_EXCEPTIONS)
def confirm_held(ctx: Context) -> Violated | None:
    """Every live broker's confirmOffset, after a restart and its recovery too, is held by the controller's current
    SyncStateSet: every member's log holds the bytes below it, the same bytes as the broker's own."""
    world = ctx.world
    for b in world.brokers:
        node = world.broker(b)
        if not isinstance(node, BrokerNode):
            continue
        v = _set_lacks(ctx, b, node.store.get_confirm_offset_directly(), "has confirmOffset")
        if v is not None:
            v.state["status"] = node.status()
            return v
    return None


@invariant("SYNC-DISPATCH-CONFIRMED", layer="sync", reads=("brokers", "controller", "history"),
           source="ReputMessageService.doReput (up to getConfirmOffset) on every replica; the confirmOffset a slave "
                  "takes from its master's transfer header (AutoSwitchHAClient); PullMessageProcessor / "
                  "DefaultMessageStore.getMessage serve the consume queue, a slave's too (slaveReadEnable)",
           exceptions=_SET_EXCEPTIONS + "; a dispatch past the broker's own confirmOffset is SYNC-VISIBLE-BOUND's")
def dispatch_confirmed(ctx: Context) -> Violated | None:
    """Whatever a replica dispatches to its consume queue is confirmed set-wide: every member of the controller's
    SyncStateSet holds the bytes up to the end of what it dispatched, the same bytes as the replica.

    The step's dispatches (``store.dispatch``, kept by the checker) are checked after the step's other checks, so
    that a step that also breaks an older invariant reports that one."""
    for obs in ctx.dispatched_in_step:
        if obs["upto"] > obs["confirm"]:
            continue  # the broker's own confirmOffset already says no: SYNC-VISIBLE-BOUND reports it
        v = _set_lacks(ctx, obs.get("n", ""), obs["upto"], "dispatched to its consume queue up to")
        if v is not None:
            v.state["obs"] = obs
            return v
    return None


def shrink_bound(rpc_timeout: int, net_delay: int) -> int:
    """SYNC-SHRINK-LATENCY's bound after a master closes a member's HA connection: ``removeConnection`` proposes the
    shrink at once to its listener, whose single-threaded executor sends alterSyncStateSet (at worst after one earlier
    report still in flight): two controller RPCs, each answered within a round trip by a healthy network plus the
    controller's commit, bounded by ``controllerRpcTimeoutMillis``; and the close's own one-way delay. The fallback it
    must beat is the lag check: haMaxTimeSlaveNotCatchup, then checkSyncStateSetPeriod."""
    return rpc_timeout + 4 * net_delay


@invariant("SYNC-SHRINK-LATENCY", layer="sync", on=("ha.conn-closed", "brk.alter", "ctl.apply"),
           source="AutoSwitchHAConnection (both socket services stop) -> AutoSwitchHAService.removeConnection (a "
                  "member of the local SyncStateSet: markSynchronizingSyncStateSet, notifySyncStateSetChanged) -> "
                  "ReplicasManager.doReportSyncStateSetChanged (alterSyncStateSet) -> "
                  "ReplicasInfoManager.alterSyncStateSet",
           exceptions="a master that is not the controller's at its masterEpoch, or not RUNNING; another fault acts or "
                      "is in force between the close and the bound; a new election; a shrink proposal the controller "
                      "refuses (two members closed at once: removeConnection builds the second proposal from the "
                      "local set the first has not changed yet, and the SyncStateSet epoch has moved): the lag check "
                      "retries it")
def shrink_latency(ctx: Context, obs: HaConnClosed | BrkAlter | CtlApply) -> Violated | None:
    """When the controller's master closes the HA connection of a member of its SyncStateSet, the controller's
    SyncStateSet drops that member within two controller RPCs (``shrink_bound``), not at the lag check's
    haMaxTimeSlaveNotCatchup, unless another fault acts meanwhile."""
    world = ctx.world
    if obs["k"] == "ha.conn-closed":
        return _note_close(ctx, obs)
    if not ctx.shrink_pending:
        return None
    if obs["k"] == "brk.alter":  # a refused shrink: the exception
        if obs["code"] != 0:
            name = obs.get("n", "")
            ctx.shrink_pending = [p for p in ctx.shrink_pending if not (
                p.master == name and p.master_epoch == obs["masterEpoch"] and p.member not in obs["proposal"])]
        return None
    after = obs["after"]
    if not ctx.apply_first or after is None:
        return None
    members = set(after.get("syncStateSet") or [])
    for p in list(ctx.shrink_pending):
        if p.member in members and after.get("masterEpoch") == p.master_epoch:
            continue
        ctx.shrink_pending.remove(p)
        if after.get("masterEpoch") != p.master_epoch or world.now <= p.deadline \
                or ctx.fault_between(p.closed + 1, p.deadline):
            continue  # a new election settled it another way, in time, or a fault came in between
        return violated(f"the controller's SyncStateSet dropped member {p.member} {world.now - p.closed} ms after "
                        f"master {p.master} closed its HA connection at {p.closed} ms, past the bound of "
                        f"{p.deadline - p.closed} ms with no other fault meanwhile",
                        syncStateSet=sorted(members), event=obs["event"])
    return None


def _note_close(ctx: Context, obs: HaConnClosed) -> Violated | None:
    world = ctx.world
    name, member = obs.get("n", ""), obs.get("slaveId")
    node = world.broker(name)
    if member is None or not isinstance(node, BrokerNode) or world.disturbed():
        return None
    ctl = world.controller_node()
    info = ctl.rim.sync_state_set_info_table.get(world.broker_name) if ctl is not None else None
    rm = node.replicas
    if info is None or info.master_broker_id != rm.broker_controller_id or info.master_epoch != rm.master_epoch \
            or rm.state.value != "RUNNING" or node.store.role != BrokerRole.SYNC_MASTER \
            or member not in info.sync_state_set or member not in node.ha.sync_state_set:
        return None
    ctx.shrink_pending = [p for p in ctx.shrink_pending if p.deadline >= world.now - 60_000]
    if any(p.member == member and p.master_epoch == rm.master_epoch for p in ctx.shrink_pending):
        return None
    bound = shrink_bound(rm.cfg.rpc_timeout, world.net_delay)
    ctx.shrink_pending.append(ShrinkPending(name, world.inc[name], member, rm.master_epoch, world.now,
                                            world.now + bound))
    return None
