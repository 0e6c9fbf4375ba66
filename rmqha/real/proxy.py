"""The fault proxy of a real RocketMQ cluster: one asyncio process in front of every listener of every node.

Run as ``python -m rmqha.real.proxy --config FILE`` inside the run's hub network namespace. The config (JSON)::

    {"routes": [{"name": "b1.remoting", "node": "b1", "kind": "remoting", "listen": ["10.77.0.101", 10911],
                 "target": ["10.77.0.11", 10911]}, ...],
     "peers": {"10.77.0.11": "b1", "10.77.0.10": "ctl0", ...},
     "control": "RUN/proxy.sock", "events": "RUN/proxy-events.jsonl", "lifetime_s": 3600}

Every route listens on ``listen`` and forwards each connection to ``target``. The *source* node of a connection
is its peer address looked up in ``peers`` (an unknown address is ``"client"``), the *destination* node is the
route's ``node``. ``kind`` is ``remoting`` (RocketMQ remoting frames: the frame faults can act on them), ``ha``
or ``raw`` (bytes only). A listen port of 0 binds a free port (``status`` tells which). The proxy is ready
once the control socket accepts connections (every listener is bound before it is created).

Control: a Unix socket at ``control`` (a path, so it works across network namespaces), one JSON request per
line, one JSON reply per line (``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``); ``control(path,
request)`` is the client. Ops (``id`` names a fault, generated when absent, replacing a fault of the same id):

* ``{"op": "partition", "id", "links": [[a, b], ...]}``: a link ``(a, b)`` cut stops the bytes flowing from ``a``
  to ``b`` on every connection between them, whichever side connected: the request bytes of a connection from
  ``a`` to ``b``'s listener, the reply bytes of one from ``b`` to ``a``'s. The bytes are held, not lost: the
  proxy stops reading (TCP pushes back on the sender) and what it already holds waits; all of it flows on when
  the link heals. A new connection between two nodes with a link cut either way waits like a lost SYN
  (``SYN_LOST_S``, 3 s; it goes on if the link heals in time) and is closed.
  ``{"op": "heal", "id": ID | null}`` lifts one partition or all of them.
* Frame faults, on ``remoting`` routes: ``drop-response``, ``delay-response`` (``"ms": D``), ``drop-request``,
  ``delay-request`` (``"ms": D``), with ``"code"`` (a number, a ``remoting.REQUEST_CODES`` name, or null for
  any), ``"from"``/``"to"`` (nodes or null), ``"route"`` (a route name or null), ``"count"`` (how many frames
  to act on, then the fault is spent; null: no limit), ``"until_ms"`` (an absolute ``time.time()*1000``
  deadline), ``"ext"`` (``{"name": "value", ...}``: only requests whose header's extFields hold each of these,
  compared as strings, e.g. ``{"brokerId": "0"}``: a REGISTER_BROKER of a broker registering as master; null or
  absent: any). ``from``/``to`` always name the direction the acted-on frame travels: for a response fault ``from``
  is the serving node and ``to`` the requesting one; for a request fault ``from`` is the requester. A response
  fault remembers the opaque of each matching request that passes while it is in force (oneway requests have no
  response and are never remembered) and acts on the response with that opaque coming back on that connection
  (so apply it before the request is sent: a request that passed earlier is not matched). A request may travel
  either way on a connection (a broker asks its client too); the requester is whoever sends it. A delayed frame
  is held D ms from its arrival at the proxy and every later frame on that connection in that direction waits
  behind it: order is kept, as one TCP stream would keep it (head-of-line blocking).
* ``{"op": "cut-stream", "id", "route", "from", "to", "after_bytes": N, "every": false, "rst": true,
  "now": false}``: the first connection direction matching (route, from -> to) that carries bytes after the
  fault is applied (an open connection or a later one) forwards N more bytes that way, then both sides are closed:
  with an RST (``SO_LINGER 0``) once the N bytes are acknowledged by the receiver's kernel (at most
  ``CUT_FLUSH_S``), or with a FIN if ``"rst": false``. With ``"every": true`` each matching connection is cut this
  way, until the fault is lifted. Bytes only: the cut may fall inside a frame (meant for ``ha`` routes; works on
  any). With ``"now": true`` a matching connection already open is closed at once, whether bytes flow or not
  (``after_bytes`` must be 0): the first one found (every one with ``"every": true``); if none is open the fault
  waits for one as above.
* ``{"op": "delay", "id", "from", "to", "route", "ms": D}``: every chunk from ``from`` to ``to`` is held D ms
  (order kept; overlapping delays: the longest counts).
* ``{"op": "hold-conn", "id", "from", "to", "route", "code", "ext"}``: the connections open *now* from
  ``from`` to ``to`` (on ``route``; none open: an error) stop delivering that way, from the first request frame of
  ``code`` (with ``ext``, one whose extFields hold those values) on, that frame included, or (without ``code``) from
  now on: what they carry after that point, and their close, are held. Connections opened later between the same
  nodes pass normally. The proxy goes on reading a held direction (so it has the bytes, whatever becomes of the
  sender) and keeps the other side's socket open while the sender dies: the dead sender's kernel retransmitting
  its last bytes, then its FIN, after a new connection of its new process (an orphaned socket). ``lift`` (or
  ``clear``, ``until_ms``, a replacing fault) releases it: the held bytes go on, then the close, as a FIN, whatever
  the sender did (the kernel of a process killed with its bytes delivered sends a FIN behind them). Every frame
  held is an ``act`` line (``held: true``; its ``code``, ``name``, ``opaque``, ``oneway``, ``ext`` and a small JSON
  body); the release one per connection (``released: true``, ``frames``, ``bytes``, ``close``: the sender's close
  was held, ``lost``: its socket is gone); the connection's close then says ``released:<id>``.
* ``{"op": "lift", "id"}`` lifts any one fault; ``{"op": "clear"}`` lifts everything; ``{"op": "status"}`` lists
  the faults in force, the routes (bound address, connection and byte counters) and the open connections;
  ``{"op": "ping"}``; ``{"op": "stop"}`` ends the process.

Every fault may carry ``until_ms``; ``count`` applies to the frame faults. Node names are checked against the
routes' nodes, the peers' names and ``"client"``.

Events: each line of ``events`` is one JSON object, flushed as written, with ``"t"`` (``time.time()*1000``) and
``"k"``:

* ``{"k": "proxy", "ev": "start", "pid", "routes": {name: {node, kind, listen, target}}}``, ``{"k": "proxy",
  "ev": "stop", "why"}``;
* ``{"k": "fault", "ev": "apply", "id", "op", ...the normalised request}``; ``{"k": "fault", "ev": "lift", "id",
  "op", "why": "heal" | "lift" | "clear" | "replaced" | "spent" | "until" | "stop", "acted", "bytes"}``;
* ``{"k": "act", "id", "op", "route", "conn", "from", "to", ...}``: a frame dropped or delayed (``code``,
  ``name``, ``opaque``, ``req_code`` and ``req_name`` for a response, ``ms`` for a delay), a stream cut
  (``bytes``: what was forwarded after the fault armed, ``total``: what that direction carried, ``rst``), the
  first chunk a ``delay`` holds on each connection direction (``ms``, ``first: true``; the totals are in the
  lift line), a connection attempt across a cut link (``op: "partition"``, ``syn_lost: true``);
* ``{"k": "conn", "ev": "open" | "close" | "refused" | "failed", "conn", "route", "src", "dst", "peer"}``
  (``close`` adds ``why`` (``eof``, ``reset``, ``cut:<id>``, ``shutdown``), ``up`` and ``down`` bytes
  delivered, ``age_ms``; ``refused`` (a lost SYN) and ``failed`` (the target did not answer) add ``why`` and
  end the accepted socket with an RST): every connection, so reconnects show;
* ``{"k": "malformed", "conn", "route", "from", "to", "error"}``: a frame that does not parse; that connection
  is passed through unparsed from then on (both directions), and one line is logged.

Bounds: the process ends after ``lifetime_s``, when the control socket file is removed or replaced (checked
every 0.5 s), on SIGTERM/SIGINT and on the ``stop`` op, closing every connection; waits on peers have timeouts
(upstream connect ``CONNECT_TIMEOUT_S``, a control connection idle ``CONTROL_IDLE_S``); the rest (held bytes,
delays) lasts at most as long as the process. Each connection direction holds at most ``QUEUE_LIMIT`` bytes of
complete frames/chunks, plus one read (asyncio reads up to 256 KiB at a time), before it stops reading, and on
remoting routes one incomplete frame (at most 16 MiB).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import itertools
import json
import logging
import os
import signal
import socket
import stat
import struct
import sys
import termios
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import remoting

KINDS = ("remoting", "ha", "raw")
FRAME_OPS = ("drop-response", "delay-response", "drop-request", "delay-request")
FAULT_OPS = ("partition", *FRAME_OPS, "cut-stream", "delay", "hold-conn")
CLIENT = "client"
SYN_LOST_S = 3.0
CONNECT_TIMEOUT_S = 3.0
CUT_FLUSH_S = 2.0
CLOSE_FLUSH_S = 5.0
CONTROL_IDLE_S = 60.0
WATCH_S = 0.5
QUEUE_LIMIT = 4 * 1024 * 1024
MAX_LINE = 1024 * 1024
MAX_AWAITING = 65536  # remembered request opaques per connection direction
log = logging.getLogger("rmqha.real.proxy")


class ConfigError(ValueError):
    """A bad proxy config or control request; the message is one line."""


class ProxyError(RuntimeError):
    """The proxy cannot start (a listener or the control socket cannot be bound); one line."""


# ---------------------------------------------------------------------------------------------------- config


@dataclass(frozen=True)
class Route:
    name: str
    node: str
    kind: str
    listen: tuple[str, int]
    target: tuple[str, int]


@dataclass(frozen=True)
class Config:
    routes: tuple[Route, ...]
    peers: dict[str, str]
    control: Path
    events: Path
    lifetime_s: float = 3600.0
    watch: frozenset[int] = frozenset()  # request codes whose frames (and their responses) are recorded


def _addr(v: Any, what: str) -> tuple[str, int]:
    if (not isinstance(v, list | tuple) or len(v) != 2 or not isinstance(v[0], str) or isinstance(v[1], bool)
            or not isinstance(v[1], int) or not 0 <= v[1] <= 65535):
        raise ConfigError(f"{what}: expected [host, port], got {v!r:.80}")
    return v[0], v[1]


def parse_config(obj: Any) -> Config:
    """A ``Config`` from the decoded JSON; ``ConfigError`` says what is wrong."""
    if not isinstance(obj, dict):
        raise ConfigError("config: expected a JSON object")
    raw_routes = obj.get("routes")
    if not isinstance(raw_routes, list) or not raw_routes:
        raise ConfigError("config: 'routes' must be a non-empty list")
    routes: list[Route] = []
    for i, r in enumerate(raw_routes):
        if not isinstance(r, dict):
            raise ConfigError(f"routes[{i}]: expected an object")
        name, node, kind = r.get("name"), r.get("node"), r.get("kind", "raw")
        if not isinstance(name, str) or not name or not isinstance(node, str) or not node:
            raise ConfigError(f"routes[{i}]: 'name' and 'node' must be non-empty strings")
        if kind not in KINDS:
            raise ConfigError(f"route {name}: kind {kind!r} is not one of {', '.join(KINDS)}")
        routes.append(Route(name, node, kind, _addr(r.get("listen"), f"route {name} listen"),
                            _addr(r.get("target"), f"route {name} target")))
    if len({r.name for r in routes}) != len(routes):
        raise ConfigError("config: route names must be unique")
    peers = obj.get("peers", {})
    if not isinstance(peers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in peers.items()):
        raise ConfigError("config: 'peers' must map addresses to node names")
    control, events = obj.get("control"), obj.get("events")
    if not isinstance(control, str) or not control or not isinstance(events, str) or not events:
        raise ConfigError("config: 'control' and 'events' must be paths")
    life = obj.get("lifetime_s", 3600)
    if isinstance(life, bool) or not isinstance(life, int | float) or life <= 0:
        raise ConfigError(f"config: 'lifetime_s' must be a positive number, got {life!r}")
    watch = obj.get("watch", [])
    if not isinstance(watch, list) or not all(isinstance(c, int | str) and not isinstance(c, bool) for c in watch):
        raise ConfigError("config: 'watch' must list request codes (numbers or names)")
    try:
        codes = frozenset(remoting.request_code(c) for c in watch)
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"config: 'watch': {exc}") from None
    return Config(tuple(routes), dict(peers), Path(control), Path(events), float(life), codes)


def load_config(path: str | Path) -> Config:
    try:
        obj = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"config {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config {path}: not JSON ({exc})") from None
    return parse_config(obj)


# ---------------------------------------------------------------------------------------------------- events


class EventLog:
    """The run's fault trace: one JSON object a line, flushed per line."""

    def __init__(self, path: Path | None) -> None:
        self._f = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(path, "a", encoding="utf-8")  # kept open for the process's life

    def write(self, k: str, **fields: Any) -> None:
        if self._f is None:
            return
        line = json.dumps({"t": round(time.time() * 1000, 3), "k": k, **fields}, separators=(",", ":"),
                          default=str)
        try:
            self._f.write(line + "\n")
            self._f.flush()
        except OSError as exc:  # a full disk must not take the proxy down
            log.warning("events: %s", exc)

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


# ---------------------------------------------------------------------------------------------------- faults


@dataclass
class Fault:
    id: str
    op: str
    spec: dict[str, Any]  # the normalised request, as applied (status, events)
    frm: str | None = None
    to: str | None = None
    route: str | None = None
    code: int | None = None
    ms: float = 0.0
    count: int | None = None
    until_ms: float | None = None
    links: frozenset[tuple[str, str]] = frozenset()
    after_bytes: int = 0
    every: bool = False
    rst: bool = True
    now: bool = False  # cut-stream: close the matching open connections at once
    acted: int = 0
    bytes: int = 0
    claimed: Any = None  # the connection direction a one-shot cut-stream is armed on
    ext: dict[str, str] | None = None  # frame faults: the request header's extFields it must hold (None: any)
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    def matches(self, route: str, a: str, b: str) -> bool:
        return ((self.route is None or self.route == route) and (self.frm is None or self.frm == a)
                and (self.to is None or self.to == b))

    def ext_matches(self, frame: remoting.Frame) -> bool:
        """A request frame holds every extFields entry the fault names (always, without ``ext``)."""
        if not self.ext:
            return True
        have = frame.ext_fields
        return all(k in have and str(have[k]) == v for k, v in self.ext.items())

    def triggers(self, frame: remoting.Frame) -> bool:
        """hold-conn: this request frame is where the hold begins (any frame, without a code)."""
        return (not frame.is_response and (self.code is None or self.code == frame.code)
                and self.ext_matches(frame))

    def view(self) -> dict[str, Any]:
        out = dict(self.spec)
        out["acted"] = self.acted
        if self.count is not None:
            out["left"] = self.count
        if self.op in ("delay", "cut-stream", "hold-conn"):
            out["bytes"] = self.bytes
        return out


def _opt_str(req: dict[str, Any], key: str) -> str | None:
    v = req.get(key)
    if v is not None and not isinstance(v, str):
        raise ConfigError(f"{key!r} must be a string or null")
    return v


def _number(req: dict[str, Any], key: str, *, required: bool = False, integer: bool = False) -> Any:
    v = req.get(key)
    if v is None:
        if required:
            raise ConfigError(f"{req.get('op')}: {key!r} is required")
        return None
    if isinstance(v, bool) or not isinstance(v, int if integer else int | float) or v < 0:
        raise ConfigError(f"{key!r} must be a non-negative {'integer' if integer else 'number'}, got {v!r:.40}")
    return v


# ---------------------------------------------------------------------------------------------------- connections


def _json_body(frame: remoting.Frame) -> dict[str, Any]:
    """A watched frame's body when it is small JSON (ALTER_SYNC_STATE_SET carries the proposed set and its
    epoch there), for the record; nothing otherwise."""
    if not frame.body or len(frame.body) > 4096 or frame.body[:1] not in (b"{", b"["):
        return {}
    try:
        return {"body": json.loads(frame.body.decode("utf-8"))}
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}


def _set_rst(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _unacked(transport: asyncio.BaseTransport) -> int:
    """Bytes the kernel still holds for this socket, unsent or unacknowledged (Linux SIOCOUTQ), plus asyncio's
    own write buffer."""
    pending = transport.get_write_buffer_size() if isinstance(transport, asyncio.WriteTransport) else 0
    sock = transport.get_extra_info("socket")
    if sock is None:
        return pending
    try:
        (queued,) = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))
    except OSError:
        queued = 0
    return int(pending) + int(queued)


class _Side(asyncio.Protocol):
    """One socket of a proxied connection: ``cli`` (accepted) or ``srv`` (dialled to the target)."""

    def __init__(self, conn: Conn, role: str) -> None:
        self.conn = conn
        self.role = role
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.writable = asyncio.Event()
        self.writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.conn.side_made(self)

    def data_received(self, data: bytes) -> None:
        self.conn.on_data(self, data)

    def eof_received(self) -> bool:
        self.conn.on_eof(self)
        return True  # keep the socket open for the other direction (half-close)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.writable.set()
        self.conn.on_lost(self, exc)

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()


@dataclass
class _Item:
    at: float  # loop time before which it is not written
    data: bytes


class _Dir:
    """One direction of a connection: bytes read from ``src`` (node ``a``), written to ``dst`` (node ``b``)."""

    def __init__(self, conn: Conn, name: str, src: _Side, dst: _Side, a: str, b: str, framed: bool) -> None:
        self.conn, self.name, self.src, self.dst, self.a, self.b = conn, name, src, dst, a, b
        self.other: _Dir = self
        self.q: deque[_Item] = deque()
        self.queued = 0
        self.q_full = False
        self.eof = False  # no more bytes will come from src
        self.reset = False  # src was reset: the other side gets an RST once the flush is done
        self.done = False  # nothing more will be written to dst
        self.gate = asyncio.Event()
        self.wake = asyncio.Event()
        self.decoder: remoting.FrameDecoder | None = remoting.FrameDecoder() if framed else None
        self.awaiting: dict[int, tuple[Fault, int]] = {}  # opaque -> (response fault, request code) for THIS dir
        self.watched: dict[int, int] = {}  # opaque -> watched request code, whose response comes on THIS dir
        self.delay_seen: set[str] = set()
        self.cut: list[Any] | None = None  # [fault, bytes left]
        self.hold: Fault | None = None  # a hold-conn claiming this direction (armed, or holding once hold_at is set)
        self.hold_at: int | None = None  # the position in what was pushed from which on nothing is written
        self.held_frames = 0
        self.released: str | None = None  # the id of the hold released here: the close goes as a FIN
        self.pushed = 0  # bytes ever queued on this direction
        self.bytes_in = 0
        self.bytes_out = 0
        self.frames = 0
        self.task: asyncio.Task[None] | None = None

    @property
    def label(self) -> str:
        return f"{self.a}->{self.b}"

    @property
    def holding(self) -> bool:
        """A hold-conn stops this direction here: everything from ``hold_at`` on (and the close) waits."""
        return self.hold is not None and self.hold_at is not None and self.bytes_out >= self.hold_at

    def update_reading(self) -> None:
        t = self.src.transport
        if t is None or self.src.lost:
            return
        if self.q_full and self.queued < QUEUE_LIMIT // 2:
            self.q_full = False
        elif not self.q_full and self.queued > QUEUE_LIMIT:
            self.q_full = True
        if self.conn.state == "open" and self.gate.is_set() and not self.q_full and not self.done:
            t.resume_reading()
        else:
            t.pause_reading()

    def push(self, at: float, data: bytes) -> None:
        if not data:
            return
        if self.q and self.q[-1].at == at and len(self.q[-1].data) < 65536:
            self.q[-1].data += data
        else:
            self.q.append(_Item(at, data))
        self.queued += len(data)
        self.pushed += len(data)
        self.wake.set()

    def feed(self, data: bytes) -> None:
        if self.done:
            return  # nothing can be delivered any more
        proxy = self.conn.proxy
        self.bytes_in += len(data)
        loop_now = asyncio.get_running_loop().time()
        base = loop_now + proxy.link_delay(self, len(data)) / 1000.0
        if self.decoder is None:
            self.push(base, data)
        else:
            self.decoder.push(data)
            out = bytearray()
            while True:
                try:
                    frame = self.decoder.next_frame()
                except remoting.FrameError as exc:
                    self.push(base, bytes(out))
                    out.clear()
                    self.conn.malformed(self, exc, base)
                    break
                if frame is None:
                    break
                self.frames += 1
                proxy.route_stats[self.conn.route.name]["frames"] += 1
                verdict, extra_ms = proxy.frame_action(self, frame)
                if verdict == "drop":
                    continue
                if self.hold is not None:
                    if self.hold_at is None and self.hold.triggers(frame):
                        self.push(base, bytes(out))  # what came before the trigger goes on
                        out.clear()
                        self.hold_at = self.pushed
                    if self.hold_at is not None:
                        proxy.held_frame(self, frame)
                if extra_ms > 0:
                    self.push(base, bytes(out))
                    out.clear()
                    self.push(base + extra_ms / 1000.0, frame.raw)
                else:
                    out += frame.raw
            self.push(base, bytes(out))
        self.update_reading()

    def flush_decoder(self, at: float) -> None:
        """Leave frame mode: whatever the decoder holds goes on as raw bytes."""
        if self.decoder is not None:
            pending = self.decoder.pending()
            self.decoder = None
            self.push(at, pending)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        proxy = self.conn.proxy
        stats = proxy.route_stats[self.conn.route.name]
        key = "bytes_up" if self.name == "up" else "bytes_down"
        try:
            while not self.done:
                if self.holding:
                    self.wake.clear()
                    await self.wake.wait()
                    continue
                if not self.q:
                    if self.eof:
                        break
                    self.wake.clear()
                    await self.wake.wait()
                    continue
                item = self.q[0]
                if self.hold is not None and self.hold_at is not None \
                        and len(item.data) > self.hold_at - self.bytes_out:
                    n = self.hold_at - self.bytes_out  # the part before the hold goes as an item of its own
                    head, item.data = item.data[:n], item.data[n:]
                    self.q.appendleft(_Item(item.at, head))
                    continue
                wait = item.at - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                if not self.gate.is_set():
                    await self.gate.wait()
                    continue
                if self.dst.lost or self.dst.transport is None:
                    break
                cut = proxy.cut_for(self)
                data = item.data
                if cut is not None and len(data) >= cut[1]:
                    part = data[:cut[1]]
                    self.dst.transport.write(part)
                    self.bytes_out += len(part)
                    stats[key] += len(part)
                    await self.conn.cut(self, cut[0], part)
                    return
                if cut is not None:
                    cut[1] -= len(data)
                    cut[0].bytes += len(data)
                self.q.popleft()
                self.queued -= len(data)
                self.dst.transport.write(data)
                self.bytes_out += len(data)
                stats[key] += len(data)
                if self.q_full:
                    self.update_reading()
                if not self.dst.writable.is_set():
                    await self.dst.writable.wait()
            self.q.clear()
            self.queued = 0
            self.done = True
            rel = self.released or self.other.released
            if self.other.done and rel is not None:  # a held close: a FIN behind the held bytes
                self.conn.finish(f"released:{rel}", mode="close")
            elif self.other.done:  # both ways finished (a lost side finishes the way towards it at once)
                rst = self.reset or self.other.reset
                self.conn.finish("reset" if rst else "eof", mode="rst" if rst else "close")
            elif not self.dst.lost and self.dst.transport is not None and self.dst.transport.can_write_eof():
                with contextlib.suppress(OSError, RuntimeError):
                    self.dst.transport.write_eof()  # half-close, as the source did
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug here must end this connection, not the proxy
            log.warning("conn %d %s: %s: %s", self.conn.id, self.label, type(exc).__name__, exc)
            self.conn.finish(f"error: {type(exc).__name__}", mode="abort")


class Conn:
    """One proxied connection: an accepted socket, the socket dialled to the route's target, two directions."""

    def __init__(self, proxy: Proxy, route: Route, cid: int) -> None:
        self.proxy, self.route, self.id = proxy, route, cid
        self.cli = _Side(self, "cli")
        self.srv: _Side | None = None
        self.src = CLIENT
        self.dst = route.node
        self.peer = "?"
        self.state = "accepting"  # -> connecting -> open -> closed
        self.up: _Dir | None = None
        self.down: _Dir | None = None
        self.opened = time.monotonic()
        self.cutting = False

    def info(self) -> dict[str, Any]:
        return {"conn": self.id, "route": self.route.name, "src": self.src, "dst": self.dst, "peer": self.peer}

    def dirs(self) -> list[_Dir]:
        return [d for d in (self.up, self.down) if d is not None]

    # -- socket callbacks

    def side_made(self, side: _Side) -> None:
        assert side.transport is not None
        side.transport.pause_reading()  # until both sides are there and the gates are set (update_reading)
        if side is not self.cli:
            return
        peer = side.transport.get_extra_info("peername")
        if isinstance(peer, tuple) and peer:
            self.peer = f"{peer[0]}:{peer[1]}"
            self.src = self.proxy.config.peers.get(str(peer[0]), CLIENT)
        self.state = "connecting"
        self.proxy.conn_started(self)
        self.proxy.spawn(self.start())

    def on_data(self, side: _Side, data: bytes) -> None:
        d = self._dir_from(side)
        if d is None or self.state != "open" or self.cutting:
            return
        try:
            d.feed(data)
        except Exception as exc:  # a bug here must end this connection, not the proxy (and log no traceback)
            log.warning("conn %d %s: %s: %s", self.id, d.label, type(exc).__name__, exc)
            self.finish(f"error: {type(exc).__name__}", mode="abort")

    def on_eof(self, side: _Side) -> None:
        d = self._dir_from(side)
        if d is not None and not d.eof:
            d.eof = True
            if d.decoder is not None:
                d.flush_decoder(asyncio.get_running_loop().time())
            d.wake.set()

    def on_lost(self, side: _Side, exc: Exception | None) -> None:
        if self.state == "closed":
            return
        if self.state != "open":  # the client left while we were dialling; start() notices
            return
        src = self._dir_from(side)
        dst = self._dir_to(side)
        if dst is not None:
            dst.done = True
            dst.q.clear()
            dst.queued = 0
            dst.wake.set()
            dst.gate.set()
        if src is not None:
            src.reset = isinstance(exc, ConnectionResetError)
            if not src.eof:
                src.eof = True
                if src.decoder is not None:
                    src.flush_decoder(asyncio.get_running_loop().time())
            src.wake.set()
            rel = src.released or (dst.released if dst is not None else None)
            if src.done and rel is not None:  # a released hold already sent its FIN
                self.finish(f"released:{rel}", mode="close")
            elif src.done:
                self.finish("reset" if src.reset else "eof", mode="rst" if src.reset else "close")

    def _dir_from(self, side: _Side) -> _Dir | None:
        return next((d for d in self.dirs() if d.src is side), None)

    def _dir_to(self, side: _Side) -> _Dir | None:
        return next((d for d in self.dirs() if d.dst is side), None)

    # -- life

    async def start(self) -> None:
        try:
            await self._start()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug here must end this connection, not the proxy
            log.warning("conn %d %s: %s: %s", self.id, self.route.name, type(exc).__name__, exc)
            if self.state == "open":
                self.finish(f"error: {type(exc).__name__}", mode="abort")
            else:
                self._fail("failed", f"error: {type(exc).__name__}: {exc}")

    async def _start(self) -> None:
        proxy = self.proxy
        loop = asyncio.get_running_loop()
        if proxy.blocked(self.src, self.dst) or proxy.blocked(self.dst, self.src):
            proxy.events.write("act", id=proxy.blocking_fault(self.src, self.dst), op="partition", syn_lost=True,
                               **self.info())
            deadline = loop.time() + SYN_LOST_S
            while loop.time() < deadline and not self.cli.lost and (
                    proxy.blocked(self.src, self.dst) or proxy.blocked(self.dst, self.src)):
                await asyncio.sleep(0.05)
            if proxy.blocked(self.src, self.dst) or proxy.blocked(self.dst, self.src):
                return self._fail("refused", "partition: the SYN is lost")
        if self.cli.lost:
            return self._fail("failed", "the client left before the target was dialled")
        host, port = self.route.target
        srv = self.srv = _Side(self, "srv")
        try:
            await asyncio.wait_for(loop.create_connection(lambda: srv, host, port), CONNECT_TIMEOUT_S)
        except (TimeoutError, OSError) as exc:
            why = "timeout" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            return self._fail("failed", f"connect {host}:{port}: {why}")
        if self.cli.lost or self.state == "closed":
            if self.srv.transport is not None:
                self.srv.transport.close()
            return self._fail("failed", "the client left while the target was dialled")
        framed = self.route.kind == "remoting"
        self.up = _Dir(self, "up", self.cli, self.srv, self.src, self.dst, framed)
        self.down = _Dir(self, "down", self.srv, self.cli, self.dst, self.src, framed)
        self.up.other, self.down.other = self.down, self.up
        self.state = "open"
        proxy.conn_opened(self)
        for d in self.dirs():
            proxy.refresh_gate(d)
            d.task = proxy.spawn(d.run())
            d.update_reading()

    def _fail(self, ev: str, why: str) -> None:
        if self.state == "closed":
            return
        self.state = "closed"
        if self.cli.transport is not None:
            _set_rst(self.cli.transport)  # the dialler sees a refused/reset connection, not a clean end
            self.cli.transport.abort()
        if self.srv is not None and self.srv.transport is not None:
            self.srv.transport.abort()
        self.proxy.conn_failed(self, ev, why)

    def malformed(self, d: _Dir, exc: remoting.FrameError, at: float) -> None:
        msg = str(exc)
        log.warning("conn %d %s %s: malformed frame (%s); passing the connection's bytes through unparsed",
                    self.id, self.route.name, d.label, msg)
        self.proxy.events.write("malformed", conn=self.id, route=self.route.name, **{"from": d.a, "to": d.b},
                                error=msg)
        self.proxy.route_stats[self.route.name]["malformed"] += 1
        for x in self.dirs():
            x.flush_decoder(at)

    async def cut(self, d: _Dir, fault: Fault, part: bytes) -> None:
        """Forwarded the last byte ``fault`` allows on ``d``: wait until the receiver's kernel has it, close both
        sides."""
        self.cutting = True
        for x in self.dirs():
            if x.src.transport is not None and not x.src.lost:
                x.src.transport.pause_reading()
        fault.bytes += len(part)
        fault.acted += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CUT_FLUSH_S
        t = d.dst.transport
        while t is not None and not d.dst.lost and loop.time() < deadline and _unacked(t) > 0:
            await asyncio.sleep(0.005)
        proxy = self.proxy
        proxy.route_stats[self.route.name]["cuts"] += 1
        proxy.events.write("act", id=fault.id, op="cut-stream", route=self.route.name, conn=self.id,
                           **{"from": d.a, "to": d.b}, bytes=fault.after_bytes, total=d.bytes_out, rst=fault.rst)
        self.finish(f"cut:{fault.id}", mode="rst" if fault.rst else "close")
        if not fault.every:
            proxy.lift(fault.id, "spent")

    def finish(self, why: str, mode: str = "close") -> None:
        """Close both sides (``close``: after the write buffers flush, ``abort``: now, ``rst``: now, with an RST)
        and record the close."""
        if self.state == "closed":
            return
        self.state = "closed"
        loop = asyncio.get_running_loop()
        for side in (self.cli, self.srv):
            t = side.transport if side is not None else None
            if t is None or side is None or side.lost:
                continue
            if mode == "rst":
                _set_rst(t)
                t.abort()
            elif mode == "abort":
                t.abort()
            else:
                t.close()
                loop.call_later(CLOSE_FLUSH_S, t.abort)  # a peer that never reads must not keep it forever
        me = asyncio.current_task()
        for d in self.dirs():
            d.done = True
            d.wake.set()
            if d.task is not None and d.task is not me and not d.task.done():
                d.task.cancel()
            if d.cut is not None and not d.cut[0].every and d.cut[0].claimed is d:
                d.cut[0].claimed = None  # never reached its cut: the next connection gets it
        self.proxy.conn_closed(self, why)


# ---------------------------------------------------------------------------------------------------- proxy


class Proxy:
    """The proxy: ``await Proxy(config).run()``; ``request(dict) -> dict`` is the control op handler."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.routes = {r.name: r for r in config.routes}
        self.nodes = {r.node for r in config.routes} | set(config.peers.values()) | {CLIENT}
        self.faults: dict[str, Fault] = {}
        self.cut_links: dict[tuple[str, str], str] = {}  # link -> id of a partition cutting it
        self.conns: dict[int, Conn] = {}
        self.route_stats: dict[str, dict[str, int]] = {r.name: dict.fromkeys(
            ("accepted", "open", "refused", "failed", "bytes_up", "bytes_down", "frames", "malformed", "dropped",
             "delayed", "cuts"), 0) for r in config.routes}
        self.bound: dict[str, tuple[str, int]] = {}
        self.events = EventLog(config.events)
        self._ids = itertools.count(1)
        self._fault_ids = itertools.count(1)
        self._servers: list[asyncio.AbstractServer] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stop: asyncio.Event | None = None
        self.stop_why = ""
        self._control_ino: tuple[int, int] | None = None
        self.started = time.monotonic()

    # -- tasks

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- connections

    def conn_started(self, conn: Conn) -> None:
        self.conns[conn.id] = conn
        self.route_stats[conn.route.name]["accepted"] += 1

    def conn_opened(self, conn: Conn) -> None:
        self.route_stats[conn.route.name]["open"] += 1
        self.events.write("conn", ev="open", **conn.info())

    def conn_failed(self, conn: Conn, ev: str, why: str) -> None:
        self.conns.pop(conn.id, None)
        self.route_stats[conn.route.name][ev] += 1
        self.events.write("conn", ev=ev, **conn.info(), why=why)
        log.info("conn %d %s %s->%s %s: %s", conn.id, conn.route.name, conn.src, conn.dst, ev, why)

    def conn_closed(self, conn: Conn, why: str) -> None:
        if self.conns.pop(conn.id, None) is not None:
            self.route_stats[conn.route.name]["open"] -= 1
        self.events.write("conn", ev="close", **conn.info(), why=why,
                          up=conn.up.bytes_out if conn.up else 0, down=conn.down.bytes_out if conn.down else 0,
                          age_ms=round((time.monotonic() - conn.opened) * 1000, 1))

    def _factory(self, route: Route) -> Callable[[], asyncio.Protocol]:
        def make() -> asyncio.Protocol:
            return Conn(self, route, next(self._ids)).cli

        return make

    # -- links

    def blocked(self, a: str, b: str) -> bool:
        return (a, b) in self.cut_links

    def blocking_fault(self, a: str, b: str) -> str | None:
        return self.cut_links.get((a, b)) or self.cut_links.get((b, a))

    def refresh_gate(self, d: _Dir) -> None:
        if self.blocked(d.a, d.b) and not d.done:
            d.gate.clear()
        else:
            d.gate.set()

    def _relink(self) -> None:
        self.cut_links = {}
        for f in self.faults.values():
            if f.op == "partition":
                for link in f.links:
                    self.cut_links.setdefault(link, f.id)
        for conn in list(self.conns.values()):
            for d in conn.dirs():
                self.refresh_gate(d)
                d.update_reading()

    # -- fault decisions (called per chunk / frame / write)

    def _active(self, f: Fault) -> bool:
        if self.faults.get(f.id) is not f:
            return False
        if f.until_ms is not None and time.time() * 1000 >= f.until_ms:
            self.lift(f.id, "until")
            return False
        return True

    def link_delay(self, d: _Dir, n: int) -> float:
        ms = 0.0
        for f in list(self.faults.values()):
            if f.op == "delay" and f.matches(d.conn.route.name, d.a, d.b) and self._active(f):
                ms = max(ms, f.ms)
                f.acted += 1
                f.bytes += n
                if f.id not in d.delay_seen:
                    d.delay_seen.add(f.id)
                    self.events.write("act", id=f.id, op="delay", route=d.conn.route.name, conn=d.conn.id,
                                      **{"from": d.a, "to": d.b}, ms=f.ms, first=True)
        return ms

    def _act(self, f: Fault, d: _Dir, frame: remoting.Frame, **extra: Any) -> None:
        f.acted += 1
        stats = self.route_stats[d.conn.route.name]
        stats["dropped" if f.op.startswith("drop") else "delayed"] += 1
        fields: dict[str, Any] = {"id": f.id, "op": f.op, "route": d.conn.route.name, "conn": d.conn.id,
                                  "from": d.a, "to": d.b, "code": frame.code, "name": frame.name,
                                  "opaque": frame.opaque, **extra}
        if f.op.startswith("delay"):
            fields["ms"] = f.ms
        self.events.write("act", **fields)
        if f.count is not None:
            f.count -= 1
            if f.count <= 0:
                self.lift(f.id, "spent")

    def _record_frame(self, d: _Dir, frame: remoting.Frame) -> None:
        """Record a watched request or its response (``config.watch``): the protocol's timeline, to the ms."""
        if frame.is_response:
            req = d.watched.pop(frame.opaque, None)
            if req is None:
                return
            self.events.write("frame", route=d.conn.route.name, conn=d.conn.id, **{"from": d.a, "to": d.b},
                              response=True, code=frame.code, req_code=req, req_name=remoting.code_name(req),
                              opaque=frame.opaque, ext=frame.ext_fields, remark=frame.remark, **_json_body(frame))
            return
        if frame.code not in self.config.watch:
            return
        if not frame.is_oneway:
            if len(d.other.watched) >= MAX_AWAITING:
                d.other.watched.pop(next(iter(d.other.watched)))
            d.other.watched[frame.opaque] = frame.code
        self.events.write("frame", route=d.conn.route.name, conn=d.conn.id, **{"from": d.a, "to": d.b},
                          response=False, code=frame.code, name=frame.name, opaque=frame.opaque,
                          oneway=frame.is_oneway, ext=frame.ext_fields, **_json_body(frame))

    def frame_action(self, d: _Dir, frame: remoting.Frame) -> tuple[str, float]:
        """("drop" | "pass", extra delay ms) for one frame read on ``d`` (from node ``d.a`` to node ``d.b``)."""
        route = d.conn.route.name
        if self.config.watch:
            self._record_frame(d, frame)
        if frame.is_response:
            entry = d.awaiting.pop(frame.opaque, None)
            if entry is None:
                return "pass", 0.0
            f, req_code = entry
            if not self._active(f):
                return "pass", 0.0
            self._act(f, d, frame, req_code=req_code, req_name=remoting.code_name(req_code))
            return ("drop", 0.0) if f.op == "drop-response" else ("pass", f.ms)
        for f in list(self.faults.values()):
            if (f.op in ("drop-request", "delay-request") and (f.code is None or f.code == frame.code)
                    and f.matches(route, d.a, d.b) and f.ext_matches(frame) and self._active(f)):
                self._act(f, d, frame, oneway=frame.is_oneway)
                if f.op == "drop-request":
                    return "drop", 0.0
                delay = f.ms
                break
        else:
            delay = 0.0
        if not frame.is_oneway:
            for f in list(self.faults.values()):
                if (f.op in ("drop-response", "delay-response") and (f.code is None or f.code == frame.code)
                        and f.matches(route, d.b, d.a) and f.ext_matches(frame) and self._active(f)):
                    aw = d.other.awaiting
                    if len(aw) >= MAX_AWAITING:
                        aw.pop(next(iter(aw)))
                    aw[frame.opaque] = (f, frame.code)
                    break
        return "pass", delay

    def cut_for(self, d: _Dir) -> list[Any] | None:
        if d.cut is not None:
            if self.faults.get(d.cut[0].id) is d.cut[0]:
                return d.cut
            d.cut = None
        for f in list(self.faults.values()):
            if (f.op == "cut-stream" and (f.every or f.claimed is None) and f.matches(d.conn.route.name, d.a, d.b)
                    and self._active(f)):
                d.cut = [f, f.after_bytes]
                if not f.every:
                    f.claimed = d
                return d.cut
        return None

    # -- control ops

    def _node(self, v: str | None, what: str) -> str | None:
        if v is not None and v not in self.nodes:
            raise ConfigError(f"{what}: unknown node {v!r} (known: {', '.join(sorted(self.nodes))})")
        return v

    def _parse_fault(self, req: dict[str, Any]) -> Fault:
        op = req["op"]
        fid = req.get("id")
        if fid is None:
            fid = f"f{next(self._fault_ids)}"
        if not isinstance(fid, str | int) or isinstance(fid, bool):
            raise ConfigError("'id' must be a string")
        fid = str(fid)
        until = _number(req, "until_ms")
        spec: dict[str, Any] = {"id": fid, "op": op}
        f = Fault(fid, op, spec, until_ms=until)
        if op == "partition":
            links = req.get("links")
            if not isinstance(links, list) or not links:
                raise ConfigError("partition: 'links' must be a non-empty list of [a, b]")
            pairs = []
            for link in links:
                if not (isinstance(link, list | tuple) and len(link) == 2 and all(isinstance(x, str) for x in link)):
                    raise ConfigError(f"partition: bad link {link!r:.60}")
                pairs.append((self._node(link[0], "partition"), self._node(link[1], "partition")))
            f.links = frozenset((str(a), str(b)) for a, b in pairs)
            spec["links"] = [list(p) for p in sorted(f.links)]
        else:
            f.frm = self._node(_opt_str(req, "from"), f"{op} from")
            f.to = self._node(_opt_str(req, "to"), f"{op} to")
            f.route = _opt_str(req, "route")
            if f.route is not None and f.route not in self.routes:
                raise ConfigError(f"{op}: unknown route {f.route!r} (known: {', '.join(self.routes)})")
            spec.update({"from": f.frm, "to": f.to, "route": f.route})
            if op in (*FRAME_OPS, "hold-conn"):
                if op != "hold-conn" and f.route is not None and self.routes[f.route].kind != "remoting":
                    raise ConfigError(f"{op}: route {f.route} is not a remoting route")
                code = req.get("code")
                try:
                    f.code = None if code is None else remoting.request_code(code)
                except ValueError as exc:
                    raise ConfigError(str(exc)) from None
                f.count = _number(req, "count", integer=True)
                if f.count == 0:
                    raise ConfigError(f"{op}: 'count' must be at least 1 (or null)")
                if op == "hold-conn" and f.count is not None:
                    raise ConfigError("hold-conn: no 'count' (it holds whole connections)")
                spec.update({"code": f.code, "name": None if f.code is None else remoting.code_name(f.code),
                             "count": f.count})
                ext = req.get("ext")
                if ext is not None:
                    if (not isinstance(ext, dict) or not ext
                            or not all(isinstance(k, str) and isinstance(v, str | int) and not isinstance(v, bool)
                                       for k, v in ext.items())):
                        raise ConfigError(f"{op}: 'ext' must map header field names to strings (or be null)")
                    f.ext = {k: str(v) for k, v in ext.items()}
                    spec["ext"] = dict(f.ext)
            if op == "hold-conn":
                dirs = [d for c in self.conns.values() if c.state == "open" for d in c.dirs()
                        if f.matches(c.route.name, d.a, d.b) and d.hold is None and not d.done]
                if not dirs:
                    raise ConfigError(f"hold-conn: no open connection from {f.frm or 'any node'} to "
                                      f"{f.to or 'any node'}" + (f" on {f.route}" if f.route else ""))
                f.claimed = dirs
                spec["conns"] = sorted({d.conn.id for d in dirs})
            if op in ("delay-response", "delay-request", "delay"):
                f.ms = float(_number(req, "ms", required=True))
                spec["ms"] = req["ms"]
            if op == "cut-stream":
                f.after_bytes = _number(req, "after_bytes", required=True, integer=True)
                f.every = bool(req.get("every", False))
                f.rst = bool(req.get("rst", True))
                spec.update({"after_bytes": f.after_bytes, "every": f.every, "rst": f.rst})
                if req.get("now"):
                    if f.after_bytes != 0:
                        raise ConfigError("cut-stream: 'now' cuts at once: 'after_bytes' must be 0")
                    f.now = True
                    spec["now"] = True
        spec["until_ms"] = until
        return f

    def apply(self, f: Fault) -> None:
        if f.id in self.faults:
            self.lift(f.id, "replaced")
        self.faults[f.id] = f
        self.events.write("fault", ev="apply", **f.spec)
        log.info("fault %s applied: %s", f.id, json.dumps(f.spec, separators=(",", ":")))
        if f.until_ms is not None:
            loop = asyncio.get_running_loop()
            delay = max(0.0, (f.until_ms - time.time() * 1000) / 1000.0)
            f.timer = loop.call_later(delay, self._expire, f)
        if f.op == "partition":
            self._relink()
        if f.op == "cut-stream" and f.now:
            self._cut_open(f)
        if f.op == "hold-conn":
            for d in f.claimed:
                d.hold = f
                if f.code is None:
                    d.hold_at = d.pushed
                d.wake.set()

    def _cut_open(self, f: Fault) -> None:
        """``cut-stream`` with ``now``: close the open connections whose direction matches, at once (one, or every
        one with ``every``); a one-shot fault that cut one is spent."""
        for conn in list(self.conns.values()):
            if conn.state != "open":
                continue
            d = next((x for x in conn.dirs() if f.matches(conn.route.name, x.a, x.b)), None)
            if d is None:
                continue
            f.acted += 1
            self.route_stats[conn.route.name]["cuts"] += 1
            self.events.write("act", id=f.id, op="cut-stream", route=conn.route.name, conn=conn.id,
                              **{"from": d.a, "to": d.b}, bytes=0, total=d.bytes_out, rst=f.rst, now=True)
            conn.finish(f"cut:{f.id}", mode="rst" if f.rst else "close")
            if not f.every:
                self.lift(f.id, "spent")
                return

    def _expire(self, f: Fault) -> None:
        if self.faults.get(f.id) is f:
            self.lift(f.id, "until")

    def lift(self, fid: str, why: str) -> Fault | None:
        f = self.faults.pop(fid, None)
        if f is None:
            return None
        if f.timer is not None:
            f.timer.cancel()
        self.events.write("fault", ev="lift", id=f.id, op=f.op, why=why, acted=f.acted, bytes=f.bytes)
        log.info("fault %s (%s) lifted: %s", f.id, f.op, why)
        if f.op == "partition":
            self._relink()
        if f.op == "hold-conn":
            self._release(f)
        return f

    def _release(self, f: Fault) -> None:
        """A hold-conn lifted: each direction it held delivers what it holds, then the close (``_Dir.run``)."""
        for d in f.claimed or []:
            if d.hold is not f:
                continue
            held = d.hold_at is not None
            if held:
                d.released = f.id
                self.events.write("act", id=f.id, op=f.op, route=d.conn.route.name, conn=d.conn.id,
                                  **{"from": d.a, "to": d.b}, released=True, frames=d.held_frames,
                                  bytes=d.pushed - (d.hold_at or 0), close=d.eof, lost=d.src.lost)
            d.hold = None
            d.hold_at = None
            d.wake.set()

    def held_frame(self, d: _Dir, frame: remoting.Frame) -> None:
        """A frame a hold-conn keeps from delivery: an ``act`` line (the first on its direction says so)."""
        f = d.hold
        if f is None:
            return
        f.acted += 1
        f.bytes += len(frame.raw)
        d.held_frames += 1
        extra: dict[str, Any] = {"first": True} if d.held_frames == 1 else {}
        if frame.is_response:
            extra["response"] = True
        self.events.write("act", id=f.id, op=f.op, route=d.conn.route.name, conn=d.conn.id,
                          **{"from": d.a, "to": d.b}, held=True, code=frame.code, name=frame.name,
                          opaque=frame.opaque, oneway=frame.is_oneway, ext=frame.ext_fields, **extra,
                          **_json_body(frame))

    def status(self) -> dict[str, Any]:
        routes = {}
        for r in self.config.routes:
            b = self.bound.get(r.name, r.listen)
            routes[r.name] = {"node": r.node, "kind": r.kind, "listen": list(b), "target": list(r.target),
                              **self.route_stats[r.name]}
        conns = []
        now = time.monotonic()
        for c in self.conns.values():
            conns.append({**c.info(), "state": c.state, "age_s": round(now - c.opened, 3),
                          "up": c.up.bytes_out if c.up else 0, "down": c.down.bytes_out if c.down else 0,
                          "held_up": c.up.queued if c.up else 0, "held_down": c.down.queued if c.down else 0,
                          "parsed": any(d.decoder is not None for d in c.dirs())})
        return {"ok": True, "pid": os.getpid(), "uptime_s": round(now - self.started, 3),
                "faults": [f.view() for f in self.faults.values()],
                "partitions": {f.id: [list(x) for x in sorted(f.links)] for f in self.faults.values()
                               if f.op == "partition"},
                "routes": routes, "conns": conns}

    def request(self, req: Any) -> dict[str, Any]:
        """Handle one control request; never raises."""
        try:
            if not isinstance(req, dict):
                raise ConfigError("a request is a JSON object")
            op = req.get("op")
            if op in FAULT_OPS:
                f = self._parse_fault(req)
                self.apply(f)
                return {"ok": True, "id": f.id, "fault": f.view()}
            if op == "heal":
                fid = req.get("id")
                ids = [k for k, f in self.faults.items() if f.op == "partition" and (fid is None or k == str(fid))]
                if fid is not None and not ids:
                    raise ConfigError(f"heal: no partition {fid!r}")
                for k in ids:
                    self.lift(k, "heal")
                return {"ok": True, "lifted": ids}
            if op == "lift":
                fid = req.get("id")
                if fid is None or self.lift(str(fid), "lift") is None:
                    raise ConfigError(f"lift: no fault {fid!r}")
                return {"ok": True, "lifted": [str(fid)]}
            if op == "clear":
                ids = list(self.faults)
                for k in ids:
                    self.lift(k, "clear")
                return {"ok": True, "lifted": ids}
            if op == "status":
                return self.status()
            if op == "ping":
                return {"ok": True, "pid": os.getpid()}
            if op == "stop":
                self.stop("stop op")
                return {"ok": True}
            raise ConfigError(f"unknown op {op!r} (one of {', '.join((*FAULT_OPS, 'heal', 'lift', 'clear'))}, "
                              "status, ping, stop)")
        except ConfigError as exc:
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # a request must never take the proxy down
            log.warning("control: %s: %s", type(exc).__name__, exc)
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    async def _control_conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    line = await asyncio.wait_for(reader.readline(), CONTROL_IDLE_S)
                except (TimeoutError, ValueError):  # idle, or a line over the limit
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    req = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    reply: dict[str, Any] = {"ok": False, "error": f"not JSON: {exc}"}
                else:
                    reply = self.request(req)
                writer.write(json.dumps(reply, separators=(",", ":"), default=str).encode() + b"\n")
                await asyncio.wait_for(writer.drain(), CONTROL_IDLE_S)
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()

    # -- life

    def stop(self, why: str) -> None:
        if self._stop is not None and not self._stop.is_set():
            self.stop_why = why
            self._stop.set()

    async def start(self) -> None:
        """Bind every route, then the control socket. ``ProxyError`` when one cannot be bound."""
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        for r in self.config.routes:
            try:
                srv = await loop.create_server(self._factory(r), r.listen[0], r.listen[1], reuse_address=True,
                                               backlog=256)
            except OSError as exc:
                await self._close_servers()
                raise ProxyError(f"route {r.name}: cannot listen on {r.listen[0]}:{r.listen[1]}: "
                                 f"{exc.strerror or exc}") from None
            self._servers.append(srv)
            self.bound[r.name] = tuple(srv.sockets[0].getsockname()[:2])
        path = self.config.control
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._remove_stale(path)
            srv = await asyncio.start_unix_server(self._control_conn, str(path), limit=MAX_LINE)
            st = path.stat()
        except OSError as exc:
            await self._close_servers()
            raise ProxyError(f"control socket {path}: {exc.strerror or exc}") from None
        self._servers.append(srv)
        self._control_ino = (st.st_dev, st.st_ino)
        self.events.write("proxy", ev="start", pid=os.getpid(), routes={
            r.name: {"node": r.node, "kind": r.kind, "listen": list(self.bound[r.name]), "target": list(r.target)}
            for r in self.config.routes})
        log.info("proxy up: %d routes, control %s", len(self.config.routes), path)

    @staticmethod
    def _remove_stale(path: Path) -> None:
        try:
            st = path.lstat()
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise OSError(17, "exists and is not a socket")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            try:
                s.connect(str(path))
            except OSError:
                path.unlink()  # nobody listens: a leftover
                return
        raise OSError(98, "another proxy is listening on it")

    def _control_gone(self) -> bool:
        try:
            st = self.config.control.stat()
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != self._control_ino

    async def _watch(self) -> None:
        deadline = time.monotonic() + self.config.lifetime_s
        while True:
            await asyncio.sleep(WATCH_S)
            if time.monotonic() >= deadline:
                return self.stop(f"lifetime of {self.config.lifetime_s:g} s")
            if self._control_gone():
                return self.stop("control socket removed")
            for f in list(self.faults.values()):  # until_ms also lifts lazily; this catches idle faults
                self._active(f)

    async def _close_servers(self) -> None:
        for s in self._servers:
            s.close()
        for s in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(s.wait_closed(), 2.0)
        self._servers.clear()

    async def close(self) -> None:
        for s in self._servers:
            s.close()
        for conn in list(self.conns.values()):
            if conn.state == "open":
                conn.finish("shutdown", mode="abort")
            else:
                conn._fail("failed", "proxy shutdown")
        for fid in list(self.faults):
            self.lift(fid, "stop")
        tasks = [t for t in self._tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
        await self._close_servers()
        if self._control_ino is not None and not self._control_gone():
            with contextlib.suppress(OSError):
                self.config.control.unlink()
        self.events.write("proxy", ev="stop", why=self.stop_why or "closed")
        self.events.close()
        log.info("proxy down: %s", self.stop_why or "closed")

    async def run(self, *, install_signals: bool = False) -> None:
        """Start, serve until stopped (lifetime, control socket removed, ``stop`` op, a signal), close."""
        try:
            await self.start()
        except ProxyError as exc:
            self.events.write("proxy", ev="stop", why=str(exc))
            self.events.close()
            raise
        assert self._stop is not None
        loop = asyncio.get_running_loop()
        if install_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop, sig.name)
        watcher = self.spawn(self._watch())
        try:
            await self._stop.wait()
        finally:
            watcher.cancel()
            if install_signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)
            await self.close()


# ---------------------------------------------------------------------------------------------------- client


def control(sock_path: str | Path, request: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """Send one control request to the proxy at ``sock_path``, return its reply (``reply["ok"]`` says whether it
    was applied). Raises ``OSError`` (``TimeoutError`` included) when the proxy cannot be reached or does not
    answer within ``timeout`` seconds, ``ValueError`` when the reply is not one JSON object."""
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(sock_path))
        s.sendall(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        buf = bytearray()
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"proxy control {sock_path}: no reply within {timeout:g} s")
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"proxy control {sock_path}: closed without a reply")
            buf += chunk
            if len(buf) > MAX_LINE * 64:
                raise ValueError(f"proxy control {sock_path}: reply too long")
    reply = json.loads(bytes(buf).split(b"\n", 1)[0])
    if not isinstance(reply, dict):
        raise ValueError(f"proxy control {sock_path}: reply is not a JSON object")
    return reply


# ---------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rmqha.real.proxy",
                                 description="The fault proxy in front of a real RocketMQ cluster's listeners.")
    ap.add_argument("--config", required=True, help="the proxy config (JSON)")
    ap.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s proxy %(levelname)s %(message)s",
                        stream=sys.stderr)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"proxy: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(Proxy(config).run(install_signals=True))
    except ProxyError as exc:
        print(f"proxy: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
