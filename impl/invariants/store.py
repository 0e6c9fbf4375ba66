"""Store invariants (STORE-*): what a broker's commit log holds (``CommitLog``, ``MappedFileQueue``) and what
recovery makes of it after a crash (``recoverNormally`` / ``recoverAbnormally``)."""

from __future__ import annotations

from ..broker.broker import BrokerNode
from ..store.message import check
from .context import Context, LogView
from .queues import settle_ms
from .registry import Violated, invariant, violated


@invariant("STORE-NO-SPAN-FILE", layer="store", reads=("brokers",), per_broker=True,
           source="CommitLog.DefaultAppendMessageCallback.doAppend (END_OF_FILE, BLANK_MAGIC_CODE) + "
                  "ReputMessageService.doReput / recoverAbnormally (a filler rolls to the next file)",
           exceptions="only with [sim] file_boundaries")
def no_span_file(ctx: Context, b: str, view: LogView) -> Violated | None:
    """No message crosses the end of a mapped file: a message that does not fit in what is left of a file (keeping 8
    bytes for a filler) goes to the next file, after a filler that closes this one."""
    node = view[2]
    if node is None:
        return None
    log = node.store.commitlog
    if log.spans and log.file_size:
        pos, size = log.spans[0]
        return violated(f"{b} holds a {size}-byte record at {pos} that crosses the end of its {log.file_size}-byte "
                        "mapped file", broker=b)
    return None


@invariant("STORE-NO-RESURRECT", layer="store", reads=("brokers",), per_broker=True,
           source="CommitLog.recoverNormally / recoverAbnormally (scan to the first invalid message) after "
                  "MappedFileQueue.truncateDirtyFiles (moves the write position, leaves the bytes)")
def no_resurrect(ctx: Context, b: str, view: LogView) -> Violated | None:
    """Recovery never brings back bytes a broker no longer had: the log a restarted broker recovers ends at or before
    where its files ended when its process went."""
    node = view[2]
    if node is None or b not in ctx.crash_end or ctx.world.inc.get(b, 0) <= 0:
        return None
    was = ctx.crash_end.pop(b)  # the checker noted it at the crash; one look after the restart
    if node.store.max_phy_offset > was:
        return violated(f"{b} recovered a log ending at {node.store.max_phy_offset}, past {was} where it ended when "
                        "its process went", broker=b)
    return None


@invariant("STORE-WHOLE-MESSAGES", layer="store", reads=("brokers",), per_broker=True,
           source="CommitLog.checkMessageAndReturnSize; AutoSwitchHAService.truncateInvalidMsg; recovery")
def whole_messages(ctx: Context, b: str, view: LogView) -> Violated | None:
    """Every commit log is a sequence of whole, valid messages (and end-of-file fillers), except for an incomplete
    last one."""
    node = view[2]
    if node is None:
        return None
    log = node.store.commitlog
    if log.torn:
        return violated(f"{b} holds bytes at {log.torn[0]} that are not a message, followed by more data (log end "
                        f"{log.max_offset})", broker=b, torn=log.torn[:5])
    return None


def reput_idles_over_work(node: BrokerNode, now: int) -> bool:
    """Whether the broker's reput thread sits idle (no pass due, no stall) while the record at its reput offset is one
    it could take: a whole message, or an end-of-file filler, that ends at or before its reput end (a pass dispatches
    the one and rolls to the next file over the other)."""
    st = node.store
    if node.reput_pending or now < node.reput_stalled_until:
        return False
    pos, end, buf = st.reput_from_offset, st.peek_reput_end(), st.commitlog.data
    if pos >= min(end, len(buf)):
        return False
    size, _ = check(buf, pos, len(buf))
    return size > 0 and pos + size <= end


@invariant("STORE-REPUT-DRAINS", layer="store", reads=("brokers",), per_broker=True,
           source="ReputMessageService.run (doReput every 1 ms) / doReput (dispatches every whole message up to "
                  "getReputEndOffset, rollNextFile over an end-of-file filler, and goes on)",
           exceptions="a paused broker; a reput stalled (fault slow-dispatch) or due to run (reputIntervalMs, the "
                      "next sub-step of an interleaved pass); a record that is not a whole message (a corrupt one "
                      "stops the reput for good on a slave: doNext = false); a 4.x broker")
def reput_drains(ctx: Context, b: str, view: LogView) -> Violated | None:
    """A broker's reput thread never sits idle for longer than the settle time before a record it could dispatch: a
    whole message or end-of-file filler at its reput offset that ends at or before its reput end (confirmOffset).

    ``ReputMessageService`` polls ``doReput`` every 1 ms and a pass goes on over a filler to the next file, so such a
    record waits at most a poll in RocketMQ; the kit runs the pass in the step that gives it work. The settle time is
    QUEUE-CONFIRMED-DISPATCHED's (100 reput periods: ``queues.settle_ms``). The checker notes, for every broker a step
    touches (timers, heartbeats, pulls, HA frames), since when its reput has sat idle so (``Context.reput_idle``); that
    catches a pass that stops early and waits for the next confirmOffset change, which QUEUE-CONFIRMED-DISPATCHED,
    checked once at the run's end, sees only when that change is the run's last."""
    node = view[2]
    if not isinstance(node, BrokerNode):
        return None
    world = ctx.world
    since = ctx.reput_idle.get(b)
    settle = settle_ms(world.store_config)
    if since is None or since[0] != world.inc[b] or world.now - since[1] <= settle:
        return None
    st = node.store
    return violated(f"{b}'s reput has sat idle at {st.reput_from_offset} since {since[1]} ({world.now - since[1]} ms, "
                    f"settle {settle} ms) before a record it could dispatch (reput end {st.peek_reput_end()})",
                    broker=node.status(), reput=st.reput_from_offset, since=since[1])
