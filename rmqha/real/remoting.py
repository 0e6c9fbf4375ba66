"""RocketMQ remoting frames, as they cross the wire between real RocketMQ 5 nodes.

Written from the protocol's description in RocketMQ 5.3.3 (``RemotingCommand``, ``RocketMQSerializable``,
``NettyDecoder``); no RocketMQ code is copied. A frame is

* a 4-byte big-endian length ``L`` of everything after it;
* 4 bytes: the high byte is the header's serialize type (0 JSON, 1 ROCKETMQ binary), the low 3 bytes the header
  length ``H``;
* the header (``H`` bytes), then the body (``L - 4 - H`` bytes).

The JSON header is a UTF-8 object with ``code``, ``language`` (a name such as ``"JAVA"``), ``version``, ``opaque``,
``flag``, ``remark``, ``extFields`` (string to string) and ``serializeTypeCurrentRPC``. The ROCKETMQ header is
``code`` (short), ``language`` (byte), ``version`` (short), ``opaque`` (int), ``flag`` (int), the remark (int
length, then UTF-8; length 0 means none), then the extFields (int length of the map area, then per entry a
short key length, the key, an int value length, the value). All big-endian, all signed as Java reads them.

``flag`` bit 0 marks a response, bit 1 a oneway request. A response carries the request's ``opaque`` and, in
``code``, a *response* code (``RESPONSE_CODES``), never the request's code; matching a response to its request
therefore goes by ``opaque`` on the connection.

Bounds: a frame (length field included, as Netty's ``LengthFieldBasedFrameDecoder`` counts it) larger than
``MAX_FRAME`` (16 MiB, RocketMQ's default ``com.rocketmq.remoting.frameMaxLength``) is malformed, and so is a
length under 4, a header longer than its frame, an unknown serialize type, a header that is not a JSON object,
or a binary header whose strings or map overrun it. Every such case raises ``FrameError`` (a ``ValueError``)
with a one-line reason, as soon as enough bytes are there to tell.

``decode_frames(buf)`` decodes what is complete and returns the rest; ``FrameDecoder`` does the same
incrementally without re-scanning a large frame's bytes on every chunk. ``encode(...)`` builds frames (tests,
tools). ``REQUEST_CODES`` / ``RESPONSE_CODES`` name the codes the harness cares about (numbers checked against
``RequestCode.java`` / ``ResponseCode.java`` / ``RemotingSysResponseCode.java`` of rocketmq-all-5.3.3).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_FRAME = 16 * 1024 * 1024
SERIALIZE_JSON = 0
SERIALIZE_ROCKETMQ = 1
SERIALIZE_NAMES = {SERIALIZE_JSON: "JSON", SERIALIZE_ROCKETMQ: "ROCKETMQ"}
FLAG_RESPONSE = 1  # bit 0
FLAG_ONEWAY = 2  # bit 1
_FIXED_BINARY = 2 + 1 + 2 + 4 + 4  # code, language, version, opaque, flag
_MIN_BINARY = _FIXED_BINARY + 4 + 4  # ... + remark length + extFields length

# LanguageCode: the byte on the binary header, the name in the JSON one.
LANGUAGES: dict[str, int] = {
    "JAVA": 0, "CPP": 1, "DOTNET": 2, "PYTHON": 3, "DELPHI": 4, "ERLANG": 5, "RUBY": 6, "OTHER": 7, "HTTP": 8,
    "GO": 9, "PHP": 10, "OMS": 11, "RUST": 12, "NODE_JS": 13,
}
LANGUAGE_NAMES: dict[int, str] = {v: k for k, v in LANGUAGES.items()}

# Request codes (RequestCode.java, rocketmq-all-5.3.3). Not all of them: the ones a controller-mode HA run
# sends or that a fault may want to name.
REQUEST_CODES: dict[str, int] = {
    # client <-> broker
    "SEND_MESSAGE": 10,
    "PULL_MESSAGE": 11,
    "QUERY_MESSAGE": 12,
    "QUERY_BROKER_OFFSET": 13,
    "QUERY_CONSUMER_OFFSET": 14,
    "UPDATE_CONSUMER_OFFSET": 15,
    "UPDATE_AND_CREATE_TOPIC": 17,
    "UPDATE_AND_CREATE_TOPIC_LIST": 18,
    "GET_ALL_TOPIC_CONFIG": 21,
    "GET_TOPIC_CONFIG_LIST": 22,
    "GET_TOPIC_NAME_LIST": 23,
    "UPDATE_BROKER_CONFIG": 25,
    "GET_BROKER_CONFIG": 26,
    "GET_BROKER_RUNTIME_INFO": 28,
    "SEARCH_OFFSET_BY_TIMESTAMP": 29,
    "GET_MAX_OFFSET": 30,
    "GET_MIN_OFFSET": 31,
    "GET_EARLIEST_MSG_STORETIME": 32,
    "VIEW_MESSAGE_BY_ID": 33,
    "HEART_BEAT": 34,
    "UNREGISTER_CLIENT": 35,
    "CONSUMER_SEND_MSG_BACK": 36,
    "END_TRANSACTION": 37,
    "GET_CONSUMER_LIST_BY_GROUP": 38,
    "CHECK_TRANSACTION_STATE": 39,
    "NOTIFY_CONSUMER_IDS_CHANGED": 40,
    "LOCK_BATCH_MQ": 41,
    "UNLOCK_BATCH_MQ": 42,
    "GET_ALL_CONSUMER_OFFSET": 43,
    "GET_ALL_DELAY_OFFSET": 45,
    "GET_TIMER_CHECK_POINT": 60,
    "GET_TIMER_METRICS": 61,
    "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP": 200,
    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG": 201,
    "GET_TOPIC_STATS_INFO": 202,
    "GET_CONSUMER_CONNECTION_LIST": 203,
    "GET_PRODUCER_CONNECTION_LIST": 204,
    "GET_CONSUME_STATS": 208,
    "GET_CONSUMER_RUNNING_INFO": 307,
    "CONSUME_MESSAGE_DIRECTLY": 309,
    "SEND_MESSAGE_V2": 310,
    "SEND_BATCH_MESSAGE": 320,
    "QUERY_CONSUME_QUEUE": 321,
    "QUERY_DATA_VERSION": 322,
    "SEND_REPLY_MESSAGE": 324,
    "SEND_REPLY_MESSAGE_V2": 325,
    "GET_ALL_PRODUCER_INFO": 328,
    "GET_TOPIC_CONFIG": 351,
    "GET_SUBSCRIPTIONGROUP_CONFIG": 352,
    "LITE_PULL_MESSAGE": 361,
    "RECALL_MESSAGE": 370,
    "QUERY_ASSIGNMENT": 400,
    "SET_MESSAGE_REQUEST_MODE": 401,
    "GET_ALL_MESSAGE_REQUEST_MODE": 402,
    "POP_MESSAGE": 200050,
    "ACK_MESSAGE": 200051,
    "PEEK_MESSAGE": 200052,
    "CHANGE_MESSAGE_INVISIBLETIME": 200053,
    "NOTIFICATION": 200054,
    "POLLING_INFO": 200055,
    "POP_ROLLBACK": 200056,
    "BATCH_ACK_MESSAGE": 200151,
    # nameserver
    "PUT_KV_CONFIG": 100,
    "GET_KV_CONFIG": 101,
    "DELETE_KV_CONFIG": 102,
    "REGISTER_BROKER": 103,
    "UNREGISTER_BROKER": 104,
    "GET_ROUTEINFO_BY_TOPIC": 105,
    "GET_BROKER_CLUSTER_INFO": 106,
    "WIPE_WRITE_PERM_OF_BROKER": 205,
    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER": 206,
    "REGISTER_TOPIC_IN_NAMESRV": 217,
    "GET_KVLIST_BY_NAMESPACE": 219,
    "GET_TOPICS_BY_CLUSTER": 224,
    "GET_NAMESRV_CONFIG": 319,
    "ADD_WRITE_PERM_OF_BROKER": 327,
    # broker <-> broker, broker <-> controller, controller admin
    "GET_BROKER_MEMBER_GROUP": 901,
    "ADD_BROKER": 902,
    "REMOVE_BROKER": 903,
    "BROKER_HEARTBEAT": 904,
    "NOTIFY_MIN_BROKER_ID_CHANGE": 905,
    "EXCHANGE_BROKER_HA_INFO": 906,
    "GET_BROKER_HA_STATUS": 907,
    "RESET_MASTER_FLUSH_OFFSET": 908,
    "CONTROLLER_ALTER_SYNC_STATE_SET": 1001,
    "CONTROLLER_ELECT_MASTER": 1002,
    "CONTROLLER_REGISTER_BROKER": 1003,
    "CONTROLLER_GET_REPLICA_INFO": 1004,
    "CONTROLLER_GET_METADATA_INFO": 1005,
    "CONTROLLER_GET_SYNC_STATE_DATA": 1006,
    "GET_BROKER_EPOCH_CACHE": 1007,
    "NOTIFY_BROKER_ROLE_CHANGED": 1008,
    "UPDATE_CONTROLLER_CONFIG": 1009,
    "GET_CONTROLLER_CONFIG": 1010,
    "CLEAN_BROKER_DATA": 1011,
    "CONTROLLER_GET_NEXT_BROKER_ID": 1012,
    "CONTROLLER_APPLY_BROKER_ID": 1013,
}
REQUEST_NAMES: dict[int, str] = {v: k for k, v in REQUEST_CODES.items()}

# Response codes (RemotingSysResponseCode.java and ResponseCode.java, rocketmq-all-5.3.3), the ones worth naming.
RESPONSE_CODES: dict[str, int] = {
    "SUCCESS": 0,
    "SYSTEM_ERROR": 1,
    "SYSTEM_BUSY": 2,
    "REQUEST_CODE_NOT_SUPPORTED": 3,
    "TRANSACTION_FAILED": 4,
    "FLUSH_DISK_TIMEOUT": 10,
    "SLAVE_NOT_AVAILABLE": 11,
    "FLUSH_SLAVE_TIMEOUT": 12,
    "MESSAGE_ILLEGAL": 13,
    "SERVICE_NOT_AVAILABLE": 14,
    "VERSION_NOT_SUPPORTED": 15,
    "NO_PERMISSION": 16,
    "TOPIC_NOT_EXIST": 17,
    "TOPIC_EXIST_ALREADY": 18,
    "PULL_NOT_FOUND": 19,
    "PULL_RETRY_IMMEDIATELY": 20,
    "PULL_OFFSET_MOVED": 21,
    "QUERY_NOT_FOUND": 22,
    "SUBSCRIPTION_NOT_EXIST": 24,
    "SUBSCRIPTION_NOT_LATEST": 25,
    "SUBSCRIPTION_GROUP_NOT_EXIST": 26,
    "INVALID_PARAMETER": 29,
    "NO_MESSAGE": 208,
    "POLLING_FULL": 209,
    "POLLING_TIMEOUT": 210,
    "BROKER_NOT_EXIST": 211,
    "FLOW_CONTROL": 215,
    "NOT_LEADER_FOR_QUEUE": 501,
    "ILLEGAL_OPERATION": 604,
    "GO_AWAY": 1500,
    "CONTROLLER_FENCED_MASTER_EPOCH": 2000,
    "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH": 2001,
    "CONTROLLER_INVALID_MASTER": 2002,
    "CONTROLLER_INVALID_REPLICAS": 2003,
    "CONTROLLER_MASTER_NOT_AVAILABLE": 2004,
    "CONTROLLER_INVALID_REQUEST": 2005,
    "CONTROLLER_BROKER_NOT_ALIVE": 2006,
    "CONTROLLER_NOT_LEADER": 2007,
    "CONTROLLER_BROKER_METADATA_NOT_EXIST": 2008,
    "CONTROLLER_INVALID_CLEAN_BROKER_METADATA": 2009,
    "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED": 2010,
    "CONTROLLER_MASTER_STILL_EXIST": 2011,
    "CONTROLLER_ELECT_MASTER_FAILED": 2012,
    "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED": 2013,
    "CONTROLLER_BROKER_ID_INVALID": 2014,
    "CONTROLLER_JRAFT_INTERNAL_ERROR": 2015,
    "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS": 2016,
}
RESPONSE_NAMES: dict[int, str] = {v: k for k, v in RESPONSE_CODES.items()}


class FrameError(ValueError):
    """A malformed remoting frame; the message is one line."""


def request_code(code: int | str) -> int:
    """A request code given as a number or a ``REQUEST_CODES`` name (``"CONTROLLER_ELECT_MASTER"``, ``"1002"``)."""
    if isinstance(code, bool):
        raise ValueError(f"request code {code!r}: a number or a name")
    if isinstance(code, int):
        return code
    if isinstance(code, str):
        name = code.strip()
        if name in REQUEST_CODES:
            return REQUEST_CODES[name]
        if name.lstrip("-").isdigit():
            return int(name)
    raise ValueError(f"unknown request code {code!r} (a number, or one of {', '.join(sorted(REQUEST_CODES))})")


def code_name(code: int, *, response: bool = False) -> str:
    """The name of a request (or, with ``response``, a response) code; the number as text when unnamed."""
    names = RESPONSE_NAMES if response else REQUEST_NAMES
    return names.get(code, str(code))


@dataclass(frozen=True)
class Frame:
    """One decoded frame. ``header`` holds every header field decoded (``code``, ``language``, ``version``,
    ``opaque``, ``flag``, ``remark``, ``extFields``, and for JSON whatever else the object carried); ``raw`` is
    the whole frame as it was on the wire, length field included."""

    code: int
    flag: int
    opaque: int
    serialize: int
    header: dict[str, Any]
    body: bytes
    raw: bytes = field(repr=False)

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)  # as RemotingCommand.isOnewayRPC: bit 1 alone (never on a response)

    @property
    def name(self) -> str:
        return code_name(self.code, response=self.is_response)

    @property
    def ext_fields(self) -> dict[str, str]:
        ext = self.header.get("extFields")
        return dict(ext) if isinstance(ext, dict) else {}

    @property
    def remark(self) -> str | None:
        r = self.header.get("remark")
        return r if isinstance(r, str) else None


def _int_field(obj: dict[str, Any], key: str) -> int:
    v = obj.get(key, 0)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int):
        raise FrameError(f"JSON header field {key!r} is not an integer: {v!r:.40}")
    return v


def _decode_json_header(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8", errors="replace"))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise FrameError(f"JSON header does not parse: {exc}") from None
    if not isinstance(obj, dict):
        raise FrameError("JSON header is not an object")
    for key in ("code", "flag", "opaque", "version"):
        obj[key] = _int_field(obj, key)
    ext = obj.get("extFields")
    if ext is not None and not isinstance(ext, dict):
        raise FrameError("JSON header field 'extFields' is not an object")
    return obj


def _decode_binary_header(data: bytes) -> dict[str, Any]:
    n = len(data)
    if n < _MIN_BINARY:
        raise FrameError(f"ROCKETMQ header of {n} bytes is shorter than its fixed part ({_MIN_BINARY})")
    code, lang, version, opaque, flag = struct.unpack_from(">hBhii", data, 0)
    pos = _FIXED_BINARY

    def string(length: int, what: str) -> str:
        nonlocal pos
        if length < 0 or pos + length > n:
            raise FrameError(f"ROCKETMQ header: {what} of {length} bytes overruns the {n}-byte header")
        s = data[pos:pos + length].decode("utf-8", errors="replace")
        pos += length
        return s

    (rlen,) = struct.unpack_from(">i", data, pos)
    pos += 4
    remark = string(rlen, "remark") if rlen else None
    if pos + 4 > n:
        raise FrameError("ROCKETMQ header ends before its extFields length")
    (elen,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if elen < 0 or pos + elen > n:
        raise FrameError(f"ROCKETMQ header: extFields of {elen} bytes overrun the {n}-byte header")
    end = pos + elen
    ext: dict[str, str] = {}
    while pos < end:
        if pos + 2 > end:
            raise FrameError("ROCKETMQ header: an extFields key length overruns the map")
        (klen,) = struct.unpack_from(">h", data, pos)
        pos += 2
        if klen < 0 or pos + klen + 4 > end:
            raise FrameError("ROCKETMQ header: an extFields key overruns the map")
        key = string(klen, "extFields key")
        (vlen,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if vlen < 0 or pos + vlen > end:
            raise FrameError("ROCKETMQ header: an extFields value overruns the map")
        ext[key] = string(vlen, "extFields value")
    if pos != n:
        raise FrameError(f"ROCKETMQ header: {n - pos} bytes left over after the extFields")
    header: dict[str, Any] = {"code": code, "language": LANGUAGE_NAMES.get(lang, lang), "version": version,
                              "opaque": opaque, "flag": flag}
    if remark is not None:
        header["remark"] = remark
    if elen:
        header["extFields"] = ext
    return header


def _check_prefix(buf: bytes | bytearray | memoryview, pos: int, avail: int) -> int:
    """Validate what can be validated of the frame starting at ``pos`` with ``avail`` bytes present; return the
    frame's total size (length field included), or -1 when even the length is not there yet."""
    if avail < 4:
        return -1
    (length,) = struct.unpack_from(">i", buf, pos)
    if length < 4:
        raise FrameError(f"frame length {length} is under 4 (no room for the header length)")
    total = length + 4
    if total > MAX_FRAME:
        raise FrameError(f"frame of {total} bytes exceeds the {MAX_FRAME}-byte limit")
    if avail >= 8:
        (word,) = struct.unpack_from(">I", buf, pos + 4)
        kind, hlen = word >> 24, word & 0xFFFFFF
        if kind not in SERIALIZE_NAMES:
            raise FrameError(f"unknown serialize type {kind} (0 JSON, 1 ROCKETMQ)")
        if hlen > length - 4:
            raise FrameError(f"header length {hlen} exceeds the frame's {length - 4} bytes after the length words")
    return int(total)


def decode_frame(raw: bytes) -> Frame:
    """One complete frame (``raw`` exactly the frame, length field included)."""
    total = _check_prefix(raw, 0, len(raw))
    if total < 0 or len(raw) < 8 or total != len(raw):
        raise FrameError(f"{len(raw)} bytes are not one whole frame")
    (word,) = struct.unpack_from(">I", raw, 4)
    kind, hlen = word >> 24, word & 0xFFFFFF
    hdata = raw[8:8 + hlen]
    header = _decode_json_header(hdata) if kind == SERIALIZE_JSON else _decode_binary_header(hdata)
    return Frame(code=header["code"], flag=header["flag"], opaque=header["opaque"], serialize=kind, header=header,
                 body=bytes(raw[8 + hlen:]), raw=bytes(raw))


def decode_frames(buf: bytes | bytearray | memoryview) -> tuple[list[Frame], bytes]:
    """Every complete frame at the start of ``buf`` and the bytes left (an incomplete frame, or nothing).

    Raises ``FrameError`` at the first malformed frame, as soon as its first bytes tell (a too-long length needs
    only the 4 length bytes)."""
    frames: list[Frame] = []
    pos, n = 0, len(buf)
    while True:
        total = _check_prefix(buf, pos, n - pos)
        if total < 0 or n - pos < total:
            break
        frames.append(decode_frame(bytes(buf[pos:pos + total])))
        pos += total
    return frames, bytes(buf[pos:])


class FrameDecoder:
    """Incremental ``decode_frames``. ``feed(chunk)`` returns the frames the chunk completes; a large frame
    arriving in many chunks is decoded once, when its last byte is in. ``push`` + ``next_frame`` do the same one
    frame at a time.

    A malformed frame raises ``FrameError`` and stays at the head of the buffer (so ``pending()`` returns it and
    everything after it; calling again raises again). ``feed`` raises only when the chunk completed no good frame
    before the malformed one; otherwise it returns those and the next call raises."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0  # start of the first byte not yet returned as a frame
        self._need = 4  # bytes (from _pos) needed before decoding is worth trying again

    def push(self, data: bytes) -> None:
        if self._pos and self._pos * 2 >= len(self._buf):
            del self._buf[:self._pos]
            self._pos = 0
        self._buf += data

    def next_frame(self) -> Frame | None:
        avail = len(self._buf) - self._pos
        if avail < self._need:
            return None
        total = _check_prefix(self._buf, self._pos, avail)
        if total < 0 or avail < total:  # the serialize type and header length are checked once 8 bytes are in
            self._need = 4 if total < 0 else 8 if avail < 8 else total
            return None
        frame = decode_frame(bytes(self._buf[self._pos:self._pos + total]))
        self._pos += total
        self._need = 4
        return frame

    def feed(self, data: bytes) -> list[Frame]:
        self.push(data)
        frames: list[Frame] = []
        try:
            while (frame := self.next_frame()) is not None:
                frames.append(frame)
        except FrameError:
            if not frames:
                raise
        return frames

    def pending(self) -> bytes:
        return bytes(self._buf[self._pos:])

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos


def _serialize_code(serialize: int | str) -> int:
    if isinstance(serialize, str):
        for k, v in SERIALIZE_NAMES.items():
            if v == serialize.upper():
                return k
        raise ValueError(f"serialize {serialize!r}: JSON or ROCKETMQ")
    if serialize not in SERIALIZE_NAMES:
        raise ValueError(f"serialize {serialize!r}: 0 (JSON) or 1 (ROCKETMQ)")
    return serialize


def encode(code: int | str, *, opaque: int = 0, flag: int = 0, response: bool = False, oneway: bool = False,
           body: bytes = b"", ext_fields: Mapping[str, str] | None = None, remark: str | None = None,
           serialize: int | str = SERIALIZE_JSON, language: str = "JAVA", version: int = 0) -> bytes:
    """One frame, as a RocketMQ node would write it. ``code`` is a request code (number or name) or, for a
    response, the response code (number or ``RESPONSE_CODES`` name)."""
    if isinstance(code, str):
        code = RESPONSE_CODES[code] if response and code in RESPONSE_CODES else request_code(code)
    flag |= (FLAG_RESPONSE if response else 0) | (FLAG_ONEWAY if oneway else 0)
    kind = _serialize_code(serialize)
    ext = {str(k): str(v) for k, v in (ext_fields or {}).items()}
    if kind == SERIALIZE_JSON:
        obj: dict[str, Any] = {"code": code, "extFields": ext, "flag": flag, "language": language, "opaque": opaque,
                               "serializeTypeCurrentRPC": "JSON", "version": version}
        if remark is not None:
            obj["remark"] = remark
        if not ext:
            del obj["extFields"]
        header = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    else:
        parts = [struct.pack(">hBhii", code, LANGUAGES.get(language, 0), version, opaque, flag)]
        rb = remark.encode() if remark else b""
        parts.append(struct.pack(">i", len(rb)) + rb)
        area = b"".join(struct.pack(">h", len(kb)) + kb + struct.pack(">i", len(vb)) + vb
                        for kb, vb in ((k.encode(), v.encode()) for k, v in ext.items()))
        parts.append(struct.pack(">i", len(area)) + area)
        header = b"".join(parts)
    if len(header) > 0xFFFFFF:
        raise ValueError(f"header of {len(header)} bytes does not fit 24 bits")
    length = 4 + len(header) + len(body)
    if length + 4 > MAX_FRAME:
        raise ValueError(f"frame of {length + 4} bytes exceeds the {MAX_FRAME}-byte limit")
    return struct.pack(">iI", length, (kind << 24) | len(header)) + header + bytes(body)
