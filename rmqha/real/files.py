"""Parsers for the files a real RocketMQ 5 controller-mode cluster leaves on disk.

Written from reading the formats in RocketMQ 5.3.3 (``CommitLog``, ``MessageExtEncoder``, ``MessageDecoder``,
``EpochFileCache``, ``CheckpointFile``, ``StoreCheckpoint``, ``BrokerMetadata``, ``ConsumeQueue``, the controller's
``EventSerializer``) and DLedger 0.3.1.2 (``DLedgerMmapFileStore``, ``DLedgerEntryCoder``), checked against files a
real cluster wrote (``tests/data/real/``) and against 5.5.x. No RocketMQ code is copied. Every integer on disk is
big-endian and signed, as Java reads it. Nothing here writes, and nothing reads more than the paths it is given.

Formats (offsets in bytes):

* **Commit log** (``storePathCommitLog``): mapped files of one fixed size, each named by its first byte's offset
  (20 digits). A record is ``totalSize:i32, magic:i32, bodyCRC:i32, queueId:i32, flag:i32, queueOffset:i64,
  physicalOffset:i64, sysFlag:i32, bornTimestamp:i64, bornHost (4+4, or 16+4 with sysFlag bit 0x10),
  storeTimestamp:i64, storeHost (4+4, or 16+4 with bit 0x20), reconsumeTimes:i32, preparedTransactionOffset:i64,
  bodyLength:i32, body, topicLength (u8 for magic v1 0xDAA320A7, i16 for v2 0xDAA320AB), topic, propertiesLength:i16,
  properties`` where the properties are ``key 0x01 value 0x02`` repeated (with ``enabledAppendPropCRC`` the last one
  is ``__CRC32#`` and ten digits). ``bodyCRC`` is CRC-32 of the body masked to 31 bits. A file ends with a blank
  filler ``(remaining:i32, 0xCBD43194:i32)`` when the next record does not fit with 8 bytes to spare; the rest of
  the file is not written. Unwritten space is zeros (files are preallocated), so a zero ``totalSize`` is the end.
* **Epoch file** (``storePathRootDir/epochFileCheckpoint`` and ``.bak``, ``CheckpointFile``): text lines, the entry
  count, the CRC-32 (31-bit) of the entry lines each followed by ``\\n`` (0: not checked), then ``epoch-startOffset``
  per entry. An entry ends where the next one starts; the last one is open. Every write first copies the old file
  to ``.bak``; an empty entry list is never written (the old file stays).
* **Store checkpoint** (``storePathRootDir/checkpoint``): a 4 KiB page, of which the first 40 bytes are five i64:
  physicMsgTimestamp, logicsMsgTimestamp, indexMsgTimestamp, masterFlushedOffset, confirmPhyOffset.
* **Broker identity** (``storePathRootDir/brokerIdentity``): ``cluster#brokerName#brokerId``; while a broker is
  registering, ``brokerIdentity-temp`` holds ``cluster#brokerName#brokerId#registerCheckCode`` (the check code is
  ``address;millis``). ``abort`` exists while a broker runs and holds its pid (a broker that did not stop cleanly
  leaves it).
* **Consume queue** (``storePathRootDir/consumequeue/TOPIC/QUEUEID/``): mapped files of 20-byte units
  ``commitLogOffset:i64, size:i32, tagsCode:i64``, named by byte offset (queue offset x 20). A unit with
  ``offset < 0`` or ``size <= 0`` ends the queue; ``(0, 0x7FFFFFFF, 0)`` units are the blank prefix a queue that
  starts late is padded with.
* **DLedger log** (``controllerStorePath/dledger-SELFID/data/``): mapped files of entries ``magic:i32 (1),
  size:i32, index:i64, term:i64, pos:i64, channel:i32, chainCrc:i32, bodyCrc:i32, bodySize:i32, body`` with
  ``size = 48 + bodySize`` and ``pos`` the entry's own absolute position (the controller leaves both CRCs 0). A file
  ends with ``(-1:i32, remaining:i32)`` when the next entry does not fit. ``checkpoint`` (Java properties) holds
  ``committedIndex`` and ``endIndex``; ``currterm`` holds ``currTerm`` and ``voteLeader``.
* **Controller events** (a DLedger entry's body): ``type:i16`` then the event as JSON (fastjson, null fields left
  out, the enum name under ``eventType``): 1 AlterSyncStateSet, 2 ApplyBrokerId, 3 ElectMaster, 5 CleanBrokerData,
  6 UpdateBrokerAddress. One event per entry (the controller proposes a batch of single-event bodies); an empty body
  is the leader's first proposal (or a read, with ``isProcessReadEvent``). The multi-event layout of
  ``ListEventSerializer`` (``type:i16, length:i32, json`` repeated) is decoded too, though neither 5.3.3 nor 5.5.1
  writes it.
* **JRaft log** (``controllerType=jRaft``): RocksDB, read by ``java/JraftDump.java`` into JSON lines
  ``{"index", "term", "type", "data" (base64), "peers", "corrupted"}``. A data entry is the REQUEST, not an event: the
  ``RemotingCommand`` as framed on the wire (``RemotingCommand.encode``). Every controller node validates and applies
  it (``JRaftControllerStateMachine``), so what it did depends on the replicated state when it applied.

Where the reading stops (commit log, DLedger log, consume queue) is reported, not raised: a crash can leave a torn
tail that the broker's own recovery truncates. ``strict=True`` turns anything but a clean end into a
``RealFileError``. Input that is not the format at all (a file too short for its header, text that does not parse,
names that are not offsets) always raises ``RealFileError`` with a one-line message.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import mmap
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from itertools import pairwise
from pathlib import Path
from typing import Any, NoReturn

from .remoting import FrameError, decode_frame

__all__ = [
    "KIT_JRAFT_OPS", "AlterSyncStateSetEvent", "ApplyBrokerIdEvent", "BlankFiller", "BrokerIdentity", "BrokerStore",
    "CleanBrokerDataEvent", "CommitLogMessage", "CommitLogView", "ConsumeQueueUnit", "ConsumeQueueView",
    "ControllerEntry", "ControllerEvent", "ControllerRequest", "DLedgerCheckpoint", "DLedgerLog",
    "ElectMasterEvent", "EpochEntry", "EpochFile", "JraftEntry", "MappedFileInfo", "RealFileError", "StopInfo",
    "StopReason", "StoreCheckpoint", "TempBrokerIdentity", "UnknownEvent", "UpdateBrokerAddressEvent",
    "decode_controller_events", "decode_jraft_request", "java_string_hash", "jraft_dump_command",
    "list_consume_queue_topics", "load_epoch_file", "parse_jraft_dump", "parse_properties", "read_broker_identity",
    "read_broker_store", "read_commitlog", "read_consume_queue", "read_consume_queues", "read_dledger_checkpoint",
    "read_dledger_log", "read_epoch_file", "read_jraft_dump", "read_store_checkpoint", "read_temp_broker_identity",
]


class RealFileError(ValueError):
    """A real file is missing, malformed, or (with ``strict``) does not end cleanly. The message is one line."""


def _fail(path: Path | str, msg: str) -> NoReturn:
    raise RealFileError(f"{path}: {msg}".replace("\n", " "))


# ------------------------------------------------------------------------------------------- constants

MESSAGE_MAGIC_V1 = -626843481  # 0xDAA320A7
MESSAGE_MAGIC_V2 = -626843477  # 0xDAA320AB
BLANK_MAGIC = -875286124  # 0xCBD43194
BORNHOST_V6_FLAG = 0x10
STOREHOST_V6_FLAG = 0x20
NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

DLEDGER_MAGIC = 1
DLEDGER_BLANK_MAGIC = -1
DLEDGER_HEADER = 48  # magic .. bodySize

CQ_UNIT = 20
CQ_BLANK_SIZE = 0x7FFFFFFF

STORE_CHECKPOINT_LEN = 40

_I32 = struct.Struct(">i")
_MSG_HEAD = struct.Struct(">iiiiiqqiq")  # total, magic, bodyCRC, queueId, flag, queueOffset, physOffset, sysFlag, born
_DLEDGER_HEAD = struct.Struct(">iiqqqiiii")
_CQ_UNIT = struct.Struct(">qiq")
_FILE_NAME = re.compile(r"^\d{20}$")


def _crc31(data: bytes) -> int:
    """``UtilAll.crc32``: CRC-32 masked to 31 bits."""
    return zlib.crc32(data) & 0x7FFFFFFF


def java_string_hash(s: str) -> int:
    """``String.hashCode`` (UTF-16 units, 32-bit signed): the tags code a consume queue unit stores for a tag."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


# ---------------------------------------------------------------------------------- stop and mapped files


class StopReason(str, Enum):
    """Why reading a log stopped. ``ZEROS`` and ``END_OF_DATA`` are clean ends; the rest are not."""

    ZEROS = "zeros"  # a zero size: space preallocated but not written yet
    END_OF_DATA = "end-of-data"  # the bytes on disk end at a record boundary (a short last file, or no next file)
    TORN = "torn"  # a record runs past the bytes on disk
    BAD_MAGIC = "bad-magic"  # not a record's magic code
    BAD_RECORD = "bad-record"  # a record whose fields contradict each other or its position

    @property
    def clean(self) -> bool:
        return self in (StopReason.ZEROS, StopReason.END_OF_DATA)


@dataclass(frozen=True)
class StopInfo:
    reason: StopReason
    offset: int  # absolute offset (commit log / DLedger position, consume queue: queue offset) where it stopped
    detail: str


@dataclass(frozen=True)
class MappedFileInfo:
    path: Path
    start_offset: int  # from the file name
    length: int  # bytes on disk (a sample may be cut short; the broker's own files are the mapped size)


def _list_mapped_files(directory: Path, what: str,
                       mapped_file_size: int | None) -> tuple[list[MappedFileInfo], int, bool]:
    """The mapped files of one ``MappedFileQueue`` in order, their mapped size (given, else from the names, else
    the one file's length) and whether that size is known (given, or two files or more). Names must be 20-digit
    offsets spaced by the mapped size."""
    if not directory.is_dir():
        _fail(directory, f"no {what} directory")
    files: list[MappedFileInfo] = []
    for p in directory.iterdir():
        if not p.is_file():
            continue
        if not _FILE_NAME.match(p.name):
            _fail(p, f"not a {what} file name (20 digits, the start offset)")
        files.append(MappedFileInfo(p, int(p.name), p.stat().st_size))
    files.sort(key=lambda f: f.start_offset)
    if not files:
        return [], mapped_file_size or 0, mapped_file_size is not None
    size = mapped_file_size
    if size is None:
        size = files[1].start_offset - files[0].start_offset if len(files) > 1 else files[0].length
    if size <= 0:
        _fail(directory, f"{what}: cannot tell the mapped file size")
    for a, b in pairwise(files):
        if b.start_offset - a.start_offset != size:
            _fail(b.path, f"{what} file starts at {b.start_offset}, expected {a.start_offset + size}")
        if a.length != size:
            _fail(a.path, f"{what} file is {a.length} bytes, expected the mapped size {size}")
    if files[-1].length > size:
        _fail(files[-1].path, f"{what} file is {files[-1].length} bytes, more than the mapped size {size}")
    if files[0].start_offset % size:
        _fail(files[0].path, f"{what} file offset is not a multiple of the mapped size {size}")
    return files, size, mapped_file_size is not None or len(files) > 1


class _Mapped:
    """A read-only view of one file's bytes (mmap; an empty file is an empty bytes object)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = open(path, "rb")  # closed in close()
        try:
            n = path.stat().st_size
            self.buf: mmap.mmap | bytes = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ) if n else b""
        except (OSError, ValueError) as exc:
            self._fh.close()
            _fail(path, f"cannot map: {exc}")

    def close(self) -> None:
        if isinstance(self.buf, mmap.mmap):
            self.buf.close()
        self._fh.close()

    def __enter__(self) -> _Mapped:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _all_zero(buf: mmap.mmap | bytes, start: int, end: int) -> bool:
    return buf[start:end].count(0) == end - start


# -------------------------------------------------------------------------------------------- commit log


@dataclass(frozen=True)
class CommitLogMessage:
    """One message record. ``physical_offset`` is where it is; the record's own copy of it is checked equal."""

    physical_offset: int
    size: int
    magic_version: int  # 1 or 2
    body_crc: int
    body_crc_ok: bool
    queue_id: int
    flag: int
    queue_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes = field(repr=False)
    topic: str
    properties: dict[str, str] = field(repr=False, hash=False)
    offset_msg_id: str  # store host + physical offset in hex, as ``SendResult.getOffsetMsgId``

    @property
    def end_offset(self) -> int:
        return self.physical_offset + self.size

    @property
    def keys(self) -> tuple[str, ...]:
        """``KEYS``, split on the key separator (a space)."""
        return tuple(k for k in self.properties.get("KEYS", "").split(" ") if k)

    @property
    def tags(self) -> str | None:
        return self.properties.get("TAGS")

    @property
    def uniq_key(self) -> str | None:
        """The client-side message id (``UNIQ_KEY``, ``SendResult.getMsgId``)."""
        return self.properties.get("UNIQ_KEY")

    @property
    def transaction_type(self) -> int:
        return (self.sys_flag >> 2) & 0x3


@dataclass(frozen=True)
class BlankFiller:
    physical_offset: int
    size: int


@dataclass
class CommitLogView:
    directory: Path
    mapped_file_size: int
    files: list[MappedFileInfo] = field(repr=False)
    messages: list[CommitLogMessage] = field(repr=False)
    blanks: list[BlankFiller]
    end_offset: int  # after the last whole record or filler: the broker's max physical offset after recovery
    stop: StopInfo
    unread_files: int  # files wholly after the stop (the broker's recovery would delete them)

    @property
    def min_offset(self) -> int:
        return self.files[0].start_offset if self.files else 0

    @property
    def last_message_end(self) -> int | None:
        return self.messages[-1].end_offset if self.messages else None

    def message_at(self, offset: int) -> CommitLogMessage | None:
        lo, hi = 0, len(self.messages)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.messages[mid].physical_offset < offset:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self.messages) and self.messages[lo].physical_offset == offset:
            return self.messages[lo]
        return None

    def by_topic(self, topic: str) -> list[CommitLogMessage]:
        return [m for m in self.messages if m.topic == topic]


def _host(raw: bytes) -> str:
    ip, port = raw[:-4], _I32.unpack(raw[-4:])[0]
    if len(ip) == 4:
        return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"
    groups = ":".join(f"{ip[i] << 8 | ip[i + 1]:x}" for i in range(0, 16, 2))
    return f"[{groups}]:{port}"


def parse_properties(text: str) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``: ``k 0x01 v 0x02`` pairs; a pair with an empty key or value, or
    without a separator, is dropped."""
    out: dict[str, str] = {}
    for item in text.split(PROPERTY_SEPARATOR):
        k, sep, v = item.partition(NAME_VALUE_SEPARATOR)
        if sep and k and v:
            out[k] = v
    return out


class _Stop(Exception):
    def __init__(self, reason: StopReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _decode_message(buf: mmap.mmap | bytes, pos: int, base: int, total: int, magic: int) -> CommitLogMessage:
    """The message record at ``pos`` (``total`` bytes, all of them on disk before ``avail``)."""
    version = 1 if magic == MESSAGE_MAGIC_V1 else 2
    end = pos + total
    (_, _, body_crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts) = _MSG_HEAD.unpack_from(buf, pos)
    p = pos + _MSG_HEAD.size
    born_len = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    store_len = 20 if sys_flag & STOREHOST_V6_FLAG else 8

    def take(n: int) -> bytes:
        nonlocal p
        if n < 0 or p + n > end:
            raise _Stop(StopReason.BAD_RECORD, f"record of {total} bytes overruns itself")
        out = bytes(buf[p:p + n])
        p += n
        return out

    born_host = take(born_len)
    (store_ts,) = struct.unpack(">q", take(8))
    store_host = take(store_len)
    reconsume, prepared = struct.unpack(">iq", take(12))
    (body_len,) = _I32.unpack(take(4))
    body = take(max(body_len, 0))
    if version == 1:
        topic_len = take(1)[0]
    else:
        (topic_len,) = struct.unpack(">h", take(2))
    topic_raw = take(topic_len)
    (props_len,) = struct.unpack(">h", take(2))
    props_raw = take(max(props_len, 0))
    if p != end:
        raise _Stop(StopReason.BAD_RECORD, f"record says {total} bytes, its fields take {p - pos}")
    if phys != base + pos:
        raise _Stop(StopReason.BAD_RECORD, f"record at {base + pos} says its physical offset is {phys}")
    props = parse_properties(props_raw.decode("utf-8", errors="replace"))
    return CommitLogMessage(
        physical_offset=base + pos, size=total, magic_version=version, body_crc=body_crc,
        body_crc_ok=_crc31(body) == body_crc, queue_id=queue_id, flag=flag, queue_offset=queue_offset,
        sys_flag=sys_flag, born_timestamp=born_ts, born_host=_host(born_host), store_timestamp=store_ts,
        store_host=_host(store_host), reconsume_times=reconsume, prepared_transaction_offset=prepared, body=body,
        topic=topic_raw.decode("utf-8", errors="replace"), properties=props,
        offset_msg_id=(store_host + struct.pack(">q", base + pos)).hex().upper())


_MIN_MESSAGE = _MSG_HEAD.size + 8 + 8 + 8 + 4 + 8 + 4 + 1 + 2  # v1, IPv4, empty body, topic and properties


def read_commitlog(directory: str | Path, *, mapped_file_size: int | None = None,
                   strict: bool = False) -> CommitLogView:
    """Every whole record of a commit log directory, in order, and where and why the reading stopped.

    Reads each mapped file through mmap and stops at the first zero size, so a large preallocated tail costs
    nothing. ``strict``: a stop that is not clean raises ``RealFileError``."""
    d = Path(directory)
    files, size, certain = _list_mapped_files(d, "commit log", mapped_file_size)
    messages: list[CommitLogMessage] = []
    blanks: list[BlankFiller] = []
    stop: StopInfo | None = None
    end = files[0].start_offset if files else 0
    unread = 0
    for n, info in enumerate(files):
        if stop is not None:
            unread = len(files) - n
            break
        base = info.start_offset
        with _Mapped(info.path) as m:
            buf, avail, pos = m.buf, info.length, 0
            while True:
                if pos == size:  # a full file read to its end: on to the next one
                    if n == len(files) - 1:
                        stop = StopInfo(StopReason.END_OF_DATA, base + pos, "no file after the last full one")
                    break
                if pos == avail:
                    stop = StopInfo(StopReason.END_OF_DATA, base + pos, f"{info.path.name} ends at {avail} bytes")
                    break
                if avail - pos < 8:
                    reason = StopReason.ZEROS if _all_zero(buf, pos, avail) else StopReason.TORN
                    stop = StopInfo(reason, base + pos, f"{avail - pos} bytes left in the file")
                    break
                total, magic = struct.unpack_from(">ii", buf, pos)
                if total == 0:  # the broker's recovery ends here whatever follows
                    reason = StopReason.ZEROS if magic == 0 else StopReason.BAD_RECORD
                    stop = StopInfo(reason, base + pos, f"zero size (magic 0x{magic & 0xFFFFFFFF:08X}): not written")
                    break
                if magic == BLANK_MAGIC:
                    if not certain and total >= 8:  # one file, perhaps cut short: the filler tells the size
                        size = pos + total
                    if total != size - pos:
                        stop = StopInfo(StopReason.BAD_RECORD, base + pos,
                                        f"blank filler of {total} bytes, {size - pos} left in the file")
                        break
                    blanks.append(BlankFiller(base + pos, total))
                    pos += total
                    end = base + pos
                    continue
                if magic not in (MESSAGE_MAGIC_V1, MESSAGE_MAGIC_V2):
                    stop = StopInfo(StopReason.BAD_MAGIC, base + pos, f"magic 0x{magic & 0xFFFFFFFF:08X}")
                    break
                if total < _MIN_MESSAGE or (certain and total > size - pos):
                    stop = StopInfo(StopReason.BAD_RECORD, base + pos,
                                    f"size {total} does not fit the {size - pos} bytes left in the file")
                    break
                if total > avail - pos:
                    stop = StopInfo(StopReason.TORN, base + pos,
                                    f"record of {total} bytes, {avail - pos} on disk")
                    break
                try:
                    msg = _decode_message(buf, pos, base, total, magic)
                except _Stop as s:
                    stop = StopInfo(s.reason, base + pos, s.detail)
                    break
                messages.append(msg)
                pos += total
                end = base + pos
    if stop is None:
        stop = StopInfo(StopReason.END_OF_DATA, end, "no files" if not files else "end of the last file")
    if strict and not stop.reason.clean:
        _fail(d, f"commit log stops at {stop.offset}: {stop.reason.value}: {stop.detail}")
    return CommitLogView(d, size, files, messages, blanks, end, stop, unread)


# ------------------------------------------------------------------------------------------ epoch file


@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    start_offset: int
    end_offset: int | None  # the next entry's start; None: open (the broker keeps Long.MAX_VALUE or its max offset)


@dataclass(frozen=True)
class EpochFile:
    path: Path
    entries: tuple[EpochEntry, ...]
    declared_count: int
    declared_crc: int
    computed_crc: int
    skipped_lines: tuple[str, ...]  # entry lines that are not ``a-b`` (the broker skips them, but counts them in)

    @property
    def checksum_ok(self) -> bool:
        """The CRC line matches the entry lines (a declared 0 means unchecked, and holds)."""
        return self.declared_crc == 0 or self.declared_crc == self.computed_crc

    @property
    def count_ok(self) -> bool:
        return self.declared_count == len(self.entries)

    @property
    def valid(self) -> bool:
        """What ``CheckpointFile.read`` accepts; otherwise the broker falls back to the ``.bak`` copy."""
        return self.checksum_ok and self.count_ok

    def pairs(self) -> list[tuple[int, int]]:
        return [(e.epoch, e.start_offset) for e in self.entries]


def _java_lines(text: str) -> list[str]:
    """``BufferedReader.readLine`` over the whole text: ``\\n``, ``\\r`` or ``\\r\\n`` end a line."""
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _read_text(path: Path, what: str) -> str:
    if not path.is_file():
        _fail(path, f"no {what} file")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(path, f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})")


def _parse_int(path: Path, s: str, what: str, bits: int = 32) -> int:
    if not re.fullmatch(r"[+-]?\d+", s):
        _fail(path, f"{what} is not an integer: {s[:40]!r}")
    v = int(s)
    if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
        _fail(path, f"{what} {v} does not fit {bits} bits")
    return v


def read_epoch_file(path: str | Path) -> EpochFile:
    """One epoch checkpoint file (``epochFileCheckpoint`` or its ``.bak``), checksum and count checked but not
    enforced (see ``EpochFile.valid``; ``load_epoch_file`` picks the copy the broker would)."""
    p = Path(path)
    lines = _java_lines(_read_text(p, "epoch"))
    if len(lines) < 2:
        _fail(p, f"epoch file has {len(lines)} line(s), needs the count and the checksum")
    count = _parse_int(p, lines[0], "entry count")
    crc = _parse_int(p, lines[1], "checksum")
    raw: list[tuple[int, int]] = []
    skipped: list[str] = []
    for line in lines[2:]:
        parts = line.split("-")
        while len(parts) > 1 and parts[-1] == "":  # String.split drops trailing empty strings
            parts.pop()
        if len(parts) != 2:
            skipped.append(line)
            continue
        raw.append((_parse_int(p, parts[0], "epoch"), _parse_int(p, parts[1], "start offset", 64)))
    entries = tuple(EpochEntry(e, s, raw[i + 1][1] if i + 1 < len(raw) else None) for i, (e, s) in enumerate(raw))
    computed = _crc31("".join(line + "\n" for line in lines[2:]).encode("utf-8"))
    return EpochFile(p, entries, count, crc, computed, tuple(skipped))


def load_epoch_file(path: str | Path) -> EpochFile | None:
    """The epoch entries the broker loads at start (``CheckpointFile.read``): the file when it is valid and has
    entries; else its ``.bak`` copy when that exists (raising when the copy does not hold either, where the broker
    fails to load); else ``None`` (no entries: the broker starts with an empty cache, even when the file was
    invalid). ``path`` is the file or the store root."""
    p = Path(path)
    if p.is_dir():
        p = p / "epochFileCheckpoint"
    bak = p.with_name(p.name + ".bak")
    main: EpochFile | None = None
    problem = "main file missing or empty"
    if p.is_file():
        try:
            main = read_epoch_file(p)
        except RealFileError as exc:
            problem = str(exc)
        if main is not None and main.valid and main.entries:
            return main
        if main is not None and not main.valid:
            problem = (f"{p}: {len(main.entries)} entries for a count of {main.declared_count}, "
                       f"checksum ok: {main.checksum_ok}")
    if bak.is_file():
        b = read_epoch_file(bak)
        if b.valid:
            return b if b.entries else None
        _fail(bak, f"backup epoch file does not hold either ({len(b.entries)} entries for a count of "
                   f"{b.declared_count}, checksum ok: {b.checksum_ok}); {problem}")
    return None


# ---------------------------------------------------------------------------------- checkpoint, identity


@dataclass(frozen=True)
class StoreCheckpoint:
    physic_msg_timestamp: int
    logics_msg_timestamp: int
    index_msg_timestamp: int
    master_flushed_offset: int
    confirm_phy_offset: int


def read_store_checkpoint(path: str | Path) -> StoreCheckpoint:
    p = Path(path)
    if p.is_dir():
        p = p / "checkpoint"
    if not p.is_file():
        _fail(p, "no store checkpoint file")
    with open(p, "rb") as fh:
        data = fh.read(STORE_CHECKPOINT_LEN)
    if len(data) < STORE_CHECKPOINT_LEN:
        _fail(p, f"store checkpoint is {len(data)} bytes, needs {STORE_CHECKPOINT_LEN}")
    return StoreCheckpoint(*struct.unpack(">5q", data))


@dataclass(frozen=True)
class BrokerIdentity:
    cluster_name: str
    broker_name: str
    broker_id: int


@dataclass(frozen=True)
class TempBrokerIdentity:
    cluster_name: str
    broker_name: str
    broker_id: int
    register_check_code: str

    @property
    def check_address(self) -> str:
        return self.register_check_code.split(";")[0]

    @property
    def check_timestamp(self) -> int | None:
        parts = self.register_check_code.split(";")
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def _identity_fields(path: Path, n: int) -> list[str]:
    parts = _read_text(path, "broker identity").split("#")
    while parts and parts[-1] == "":
        parts.pop()
    if len(parts) < n or not parts[0] or not parts[1]:
        _fail(path, f"broker identity needs {n} '#'-separated fields, has {len(parts)}")
    return parts


def read_broker_identity(path: str | Path) -> BrokerIdentity:
    """``brokerIdentity`` (``BrokerMetadata``): ``cluster#brokerName#brokerId``."""
    p = Path(path)
    if p.is_dir():
        p = p / "brokerIdentity"
    f = _identity_fields(p, 3)
    return BrokerIdentity(f[0], f[1], _parse_int(p, f[2], "broker id", 64))


def read_temp_broker_identity(path: str | Path) -> TempBrokerIdentity:
    """``brokerIdentity-temp`` (``TempBrokerMetadata``): ``cluster#brokerName#brokerId#registerCheckCode``."""
    p = Path(path)
    if p.is_dir():
        p = p / "brokerIdentity-temp"
    f = _identity_fields(p, 4)
    return TempBrokerIdentity(f[0], f[1], _parse_int(p, f[2], "broker id", 64), f[3])


# --------------------------------------------------------------------------------------- consume queues


@dataclass(frozen=True)
class ConsumeQueueUnit:
    queue_offset: int
    commitlog_offset: int
    size: int
    tags_code: int


@dataclass
class ConsumeQueueView:
    directory: Path
    units: list[ConsumeQueueUnit] = field(repr=False)
    min_queue_offset: int  # the first unit's queue offset (after any blank prefix)
    stop: StopInfo  # offset: the queue offset where reading stopped (the queue's max offset when clean)

    @property
    def max_queue_offset(self) -> int:
        return self.stop.offset


def read_consume_queue(directory: str | Path, *, mapped_file_size: int | None = None,
                       strict: bool = False) -> ConsumeQueueView:
    """The units of one queue's directory (``consumequeue/TOPIC/QUEUEID``)."""
    d = Path(directory)
    files, size, certain = _list_mapped_files(d, "consume queue", mapped_file_size)
    if certain and size % CQ_UNIT:
        _fail(d, f"consume queue mapped size {size} is not a multiple of {CQ_UNIT}")
    units: list[ConsumeQueueUnit] = []
    first: int | None = None
    stop: StopInfo | None = None
    for info in files:
        q0 = info.start_offset // CQ_UNIT
        with _Mapped(info.path) as m:
            usable = info.length - info.length % CQ_UNIT
            for i, pos in enumerate(range(0, usable, CQ_UNIT)):
                off, sz, tags = _CQ_UNIT.unpack_from(m.buf, pos)
                if off == 0 and sz == CQ_BLANK_SIZE and tags == 0:
                    continue
                if off < 0 or sz <= 0:
                    reason = StopReason.ZEROS if (off, sz, tags) == (0, 0, 0) else StopReason.BAD_RECORD
                    stop = StopInfo(reason, q0 + i, f"unit ({off}, {sz}, {tags})")
                    break
                if first is None:
                    first = q0 + i
                units.append(ConsumeQueueUnit(q0 + i, off, sz, tags))
            if stop is None and info.length % CQ_UNIT:
                stop = StopInfo(StopReason.TORN, q0 + usable // CQ_UNIT, f"{info.length % CQ_UNIT} bytes of a unit")
            if stop is None and info.length < size:
                stop = StopInfo(StopReason.END_OF_DATA, q0 + usable // CQ_UNIT, f"{info.path.name} ends early")
        if stop is not None:
            break
    if stop is None:
        q_end = (files[-1].start_offset + size) // CQ_UNIT if files else 0
        stop = StopInfo(StopReason.END_OF_DATA, q_end, "end of the last file")
    if strict and not stop.reason.clean:
        _fail(d, f"consume queue stops at queue offset {stop.offset}: {stop.reason.value}: {stop.detail}")
    return ConsumeQueueView(d, units, first if first is not None else stop.offset, stop)


def list_consume_queue_topics(store_root: str | Path) -> list[str]:
    cq = Path(store_root) / "consumequeue"
    return sorted(p.name for p in cq.iterdir() if p.is_dir()) if cq.is_dir() else []


def read_consume_queues(store_root: str | Path, topic: str, *, mapped_file_size: int | None = None,
                        strict: bool = False) -> dict[int, list[ConsumeQueueUnit]]:
    """queue id -> units, for one topic of a broker's store."""
    d = Path(store_root) / "consumequeue" / topic
    if not d.is_dir():
        _fail(d, "no consume queue directory for the topic")
    out: dict[int, list[ConsumeQueueUnit]] = {}
    for q in sorted(d.iterdir(), key=lambda p: p.name):
        if not q.is_dir():
            continue
        if not q.name.isdigit():
            _fail(q, "queue directory name is not a queue id")
        out[int(q.name)] = read_consume_queue(q, mapped_file_size=mapped_file_size, strict=strict).units
    return dict(sorted(out.items()))


# ------------------------------------------------------------------------------------------ broker store


@dataclass
class BrokerStore:
    """Everything a broker's ``storePathRootDir`` says about it (what is absent is ``None``)."""

    root: Path
    identity: BrokerIdentity | None
    temp_identity: TempBrokerIdentity | None
    checkpoint: StoreCheckpoint | None
    epochs: EpochFile | None  # as the broker would load it: the file, or its .bak
    abort: bool  # the abort file exists: the broker is running or did not stop cleanly
    abort_pid: int | None  # what the abort file holds: the pid of the broker that wrote it
    commitlog: CommitLogView | None


def _abort_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def read_broker_store(store_root: str | Path, commitlog_dir: str | Path | None = None, *,
                      strict: bool = False) -> BrokerStore:
    root = Path(store_root)
    if not root.is_dir():
        _fail(root, "no store root directory")
    cl = Path(commitlog_dir) if commitlog_dir is not None else root / "commitlog"
    return BrokerStore(
        root=root,
        identity=read_broker_identity(root / "brokerIdentity") if (root / "brokerIdentity").is_file() else None,
        temp_identity=(read_temp_broker_identity(root / "brokerIdentity-temp")
                       if (root / "brokerIdentity-temp").is_file() else None),
        checkpoint=read_store_checkpoint(root / "checkpoint") if (root / "checkpoint").is_file() else None,
        epochs=load_epoch_file(root / "epochFileCheckpoint"),
        abort=(root / "abort").exists(),
        abort_pid=_abort_pid(root / "abort"),
        commitlog=read_commitlog(cl, strict=strict) if cl.is_dir() else None,
    )


# ------------------------------------------------------------------------------------- controller events


def _long_set(path: str, v: Any, what: str) -> frozenset[int]:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        _fail(path, f"{what} is not a list of integers: {v!r:.60}")
    return frozenset(v)


def _str(path: str, d: dict[str, Any], key: str, required: bool = True) -> str:
    v = d.get(key)
    if v is None and not required:
        return ""
    if not isinstance(v, str):
        _fail(path, f"event field {key!r} is not a string: {v!r:.60}")
    return v


def _int(path: str, d: dict[str, Any], key: str) -> int | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        _fail(path, f"event field {key!r} is not an integer: {v!r:.60}")
    return v


@dataclass(frozen=True)
class AlterSyncStateSetEvent:
    broker_name: str
    new_sync_state_set: frozenset[int]
    type_id = 1

    def to_kit(self) -> dict[str, Any]:
        """The kit's controller event (``impl/controller/replicas_info.py``, ``event_from_dict`` reads it)."""
        return {"type": "AlterSyncStateSet", "brokerName": self.broker_name,
                "newSyncStateSet": sorted(self.new_sync_state_set)}


@dataclass(frozen=True)
class ApplyBrokerIdEvent:
    cluster_name: str
    broker_name: str
    broker_address: str
    new_broker_id: int
    register_check_code: str
    type_id = 2

    def to_kit(self) -> dict[str, Any]:
        return {"type": "ApplyBrokerId", "clusterName": self.cluster_name, "brokerName": self.broker_name,
                "brokerAddress": self.broker_address, "newBrokerId": self.new_broker_id,
                "registerCheckCode": self.register_check_code}


@dataclass(frozen=True)
class ElectMasterEvent:
    broker_name: str
    new_master_elected: bool
    new_master_broker_id: int | None
    type_id = 3

    def to_kit(self) -> dict[str, Any]:
        return {"type": "ElectMaster", "newMasterElected": self.new_master_elected, "brokerName": self.broker_name,
                "newMasterBrokerId": self.new_master_broker_id}


@dataclass(frozen=True)
class CleanBrokerDataEvent:
    broker_name: str
    broker_id_set_to_clean: frozenset[int] | None  # None: the whole broker set
    type_id = 5

    def to_kit(self) -> dict[str, Any]:
        ids = None if self.broker_id_set_to_clean is None else sorted(self.broker_id_set_to_clean)
        return {"type": "CleanBrokerData", "brokerName": self.broker_name, "brokerIdSetToClean": ids}


@dataclass(frozen=True)
class UpdateBrokerAddressEvent:
    cluster_name: str
    broker_name: str
    broker_address: str
    broker_id: int
    type_id = 6

    def to_kit(self) -> dict[str, Any]:
        return {"type": "UpdateBrokerAddress", "clusterName": self.cluster_name, "brokerName": self.broker_name,
                "brokerAddress": self.broker_address, "brokerId": self.broker_id}


@dataclass(frozen=True)
class UnknownEvent:
    """A type the controller does not apply (4 is ``READ_EVENT``; the controller's deserializer yields null)."""

    type_id: int
    data: bytes

    def to_kit(self) -> dict[str, Any]:
        raise RealFileError(f"controller event type {self.type_id} has no kit counterpart")


ControllerEvent = (AlterSyncStateSetEvent | ApplyBrokerIdEvent | ElectMasterEvent | CleanBrokerDataEvent
                   | UpdateBrokerAddressEvent | UnknownEvent)


def _decode_event(where: str, type_id: int, data: bytes) -> ControllerEvent:
    if type_id not in (1, 2, 3, 5, 6):
        return UnknownEvent(type_id, data)
    try:
        d = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        _fail(where, f"controller event type {type_id} is not JSON ({str(exc).splitlines()[0]})")
    if not isinstance(d, dict):
        _fail(where, f"controller event type {type_id} is not a JSON object")
    if type_id == 1:
        return AlterSyncStateSetEvent(_str(where, d, "brokerName"),
                                      _long_set(where, d.get("newSyncStateSet", []), "newSyncStateSet"))
    if type_id == 2:
        bid = _int(where, d, "newBrokerId")
        if bid is None:
            _fail(where, "ApplyBrokerIdEvent without newBrokerId")
        return ApplyBrokerIdEvent(_str(where, d, "clusterName", False), _str(where, d, "brokerName"),
                                  _str(where, d, "brokerAddress", False), bid,
                                  _str(where, d, "registerCheckCode", False))
    if type_id == 3:
        elected = d.get("newMasterElected", False)
        if not isinstance(elected, bool):
            _fail(where, f"event field 'newMasterElected' is not a boolean: {elected!r:.40}")
        return ElectMasterEvent(_str(where, d, "brokerName"), elected, _int(where, d, "newMasterBrokerId"))
    if type_id == 5:
        ids = d.get("brokerIdSetToClean")
        return CleanBrokerDataEvent(_str(where, d, "brokerName"),
                                    None if ids is None else _long_set(where, ids, "brokerIdSetToClean"))
    bid = _int(where, d, "brokerId")
    if bid is None:
        _fail(where, "UpdateBrokerAddressEvent without brokerId")
    return UpdateBrokerAddressEvent(_str(where, d, "clusterName", False), _str(where, d, "brokerName"),
                                    _str(where, d, "brokerAddress", False), bid)


def decode_controller_events(body: bytes, where: str = "controller entry") -> tuple[ControllerEvent, ...]:
    """A DLedger entry's body: nothing (an empty body), one event (``type:i16`` + JSON, ``EventSerializer``), or a
    list (``type:i16, length:i32, JSON`` repeated, ``ListEventSerializer``); told apart by the JSON's ``{``."""
    if not body:
        return ()
    if len(body) < 3:
        _fail(where, f"controller event body of {len(body)} bytes")
    (type_id,) = struct.unpack_from(">h", body, 0)
    if body[2:3] == b"{":
        return (_decode_event(where, type_id, body[2:]),)
    events: list[ControllerEvent] = []
    pos = 0
    while pos < len(body):
        if len(body) - pos < 6:
            _fail(where, f"event list ends in a {len(body) - pos}-byte fragment")
        type_id, length = struct.unpack_from(">hi", body, pos)
        pos += 6
        if length <= 0:
            continue
        if pos + length > len(body):
            _fail(where, f"event list item of {length} bytes overruns the body")
        events.append(_decode_event(where, type_id, body[pos:pos + length]))
        pos += length
    return tuple(events)


# ------------------------------------------------------------------------------------------ DLedger log


@dataclass(frozen=True)
class ControllerEntry:
    """One entry of the controller's replicated log, with the controller events it carries (none for an empty
    entry: the new leader's first proposal)."""

    index: int
    term: int
    pos: int
    size: int
    channel: int
    chain_crc: int
    body_crc: int
    body: bytes = field(repr=False)
    events: tuple[ControllerEvent, ...]


@dataclass(frozen=True)
class DLedgerCheckpoint:
    committed_index: int | None
    end_index: int | None


def _read_properties(path: Path, what: str) -> dict[str, str]:
    """A Java properties file as DLedger writes it: ``key=value`` lines, ``#`` / ``!`` comments."""
    out: dict[str, str] = {}
    for line in _java_lines(_read_text(path, what)):
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", s)
        if not m:
            _fail(path, f"{what} line is not key=value: {s[:40]!r}")
        out[m.group(1)] = m.group(2)
    return out


def read_dledger_checkpoint(path: str | Path) -> DLedgerCheckpoint:
    p = Path(path)
    if p.is_dir():
        p = p / "checkpoint"
    props = _read_properties(p, "DLedger checkpoint")

    def num(key: str) -> int | None:
        v = props.get(key)
        return None if v is None or v == "" else _parse_int(p, v, key, 64)

    return DLedgerCheckpoint(num("committedIndex"), num("endIndex"))


@dataclass
class DLedgerLog:
    directory: Path  # the dledger-SELFID directory
    entries: list[ControllerEntry] = field(repr=False)
    checkpoint: DLedgerCheckpoint | None  # None: no checkpoint file (nor its .bak)
    current_term: int | None  # ``currterm``
    vote_for: str | None
    stop: StopInfo
    unread_files: int

    @property
    def committed_index(self) -> int | None:
        """The checkpoint's ``committedIndex``: entries up to it were committed when the checkpoint was written
        (DLedger writes it every few seconds and at shutdown, so it can lag; a leader re-commits what follows)."""
        return None if self.checkpoint is None else self.checkpoint.committed_index

    @property
    def ledger_end_index(self) -> int:
        return self.entries[-1].index if self.entries else -1

    @property
    def committed_source(self) -> str:
        """``checkpoint``: ``committed_entries`` stops at the checkpoint's committedIndex; ``ledger-end``: no
        checkpoint, so every entry read counts (true for a single-node group, an assumption otherwise)."""
        return "checkpoint" if self.committed_index is not None else "ledger-end"

    def committed_entries(self) -> list[ControllerEntry]:
        ci = self.committed_index
        return list(self.entries) if ci is None else [e for e in self.entries if e.index <= ci]

    def events(self, committed_only: bool = True) -> list[ControllerEvent]:
        src = self.committed_entries() if committed_only else self.entries
        return [ev for e in src for ev in e.events]

    def kit_events(self, committed_only: bool = True) -> list[dict[str, Any]]:
        """The events in log order as the kit's dicts (``event_from_dict`` turns them into kit events)."""
        return [ev.to_kit() for ev in self.events(committed_only)]


def _dledger_dir(path: Path) -> Path:
    """``path`` may be the controllerStorePath (holding one ``dledger-*``), the ``dledger-ID`` dir or its data."""
    if (path / "data").is_dir():
        return path
    if path.name == "data" and path.is_dir():
        return path.parent
    found = sorted(p for p in path.glob("dledger-*") if p.is_dir()) if path.is_dir() else []
    if len(found) == 1:
        return found[0]
    if not found:
        _fail(path, "no DLedger store (a dledger-SELFID directory with data/)")
    _fail(path, f"{len(found)} DLedger stores; name one: {', '.join(p.name for p in found)}")


def _iter_dledger(files: list[MappedFileInfo], size: int,
                  certain: bool) -> Iterator[tuple[int, ControllerEntry | StopInfo]]:
    """(file number, entry) for every entry, then (file number, stop)."""
    last_index = last_term = -1
    for n, info in enumerate(files):
        base = info.start_offset
        with _Mapped(info.path) as m:
            buf, avail, pos = m.buf, info.length, 0
            while True:
                if pos == size:
                    if n == len(files) - 1:
                        yield n, StopInfo(StopReason.END_OF_DATA, base + pos, "no file after the last full one")
                        return
                    break
                if pos == avail:
                    yield n, StopInfo(StopReason.END_OF_DATA, base + pos, f"{info.path.name} ends at {avail} bytes")
                    return
                if avail - pos < 8:
                    reason = StopReason.ZEROS if _all_zero(buf, pos, avail) else StopReason.TORN
                    yield n, StopInfo(reason, base + pos, f"{avail - pos} bytes left in the file")
                    return
                magic, total = struct.unpack_from(">ii", buf, pos)
                if magic == DLEDGER_BLANK_MAGIC:
                    if not certain and total >= 8:
                        size = pos + total
                    if total != size - pos:
                        yield n, StopInfo(StopReason.BAD_RECORD, base + pos,
                                          f"blank filler of {total} bytes, {size - pos} left in the file")
                        return
                    pos = size
                    continue
                if total == 0:  # DLedger's recovery ends here whatever the magic
                    reason = StopReason.ZEROS if magic == 0 else StopReason.BAD_RECORD
                    yield n, StopInfo(reason, base + pos, f"zero size (magic {magic}): not written")
                    return
                if magic != DLEDGER_MAGIC:
                    yield n, StopInfo(StopReason.BAD_MAGIC, base + pos, f"magic {magic}")
                    return
                if total < DLEDGER_HEADER or (certain and total > size - pos):
                    yield n, StopInfo(StopReason.BAD_RECORD, base + pos,
                                      f"size {total} does not fit the {size - pos} bytes left in the file")
                    return
                if total > avail - pos:
                    yield n, StopInfo(StopReason.TORN, base + pos, f"entry of {total} bytes, {avail - pos} on disk")
                    return
                (_, _, index, term, epos, channel, chain_crc, body_crc, body_size) = _DLEDGER_HEAD.unpack_from(buf, pos)
                problem = ""
                if body_size + DLEDGER_HEADER != total:
                    problem = f"size {total} != 48 + body size {body_size}"
                elif epos != base + pos:
                    problem = f"entry says its position is {epos}"
                elif last_index != -1 and index != last_index + 1:
                    problem = f"index {index} follows {last_index}"
                elif term < last_term:
                    problem = f"term {term} after term {last_term}"
                if problem:
                    yield n, StopInfo(StopReason.BAD_RECORD, base + pos, problem)
                    return
                body = bytes(buf[pos + DLEDGER_HEADER:pos + total])
                events = decode_controller_events(body, f"{info.path}: entry {index}")
                yield n, ControllerEntry(index, term, base + pos, total, channel, chain_crc, body_crc, body, events)
                last_index, last_term = index, term
                pos += total
    yield len(files) - 1, StopInfo(StopReason.END_OF_DATA, files[-1].start_offset if files else 0,
                                   "no files" if not files else "end of the last file")


def read_dledger_log(path: str | Path, *, mapped_file_size: int | None = None,
                     strict: bool = False) -> DLedgerLog:
    """The controller's DLedger log: every entry with its events, the checkpoint (committed index) and the term.

    ``path``: the ``controllerStorePath``, the ``dledger-SELFID`` directory or its ``data``. A body that is not a
    controller event raises ``RealFileError``; ``strict``: so does a stop that is not clean."""
    d = _dledger_dir(Path(path))
    files, size, certain = _list_mapped_files(d / "data", "DLedger data", mapped_file_size)
    entries: list[ControllerEntry] = []
    stop = StopInfo(StopReason.END_OF_DATA, 0, "no files")
    last_file = 0
    for n, item in _iter_dledger(files, size, certain):
        if isinstance(item, StopInfo):
            stop, last_file = item, n
        else:
            entries.append(item)
    if strict and not stop.reason.clean:
        _fail(d, f"DLedger log stops at {stop.offset}: {stop.reason.value}: {stop.detail}")
    ckpt: DLedgerCheckpoint | None = None
    for name in ("checkpoint", "checkpoint.bak"):
        if (d / name).is_file():
            ckpt = read_dledger_checkpoint(d / name)
            break
    term: int | None = None
    vote: str | None = None
    if (d / "currterm").is_file():
        props = _read_properties(d / "currterm", "DLedger currterm")
        if props.get("currTerm"):
            term = _parse_int(d / "currterm", props["currTerm"], "currTerm", 64)
        vote = props.get("voteLeader") or None
    unread = max(0, len(files) - 1 - last_file) if files else 0
    return DLedgerLog(d, entries, ckpt, term, vote, stop, unread)


# ---------------------------------------------------------------------------------------------- JRaft

# RequestCode -> the kit's JRaft operation (impl/controller/jraft.py) and the name RocketMQ gives it.
_JRAFT_OPS: dict[int, tuple[str, str]] = {
    1001: ("alterSyncStateSet", "CONTROLLER_ALTER_SYNC_STATE_SET"),
    1002: ("electMaster", "CONTROLLER_ELECT_MASTER"),
    1003: ("registerSuccess", "CONTROLLER_REGISTER_BROKER"),
    1004: ("getReplicaInfo", "CONTROLLER_GET_REPLICA_INFO"),
    1006: ("getSyncStateData", "CONTROLLER_GET_SYNC_STATE_DATA"),
    1011: ("cleanBrokerData", "CLEAN_BROKER_DATA"),
    1012: ("getNextBrokerId", "CONTROLLER_GET_NEXT_BROKER_ID"),
    1013: ("applyBrokerId", "CONTROLLER_APPLY_BROKER_ID"),
    1014: ("closeChannel", "BROKER_CLOSE_CHANNEL_REQUEST"),
    1015: ("checkNotActive", "CHECK_NOT_ACTIVE_BROKER_REQUEST"),
    1016: ("getBrokerLiveInfo", "GET_BROKER_LIVE_INFO_REQUEST"),
    1018: ("heartbeat", "RAFT_BROKER_HEART_BEAT_EVENT_REQUEST"),
}


KIT_JRAFT_OPS = frozenset({"alterSyncStateSet", "electMaster", "registerSuccess", "getReplicaInfo", "getSyncStateData",
                           "cleanBrokerData", "getNextBrokerId", "applyBrokerId", "closeChannel", "checkNotActive",
                           "heartbeat"})


def _num(v: str | None) -> int | None:
    if v is None or v == "" or v == "null":
        return None
    try:
        return int(v)
    except ValueError:
        return None


def _flag(v: str | None) -> bool:
    return (v or "").lower() == "true"


@dataclass(frozen=True)
class ControllerRequest:
    """A JRaft log entry's data: the controller request as the leader received it (its header fields are the
    strings of ``extFields``). What it did is decided when it applies, on every node."""

    code: int
    opaque: int
    ext_fields: dict[str, str] = field(hash=False)
    body: bytes = field(repr=False)

    @property
    def name(self) -> str:
        return _JRAFT_OPS.get(self.code, ("", f"code {self.code}"))[1]

    @property
    def op(self) -> str:
        return _JRAFT_OPS.get(self.code, (f"code{self.code}", ""))[0]

    def body_json(self) -> Any:
        if not self.body:
            return None
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise RealFileError(f"{self.name} body is not JSON ({str(exc).splitlines()[0]})") from None

    @property
    def in_kit(self) -> bool:
        """The kit's JRaft controller executes this operation (``impl/controller/jraft.py``)."""
        return self.op in KIT_JRAFT_OPS

    def to_kit(self) -> dict[str, Any]:
        """The kit's JRaft entry (``RequestEntry.to_dict``: ``type`` Request, ``op``, ``args``, ``stamp``), with the
        argument names ``impl/controller/node.py`` logs for each operation. ``stamp`` is the time the request
        carries (``invokeTime``; a heartbeat's ``lastUpdateTimestamp``, the scan's ``checkTimeMillis``), 0 when it
        carries none (getNextBrokerId, applyBrokerId). ``getBrokerLiveInfo`` converts, but the kit does not execute
        it (``in_kit``)."""
        h = self.ext_fields
        op = self.op
        args: dict[str, Any]
        stamp = _num(h.get("invokeTime")) or 0
        if op == "alterSyncStateSet":
            body = self.body_json() or {}
            args = {"brokerName": h.get("brokerName", ""), "masterBrokerId": _num(h.get("masterBrokerId")),
                    "masterEpoch": _num(h.get("masterEpoch")), "syncStateSet": sorted(body.get("syncStateSet") or []),
                    "syncStateSetEpoch": body.get("syncStateSetEpoch")}
        elif op == "electMaster":
            args = {"clusterName": h.get("clusterName", ""), "brokerName": h.get("brokerName", ""),
                    "brokerId": _num(h.get("brokerId")), "designateElect": _flag(h.get("designateElect"))}
        elif op == "registerSuccess":
            args = {"clusterName": h.get("clusterName", ""), "brokerName": h.get("brokerName", ""),
                    "brokerId": _num(h.get("brokerId")), "brokerAddress": h.get("brokerAddress", "")}
        elif op == "getReplicaInfo":
            args = {"brokerName": h.get("brokerName", "")}
        elif op == "getSyncStateData":
            names = self.body_json()
            args = {"brokerNames": list(names) if isinstance(names, list) else []}
        elif op == "cleanBrokerData":
            args = {"clusterName": h.get("clusterName"), "brokerName": h.get("brokerName", ""),
                    "brokerControllerIdsToClean": h.get("brokerControllerIdsToClean"),
                    "isCleanLivingBroker": _flag(h.get("isCleanLivingBroker"))}
        elif op == "getNextBrokerId":
            args = {"clusterName": h.get("clusterName", ""), "brokerName": h.get("brokerName", "")}
        elif op == "applyBrokerId":
            args = {"clusterName": h.get("clusterName", ""), "brokerName": h.get("brokerName", ""),
                    "appliedBrokerId": _num(h.get("appliedBrokerId")),
                    "registerCheckCode": h.get("registerCheckCode", "")}
        elif op == "closeChannel":
            args = {"clusterName": h.get("clusterName", ""), "brokerName": h.get("brokerName", ""),
                    "brokerId": _num(h.get("brokerId"))}
        elif op == "checkNotActive":
            args = {}
            stamp = _num(h.get("checkTimeMillis")) or 0
        elif op == "heartbeat":  # RaftBrokerHeartBeatEventRequest: the identity fields carry a suffix
            args = {"clusterName": h.get("clusterNameIdentityInfo", ""),
                    "brokerName": h.get("brokerNameIdentityInfo", h.get("brokerName", "")),
                    "brokerAddr": h.get("brokerAddr", ""),
                    "brokerId": _num(h.get("brokerIdIdentityInfo", h.get("brokerId"))),
                    "heartbeatTimeoutMills": _num(h.get("heartbeatTimeoutMillis")), "epoch": _num(h.get("epoch")),
                    "maxOffset": _num(h.get("maxOffset")), "confirmOffset": _num(h.get("confirmOffset")),
                    "electionPriority": _num(h.get("electionPriority"))}
            stamp = _num(h.get("lastUpdateTimestamp")) or stamp
        elif op == "getBrokerLiveInfo":  # not in the kit (its leader reads its applied table instead)
            args = {"clusterName": h.get("clusterName", ""), "brokerName": h.get("brokerName", ""),
                    "brokerId": _num(h.get("brokerId"))}
        else:
            raise RealFileError(f"{self.name} has no kit counterpart")
        return {"type": "Request", "op": op, "args": args, "stamp": stamp}


def decode_jraft_request(data: bytes, where: str = "JRaft entry") -> ControllerRequest:
    """A JRaft data entry: one remoting frame (``RemotingCommand.encode``)."""
    try:
        frame = decode_frame(data)
    except FrameError as exc:
        _fail(where, f"not a remoting frame ({exc})")
    ext = {str(k): "" if v is None else str(v) for k, v in frame.ext_fields.items()}
    return ControllerRequest(frame.code, frame.opaque, ext, frame.body)


@dataclass(frozen=True)
class JraftEntry:
    index: int
    term: int
    type: str  # ENTRY_TYPE_DATA, ENTRY_TYPE_NO_OP, ENTRY_TYPE_CONFIGURATION
    data: bytes = field(repr=False)
    peers: tuple[str, ...]  # configuration entries
    request: ControllerRequest | None  # data entries
    corrupted: bool = False  # the entry's checksum did not hold (JraftDump's "corrupted")


def parse_jraft_dump(text: str, where: str = "JRaft dump") -> list[JraftEntry]:
    """The JSON lines ``JraftDump`` prints (one per log entry, index order)."""
    out: list[JraftEntry] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            _fail(where, f"line {n} is not JSON ({exc.msg})")
        if not isinstance(d, dict):
            _fail(where, f"line {n} is not a JSON object")
        index, term, kind = d.get("index"), d.get("term"), d.get("type")
        if not isinstance(index, int) or not isinstance(term, int) or not isinstance(kind, str):
            _fail(where, f"line {n} lacks index, term or type")
        try:
            data = base64.b64decode(d.get("data") or "", validate=True)
        except (binascii.Error, ValueError):
            _fail(where, f"line {n}: data is not base64")
        peers = d.get("peers") or []
        if not isinstance(peers, list):
            _fail(where, f"line {n}: peers is not a list")
        req = decode_jraft_request(data, f"{where} index {index}") if kind == "ENTRY_TYPE_DATA" and data else None
        out.append(JraftEntry(index, term, kind, data, tuple(str(p) for p in peers), req, d.get("corrupted") is True))
    return out


def read_jraft_dump(path: str | Path) -> list[JraftEntry]:
    """A file of ``JraftDump`` output (gzip-compressed when its name ends in ``.gz``)."""
    p = Path(path)
    if p.suffix != ".gz":
        return parse_jraft_dump(_read_text(p, "JRaft dump"), str(p))
    if not p.is_file():
        _fail(p, "no JRaft dump file")
    try:
        text = gzip.decompress(p.read_bytes()).decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        _fail(p, f"not gzip-compressed UTF-8 text ({exc})")
    return parse_jraft_dump(text, str(p))


def jraft_dump_command(java: str, classpath: str, class_dir: str | Path, controller_store: str | Path) -> list[str]:
    """The command line that dumps a (stopped) JRaft controller's log: ``controllerStorePath/log`` read-only.
    ``class_dir`` holds the compiled ``JraftDump.class``; ``classpath`` is RocketMQ's (it carries sofa-jraft and
    RocksDB)."""
    return [java, "-cp", f"{class_dir}:{classpath}", "JraftDump", str(Path(controller_store) / "log")]
