"""Message records in the commit log: encoding and the validity check recovery and reput rely on.

The layout is the kit's own (RocketMQ's has ~20 fields), but it keeps the parts the HA logic depends on:
a leading total size, a magic code, a body CRC and the physical offset, so that a torn tail, a batch cut
in the middle of a message, or bytes written at the wrong place are all detected the way
``CommitLog.checkMessageAndReturnSize`` detects them.

    0  4  TOTALSIZE       4  4  MAGICCODE (RocketMQ's MESSAGE_MAGIC_CODE_V1)   8  4  BODYCRC (crc32)
    12 8  PHYSICALOFFSET  20 8  BORNTIMESTAMP   28 2  KEYLEN   30 ..  KEY (utf-8)   .. 4 BODYLEN  .. BODY
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from .offsets import base_of

MESSAGE_MAGIC_CODE = 0xDAA320A7
BLANK_MAGIC_CODE = 0xCBD43194  # CommitLog.BLANK_MAGIC_CODE (-875286124): the filler at the end of a mapped file
END_FILE_MIN_BLANK_LENGTH = 8  # DefaultAppendMessageCallback: a file end keeps room for a filler's size and magic
_BLANK = struct.Struct(">iI")
_HEAD = struct.Struct(">iIIqqH")  # totalSize, magic, crc, physicalOffset, bornTimestamp, keyLen
_BODYLEN = struct.Struct(">i")
HEADER_SIZE = _HEAD.size  # 30
MIN_SIZE = HEADER_SIZE + _BODYLEN.size


class Record(NamedTuple):
    offset: int
    size: int
    key: str


def body_for(key: str, size: int) -> bytes:
    """A deterministic body: the key repeated; cheap, and any misplaced byte breaks the CRC."""
    seed = (key + "|").encode()
    reps = size // len(seed) + 1
    return (seed * reps)[:size]


def queue_body(key: str, size: int, queue_id: int, queue_offset: int) -> bytes:
    """A body that carries its topic queue and queue offset in front (``[workload] queues``): RocketMQ keeps
    QUEUEID and QUEUEOFFSET in the message's own fields; the kit's layout has none, so they lead the body."""
    tag = f"q{queue_id}.{queue_offset}|".encode()
    return tag + body_for(key, max(0, size - len(tag)))


def queue_of(buf: bytes | bytearray | memoryview, offset: int) -> tuple[int, int] | None:
    """The (queueId, queueOffset) a whole message at ``offset`` carries, or None (a message without a tag)."""
    raw = offset - base_of(buf)
    klen = _HEAD.unpack_from(buf, raw)[5]
    b0 = raw + HEADER_SIZE + klen + _BODYLEN.size
    head = bytes(memoryview(buf)[b0:b0 + 24])
    if not head.startswith(b"q") or b"|" not in head:
        return None
    qid, _, qoff = head[1:head.index(b"|")].partition(b".")
    return int(qid), int(qoff)


def encode(key: str, body: bytes, physical_offset: int, born: int) -> bytes:
    kb = key.encode()
    total = HEADER_SIZE + len(kb) + _BODYLEN.size + len(body)
    crc = zlib.crc32(body, zlib.crc32(kb))
    return b"".join((_HEAD.pack(total, MESSAGE_MAGIC_CODE, crc, physical_offset, born, len(kb)), kb,
                     _BODYLEN.pack(len(body)), body))


def encode_blank(size: int) -> bytes:
    """The end-of-file filler (``doAppend`` when ``msgLen + END_FILE_MIN_BLANK_LENGTH > maxBlank``): its size
    (the rest of the file) and ``BLANK_MAGIC_CODE``; the kit zeroes the rest, a fresh mapped file's content."""
    return _BLANK.pack(size, BLANK_MAGIC_CODE) + bytes(size - _BLANK.size)


def check(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, str | None]:
    """``checkMessageAndReturnSize`` at ``pos`` within ``buf[:end]``.

    Returns ``(size, key)`` for a whole valid message, ``(size, None)`` with ``size > 0`` for a whole end-of-file
    filler (``BLANK_MAGIC_CODE``: success, nothing to dispatch, the next file follows), ``(0, None)`` when fewer
    bytes than a whole record are present (a tail still arriving), and ``(-1, None)`` when the bytes are not one.
    """
    raw = pos - base_of(buf)  # offsets are physical; a BasedLog's buffer starts at its base
    if end - pos >= _BLANK.size:
        blank, bmagic = _BLANK.unpack_from(buf, raw)
        if bmagic == BLANK_MAGIC_CODE:
            if blank < _BLANK.size:
                return -1, None
            return (blank, None) if end - pos >= blank else (0, None)
    if end - pos < MIN_SIZE:
        return 0, None
    total, magic, crc, phys, _born, klen = _HEAD.unpack_from(buf, raw)
    if magic != MESSAGE_MAGIC_CODE or total < MIN_SIZE or phys != pos:
        return -1, None
    if end - pos < total:
        return 0, None
    k0 = raw + HEADER_SIZE
    (blen,) = _BODYLEN.unpack_from(buf, k0 + klen)
    if HEADER_SIZE + klen + _BODYLEN.size + blen != total:
        return -1, None
    key_bytes = bytes(memoryview(buf)[k0:k0 + klen])
    b0 = k0 + klen + _BODYLEN.size
    if zlib.crc32(memoryview(buf)[b0:b0 + blen], zlib.crc32(key_bytes)) != crc:
        return -1, None
    return total, key_bytes.decode()
