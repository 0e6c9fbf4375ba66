"""Store invariants (STORE-*): what a broker's commit log holds (``CommitLog``, ``MappedFileQueue``) and what
recovery makes of it after a crash (``recoverNormally`` / ``recoverAbnormally``)."""

from __future__ import annotations

from .context import Context, LogView
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
