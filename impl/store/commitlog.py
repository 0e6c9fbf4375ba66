"""The commit log and the parts of ``DefaultMessageStore`` the HA logic touches.

Rules (``S/CommitLog.java``, ``S/DefaultMessageStore.java``, ``AutoSwitchHAService.computeConfirmOffset``):

* The log is bytes ``[0, max)``; messages are appended whole on a master and as raw byte ranges on a slave
  (a batch may end inside a message).
* ``flushed`` trails ``max``: ASYNC_FLUSH flushes every 500 ms once 4 pages are dirty, and everything
  every 10 s; SYNC_FLUSH flushes before a put completes.
* confirmOffset (controller mode): on a master that is not fenced, ``max`` when the local SSS has one
  member or allAck is off; otherwise the stored value (computed lazily when negative). On a slave or while
  fenced: the stored value. Setting it also writes ``StoreCheckpoint.confirmPhyOffset``. Non-controller
  mode: the flushed offset under SYNC_FLUSH, else ``max``.
* Reput dispatches whole messages ending at or before the reput end (confirmOffset, or ``max`` with
  ``readUnCommitted``); consumers see only dispatched messages. ``dispatchBehindBytes`` =
  confirmOffset - reputFromOffset.
* ``truncateDirtyFiles(p)``: cut the log at ``p``, lower flushed and confirmOffset to ``p``, move reput
  back to ``min(reput, p)``. ``truncateFiles(p)``: no-op when ``p >= max``; fails unless ``p`` starts a message.
* Recovery after a crash scans from the start, keeps whole valid messages, truncates the rest, clamps
  confirmOffset to the last whole confirmed message, and restarts reput at confirmOffset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import bugs as B
from ..codes import BrokerRole
from ..config import MessageStoreConfig
from .disk import BrokerDisk
from .epoch_cache import EpochFileCache
from .message import END_FILE_MIN_BLANK_LENGTH, Record, body_for, check, encode, encode_blank, queue_body, queue_of
from .offsets import base_of

PAGE = 4096


class CommitLog:
    """The byte log with an index of the whole messages it holds (for reads and for the checkers)."""

    def __init__(self, disk: BrokerDisk, track_queues: bool = False, file_size: int = 0) -> None:
        self.disk = disk
        # [sim] file_boundaries: the mapped-file size appends respect (a filler closes a file a message does not
        # fit in); 0: one unbounded file, as before. ``spans``: records that cross a file end (STORE-NO-SPAN-FILE).
        self.file_size = file_size
        self.spans: list[tuple[int, int]] = []
        self.spans_allowed = False  # switch append-spans-file: the master appends across a file end
        # [workload] queues: per queue, the last queue offset in log order, and every place where the next message
        # of a queue did not carry the next offset (QUEUE-OFFSET-GAPLESS): (offset, queueId, queueOffset, expected)
        self.track_queues = track_queues
        self.queue_last: dict[int, int] = {}
        self.queue_anomalies: list[tuple[int, int, int, int]] = []
        self.records: list[Record] = []
        self.ends: list[int] = []  # end offset of each record, for bisection
        self.keys: dict[str, list[int]] = {}  # key -> offsets of its whole copies (a resent message repeats)
        self.parsed_upto = self.min_offset  # end of the last indexed message, or the first torn byte
        self.torn: list[int] = []  # offsets where a non-message sits before more data
        self.version = 0  # bumped on every change (checkers cache on it)
        self.truncations = 0
        self._index()

    @property
    def data(self) -> bytearray:
        return self.disk.commitlog

    @property
    def max_offset(self) -> int:
        return len(self.disk.commitlog)

    @property
    def min_offset(self) -> int:
        """``getMinOffset``: 0, or the base of a log that starts later ([sim] base_offset)."""
        return base_of(self.disk.commitlog)

    def _index(self) -> None:
        buf = self.disk.commitlog
        end = len(buf)
        pos = self.parsed_upto
        while pos < end:
            size, key = check(buf, pos, end)
            if size > 0 and key is None:  # an end-of-file filler: nothing to index, the next file follows
                self._note_span(pos, size)
                pos += size
                continue
            if size > 0:
                self._note_span(pos, size)
                self.records.append(Record(pos, size, key))  # type: ignore[arg-type]  # a filler has no key: above
                self.ends.append(pos + size)
                if self.track_queues:
                    self._note_queue(buf, pos)
                self.keys.setdefault(key, []).append(pos)  # type: ignore[arg-type]  # not a filler: a key
                pos += size
                continue
            if size == 0:
                break
            # not a message, yet bytes follow: a torn region. Resynchronise at the next whole message.
            self.torn.append(pos)
            nxt = pos + 1
            while nxt < end and check(buf, nxt, end)[0] <= 0:
                nxt += 1
            pos = nxt
        self.parsed_upto = pos

    def _note_span(self, pos: int, size: int) -> None:
        f = self.file_size
        if f and pos // f != (pos + size - 1) // f:
            self.spans.append((pos, size))

    def _note_queue(self, buf: bytearray, pos: int) -> None:
        q = queue_of(buf, pos)
        if q is None:
            return
        qid, qoff = q
        expected = self.queue_last.get(qid, -1) + 1
        if qoff != expected:
            self.queue_anomalies.append((pos, qid, qoff, expected))
        self.queue_last[qid] = max(qoff, self.queue_last.get(qid, -1))

    def _reindex_queues(self) -> None:
        self.queue_last = {}
        self.queue_anomalies = []
        buf = self.disk.commitlog
        for rec in self.records:
            self._note_queue(buf, rec.offset)

    def append_message(self, key: str, body_size: int, born: int,
                       queue: tuple[int, int] | None = None) -> tuple[int, int]:
        """Master put: returns (wroteOffset, wroteBytes). ``queue``: (queueId, queueOffset) to carry."""
        offset = len(self.disk.commitlog)
        body = body_for(key, body_size) if queue is None else queue_body(key, body_size, *queue)
        raw = encode(key, body, offset, born)
        if self.file_size and not self.spans_allowed:
            room = self.file_size - offset % self.file_size  # maxBlank
            if len(raw) + END_FILE_MIN_BLANK_LENGTH > room:  # END_OF_FILE: a filler, then a new mapped file
                self.disk.commitlog += encode_blank(room)
                offset += room
                raw = encode(key, body, offset, born)
        self.disk.commitlog += raw
        self.version += 1
        self._index()
        return offset, len(raw)

    def append_data(self, data: bytes) -> None:
        """Slave append of a transferred byte range at the current end (``appendData``)."""
        self.disk.commitlog += data
        self.version += 1
        self._index()

    def truncate(self, offset: int) -> None:
        if offset >= len(self.disk.commitlog):
            return
        self.disk.truncated(offset)
        del self.disk.commitlog[offset:]
        self.disk.flushed = min(self.disk.flushed, offset)
        self.disk.generation += 1
        while self.records and self.records[-1].offset + self.records[-1].size > offset:
            rec = self.records.pop()
            self.ends.pop()
            copies = self.keys[rec.key]
            copies.pop()
            if not copies:
                del self.keys[rec.key]
        self.torn = [t for t in self.torn if t < offset]
        self.spans = [s for s in self.spans if s[0] < offset]
        self.parsed_upto = self.records[-1].offset + self.records[-1].size if self.records else self.min_offset
        if self.torn and self.torn[-1] >= self.parsed_upto:
            self.parsed_upto = min(self.parsed_upto, self.torn[-1])
        self.version += 1
        self.truncations += 1
        if self.track_queues:
            self._reindex_queues()
        self._index()

    def whole_end(self) -> int:
        """End of the last whole message."""
        return self.ends[-1] if self.ends else self.min_offset

    def is_aligned(self, offset: int) -> bool:
        """``isOffsetAligned``: no data at ``offset``, or a whole valid message starts there."""
        if offset >= len(self.disk.commitlog):
            return True
        return check(self.disk.commitlog, offset, len(self.disk.commitlog))[0] > 0

    def get_data(self, offset: int, file_size: int) -> int:
        """``getCommitLogData``: bytes readable from ``offset`` without crossing a mapped-file end."""
        end = len(self.disk.commitlog)
        if offset < 0 or offset >= end:
            return 0
        file_end = (offset // file_size + 1) * file_size
        return min(end, file_end) - offset

    def read(self, offset: int, size: int) -> bytes:
        return bytes(self.disk.commitlog[offset:offset + size])

    def flush(self) -> None:
        self.disk.flushed = len(self.disk.commitlog)
        self.disk.checkpoint_confirm_flushed = self.disk.checkpoint_confirm


class HAView:
    """What the store asks of the HA service to compute confirmOffset."""

    def local_sync_state_set_size(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def compute_confirm_offset(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass
class Dispatched:
    offset: int
    size: int
    key: str
    queue: int = -1  # [workload] queues: the topic queue and queue offset the message carries
    qoff: int = -1


class MessageStore:
    """``DefaultMessageStore`` + the role-dependent half of ``CommitLog``."""

    def __init__(self, disk: BrokerDisk, cfg: MessageStoreConfig, controller_mode: bool = True,
                 bugs: frozenset[str] = frozenset(), queues: int = 0, file_boundaries: bool = False) -> None:
        self.disk = disk
        self.cfg = cfg
        self.queues = queues
        # ConsumeQueue per queue id: queue offset -> the message there; the topicQueueTable (next offset per queue)
        self.consume_queues: dict[int, dict[int, Dispatched]] = {}
        self.topic_queue_table: dict[int, int] = {}
        self.controller_mode = controller_mode
        self.commitlog = CommitLog(disk, track_queues=queues > 0,
                                   file_size=cfg.mapped_file_size_commit_log if file_boundaries else 0)
        self.commitlog.spans_allowed = B.APPEND_SPANS_FILE in bugs
        self.epoch_cache = EpochFileCache(disk.write_epoch_file)
        self.epoch_cache.unchecked = B.EPOCH_APPEND_UNCHECKED in bugs
        self.keep_split_confirm = B.RECOVER_KEEPS_SPLIT_CONFIRM in bugs
        if disk.epoch_file:
            self.epoch_cache.init_cache_from_file(disk.epoch_file)
        self.role = BrokerRole(cfg.broker_role) if not controller_mode else BrokerRole.ASYNC_MASTER
        self.fenced = controller_mode
        self.ha: HAView | None = None
        self.confirm_offset = disk.checkpoint_confirm  # loadCheckPoint
        self.reput_from_offset = 0
        self.dispatched: list[Dispatched] = []
        self.on_truncate: Callable[[int], None] | None = None
        self.fix_normal = B.FIX_RECOVER_NORMALLY_UP_TO_CONFIRM in bugs
        self.confirms_scan_end = B.RECOVER_CONFIRMS_SCAN_END in bugs
        self.skips_range = B.DISPATCH_SKIPS_RANGE in bugs
        self.stops_at_file_end = B.REPUT_STOPS_AT_FILE_END in bugs
        self._resume_at = -1  # dispatch-skips-range: where the reput goes on from once confirmOffset passes it
        # isTempFileExist: the abort file is there after a crash
        self.recovered_normally = not disk.abort or B.RECOVER_IGNORES_ABORT_FILE in bugs
        self.recover(self.recovered_normally)
        disk.abort = True  # createTempFile: deleted again only by a clean shutdown

    # ---- recovery
    def recover(self, normally: bool = False) -> None:
        """``DefaultMessageStore.recover``: ``CommitLog.recoverNormally`` after a clean shutdown, else
        ``recoverAbnormally``. Both scan whole valid messages (``checkMessageAndReturnSize``) to the first
        invalid one and truncate there; in controller mode the abnormal scan rebuilds the consume queue only up
        to confirmOffset and clamps confirmOffset to the last message it dispatched, while the normal one
        dispatches every message past what the consume queue held (it does not look at confirmOffset) and
        clamps confirmOffset to the scan's end."""
        log = self.commitlog
        # the mapped file still holds bytes past the log's end: a truncation's leftovers ([sim] file_residue), or the
        # zeros after a torn write's prefix (crash-at torn-write); the scan reads them as it reads the file
        tail = self.disk.file_tail(log.max_offset)
        if tail:
            self.disk.residue = b""
            log.append_data(tail)
        process = last_confirm_valid = log.min_offset
        self.recovered_past_confirm = 0  # recoverNormally: the end of what it dispatched past confirmOffset
        self.dispatched = []
        self.consume_queues = {}
        for rec in log.records:
            if log.torn and rec.offset > log.torn[0]:
                break
            process = rec.offset + rec.size
            end = rec.offset + rec.size
            confirmed = end <= self.confirm_offset
            # recoverConsumeQueue: the consume-queue files already hold it, whatever the checkpoint says
            in_files = self.queues > 0 and end <= self.disk.cq_end
            anew = normally and not self.fix_normal and not confirmed and not in_files
            if not self.controller_mode or confirmed or in_files or anew:
                self._dispatch(rec.offset, rec.size, rec.key)
                if confirmed or not self.controller_mode:
                    last_confirm_valid = end
                if anew:
                    self.recovered_past_confirm = end
        if self.controller_mode:
            if self.confirm_offset < log.min_offset:
                self._set_confirm(log.min_offset)
            elif self.confirms_scan_end:  # the deviation: the non-controller branch (the scan's end)
                self._set_confirm(process)
            elif normally and self.confirm_offset > process:
                self._set_confirm(process)
            elif not normally and self.confirm_offset > last_confirm_valid and not self.keep_split_confirm:
                self._set_confirm(last_confirm_valid)
        else:
            self._set_confirm(process)
        log.truncate(process)
        self.disk.flushed = min(self.disk.flushed, process)
        self.reput_from_offset = self.get_confirm_offset_directly() if self.controller_mode else process
        if self.queues:  # the reput goes on after what the consume queues hold (truncateDirtyLogicFiles cut them)
            self.disk.cq_end = min(self.disk.cq_end, process)
            self.reput_from_offset = max(self.reput_from_offset, self.disk.cq_end)
        self.recover_topic_queue_table()

    # ---- consume queues ([workload] queues)
    def _dispatch(self, offset: int, size: int, key: str) -> None:
        """``CommitLogDispatcherBuildConsumeQueue``: the message goes to the consume queue it names, at the queue
        offset it carries (``ConsumeQueue.putMessagePositionInfo``: an offset already built is skipped, "Build
        consume queue repeatedly")."""
        if not self.queues:
            self.dispatched.append(Dispatched(offset, size, key))
            return
        q = queue_of(self.commitlog.data, offset)
        self.disk.cq_end = max(self.disk.cq_end, offset + size)
        d = Dispatched(offset, size, key, *(q if q is not None else (-1, -1)))
        self.dispatched.append(d)
        if q is not None:
            self.consume_queues.setdefault(q[0], {}).setdefault(q[1], d)

    def recover_topic_queue_table(self) -> None:
        """``DefaultMessageStore.recoverTopicQueueTable`` -> ``ConsumeQueueStore.recoverOffsetTable``: each queue's
        next offset is its consume queue's max + 1; in controller mode ``compensateForHA`` (5.2.0+, PR #7690) then
        moves it on past the messages the commit log holds from confirmOffset on, which no consume queue holds yet
        (``_compensate_for_ha``)."""
        if self.queues:
            table = {qid: max(cq) + 1 for qid, cq in self.consume_queues.items() if cq}
            if self.controller_mode:
                self._compensate_for_ha(table)
            self.topic_queue_table = table

    def _compensate_for_ha(self, table: dict[int, int]) -> None:
        """``ConsumeQueueStore.compensateForHA`` (RocketMQ 5.3.3): from ``getConfirmOffset()`` (0 when it is -1), read
        the commit log message by message (``selectOneMessageByOffset``, ``checkMessageAndReturnSize``), passing
        end-of-file fillers (``BLANK_MAGIC_CODE``: ``startReadOffset += size``), and set each message's queue to its
        queue offset + 1, until the first offset that holds no whole valid message (the log's end, a torn tail).
        A start inside a message (a confirmOffset that splits one) reads no message there: the Java reads that
        message's inner bytes as a size and a magic code, finds neither magic code and throws "Unknown magicCode"
        (or gets no buffer); the kit stops, compensating nothing (docs/fidelity.md, part 3)."""
        start = self.get_confirm_offset()
        pos = 0 if start == -1 else start
        buf = self.commitlog.data
        limit = len(buf)
        while pos < limit:
            size, key = check(buf, pos, limit)
            if size <= 0:
                break
            if key is not None:
                q = queue_of(buf, pos)
                if q is not None:
                    table[q[0]] = q[1] + 1
            pos += size

    # ---- offsets
    @property
    def max_phy_offset(self) -> int:
        return self.commitlog.max_offset

    def _set_confirm(self, value: int) -> None:
        self.confirm_offset = value
        self.disk.checkpoint_confirm = value

    def set_confirm_offset(self, value: int) -> None:
        """``CommitLog.setConfirmOffset`` (also saves ``StoreCheckpoint.confirmPhyOffset``)."""
        self._set_confirm(value)

    def get_confirm_offset(self) -> int:
        """``CommitLog.getConfirmOffset``."""
        if self.controller_mode:
            if self.role != BrokerRole.SLAVE and not self.fenced:
                assert self.ha is not None
                if self.ha.local_sync_state_set_size() == 1 or not self.cfg.all_ack_in_sync_state_set:
                    return self.max_phy_offset
                if self.confirm_offset < 0:
                    self._set_confirm(self.ha.compute_confirm_offset())
            return self.confirm_offset
        return self.disk.flushed if self.cfg.flush_disk_type == "SYNC_FLUSH" else self.max_phy_offset

    def get_confirm_offset_directly(self) -> int:
        """``CommitLog.getConfirmOffsetDirectly``: no lazy computation, and (unlike ``getConfirmOffset``) no
        allAckInSyncStateSet shortcut: only a master alone in its local SyncStateSet answers its max offset."""
        if not self.controller_mode:
            return self.max_phy_offset
        if self.role != BrokerRole.SLAVE and not self.fenced:
            assert self.ha is not None
            if self.ha.local_sync_state_set_size() == 1:
                return self.max_phy_offset
        return self.confirm_offset

    def peek_reput_end(self) -> int:
        """``getReputEndOffset`` as a check may read it: ``getConfirmOffset`` without its first-time computation (a
        master whose confirmOffset is still -1 answers -1 here)."""
        if self.cfg.read_uncommitted or not self.controller_mode:
            return self.reput_end_offset()
        if self.role != BrokerRole.SLAVE and not self.fenced:
            assert self.ha is not None
            if self.ha.local_sync_state_set_size() == 1 or not self.cfg.all_ack_in_sync_state_set:
                return self.max_phy_offset
        return self.confirm_offset

    def dispatch_behind_bytes(self) -> int:
        return self.get_confirm_offset() - self.reput_from_offset

    # ---- reput
    def reput_end_offset(self) -> int:
        return self.max_phy_offset if self.cfg.read_uncommitted else self.get_confirm_offset()

    def do_reput(self, is_master_id: bool, batch: int | None = None) -> int:
        """``ReputMessageService.doReput``; returns how many messages were dispatched (at most ``batch``: with
        ``[sim] interleave`` the reput runs a few messages at a time, other threads in between)."""
        end = self.reput_end_offset()
        buf = self.commitlog.data
        limit = len(buf)
        n = 0
        if self._resume_at >= 0 and end >= self._resume_at:  # dispatch-skips-range: over the message it waited for
            self.reput_from_offset = max(self.reput_from_offset, self._resume_at)
            self._resume_at = -1
        while self.reput_from_offset < end and self.reput_from_offset < limit and (batch is None or n < batch):
            size, key = check(buf, self.reput_from_offset, limit)
            if size > 0 and key is None:  # a filler: rollNextFile (nothing to dispatch)
                if self.reput_from_offset + size > end:
                    break
                self.reput_from_offset += size
                if self.stops_at_file_end:  # the deviation: the pass ends at the roll to the next file
                    break
                continue
            if size > 0:
                if self.reput_from_offset + size > end:
                    if self.skips_range:  # the deviation: the offset to go on from moves past the waiting message
                        self._resume_at = self.reput_from_offset + size
                    break
                self._dispatch(self.reput_from_offset, size, key)  # type: ignore[arg-type]  # a filler went above
                self.reput_from_offset += size
                n += 1
                continue
            if self.reput_from_offset + max(size, 0) > end:
                break
            if size < 0 and is_master_id:  # "[BUG]dispatch message to consume queue error": skip the rest
                self.reput_from_offset = limit
            break
        return n

    # ---- truncation
    def truncate_dirty_files(self, offset: int) -> None:
        """``DefaultMessageStore.truncateDirtyFiles``."""
        if offset >= self.max_phy_offset:
            return
        old_reput = self.reput_from_offset
        while self.dispatched and self.dispatched[-1].offset + self.dispatched[-1].size > offset:
            d = self.dispatched.pop()
            cq = self.consume_queues.get(d.queue)
            if cq is not None and cq.get(d.qoff) is d:  # truncateDirtyLogicFiles
                del cq[d.qoff]
        self.commitlog.truncate(offset)
        if self.confirm_offset > offset:
            self._set_confirm(offset)
        self.reput_from_offset = min(old_reput, offset)
        self._resume_at = -1
        self.disk.cq_end = min(self.disk.cq_end, offset)
        self.recover_topic_queue_table()
        if self.on_truncate is not None:
            self.on_truncate(offset)

    def truncate_files(self, offset: int) -> bool:
        """``DefaultMessageStore.truncateFiles`` (the HA client's truncation)."""
        if offset >= self.max_phy_offset:
            return True
        if not self.commitlog.is_aligned(offset):
            return False
        self.truncate_dirty_files(offset)
        return True

    # ---- flush
    def able_to_flush(self, least_pages: int) -> bool:
        """``DefaultMappedFile.isAbleToFlush(flushLeastPages)`` for the mapped file holding the flushed position (the
        one ``MappedFileQueue.flush`` picks by ``flushedWhere``): yes when that file is full (the log goes on past its
        end), else, with ``least_pages`` > 0, when the write position's page index is at least ``least_pages`` past
        the flushed position's (page indexes, not dirty bytes: 4 pages can be 3 pages and 1 byte), else when anything
        is unflushed. Positions are the file's own (from its start, a multiple of ``mappedFileSizeCommitLog``; one
        file from 0 without ``[sim] file_boundaries``)."""
        flushed, write = self.disk.flushed, self.max_phy_offset
        size = self.commitlog.file_size
        start = flushed // size * size if size else 0
        if size and write >= start + size:  # isFull
            return True
        if least_pages > 0:
            return (write - start) // PAGE - (flushed - start) // PAGE >= least_pages
        return write > flushed

    def maybe_flush(self, thorough: bool) -> bool:
        """One pass of ``FlushRealTimeService``: ``MappedFileQueue.flush(flushLeastPages)``, with 0 pages once the
        thorough interval has passed (``thorough``). The kit then flushes the whole log, where RocketMQ flushes the one
        file at the flushed position (a full file's successor waits for the next pass)."""
        if self.able_to_flush(0 if thorough else self.cfg.flush_commit_log_least_pages):
            self.commitlog.flush()
            return True
        return False
