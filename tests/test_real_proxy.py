"""The real cluster's fault proxy (``rmqha.real.proxy``) and its remoting codec (``rmqha.real.remoting``).

No Java: the proxy runs in-process (or as a subprocess for the process-level tests) on loopback, with routes on
127.0.0.1 in front of small asyncio servers that speak the remoting frame format (or raw bytes). Clients bind
127.0.0.2 (node ``a``) or 127.0.0.3 (node ``c``) so the proxy's ``peers`` map names them; the servers are node
``b``; any other address is ``client``. Every wait has a timeout; every proxy started here is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqha.real import proxy as P
from rmqha.real import remoting as R

ROOT = Path(__file__).resolve().parent.parent
PEERS = {"127.0.0.2": "a", "127.0.0.3": "c"}
PROPS = settings(max_examples=100, deadline=None)
TEST_TIMEOUT = 30.0


def run(coro: Awaitable[Any], timeout: float = TEST_TIMEOUT) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ codec

short = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
text = st.text(max_size=20)
ext = st.dictionaries(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=30), max_size=5)


@st.composite
def frames(draw: Any) -> dict[str, Any]:
    serialize = draw(st.sampled_from([R.SERIALIZE_JSON, R.SERIALIZE_ROCKETMQ]))
    return {"code": draw(short), "opaque": draw(int32), "flag": draw(st.integers(0, 3)), "serialize": serialize,
            "ext_fields": draw(ext), "remark": draw(st.none() | st.text(min_size=1, max_size=20)),
            "body": draw(st.binary(max_size=200)), "version": draw(st.integers(0, 500)),
            "language": draw(st.sampled_from(sorted(R.LANGUAGES)))}


@PROPS
@given(frames())
def test_codec_round_trip(kw):
    raw = R.encode(**kw)
    f = R.decode_frame(raw)
    assert (f.code, f.opaque, f.flag, f.serialize, f.body, f.raw) == (kw["code"], kw["opaque"], kw["flag"],
                                                                      kw["serialize"], kw["body"], raw)
    assert f.is_response == bool(kw["flag"] & 1)
    assert f.is_oneway == bool(kw["flag"] & 2)
    assert f.ext_fields == kw["ext_fields"]
    assert f.remark == kw["remark"]
    assert f.header["language"] == kw["language"] and f.header["version"] == kw["version"]
    assert R.encode(**{**kw, "code": f.code, "opaque": f.opaque, "flag": f.flag}) == raw


@settings(max_examples=60, deadline=None)
@given(st.lists(frames(), min_size=1, max_size=4), st.data())
def test_incremental_decoding_over_any_split(kws, data):
    stream = b"".join(R.encode(**kw) for kw in kws)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    chunks = [stream[i:j] for i, j in zip([0, *cuts], [*cuts, len(stream)])]
    dec = R.FrameDecoder()
    got: list[R.Frame] = []
    for chunk in chunks:
        got += dec.feed(chunk)
    assert [f.raw for f in got] == [R.encode(**kw) for kw in kws]
    assert dec.buffered == 0
    whole, rest = R.decode_frames(stream)
    assert [f.raw for f in whole] == [f.raw for f in got] and rest == b""
    part, rest = R.decode_frames(stream[:-1])
    assert len(part) == len(kws) - 1 and rest == R.encode(**kws[-1])[:-1]


def _json_frame(header: bytes, body: bytes = b"", kind: int = 0) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (kind << 24) | len(header)) + header + body


MALFORMED = {
    "length under 4": struct.pack(">i", 3) + b"\0\0\0",
    "negative length": struct.pack(">i", -5),
    "too long": struct.pack(">i", R.MAX_FRAME),  # + 4 for the length field: one byte over
    "serialize type 2": struct.pack(">iI", 10, (2 << 24) | 2) + b"{}",
    "header longer than frame": struct.pack(">iI", 6, 3) + b"{}",
    "json not an object": _json_frame(b"[1,2]"),
    "json garbage": _json_frame(b"{code:"),
    "json code not int": _json_frame(b'{"code":"x","opaque":1}'),
    "json extFields not object": _json_frame(b'{"code":1,"extFields":[]}'),
    "binary too short": _json_frame(b"\0" * 10, kind=1),
    "binary remark overrun": _json_frame(struct.pack(">hBhiii", 1, 0, 0, 1, 0, 50) + b"abc" + b"\0\0\0\0", kind=1),
    "binary ext overrun": _json_frame(struct.pack(">hBhiiii", 1, 0, 0, 1, 0, 0, 40) + b"\0\1k", kind=1),
    "binary trailing bytes": _json_frame(struct.pack(">hBhiiii", 1, 0, 0, 1, 0, 0, 0) + b"x", kind=1),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_frames_raise_frame_error(name):
    raw = MALFORMED[name]
    with pytest.raises(R.FrameError) as exc:
        R.decode_frames(raw + b"\0" * 16)
    assert "\n" not in str(exc.value)
    dec = R.FrameDecoder()
    with pytest.raises(R.FrameError):
        dec.feed(raw + b"\0" * 16)
    assert dec.pending() == raw + b"\0" * 16  # nothing of it is lost
    with pytest.raises(R.FrameError):
        dec.feed(b"")  # and it keeps saying so


def test_too_long_is_told_by_the_length_alone():
    with pytest.raises(R.FrameError, match="exceeds"):
        R.FrameDecoder().feed(struct.pack(">i", R.MAX_FRAME - 3))
    R.FrameDecoder().feed(struct.pack(">i", R.MAX_FRAME - 4))  # exactly 16 MiB in all: allowed (and incomplete)


def test_good_frames_before_a_bad_one_are_returned():
    good = R.encode(10, opaque=7)
    dec = R.FrameDecoder()
    assert [f.opaque for f in dec.feed(good + MALFORMED["serialize type 2"])] == [7]
    with pytest.raises(R.FrameError):
        dec.feed(b"")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_garbage_only_ever_raises_frame_error(data):
    with contextlib.suppress(R.FrameError):
        R.decode_frames(data)
    with contextlib.suppress(R.FrameError):
        R.FrameDecoder().feed(data)


def test_json_header_as_java_writes_it():
    header = (b'{"code":1002,"extFields":{"brokerName":"b"},"flag":0,"language":"JAVA","opaque":42,'
              b'"serializeTypeCurrentRPC":"JSON","version":453}')
    f = R.decode_frame(_json_frame(header, b"BODY"))
    assert (f.code, f.opaque, f.name, f.body, f.ext_fields) == (1002, 42, "CONTROLLER_ELECT_MASTER", b"BODY",
                                                                {"brokerName": "b"})
    resp = R.decode_frame(R.encode("CONTROLLER_NOT_LEADER", opaque=42, response=True))
    assert resp.is_response and resp.name == "CONTROLLER_NOT_LEADER"


def test_request_code_names():
    assert R.request_code("CONTROLLER_ALTER_SYNC_STATE_SET") == 1001
    assert R.request_code("BROKER_HEARTBEAT") == 904
    assert R.request_code(310) == 310 and R.request_code("310") == 310
    with pytest.raises(ValueError):
        R.request_code("NO_SUCH_CODE")
    assert len(R.REQUEST_NAMES) == len(R.REQUEST_CODES)  # no number twice


_PROTO = "org/apache/rocketmq/remoting/protocol/"
_SOURCES = "org.apache.rocketmq:rocketmq-remoting:5.3.3:jar:sources"


def _sources_jar() -> Path:
    """RocketMQ 5.3.3's remoting sources jar from Maven Central (into Maven's own repository, ~/.m2)."""
    repo = Path.home() / ".m2" / "repository"
    jar = repo / "org/apache/rocketmq/rocketmq-remoting/5.3.3/rocketmq-remoting-5.3.3-sources.jar"
    if not jar.is_file():
        mvn = shutil.which("mvn")
        if mvn is None:
            _skip_or_fail("Maven (mvn) is not on PATH: the test reads RocketMQ's source from Maven Central")
        p = subprocess.run([mvn, "-q", "-B", "dependency:get", f"-Dartifact={_SOURCES}", "-Dtransitive=false"],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0 or not jar.is_file():
            _skip_or_fail(f"mvn could not resolve {_SOURCES}: {(p.stdout + p.stderr).strip()[-200:]}")
    return jar


def _skip_or_fail(why: str) -> None:
    if os.environ.get("RMQHA_REQUIRE_REAL"):
        pytest.fail(why)
    pytest.skip(why)


def _java_constants(name: str) -> dict[str, int]:
    with zipfile.ZipFile(_sources_jar()) as z:
        src = z.read(_PROTO + name).decode()
    return {m[0]: int(m[1]) for m in re.findall(r"public static final int (\w+) = (-?\d+);", src)}


def test_code_tables_match_rocketmq_533_source():
    req = _java_constants("RequestCode.java")
    assert {k: req.get(k) for k in R.REQUEST_CODES} == R.REQUEST_CODES
    resp = _java_constants("ResponseCode.java") | _java_constants("RemotingSysResponseCode.java")
    assert {k: resp.get(k) for k in R.RESPONSE_CODES} == R.RESPONSE_CODES


# ------------------------------------------------------------------------------------------------ test servers


class RpcServer:
    """A remoting server (node ``b``): every request but a oneway gets a SUCCESS response with its opaque and
    body; every frame received is kept."""

    def __init__(self) -> None:
        self.frames: list[R.Frame] = []
        self.raw = bytearray()
        self.server: asyncio.AbstractServer | None = None
        self.port = 0

    async def __aenter__(self) -> RpcServer:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.server.wait_closed(), 2)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        dec: R.FrameDecoder | None = R.FrameDecoder()
        try:
            while data := await reader.read(65536):
                self.raw += data
                if dec is None:
                    continue
                try:
                    got = dec.feed(data)
                except R.FrameError:
                    dec = None
                    continue
                for f in got:
                    self.frames.append(f)
                    if not f.is_response and not f.is_oneway:
                        writer.write(R.encode(0, opaque=f.opaque, response=True, body=f.body,
                                              serialize=f.serialize))
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()


class RpcClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.dec = R.FrameDecoder()
        self.ready: list[R.Frame] = []

    @classmethod
    async def open(cls, port: int, src: str = "127.0.0.2") -> RpcClient:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, local_addr=(src, 0)), 5)
        return cls(r, w)

    def send(self, code: int | str, opaque: int, **kw: Any) -> None:
        self.writer.write(R.encode(code, opaque=opaque, **kw))

    async def recv(self, timeout: float = 3.0) -> R.Frame | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.ready:
            left = deadline - loop.time()
            if left <= 0:
                return None
            try:
                data = await asyncio.wait_for(self.reader.read(65536), left)
            except (TimeoutError, ConnectionError):
                return None
            if not data:
                return None
            self.ready += self.dec.feed(data)
        return self.ready.pop(0)

    def close(self) -> None:
        self.writer.close()


class ByteServer(asyncio.Protocol):
    """A raw server (node ``b``) as a protocol, so bytes that arrive before a reset are still counted: it counts
    what it receives per connection and, if ``blob``, sends it on connect (with ``asked``: on the first bytes it
    receives, so that a client's connect has returned before any cut of the blob can reset it)."""

    def __init__(self, blob: bytes, conns: list[ByteServer], echo: bool, asked: bool = False) -> None:
        self.blob, self.echo, self.asked = blob, echo, asked
        self.got = bytearray()
        self.times: list[float] = []
        self.ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        conns.append(self)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.blob and not self.asked:
            transport.write(self.blob)

    def data_received(self, data: bytes) -> None:
        if self.asked and self.blob and not self.got and self.transport is not None:
            self.transport.write(self.blob)
        self.got += data
        self.times.append(time.monotonic())
        if self.echo and self.transport is not None:
            self.transport.write(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ended.done():
            self.ended.set_result("rst" if isinstance(exc, ConnectionResetError) else "eof")


@contextlib.asynccontextmanager
async def byte_server(blob: bytes = b"", echo: bool = False,
                      asked: bool = False) -> AsyncIterator[tuple[int, list[ByteServer]]]:
    conns: list[ByteServer] = []
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: ByteServer(blob, conns, echo, asked), "127.0.0.1", 0)
    try:
        yield srv.sockets[0].getsockname()[1], conns
    finally:
        srv.close()
        for c in conns:
            if c.transport is not None:
                c.transport.abort()


@dataclass
class Handle:
    proxy: P.Proxy
    ports: dict[str, int]
    sock: Path
    events: Path

    async def ctl(self, req: dict[str, Any]) -> dict[str, Any]:
        reply = await asyncio.to_thread(P.control, self.sock, req, 5)
        return reply

    async def ok(self, req: dict[str, Any]) -> dict[str, Any]:
        reply = await self.ctl(req)
        assert reply["ok"], reply
        return reply

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.events.read_text().splitlines()]


def _config(tmp: Path, routes: list[tuple[str, str, str, int]], lifetime: float = 60) -> dict[str, Any]:
    return {"routes": [{"name": n, "node": node, "kind": kind, "listen": ["127.0.0.1", 0],
                        "target": ["127.0.0.1", port]} for n, node, kind, port in routes],
            "peers": PEERS, "control": str(tmp / "p.sock"), "events": str(tmp / "ev.jsonl"), "lifetime_s": lifetime}


@contextlib.asynccontextmanager
async def proxied(tmp: Path, routes: list[tuple[str, str, str, int]],
                  watch: list[Any] | None = None) -> AsyncIterator[Handle]:
    cfg = P.parse_config({**_config(tmp, routes), "watch": watch or []})
    proxy = P.Proxy(cfg)
    task = asyncio.get_running_loop().create_task(proxy.run())
    for _ in range(500):
        if cfg.control.exists() and len(proxy.bound) == len(routes):
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield Handle(proxy, {n: proxy.bound[n][1] for n in proxy.bound}, cfg.control, cfg.events)
    finally:
        proxy.stop("test over")
        await asyncio.wait_for(task, 5)


async def _eventually(cond: Callable[[], bool], timeout: float = 3.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if cond():
            return True
        await asyncio.sleep(0.01)
    return cond()


# ------------------------------------------------------------------------------------------------ proxy: frames


def test_remoting_passes_through_and_conns_are_recorded(tmp_path):
    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            for i in range(5):
                cli.send("CONTROLLER_GET_METADATA_INFO", i, body=b"x" * i, serialize=i % 2)
            got = [await cli.recv() for _ in range(5)]
            assert [(f.opaque, f.body, f.is_response) for f in got if f] == [(i, b"x" * i, True) for i in range(5)]
            st_ = await h.ok({"op": "status"})
            route = st_["routes"]["b.remoting"]
            assert route["open"] == 1 and route["frames"] == 10 and route["bytes_up"] > 0
            assert st_["conns"][0]["src"] == "a" and st_["conns"][0]["dst"] == "b" and st_["conns"][0]["parsed"]
            cli.close()
            assert await _eventually(lambda: not h.proxy.conns)
            other = await RpcClient.open(h.ports["b.remoting"], src="127.0.0.1")  # not in peers: "client"
            other.send(34, 1)
            assert await other.recv() is not None
            other.close()
            assert await _eventually(lambda: not h.proxy.conns)
        conn = [e for e in h.lines() if e["k"] == "conn"]
        assert [(e["ev"], e["src"], e["dst"], e["route"]) for e in conn] == [
            ("open", "a", "b", "b.remoting"), ("close", "a", "b", "b.remoting"),
            ("open", "client", "b", "b.remoting"), ("close", "client", "b", "b.remoting")]
        assert all(isinstance(e["t"], float | int) for e in h.lines())
        assert h.lines()[0]["k"] == "proxy" and h.lines()[-1] == {**h.lines()[-1], "k": "proxy", "ev": "stop"}

    run(main())


def test_big_frames_and_a_server_that_closes(tmp_path):
    blob = os.urandom(1_000_000)

    async def main() -> None:
        async with RpcServer() as srv, byte_server(blob) as (port, conns), proxied(
                tmp_path, [("b.remoting", "b", "remoting", srv.port), ("b.ha", "b", "ha", port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            body = os.urandom(5 * 1024 * 1024)
            cli.send("SEND_MESSAGE_V2", 1, body=body)
            f = await cli.recv(10)
            assert f is not None and f.body == body
            cli.close()
            r, w = await asyncio.open_connection("127.0.0.1", h.ports["b.ha"], local_addr=("127.0.0.2", 0))
            assert await asyncio.wait_for(r.readexactly(len(blob)), 10) == blob
            for c in conns:  # the server ends its side: the client gets the end of stream after every byte
                assert c.transport is not None
                c.transport.close()
            assert await asyncio.wait_for(r.read(), 5) == b""
            w.close()
            assert await _eventually(lambda: not h.proxy.conns)
        closes = [e for e in h.lines() if e["k"] == "conn" and e["ev"] == "close"]
        assert closes[-1]["route"] == "b.ha" and closes[-1]["down"] == len(blob) and closes[-1]["why"] == "eof"


def test_drop_response_by_code_with_count(tmp_path):
    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            rep = await h.ok({"op": "drop-response", "id": "d1", "code": "CONTROLLER_ELECT_MASTER", "from": "b",
                              "to": "a", "count": 2})
            assert rep["fault"]["code"] == 1002
            for op, code in enumerate([1002, 1004, 1002, 1002, 1004]):
                cli.send(code, op + 1)
            got = []
            while (f := await cli.recv(0.6)) is not None:
                got.append(f.opaque)
            assert got == [2, 4, 5]  # opaques 1 and 3 (elect master) dropped, the third elect answered
            assert [f.opaque for f in srv.frames] == [1, 2, 3, 4, 5]  # every request reached the server
            assert "d1" not in {f["id"] for f in (await h.ok({"op": "status"}))["faults"]}  # spent
            # another node's requests are not matched (to: "a")
            cli2 = await RpcClient.open(h.ports["b.remoting"], src="127.0.0.3")
            await h.ok({"op": "drop-response", "id": "d2", "code": 1002, "from": "b", "to": "a"})
            cli2.send(1002, 9)
            assert (await cli2.recv()) is not None
            cli.close()
            cli2.close()
        acts = [e for e in h.lines() if e["k"] == "act"]
        assert [(e["id"], e["op"], e["opaque"], e["req_code"], e["req_name"], e["from"], e["to"]) for e in acts] == [
            ("d1", "drop-response", 1, 1002, "CONTROLLER_ELECT_MASTER", "b", "a"),
            ("d1", "drop-response", 3, 1002, "CONTROLLER_ELECT_MASTER", "b", "a")]
        lifts = [(e["id"], e["why"], e["acted"]) for e in h.lines() if e["k"] == "fault" and e["ev"] == "lift"]
        assert lifts == [("d1", "spent", 2), ("d2", "stop", 0)]

    run(main())


def test_watched_requests_and_their_responses_are_recorded(tmp_path):
    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)],
                                               watch=["NOTIFY_BROKER_ROLE_CHANGED", 1001]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            for op, code in enumerate([1008, 1004, 1001]):
                cli.send(code, op + 1)
            got = [await cli.recv() for _ in range(3)]
            assert all(f is not None for f in got)
            assert len(srv.frames) == 3
            cli.close()
        lines = [e for e in h.lines() if e["k"] == "frame"]
        requests = [(e["code"], e["opaque"], e["from"], e["to"]) for e in lines if not e["response"]]
        responses = [(e["req_code"], e["opaque"], e["from"], e["to"]) for e in lines if e["response"]]
        assert requests == [(1008, 1, "a", "b"), (1001, 3, "a", "b")]  # 1004 is not watched
        assert sorted(responses) == [(1001, 3, "b", "a"), (1008, 1, "b", "a")]

    run(main())


def test_bad_watch_config_is_refused():
    with pytest.raises(P.ConfigError, match="watch"):
        P.parse_config({**_config(Path("/nonexistent"), [("b.remoting", "b", "remoting", 1)]), "watch": ["NOPE"]})


def test_delay_response_holds_it_and_keeps_order(tmp_path):
    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            await h.ok({"op": "delay-response", "id": "slow", "code": "BROKER_HEARTBEAT", "ms": 300, "count": 1})
            t0 = time.monotonic()
            cli.send("BROKER_HEARTBEAT", 1)
            cli.send("GET_BROKER_HA_STATUS", 2)
            first = await cli.recv()
            t1 = time.monotonic()
            second = await cli.recv()
            assert first is not None and second is not None
            assert (first.opaque, second.opaque) == (1, 2)  # the later response waited behind it
            assert t1 - t0 >= 0.3
            assert await _eventually(lambda: len(srv.frames) == 2)
            cli.send("BROKER_HEARTBEAT", 3)  # count 1: spent (one act line below)
            assert (await cli.recv()) is not None
            cli.close()
        act = [e for e in h.lines() if e["k"] == "act"]
        assert [(e["op"], e["opaque"], e["ms"]) for e in act] == [("delay-response", 1, 300)]

    run(main())


def test_drop_request_and_oneway(tmp_path):
    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            await h.ok({"op": "drop-request", "id": "q", "code": "REGISTER_BROKER", "from": "a", "to": "b"})
            await h.ok({"op": "drop-response", "id": "r", "code": "NOTIFY_BROKER_ROLE_CHANGED"})
            cli.send("REGISTER_BROKER", 1)
            cli.send("REGISTER_BROKER", 2, oneway=True)  # a oneway request: dropped as a request
            cli.send("NOTIFY_BROKER_ROLE_CHANGED", 3, oneway=True)  # no response to drop: passes
            cli.send("SEND_MESSAGE_V2", 4)
            assert (f := await cli.recv()) is not None and f.opaque == 4
            assert await cli.recv(0.3) is None
            assert [(f.code, f.opaque) for f in srv.frames] == [(1008, 3), (310, 4)]
            await h.ok({"op": "lift", "id": "q"})
            cli.send("REGISTER_BROKER", 5)
            assert (f := await cli.recv()) is not None and f.opaque == 5
            cli.close()
        act = [(e["op"], e["opaque"], e.get("oneway")) for e in h.lines() if e["k"] == "act"]
        assert act == [("drop-request", 1, False), ("drop-request", 2, True)]

    run(main())


def test_frame_faults_match_the_request_header_ext_fields(tmp_path):
    """``ext``: only requests whose extFields hold the named values (a REGISTER_BROKER as master: brokerId 0)."""

    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            reply = await h.ctl({"op": "drop-request", "code": "REGISTER_BROKER", "ext": {"brokerId": None}})
            assert not reply["ok"] and "'ext'" in reply["error"]
            f = await h.ok({"op": "drop-request", "id": "m", "code": "REGISTER_BROKER", "from": "a",
                            "ext": {"brokerId": 0}, "count": 1})
            assert f["fault"]["ext"] == {"brokerId": "0"}
            await h.ok({"op": "drop-response", "id": "r", "code": "REGISTER_BROKER", "ext": {"brokerId": "2"}})
            cli.send("REGISTER_BROKER", 1, ext_fields={"brokerId": "1", "brokerName": "x"})  # passes
            cli.send("REGISTER_BROKER", 2)  # no extFields: passes
            cli.send("REGISTER_BROKER", 3, ext_fields={"brokerId": "0"})  # dropped, the fault spent
            cli.send("REGISTER_BROKER", 4, ext_fields={"brokerId": "0"})  # passes
            cli.send("REGISTER_BROKER", 5, ext_fields={"brokerId": "2"})  # its response dropped
            got = [await cli.recv() for _ in range(3)]
            assert sorted(x.opaque for x in got if x is not None) == [1, 2, 4]
            assert await cli.recv(0.3) is None
            assert [fr.opaque for fr in srv.frames] == [1, 2, 4, 5]
            cli.close()
        act = [(e["id"], e["opaque"]) for e in h.lines() if e["k"] == "act"]
        assert act == [("m", 3), ("r", 5)]

    run(main())


def test_delay_request_and_response_faults_match_requests_from_the_server_side(tmp_path):
    """Requests flow both ways on a remoting connection (a broker asks its client, e.g. CHECK_TRANSACTION_STATE):
    the requester is whoever sends the request, whichever side dialled."""

    async def main() -> None:
        async with byte_server() as (port, conns), proxied(tmp_path, [("b.remoting", "b", "remoting", port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            cli.send("HEART_BEAT", 1)
            assert await _eventually(lambda: bool(conns) and len(conns[0].got) > 0)
            await h.ok({"op": "drop-response", "id": "x", "code": "CHECK_TRANSACTION_STATE", "from": "a", "to": "b"})
            server = conns[0]
            assert server.transport is not None
            server.transport.write(R.encode("CHECK_TRANSACTION_STATE", opaque=77))  # b asks a
            req = await cli.recv()
            assert req is not None and req.code == 39 and not req.is_response
            cli.writer.write(R.encode(0, opaque=77, response=True))  # a answers: dropped
            cli.writer.write(R.encode(0, opaque=78, response=True))  # an unrelated response: passes
            assert await _eventually(lambda: len(server.got) > 0 and b"" != bytes(server.got))
            await asyncio.sleep(0.2)
            frames, rest = R.decode_frames(bytes(server.got))
            assert [(f.opaque, f.is_response) for f in frames] == [(1, False), (78, True)] and rest == b""
            cli.close()

    run(main())


def test_malformed_frame_switches_the_connection_to_pass_through(tmp_path, caplog):
    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            cli.send(10, 1)
            assert await cli.recv() is not None
            garbage = b"\x16\x03\x01\x02\x00" + os.urandom(64)  # a TLS hello, say
            cli.writer.write(garbage)
            assert await _eventually(lambda: srv.raw.endswith(garbage))  # passed on unparsed
            cli.close()
            cli2 = await RpcClient.open(h.ports["b.remoting"])  # other connections still parse
            await h.ok({"op": "drop-response", "code": 11})
            cli2.send(11, 5)
            assert await cli2.recv(0.3) is None
            cli2.close()
        bad = [e for e in h.lines() if e["k"] == "malformed"]
        assert len(bad) == 1 and bad[0]["from"] == "a" and bad[0]["to"] == "b"

    caplog.set_level("WARNING", logger="rmqha.real.proxy")
    run(main())
    lines = [r for r in caplog.records if "malformed" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0].getMessage() and lines[0].exc_info is None


# ------------------------------------------------------------------------------------------------ proxy: links


def test_partition_holds_then_delivers_after_heal(tmp_path, monkeypatch):
    monkeypatch.setattr(P, "SYN_LOST_S", 0.3)

    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            cli.send(34, 1)
            assert await cli.recv() is not None
            await h.ok({"op": "partition", "id": "p1", "links": [["a", "b"], ["b", "a"]]})
            for i in range(2, 5):
                cli.send(34, i, body=b"z" * 1000)
            assert await cli.recv(0.4) is None
            assert len(srv.frames) == 1  # held in the proxy (and the sockets), not lost
            # a new connection across the cut: the SYN is "lost", then the connection ends
            t0 = time.monotonic()
            late = await RpcClient.open(h.ports["b.remoting"])
            late.send(34, 99)
            assert await late.recv(2.0) is None
            assert time.monotonic() - t0 >= 0.3
            late.close()
            # node c is not cut off
            other = await RpcClient.open(h.ports["b.remoting"], src="127.0.0.3")
            other.send(34, 50)
            assert (await other.recv()) is not None
            other.close()
            st_ = await h.ok({"op": "status"})
            assert st_["partitions"] == {"p1": [["a", "b"], ["b", "a"]]}
            assert st_["routes"]["b.remoting"]["refused"] == 1
            await h.ok({"op": "heal", "id": "p1"})
            got = [await cli.recv() for _ in range(3)]
            assert [f.opaque for f in got if f] == [2, 3, 4]
            cli.close()
        ev = h.lines()
        assert any(e["k"] == "conn" and e["ev"] == "refused" for e in ev)
        assert any(e["k"] == "act" and e["op"] == "partition" and e["syn_lost"] for e in ev)
        assert [(e["ev"], e["id"]) for e in ev if e["k"] == "fault"] == [("apply", "p1"), ("lift", "p1")]

    run(main())


def test_hold_conn_holds_an_open_connection_from_its_trigger_and_releases_bytes_then_close(tmp_path):
    """``hold-conn``: the connection open at the apply is held from its first request of the code on (its close
    too), a new connection from the same node passes, and the release delivers the held frames, then a FIN."""

    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            reply = await h.ctl({"op": "hold-conn", "id": "h", "from": "a", "to": "b"})
            assert not reply["ok"] and "no open connection" in reply["error"]
            old = await RpcClient.open(h.ports["b.remoting"])
            old.send("BROKER_HEARTBEAT", 1, oneway=True)
            assert await _eventually(lambda: len(srv.frames) == 1)
            reply = await h.ctl({"op": "hold-conn", "from": "a", "to": "b", "count": 1})
            assert not reply["ok"] and "'count'" in reply["error"]
            f = await h.ok({"op": "hold-conn", "id": "h", "from": "a", "to": "b",
                            "code": "CONTROLLER_ALTER_SYNC_STATE_SET", "ext": {"masterEpoch": 1}})
            assert f["fault"]["conns"] and f["fault"]["name"] == "CONTROLLER_ALTER_SYNC_STATE_SET"
            old.send("BROKER_HEARTBEAT", 2, oneway=True)  # before the trigger: passes
            old.send("CONTROLLER_ALTER_SYNC_STATE_SET", 3, ext_fields={"masterEpoch": "2"})  # not the ext: passes
            assert (r := await old.recv()) is not None and r.opaque == 3
            old.send("CONTROLLER_ALTER_SYNC_STATE_SET", 4, ext_fields={"masterEpoch": "1"}, body=b'{"s":[1,2]}')
            old.send("BROKER_HEARTBEAT", 5, oneway=True)  # behind the trigger: held
            assert await old.recv(0.3) is None
            assert [x.opaque for x in srv.frames] == [1, 2, 3]
            old.writer.transport.abort()  # the sender dies (an RST to the proxy): its close is held too
            new = await RpcClient.open(h.ports["b.remoting"])  # a new connection of the same node passes
            new.send("CONTROLLER_REGISTER_BROKER", 6)
            assert (r := await new.recv()) is not None and r.opaque == 6
            await asyncio.sleep(0.2)
            st_ = await h.ok({"op": "status"})
            held = [c for c in st_["conns"] if c["conn"] in f["fault"]["conns"]]
            assert held and held[0]["held_up"] > 0  # the old connection is still open towards b
            assert [x.opaque for x in srv.frames] == [1, 2, 3, 6]
            await h.ok({"op": "lift", "id": "h"})
            assert await _eventually(lambda: [x.opaque for x in srv.frames] == [1, 2, 3, 6, 4, 5])
            new.close()
        ev = h.lines()
        acts = [e for e in ev if e["k"] == "act" and e["id"] == "h"]
        assert [(e.get("opaque"), e.get("first", False)) for e in acts if e.get("held")] == [(4, True), (5, False)]
        assert acts[0]["name"] == "CONTROLLER_ALTER_SYNC_STATE_SET" and acts[0]["body"] == {"s": [1, 2]}
        rel = [e for e in acts if e.get("released")]
        assert len(rel) == 1 and rel[0]["frames"] == 2 and rel[0]["close"] and rel[0]["bytes"] > 0
        closes = [e for e in ev if e["k"] == "conn" and e["ev"] == "close" and e["conn"] in f["fault"]["conns"]]
        assert [e["why"] for e in closes] == ["released:h"]
        assert [(e["ev"], e.get("why")) for e in ev if e["k"] == "fault" and e["id"] == "h"] == [
            ("apply", None), ("lift", "lift")]

    run(main())


def test_hold_conn_without_code_holds_bytes_from_now_and_sends_a_fin(tmp_path):
    async def main() -> None:
        async with byte_server() as (port, conns), proxied(tmp_path, [("b.ha", "b", "ha", port)]) as h:
            s = socket.create_connection(("127.0.0.1", h.ports["b.ha"]), 5, ("127.0.0.2", 0))
            s.sendall(b"before")
            assert await _eventually(lambda: bool(conns) and conns[0].got == b"before")
            await h.ok({"op": "hold-conn", "id": "h", "from": "a", "to": "b", "route": "b.ha"})
            s.sendall(b"held")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # an RST
            await asyncio.sleep(0.3)
            assert conns[0].got == b"before" and not conns[0].ended.done()
            await h.ok({"op": "clear"})
            assert await asyncio.wait_for(conns[0].ended, 3) == "eof"
            assert conns[0].got == b"beforeheld"

    run(main())


def test_one_way_partition(tmp_path):
    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            cli = await RpcClient.open(h.ports["b.remoting"])
            cli.send(34, 1)
            assert await cli.recv() is not None
            await h.ok({"op": "partition", "id": "back", "links": [["b", "a"]]})  # replies cut, requests flow
            cli.send(34, 2)
            assert await _eventually(lambda: len(srv.frames) == 2)
            assert await cli.recv(0.3) is None
            await h.ok({"op": "heal", "id": None})
            assert (f := await cli.recv()) is not None and f.opaque == 2
            await h.ok({"op": "partition", "id": "fwd", "links": [["a", "b"]]})  # requests cut
            cli.send(34, 3)
            await asyncio.sleep(0.3)
            assert len(srv.frames) == 2
            await h.ok({"op": "clear"})
            assert (f := await cli.recv()) is not None and f.opaque == 3
            cli.close()

    run(main())


def test_partition_pushes_back_on_the_sender(tmp_path, monkeypatch):
    monkeypatch.setattr(P, "QUEUE_LIMIT", 64 * 1024)

    async def main() -> None:
        async with byte_server() as (port, conns), proxied(tmp_path, [("b.ha", "b", "ha", port)]) as h:
            def blast() -> int:
                with socket.create_connection(("127.0.0.1", h.ports["b.ha"]), 5, ("127.0.0.2", 0)) as s:
                    s.setblocking(False)
                    sent = 0
                    deadline = time.monotonic() + 1.0
                    while time.monotonic() < deadline:
                        try:
                            sent += s.send(b"y" * 65536)
                        except BlockingIOError:
                            time.sleep(0.01)
                    return sent

            fut = asyncio.get_running_loop().run_in_executor(None, blast)
            assert await _eventually(lambda: bool(conns) and len(conns[0].got) > 0)
            await h.ok({"op": "partition", "links": [["a", "b"]]})
            sent = await fut
            held = sent - len(conns[0].got)
            assert held > 0 and len(conns[0].got) < sent
            # the proxy holds at most its limit and one read (asyncio reads up to 256 KiB); the rest stayed in the
            # sockets
            conn = (await h.ok({"op": "status"}))["conns"][0]
            assert conn["held_up"] <= 64 * 1024 + 256 * 1024

    run(main())


def test_cut_stream_after_exactly_n_bytes(tmp_path):
    blob = os.urandom(300_000)

    def read_all(port: int, src: str = "127.0.0.2", send: bytes = b"?") -> tuple[bytes, str]:
        """Connect, ask for the blob (the server sends it on our first byte: the connect has returned by then, so
        a cut's reset cannot surface in connect() when this thread is scheduled late), read to the end."""
        with socket.create_connection(("127.0.0.1", port), 5, (src, 0)) as s:
            s.settimeout(5)
            if send:
                s.sendall(send)
            got = bytearray()
            try:
                while chunk := s.recv(65536):
                    got += chunk
                how = "eof"
            except ConnectionResetError:
                how = "rst"
            return bytes(got), how

    async def main() -> None:
        async with byte_server(blob, asked=True) as (port, conns), proxied(tmp_path, [("b1.ha", "b", "ha", port)]) as h:
            await h.ok({"op": "cut-stream", "id": "c1", "route": "b1.ha", "from": "b", "to": "a",
                        "after_bytes": 12345})
            got, how = await asyncio.to_thread(read_all, h.ports["b1.ha"])
            assert got == blob[:12345] and how == "rst"
            assert await _eventually(lambda: not h.proxy.conns)
            # one-shot: the next connection is not cut
            assert "c1" not in {f["id"] for f in (await h.ok({"op": "status"}))["faults"]}
            await h.ok({"op": "cut-stream", "id": "every", "from": "b", "to": "a", "after_bytes": 1000,
                        "every": True, "rst": False})
            for _ in range(2):
                got, how = await asyncio.to_thread(read_all, h.ports["b1.ha"])
                assert got == blob[:1000] and how == "eof"
            await h.ok({"op": "lift", "id": "every"})
            # the other direction, on a connection already open: N more bytes from now on
            conns.clear()
            sock = await asyncio.to_thread(socket.create_connection, ("127.0.0.1", h.ports["b1.ha"]), 5,
                                           ("127.0.0.2", 0))
            try:
                sock.sendall(b"h" * 100)
                assert await _eventually(lambda: bool(conns) and len(conns[-1].got) == 100)  # (the blob goes back)
                await h.ok({"op": "cut-stream", "id": "up", "from": "a", "to": "b", "after_bytes": 777})
                sock.sendall(b"u" * 5000)
                assert await asyncio.wait_for(conns[-1].ended, 5) == "rst"
                assert bytes(conns[-1].got) == b"h" * 100 + b"u" * 777
            finally:
                sock.close()
        cuts = [(e["id"], e["bytes"], e["rst"]) for e in h.lines() if e["k"] == "act"]
        assert cuts == [("c1", 12345, True), ("every", 1000, False), ("every", 1000, False), ("up", 777, True)]
        closes = [e["why"] for e in h.lines() if e["k"] == "conn" and e["ev"] == "close"]
        assert closes == ["cut:c1", "cut:every", "cut:every", "cut:up"]

    run(main())


def test_cut_stream_now_closes_an_idle_open_connection(tmp_path):
    async def main() -> None:
        async with byte_server() as (port, conns), proxied(tmp_path, [("b1.ha", "b", "ha", port)]) as h:
            # nothing armed: a "now" cut with no open connection waits for the next one that carries bytes
            r0, w0 = await asyncio.open_connection("127.0.0.1", h.ports["b1.ha"], local_addr=("127.0.0.2", 0))
            w0.write(b"x" * 10)
            assert await _eventually(lambda: bool(conns) and len(conns[-1].got) == 10)
            await h.ok({"op": "cut-stream", "id": "n1", "route": "b1.ha", "from": "a", "to": "b", "after_bytes": 0,
                        "now": True})
            # the idle connection is closed at once, no byte having flowed since
            assert await asyncio.wait_for(conns[-1].ended, 5) == "rst"
            with pytest.raises(ConnectionResetError):
                await asyncio.wait_for(r0.read(), 5)
            w0.close()
            assert "n1" not in {f["id"] for f in (await h.ok({"op": "status"}))["faults"]}  # one-shot: spent
            bad = await h.ctl({"op": "cut-stream", "route": "b1.ha", "after_bytes": 5, "now": True})
            assert bad["ok"] is False and "after_bytes" in bad["error"]
            # nothing open: armed as a plain cut of the next connection
            await h.ok({"op": "cut-stream", "id": "n2", "route": "b1.ha", "from": "a", "to": "b", "after_bytes": 0,
                        "now": True, "rst": False})
            assert "n2" in {f["id"] for f in (await h.ok({"op": "status"}))["faults"]}
            r1, w1 = await asyncio.open_connection("127.0.0.1", h.ports["b1.ha"], local_addr=("127.0.0.2", 0))
            w1.write(b"y" * 3)
            assert await asyncio.wait_for(r1.read(), 5) == b""
            w1.close()
        cuts = [(e["id"], e["bytes"], e.get("now", False)) for e in h.lines() if e["k"] == "act"]
        assert cuts == [("n1", 0, True), ("n2", 0, False)]
        closes = [e["why"] for e in h.lines() if e["k"] == "conn" and e["ev"] == "close"]
        assert closes == ["cut:n1", "cut:n2"]

    run(main())


def test_delay_every_chunk_keeps_order(tmp_path):
    async def main() -> None:
        async with byte_server(echo=True) as (port, conns), proxied(tmp_path, [("x.raw", "b", "raw", port)]) as h:
            r, w = await asyncio.open_connection("127.0.0.1", h.ports["x.raw"], local_addr=("127.0.0.2", 0))
            await h.ok({"op": "delay", "id": "slow", "from": "a", "to": "b", "ms": 250})
            t0 = time.monotonic()
            for i in range(5):
                w.write(bytes([65 + i]) * 10)
                await w.drain()
                await asyncio.sleep(0.02)
            assert await _eventually(lambda: bool(conns) and len(conns[0].got) == 50)
            assert conns[0].times[0] - t0 >= 0.25
            assert bytes(conns[0].got) == b"".join(bytes([65 + i]) * 10 for i in range(5))
            echoed = await asyncio.wait_for(r.readexactly(50), 3)  # the way back is not delayed
            assert echoed == bytes(conns[0].got)
            st_ = await h.ok({"op": "status"})
            assert st_["faults"][0]["bytes"] == 50
            w.close()
        act = [e for e in h.lines() if e["k"] == "act"]
        assert [(e["op"], e["first"], e["ms"]) for e in act] == [("delay", True, 250)]

    run(main())


def test_bytes_held_by_a_delay_survive_the_senders_reset(tmp_path):
    async def main() -> None:
        async with byte_server() as (port, conns), proxied(tmp_path, [("b.ha", "b", "ha", port)]) as h:
            await h.ok({"op": "delay", "from": "b", "to": "a", "ms": 200})

            def read_all() -> tuple[bytes, str, float]:
                with socket.create_connection(("127.0.0.1", h.ports["b.ha"]), 5, ("127.0.0.2", 0)) as s:
                    s.settimeout(5)
                    t0 = time.monotonic()
                    s.sendall(b"hi")
                    got = bytearray()
                    try:
                        while chunk := s.recv(65536):
                            got += chunk
                        how = "eof"
                    except ConnectionResetError:
                        how = "rst"
                    return bytes(got), how, time.monotonic() - t0

            fut = asyncio.get_running_loop().run_in_executor(None, read_all)
            assert await _eventually(lambda: bool(conns) and conns[0].got == b"hi")
            server = conns[0].transport
            assert server is not None
            server.write(b"last words")
            await asyncio.sleep(0.05)
            P._set_rst(server)
            server.abort()
            got, how, took = await asyncio.wait_for(fut, 5)
            assert got == b"last words" and how == "rst" and took >= 0.2
        closes = [e["why"] for e in h.lines() if e["k"] == "conn" and e["ev"] == "close"]
        assert closes == ["reset"]

    run(main())


def test_until_ms_lifts_the_fault(tmp_path):
    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port)]) as h:
            await h.ok({"op": "drop-response", "id": "brief", "until_ms": time.time() * 1000 + 200})
            await asyncio.sleep(0.35)
            assert (await h.ok({"op": "status"}))["faults"] == []
            cli = await RpcClient.open(h.ports["b.remoting"])
            cli.send(34, 1)
            assert await cli.recv() is not None
            cli.close()
        assert [(e["ev"], e.get("why")) for e in h.lines() if e["k"] == "fault"] == [("apply", None),
                                                                                     ("lift", "until")]

    run(main())


def test_status_clear_and_bad_requests(tmp_path):
    async def main() -> None:
        async with RpcServer() as srv, proxied(tmp_path, [("b.remoting", "b", "remoting", srv.port),
                                                          ("b.ha", "b", "ha", srv.port)]) as h:
            await h.ok({"op": "partition", "id": "p", "links": [["a", "b"]]})
            await h.ok({"op": "delay", "id": "d", "from": "b", "to": "c", "ms": 5})
            await h.ok({"op": "cut-stream", "id": "c", "route": "b.ha", "after_bytes": 0})
            st_ = await h.ok({"op": "status"})
            assert [f["id"] for f in st_["faults"]] == ["p", "d", "c"]
            assert set(st_["routes"]) == {"b.remoting", "b.ha"} and st_["routes"]["b.ha"]["kind"] == "ha"
            assert st_["routes"]["b.ha"]["listen"] == ["127.0.0.1", h.ports["b.ha"]]
            assert (await h.ok({"op": "clear"}))["lifted"] == ["p", "d", "c"]
            assert (await h.ok({"op": "status"}))["faults"] == []
            assert h.proxy.cut_links == {}
            bad = [
                {"op": "nope"},
                {"op": "partition", "links": [["a", "zz"]]},
                {"op": "partition", "links": []},
                {"op": "drop-response", "code": "NOT_A_CODE"},
                {"op": "drop-response", "route": "b.ha"},  # not a remoting route
                {"op": "delay", "from": "a"},  # no ms
                {"op": "cut-stream", "after_bytes": -1},
                {"op": "drop-request", "count": 0},
                {"op": "lift", "id": "ghost"},
                {"op": "heal", "id": "ghost"},
                [1, 2],
            ]
            for req in bad:
                rep = await h.ctl(req)  # type: ignore[arg-type]
                assert rep["ok"] is False and "\n" not in rep["error"], (req, rep)
            # raw protocol: several requests on one connection, a non-JSON line answered too
            r, w = await asyncio.open_unix_connection(str(h.sock))
            w.write(b'{"op":"ping"}\nnot json\n{"op":"status"}\n')
            replies = [json.loads(await asyncio.wait_for(r.readline(), 3)) for _ in range(3)]
            assert [x["ok"] for x in replies] == [True, False, True]
            w.close()
        kinds = {(e["k"], e.get("ev")) for e in h.lines()}
        assert {("proxy", "start"), ("fault", "apply"), ("fault", "lift"), ("proxy", "stop")} <= kinds

    run(main())


def test_upstream_down_and_client_address_mapping(tmp_path):
    async def main() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead = s.getsockname()[1]  # bound, never listening: connections are refused
            async with proxied(tmp_path, [("gone", "b", "raw", dead)]) as h:
                r, w = await asyncio.open_connection("127.0.0.1", h.ports["gone"], local_addr=("127.0.0.3", 0))
                with contextlib.suppress(ConnectionError):
                    assert await asyncio.wait_for(r.read(10), 5) == b""
                w.close()
                assert await _eventually(lambda: h.proxy.route_stats["gone"]["failed"] == 1)
        failed = [e for e in h.lines() if e["k"] == "conn" and e["ev"] == "failed"]
        assert failed and failed[0]["src"] == "c" and "connect" in failed[0]["why"]

    run(main())


# ------------------------------------------------------------------------------------------------ the process


def _spawn(tmp: Path, lifetime: float = 60, port: int | None = None) -> tuple[subprocess.Popen[str], Path, Path]:
    """The proxy as its own process, one raw route to ``port`` (default: a closed port: every connection through
    it is refused upstream, so the proxy closes it at once)."""
    if port is None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    cfg = _config(tmp, [("b.raw", "b", "raw", port)], lifetime)
    path = tmp / "cfg.json"
    path.write_text(json.dumps(cfg))
    proc = subprocess.Popen([sys.executable, "-m", "rmqha.real.proxy", "--config", str(path)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sock = Path(cfg["control"])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"proxy exited early: {proc.communicate(timeout=5)}")
        try:
            if P.control(sock, {"op": "ping"}, 1)["ok"]:
                break
        except OSError:
            time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError("proxy did not come up")
    return proc, sock, Path(cfg["events"])


@contextlib.contextmanager
def spawned(tmp: Path, lifetime: float = 60) -> Any:
    """The proxy in front of a listening upstream, so that a connection through it stays open until the proxy ends
    it (to a closed port the proxy would close it at once: a client scheduled late then sees the reset at connect)."""
    upstream = socket.create_server(("127.0.0.1", 0))
    proc, sock, events = _spawn(tmp, lifetime, upstream.getsockname()[1])
    try:
        yield proc, sock, events
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=5)
        upstream.close()


def _stop_line(events: Path) -> dict[str, Any]:
    last = json.loads(events.read_text().splitlines()[-1])
    assert last["k"] == "proxy" and last["ev"] == "stop"
    return last


def test_process_ends_on_sigterm(tmp_path):
    with spawned(tmp_path) as (proc, sock, events):
        # an open connection is closed at exit
        conn = socket.create_connection(("127.0.0.1", P.control(sock, {"op": "status"})["routes"]["b.raw"]
                                         ["listen"][1]), 5)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
        assert time.monotonic() - t0 < 3
        conn.settimeout(3)
        with contextlib.suppress(ConnectionError):
            assert conn.recv(10) == b""
        conn.close()
        assert _stop_line(events)["why"] == "SIGTERM"
        assert not sock.exists()
        _, err = proc.communicate(timeout=5)
        assert "Traceback" not in err


def test_process_ends_when_the_control_socket_is_removed(tmp_path):
    with spawned(tmp_path) as (proc, sock, events):
        t0 = time.monotonic()
        sock.unlink()
        assert proc.wait(timeout=5) == 0
        assert time.monotonic() - t0 < 2.5
        assert _stop_line(events)["why"] == "control socket removed"


def test_process_ends_after_its_lifetime(tmp_path):
    with spawned(tmp_path, lifetime=1.0) as (proc, _sock, events):
        assert proc.wait(timeout=6) == 0
        assert _stop_line(events)["why"].startswith("lifetime")


def test_process_bad_config_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"routes": [{"name": "x", "node": "b", "kind": "weird", "listen": ["127.0.0.1", 0],
                                           "target": ["127.0.0.1", 1]}], "control": "c", "events": "e"}))
    p = subprocess.run([sys.executable, "-m", "rmqha.real.proxy", "--config", str(bad)], cwd=ROOT,
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "kind" in p.stderr
