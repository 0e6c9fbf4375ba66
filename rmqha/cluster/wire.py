"""Frames on the cluster's sockets: a 4-byte big-endian length, then UTF-8 JSON.

Every connection opens with a *hello* frame, ``{"hello": <node>, "kind": "rpc" | "ha" | "status"}``, which names
the peer (the loopback proxy reads it to know which link a connection belongs to). On an ``rpc`` connection every
later frame is one ``RemotingCommand`` (``impl.runtime.Command.to_dict``); on an ``ha`` connection the rest is the
HA protocol's raw bytes (``impl/ha/frames.py``); a ``status`` connection gets one status frame back.

A frame that is too long, not JSON, or not the shape its kind needs raises ``FrameError`` with a one-line
reason; the host closes that connection and logs the reason.
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

from ..impl.runtime import Command

MAX_FRAME = 16 * 1024 * 1024
KINDS = ("rpc", "ha", "status")


class FrameError(ValueError):
    """A malformed frame; the message is one line."""


def pack(obj: dict[str, Any]) -> bytes:
    data = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack(">I", len(data)) + data


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next frame, or ``None`` at a clean end of stream."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise FrameError("stream ended inside a frame length") from None
        return None
    (n,) = struct.unpack(">I", head)
    if n > MAX_FRAME:
        raise FrameError(f"frame of {n} bytes exceeds the {MAX_FRAME}-byte limit")
    try:
        data = await reader.readexactly(n)
    except asyncio.IncompleteReadError:
        raise FrameError(f"stream ended inside a {n}-byte frame") from None
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FrameError(f"frame is not JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise FrameError("frame is not a JSON object")
    return obj


def hello(node: str, kind: str) -> bytes:
    return pack({"hello": node, "kind": kind})


def parse_hello(obj: dict[str, Any] | None) -> tuple[str, str]:
    if obj is None:
        raise FrameError("connection closed before its hello")
    node, kind = obj.get("hello"), obj.get("kind")
    if not isinstance(node, str) or not node or kind not in KINDS:
        raise FrameError(f"bad hello frame {str(obj)[:80]}")
    return node, kind


def command_frame(cmd: Command) -> bytes:
    d = cmd.to_dict()
    if cmd.remark is not None:
        d["remark"] = cmd.remark
    return pack(d)


def parse_command(obj: dict[str, Any]) -> Command:
    code, opaque, header = obj.get("code"), obj.get("opaque"), obj.get("header", {})
    if not isinstance(code, int) or not isinstance(opaque, int) or not isinstance(header, dict):
        raise FrameError(f"bad command frame {str(obj)[:80]}")
    remark = obj.get("remark")
    return Command(code, opaque, header, obj.get("body"), response=bool(obj.get("response", False)),
                   oneway=bool(obj.get("oneway", False)), remark=remark if isinstance(remark, str) else None)
