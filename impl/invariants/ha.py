"""HA invariants (HA-*, EPOCH-*): the master/slave transfer of the commit log (``AutoSwitchHAConnection``,
``AutoSwitchHAClient``) and the epoch file that makes a returning replica's truncation safe (``EpochFileCache``)."""

from __future__ import annotations

import bisect
import itertools

from ..broker.broker import BrokerNode
from ..codes import HAConnectionState
from ..ha.client import RETRY_WAIT
from ..observations import (
    HaAccept,
    HaClientClose,
    HaClientConnect,
    HaHandshakeDone,
    HaSlaveAppend,
    HaTransfer,
    HaTransferStart,
    HaTruncate,
    HaTruncateUnaligned,
)
from ..store.offsets import base_of
from .context import Context, LogView, PairCache
from .registry import Violated, invariant, violated


@invariant("HA-EPOCH-BOUNDARY", layer="ha", on=("ha.transfer",),
           source="AutoSwitchHAConnection.transferToSlave; changeTransferEpochToNext",
           exceptions="changeToMasterWhenLastRoleIsMaster keeps connections on the old epoch (#9689, fixed by #9690 "
                      "in 5.3.4)")
def epoch_boundary(ctx: Context, obs: HaTransfer) -> Violated | None:
    """Every transfer batch has a non-negative size and lies in one epoch of the master (it crosses no epoch
    boundary), and its header names an epoch entry of the master: the batch's own, or (RocketMQ builds the header
    after switching) the next one starting exactly at the batch's end."""
    offset, size = obs["offset"], obs["size"]
    if size < 0:  # transferToSlave: size = epoch end - nextTransferFromWhere, with the end below the position
        return violated(f"batch [{offset}, {offset + size}) has a negative size ({size}): it lies in no epoch of the "
                        f"master (header epoch {obs['epoch']}, start {obs['start']})", obs=obs)
    if obs["epoch"] is None:
        return None
    entries = obs["entries"]
    starts = [s for _, s in entries]
    idx = bisect.bisect_right(starts, offset) - 1
    if idx < 0:
        return violated(f"batch at {offset} precedes every epoch of the master", obs=obs)
    epoch_end = starts[idx + 1] if idx + 1 < len(starts) else None
    end = offset + size
    if epoch_end is not None and end > epoch_end:
        return violated(f"batch [{offset}, {end}) labelled epoch {obs['epoch']} crosses the start {epoch_end} of "
                        f"epoch {entries[idx + 1][0]}", obs=obs)
    own = tuple(entries[idx])
    nxt = tuple(entries[idx + 1]) if idx + 1 < len(entries) else None
    label = (obs["epoch"], obs["start"])
    if label != own and not (nxt is not None and label == nxt and nxt[1] == end):
        return violated(f"batch [{offset}, {end}) lies in epoch {own} but its header says {label}", obs=obs)
    return None


@invariant("HA-TRANSFER-START", layer="ha", on=("ha.transfer-start",),
           source="AutoSwitchHAConnection.WriteSocketService.run (TRANSFER, nextTransferFromWhere == -1: the slave's "
                  "slaveRequestOffset, or for 0 with isSyncFromLastFile CommitLog.getMaxOffset minus its remainder by "
                  "mappedFileSizeCommitLog, else CommitLog.getMinOffset)",
           exceptions="the kit's logs that start inside a mapped file ([sim] base_offset; RocketMQ's getMinOffset is a "
                      "file start, never above the last file's): there the last file's start is taken no lower than "
                      "the log's first offset")
def transfer_start(ctx: Context, obs: HaTransferStart) -> Violated | None:
    """A master starts its transfer to a slave where the slave's first report says its log ends; a slave with an
    empty log (it reports 0) gets the master's log from a file start: with syncFromLastFile, the start of the
    master's last commit-log file (the file its log end falls in), else the log's first offset."""
    request, position = obs["request"], obs["position"]
    if request != 0:
        want, why = request, "where the slave's first report says its log ends"
    elif obs["lastFile"]:
        end, size = obs["max"], obs["fileSize"]
        want = max(obs["min"], end - end % size)
        why = f"the start of the master's last commit-log file (log end {end}, files of {size} bytes)"
    else:
        want, why = obs["min"], "the master's first log offset (the slave asked for no last-file sync)"
    if position != want:
        return violated(f"connection {obs['conn']} to slave {obs['slave']} (first report {request}) starts its "
                        f"transfer at {position}, not at {want}: {why}", obs=obs)
    return None


@invariant("HA-CONTIGUOUS", layer="ha", on=("ha.slave-append",),
           source="AutoSwitchHAClient.HAClientReader (TRANSFER offset check)")
def contiguous(ctx: Context, obs: HaSlaveAppend) -> Violated | None:
    """A slave appends transferred bytes only at its own max offset (or anywhere when empty)."""
    if obs["max"] != 0 and obs["offset"] != obs["max"]:
        return violated(f"{obs.get('n')} appended bytes for offset {obs['offset']} at its end {obs['max']}", obs=obs)
    return None


@invariant("HA-ACK-BOUND", layer="ha", reads=("brokers",), per_broker=True,
           source="AutoSwitchHAClient.reportSlaveMaxOffset (reports messageStore.getMaxPhyOffset after "
                  "HAClientReader.processReadResult appended a whole frame's body)",
           exceptions="a slave's log shrinks only in a handshake, which also resets the reported offset; a power loss "
                      "restarts the process (and its client)")
def ack_bound(ctx: Context, b: str, log: LogView) -> Violated | None:
    """A slave never acks bytes it does not hold: the max offset its HA client last reported is at most its own log
    end."""
    node = log[2]
    if not isinstance(node, BrokerNode):
        return None
    client = node.ha.client
    if client is not None and client.conn is not None and client.current_reported_offset > node.store.max_phy_offset:
        return violated(f"{b} reported offset {client.current_reported_offset} to its master but its log ends at "
                        f"{node.store.max_phy_offset}", broker=b)
    return None


@invariant("HA-LOG-MATCHING", layer="ha", reads=("brokers",),
           source="one master per epoch; AutoSwitchHAClient.doTruncate; EpochFileCache.appendEntry",
           exceptions="the stale end after truncateSuffixByOffset; the #9689 quirk; a log that starts past the "
                      "epoch's start (a replica that joined with syncFromLastFile) is compared from its first offset")
def log_matching(ctx: Context) -> Violated | None:
    """If two replicas hold the same epoch entry (epoch, start), their logs are byte-identical from start to the
    smaller of the two ends of that epoch."""
    logs = ctx.logs()
    disks = ctx.world.disks
    # each log as last verified: (name, file generation, length, epoch entries)
    keys = tuple((name, disks[name].generation, len(log[0]), tuple(log[1])) for name, log in sorted(logs.items()))
    if keys == ctx.logs_verified:
        return None  # no log and no epoch list moved since every pair was last verified
    ctx.logs_verified = keys
    for i, ka in enumerate(keys):
        a, da, ea = ka[0], logs[ka[0]][0], ka[3]
        for kb in keys[i + 1:]:
            bname, db, eb = kb[0], logs[kb[0]][0], kb[3]
            if ctx.pair_fp.get((a, bname)) == (ka, kb):
                continue  # neither log nor epoch list moved since this pair was last verified
            ctx.pair_fp[(a, bname)] = (ka, kb)
            shared = _shared_epochs(ctx, a, bname, ea, eb)
            if not shared:
                continue
            gens = (ka[1], kb[1])
            la, lb = ka[2], kb[2]
            for epoch, start, next_a, next_b in shared:
                # an epoch ends where the next one starts, or at the log end if that comes first (a power loss or a
                # truncation can leave the epoch file naming a start past the log)
                end_a = la if next_a is None else min(next_a, la)
                end_b = lb if next_b is None else min(next_b, lb)
                hi = min(end_a, end_b)
                ckey = (a, bname, epoch, start)
                cached = ctx.pairs.get(ckey)
                # a log that starts past the epoch's start (a replica that synced from its master's last file:
                # AutoSwitchHAConnection's syncFromLastFile) holds nothing before its first offset to compare
                lo = max(start, base_of(da), base_of(db))
                if cached is not None and cached.key == gens:
                    lo = max(lo, min(cached.verified, hi))
                if hi > lo and da[lo:hi] != db[lo:hi]:
                    at = next(j for j in range(lo, hi) if da[j] != db[j])
                    ctx.pair_fp.pop((a, bname), None)  # re-checked (and reported) on the next pass
                    ctx.logs_verified = None
                    return violated(f"{a} and {bname} share epoch {epoch} from {start} but differ at byte {at} "
                                    f"(epoch ends {end_a} / {end_b})", entries={a: logs[a][1], bname: logs[bname][1]})
                ctx.pairs[ckey] = PairCache(max(hi, lo), gens)
    return None


def _shared_epochs(ctx: Context, a: str, b: str, ea: tuple[tuple[int, int], ...],
                   eb: tuple[tuple[int, int], ...]) -> list[tuple[int, int, int | None, int | None]]:
    """The (epoch, start) entries two epoch lists share, in order, each with the start of the entry after it on
    either side (None: the epoch runs to the log end). Cached per pair until either list changes."""
    cached = ctx.shared.get((a, b))
    if cached is not None and cached[0] == ea and cached[1] == eb:
        return cached[2]
    next_a = _next_starts(ea)
    next_b = _next_starts(eb)
    shared = [(e, st, next_a[e], next_b[e]) for e, st in sorted(set(ea) & set(eb))]
    ctx.shared[(a, b)] = (ea, eb, shared)
    return shared


def _next_starts(entries: tuple[tuple[int, int], ...]) -> dict[int, int | None]:
    """Each epoch's next entry start, or None for the last one (whose end is the log end)."""
    return {e: (entries[i + 1][1] if i + 1 < len(entries) else None) for i, (e, _) in enumerate(entries)}


@invariant("HA-TRUNCATE-PREFIX", layer="ha", on=("ha.truncate", "ha.handshake-done"),
           source="EpochFileCache.findConsistentPoint + DefaultMessageStore.truncateFiles in "
                  "AutoSwitchHAClient.doTruncate",
           exceptions="an empty local epoch cache truncates nothing; a serving broker whose log ends before the "
                      "handshake's masterMax cut it after building the handshake (its own AutoSwitchHAClient.doTruncate"
                      ": a slave serving a follower with a stale HA address), so the handshake's basis is gone and the "
                      "connection closes before it transfers (AutoSwitchHAConnection.transferToSlave past the log end)")
def truncate_prefix(ctx: Context, obs: HaTruncate | HaHandshakeDone) -> Violated | None:
    """After a successful handshake the slave's log is a prefix of the log of the broker it connected to, and its
    truncation point is not past its own log end."""
    if obs["k"] == "ha.truncate":
        if obs["point"] > obs["before"]:  # findConsistentPoint takes min(local end, master end): never past the log
            return violated(f"{obs.get('n')} truncated to {obs['point']}, past its own log end {obs['before']}: it "
                            "will report bytes it does not hold", obs=obs)
        return None
    world = ctx.world
    slave = world.broker(obs.get("n", ""))
    peer = world.ha_peer(obs["conn"]) if obs["conn"] is not None else None
    if slave is None or peer is None:
        return None
    master = world.broker(peer)
    if master is None or master.store.max_phy_offset < obs["masterMax"]:
        return None  # no broker there, or it cut its log since it described it in this handshake (see exceptions)
    n = slave.store.max_phy_offset
    mdata = master.store.commitlog.data
    sdata = slave.store.commitlog.data
    # logs past offset 0 ([sim] base_offset, or a slave that synced from its master's last file: syncFromLastFile)
    # index from their base, and are compared from the later one
    first = max(base_of(mdata), base_of(sdata))
    if len(mdata) < n or mdata[first:n] != sdata[first:n]:
        diverge = next((i for i in range(first, min(n, len(mdata))) if mdata[i] != sdata[i]), min(n, len(mdata)))
        return violated(f"after the handshake {obs.get('n')} holds {n} bytes but they differ from {peer}'s log at "
                        f"byte {diverge} (its log has {len(mdata)})", obs=obs)
    return None


@invariant("EPOCH-FILE-WF", layer="ha", reads=("brokers",), per_broker=True,
           source="EpochFileCache.appendEntry / initEntries")
def epoch_file_wf(ctx: Context, b: str, log: LogView) -> Violated | None:
    """A broker's epoch entries have strictly increasing epochs and starts, and each entry but the last ends where
    the next starts."""
    _, entries, node = log
    for (e1, s1), (e2, s2) in itertools.pairwise(entries):
        if not (e1 < e2 and s1 < s2):
            return violated(f"{b} has epoch entries {entries}", broker=b)
    if node is not None:
        for x, y in itertools.pairwise(node.store.epoch_cache._map.values()):
            if x.end_offset != y.start_offset:
                return violated(f"{b}: entry {x.to_list()} does not end where {y.to_list()} starts", broker=b)
    return None


@invariant("HA-TRUNCATE-REFUSED-UNALIGNED", layer="ha", on=("ha.truncate-unaligned",),
           source="AutoSwitchHAClient.doTruncate -> DefaultMessageStore.truncateFiles (false only when "
                  "CommitLog.isOffsetAligned refuses the offset: nothing is cut then)",
           exceptions="none: a truncation that went through reaches TRANSFER")
def truncate_refused_unaligned(ctx: Context, obs: HaTruncateUnaligned) -> Violated | None:
    """A slave's handshake gives up over its truncation only when the consistent point lies inside a message of
    its log; its log is then left as it was. (A truncation that went through takes the connection to TRANSFER: no
    reconnect that no fault caused.)"""
    name, point = obs.get("n", ""), obs["point"]
    node = ctx.world.broker(name)
    if not isinstance(node, BrokerNode):
        return None
    log = node.store.commitlog
    end = node.store.max_phy_offset
    if point >= end or log.is_aligned(point):
        there = "nothing follows" if point >= end else "a whole message starts"
        return violated(f"{name} gave up its handshake as if {point} were inside a message, but its log ends at "
                        f"{end} and {there} there", obs=obs)
    return None


def connect_bound(net_delay: int) -> int:
    """HA-CLIENT-WAKEUP's bound: ``AutoSwitchHAClient.wakeup`` ends the loop's wait at once and ``connectMaster``
    opens the socket; the master accepts within a TCP handshake's round trip (SYN, SYN-ACK: 2 × the one-way delay)."""
    return 2 * net_delay


@invariant("HA-CLIENT-WAKEUP", layer="ha", on=("ha.accept",), reads=("brokers",),
           source="BrokerController / ReplicasManager: handleRegisterBrokerResult -> "
                  "AutoSwitchHAService.updateHaMasterAddress -> AutoSwitchHAClient.updateHaMasterAddress (wakeup when "
                  "READY with no connection) -> connectMaster",
           exceptions="the address names a broker that is down; a fault acts or is in force from a retry wait before "
                      "the client is seen idle to the accept (a failed connect waits 5 s, by design)")
def client_wakeup(ctx: Context, obs: HaAccept | None = None) -> Violated | None:
    """A slave's HA client that is READY, holds no connection and learns a new master HA address connects to it at
    once: the master accepts within a TCP handshake (``connect_bound``), not at the loop's next 5 s wait."""
    world = ctx.world
    if obs is not None:
        peer = obs["peer"]
        ctx.ha_accepted[peer] = world.now
        seen = ctx.wakeup_pending.pop(peer, None)
        if seen is None:
            return None
        since, learnt = seen
        bound = connect_bound(world.net_delay)
        if world.now - since > bound and not ctx.fault_between(since - RETRY_WAIT, world.now):
            return violated(f"{peer}'s HA client, READY with no connection, had the master HA address {learnt} at "
                            f"{since} ms; {obs.get('n')} accepted its connection {world.now - since} ms later (bound "
                            f"{bound} ms) with no fault meanwhile", obs=obs)
        return None
    for b in world.brokers:
        node = world.broker(b)
        client = node.ha.client if isinstance(node, BrokerNode) else None
        if client is None:
            ctx.ha_clients.pop(b, None)
            continue
        key, addr = (world.inc[b], client.generation), client.master_ha_address
        prev = ctx.ha_clients.get(b)
        ctx.ha_clients[b] = (key, addr, world.now)
        idle = client.state == HAConnectionState.READY and client.conn is None and not client.connecting
        if not idle:
            ctx.wakeup_pending.pop(b, None)
            continue
        if prev is None or prev[0] != key or prev[1] == addr or not addr or b in ctx.wakeup_pending \
                or ctx.ha_accepted.get(b, -1) >= prev[2]:
            continue  # no new address, or it did connect since (and that connection has closed again)
        target = world.broker(addr.split(":")[0])
        if target is not None and not world.disturbed():
            ctx.wakeup_pending[b] = (world.now, addr)
    return None


LEGACY_RETRY_WAIT = 5000
"""4.x ``HAService.HAClient.run``: ``waitForRunning(1000 * 5)`` when ``connectMaster`` fails or the loop catches an
exception."""


@invariant("HA-LEGACY-RECONNECT", layer="ha", on=("ha.client-close", "ha.client-connect"),
           source="4.x HAService.HAClient.run: a closed stream (processReadEvent false), a push at the wrong offset, "
                  "a failed report or housekeeping -> closeMaster, and the loop's next round calls connectMaster at "
                  "once; connectMaster false (the connect failed) or an exception -> waitForRunning(1000 * 5)",
           exceptions="a paused slave (its thread does not run) connects late; a restarted slave is a new client (its "
                      "first connect follows its start)")
def legacy_reconnect(ctx: Context, obs: HaClientClose | HaClientConnect) -> Violated | None:
    """A 4.x slave's HA client connects to its master again at once after its connection closed, and exactly 5 s
    after a connect that failed (or a push it could not parse): ``HAClient.run`` waits only when ``connectMaster``
    fails."""
    world = ctx.world
    if not world.legacy:
        return None
    name = obs.get("n", "")
    inc, now = world.inc[name], world.now
    if obs["k"] == "ha.client-close":
        wait = LEGACY_RETRY_WAIT if obs["reason"].startswith("bad frame") else 0
        ctx.legacy_reconnect[name] = (inc, now, wait, f"its connection closed ({obs['reason']})")
        return None
    if obs.get("failed"):
        ctx.legacy_reconnect[name] = (inc, now, LEGACY_RETRY_WAIT, "its connect failed")
        return None
    prev = ctx.legacy_reconnect.pop(name, None)
    if prev is None or prev[0] != inc:
        return None
    _, since, wait, what = prev
    if now == since + wait or (now > since + wait and world.is_paused(name)):
        return None
    return violated(f"{name}'s HA client connected to {obs['addr']} {now - since} ms after {what} at {since} ms; "
                    f"RocketMQ's HAClient.run connects again {wait} ms after that", obs=obs)
