"""Frames on the cluster's sockets: a 4-byte big-endian length, then UTF-8 JSON.

Every connection opens with a *hello* frame, ``{"hello": <node>, "kind": "rpc" | "ha" | "status"}``, which names
the peer (the loopback proxy reads it to know which link a connection belongs to). On an ``rpc`` connection every
later frame is one ``RemotingCommand`` (``impl.runtime.Command.to_dict``); on an ``ha`` connection the rest is the
HA protocol's raw bytes (``impl/ha/frames.py``); a ``status`` connection gets one status frame back.

A frame that is too long, cut short, not JSON within the core's limits (``impl.wire.decode_json``: UTF-8, nested
at most 32 deep, integers that fit a Java long), or not the shape its kind needs (a hello naming a node and a kind;
a command the core's ``decode_command`` accepts: known code, typed header fields) raises ``FrameError`` with a
one-line reason; the host logs that line, naming the peer, and closes the connection.
"""

from __future__ import annotations

import asyncio
import json
import re
import struct
from typing import Any

from ..impl.runtime import Command
from ..impl.wire import WireError, decode_command, decode_json

MAX_FRAME = 16 * 1024 * 1024
KINDS = ("rpc", "ha", "status")
_NAME = re.compile(r"[A-Za-z0-9@._#-]{1,64}")


class FrameError(WireError):
    """A malformed frame; the message is one line."""


def pack(obj: dict[str, Any]) -> bytes:
    data = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack(">I", len(data)) + data


def frame_length(head: bytes) -> int:
    """The length a frame's 4-byte head announces, at most ``MAX_FRAME``."""
    if len(head) != 4:
        raise FrameError("stream ended inside a frame length")
    (n,) = struct.unpack(">I", head)
    if n > MAX_FRAME:
        raise FrameError(f"frame of {n} bytes exceeds the {MAX_FRAME}-byte limit")
    return int(n)


def decode_payload(data: bytes) -> dict[str, Any]:
    """A frame's JSON object."""
    try:
        obj = decode_json(data)
    except WireError as exc:
        raise FrameError(f"frame is {exc}" if str(exc).startswith("not ") else f"bad frame: {exc}") from None
    if not isinstance(obj, dict):
        raise FrameError("frame is not a JSON object")
    return obj


def decode_frames(data: bytes) -> list[dict[str, Any]]:
    """Every frame of ``data`` (a whole stream: one cut short is a ``FrameError``), as ``read_frame`` reads them."""
    out: list[dict[str, Any]] = []
    pos = 0
    while pos < len(data):  # bounded: each pass consumes at least the 4-byte head
        n = frame_length(data[pos:pos + 4])
        if pos + 4 + n > len(data):
            raise FrameError(f"stream ended inside a {n}-byte frame")
        out.append(decode_payload(data[pos + 4:pos + 4 + n]))
        pos += 4 + n
    return out


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next frame, or ``None`` at a clean end of stream."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise FrameError("stream ended inside a frame length") from None
        return None
    n = frame_length(head)
    try:
        data = await reader.readexactly(n)
    except asyncio.IncompleteReadError:
        raise FrameError(f"stream ended inside a {n}-byte frame") from None
    return decode_payload(data)


def hello(node: str, kind: str) -> bytes:
    return pack({"hello": node, "kind": kind})


def parse_hello(obj: dict[str, Any] | None) -> tuple[str, str]:
    """The (node, kind) a hello frame names: a node name of at most 64 letters, digits and ``@._#-`` (it goes into
    log lines) and a kind of ``KINDS``."""
    if obj is None:
        raise FrameError("connection closed before its hello")
    node, kind = obj.get("hello"), obj.get("kind")
    if not isinstance(node, str) or not _NAME.fullmatch(node) or kind not in KINDS or len(obj) != 2:
        raise FrameError(f"bad hello frame {json.dumps(obj)[:80]}")
    return node, kind


def command_frame(cmd: Command) -> bytes:
    d = cmd.to_dict()
    if cmd.remark is not None:
        d["remark"] = cmd.remark
    return pack(d)


def parse_command(obj: dict[str, Any]) -> Command:
    """The command a frame holds (``impl.wire.decode_command``)."""
    try:
        c = decode_command(obj)
    except WireError as exc:
        raise FrameError(f"bad command frame: {exc}") from None
    return Command(c["code"], c["opaque"], c["header"], c["body"], response=c["response"], oneway=c["oneway"],
                   remark=c["remark"])
