"""The network edge of the real-TCP nodes (``rmqha cluster``): every malformed frame is a typed decode error.

* Fuzz (Hypothesis) over the frame decoders: arbitrary bytes, and frames that are well formed up to one wrong part
  (deep nesting, integers of thousands of digits or past a Java long, ``NaN``, non-object JSON, unknown codes,
  header fields of the wrong type or missing, bad hellos, cut or oversized lengths), go into the controller-RPC
  decoder (``rmqha.cluster.wire``: frames, hello, command; ``impl.wire``: JSON, command, header) and the HA frame
  decoders (``impl.ha.frames``, fed in arbitrary chunks). Each gives a decoded value or the typed error
  (``impl.wire.WireError``: ``rmqha.cluster.wire.FrameError``, ``impl.ha.frames.FrameError``), never any other
  exception, and the error's message is one line.
* Every command the simulator's nodes send decodes to itself: the checks refuse nothing the nodes say.
* End to end: a set of malformed frames sent over loopback to a running cluster's broker and controller; each gets
  exactly one log line naming the peer, its connection is closed, and the nodes keep serving.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rmqha.impl import wire as W
from rmqha.impl.codes import ResponseCode
from rmqha.impl.ha import frames as F
from rmqha.impl.runtime import Command
from rmqha.impl.sim import world
from rmqha.impl.sim.config import PROFILES, config_from_dict
from rmqha.impl.sim.runner import run

from rmqha.cluster import control as C
from rmqha.cluster import wire
from rmqha.cluster.spec import HOST, ClusterSpec, local_config

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def _rpc_decode(data: bytes) -> list[Any]:
    """The controller-RPC decoder over a whole stream: frames, then the hello, then commands, as a host reads them.
    A decoded value or the typed error: anything else propagates and fails the test."""
    try:
        frames = wire.decode_frames(data)
        out: list[Any] = []
        for i, obj in enumerate(frames):
            out.append(wire.parse_hello(obj) if i == 0 else wire.parse_command(obj))
        return out
    except wire.FrameError as exc:
        assert "\n" not in str(exc) and str(exc)
        return [exc]


# ------------------------------------------------------------------------------------------------ strategies

_known_requests = sorted(int(c) for c in W.REQUEST_FIELDS)
_codes = st.one_of(st.sampled_from(_known_requests), st.sampled_from(sorted(int(c) for c in ResponseCode)),
                   st.integers(-(2**40), 2**40), st.sampled_from([True, None, "10", 1.5, [10]]))
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=8),
                     st.floats(allow_nan=False, allow_infinity=False))
_json = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                     max_leaves=12)
_names = st.sampled_from(sorted(W.FIELD_TYPES))
_headers = st.one_of(st.dictionaries(_names, _json, max_size=6), _json)
_commands = st.fixed_dictionaries(
    {"code": _codes, "opaque": st.one_of(st.integers(-(2**33), 2**33), _scalars), "header": _headers},
    optional={"body": _json, "response": st.one_of(st.booleans(), _scalars), "oneway": st.booleans(),
              "remark": _scalars, "extra": _scalars})


def _big_number(digits: int) -> str:
    return "9" * digits


@st.composite
def _raw_json(draw: st.DrawFn) -> bytes:
    """JSON text Python's ``json.dumps`` cannot write: deep nesting, huge numbers, constants, bad UTF-8."""
    kind = draw(st.sampled_from(["deep-array", "deep-object", "digits", "long", "nan", "utf8", "trailing"]))
    n = draw(st.integers(1, 6000))
    if kind == "deep-array":
        return b"[" * n + b"]" * draw(st.sampled_from([n, 0, n // 2]))
    if kind == "deep-object":
        return b'{"a":' * n + b"1" + b"}" * n
    if kind == "digits":
        return f'{{"code":10,"opaque":1,"header":{{"bodySize":{_big_number(n)}}}}}'.encode()
    if kind == "long":
        return f'{{"code":{2**63 + n},"opaque":1}}'.encode()
    if kind == "nan":
        return draw(st.sampled_from([b'{"code":NaN}', b"Infinity", b'{"x":-Infinity}']))
    if kind == "utf8":
        return b'{"hello":"\xff\xfe","kind":"rpc"}'
    return b'{"code":10} {"code":11}'


_hello = _frame(json.dumps({"hello": "x", "kind": "rpc"}).encode())


# ------------------------------------------------------------------------------------------------ RPC fuzz


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes_into_the_rpc_decoder(data: bytes) -> None:
    _rpc_decode(data)
    _rpc_decode(_hello + data)
    _rpc_decode(_hello + _frame(data))


@FUZZ
@given(_commands)
def test_structured_commands_decode_or_raise_the_typed_error(obj: dict[str, Any]) -> None:
    out = _rpc_decode(_hello + _frame(json.dumps(obj).encode()))
    if isinstance(out[-1], Command):  # accepted: then it is exactly what was sent, and every check held
        cmd = out[-1]
        assert cmd.code == obj["code"] and cmd.opaque == obj["opaque"] and cmd.header == obj["header"]
        assert cmd.code in ({int(c) for c in ResponseCode} if cmd.response else W.REQUEST_FIELDS)
        assert cmd.response or all(f in cmd.header for f in W.REQUEST_FIELDS[cmd.code])
        assert all(W.FIELD_TYPES.get(k) is None or type(v) in W.FIELD_TYPES[k] for k, v in cmd.header.items())


@FUZZ
@given(_raw_json(), st.booleans())
def test_hostile_json_raises_the_typed_error(payload: bytes, as_hello: bool) -> None:
    out = _rpc_decode(_frame(payload) if as_hello else _hello + _frame(payload))
    assert isinstance(out[-1], wire.FrameError)  # none of these is a valid hello or command


@pytest.mark.parametrize("data,reason", [
    (_frame(b"[" * 100_000 + b"]" * 100_000), "nested deeper"),
    (_frame(b"[" * 40 + b"]" * 40), "nested deeper than 32"),
    (_hello + _frame(b'{"code":10,"opaque":1,"header":{"key":"k","bodySize":' + b"7" * 5000 + b"}}"), "not JSON"),
    (_hello + _frame(json.dumps({"code": 10, "opaque": 1, "header": {"key": "k", "bodySize": 10**30}}).encode()),
     "Java long"),
    (_frame(b'{"hello":NaN,"kind":"rpc"}'), "NaN"),
    (_frame(b"\xff"), "not UTF-8"),
    (_frame(b"[]"), "not a JSON object"),
    (_frame(b'"just a string"'), "not a JSON object"),
    (_hello + _frame(b'{"code":4242,"opaque":1}'), "unknown request code 4242"),
    (_hello + _frame(b'{"code":4242,"opaque":1,"response":true}'), "unknown response code 4242"),
    (_hello + _frame(b'{"code":10,"opaque":1,"header":{"key":"k","bodySize":"ten"}}'), "'bodySize' is 'ten'"),
    (_hello + _frame(b'{"code":10,"opaque":1,"header":{"key":"k"}}'), "lacks header field bodySize"),
    (_hello + _frame(b'{"code":904,"opaque":1,"header":{"brokerId":true}}'), "'brokerId' is True"),
    (_hello + _frame(b'{"code":1001,"opaque":1,"header":{"brokerName":"b","masterBrokerId":1,"masterEpoch":1},'
                     b'"body":[1]}'), "expected a JSON object"),
    (_hello + _frame(b'{"code":60000,"opaque":"1"}'), "opaque"),
    (_hello + _frame(b'{"code":10,"opaque":1,"header":[]}'), "header is"),
    (_hello + _frame(b'{"code":60000,"opaque":1,"oneway":1}'), "'oneway'"),
    (_hello + _frame(b'{"code":60000,"opaque":1,"remark":7}'), "remark"),
    (_hello + _frame(b'{"code":60000,"opaque":1,"sneaky":7}'), "unknown command field"),
    (_frame(b'{"hello":"x\\ny","kind":"rpc"}'), "bad hello"),
    (_frame(b'{"hello":"x","kind":"tcp"}'), "bad hello"),
    (b"\x00\x00", "inside a frame length"),
    (struct.pack(">I", wire.MAX_FRAME + 1), "exceeds"),
    (struct.pack(">I", 0xFFFFFFFF), "exceeds"),
    (struct.pack(">I", 50) + b"{}", "inside a 50-byte frame"),
])  # fmt: skip
def test_each_malformed_kind_is_one_line(data: bytes, reason: str) -> None:
    err = _rpc_decode(data)[-1]
    assert isinstance(err, wire.FrameError) and isinstance(err, W.WireError), err
    assert reason in str(err) and "\n" not in str(err) and len(str(err)) < 300, str(err)


def test_decode_header_refuses_a_field_of_the_wrong_type() -> None:
    ok = {"brokerName": "b", "masterBrokerId": None, "masterEpoch": 3}
    assert W.decode_header(ok, W.AlterSyncStateSetRequestHeader) is ok
    for bad in ({"masterEpoch": "3"}, {"masterEpoch": True}, {"brokerName": None}):
        with pytest.raises(W.WireError, match="header field"):
            W.decode_header(bad, W.AlterSyncStateSetRequestHeader)
    assert W.decode_header({}, W.AlterSyncStateSetRequestHeader) == {}  # a missing field reads as Java's null


# ------------------------------------------------------------------------------------------------ HA fuzz


def _ha_feed(decoder: F.SlaveFrameDecoder | F.MasterFrameDecoder, data: bytes, cuts: list[int]) -> list[Any]:
    out: list[Any] = []
    prev = 0
    try:
        for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
            out.extend(decoder.feed(data[prev:cut]))
            prev = max(prev, cut)
            if isinstance(decoder, F.MasterFrameDecoder):
                decoder.pending_transfer_end()
    except F.FrameError as exc:
        assert isinstance(exc, W.WireError) and "\n" not in str(exc)
        out.append(exc)
    return out


_slave_frames = st.one_of(
    st.builds(lambda s, a, b, i: struct.pack(">ihhq", s, a, b, i), st.integers(-3, 5), st.integers(-2, 3),
              st.integers(-2, 3), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda s, o: struct.pack(">iq", s, o), st.integers(-3, 5), st.integers(-(2**63), 2**63 - 1)),
)
_master_frames = st.one_of(
    st.builds(lambda s, n, o, e, body: struct.pack(">iiqi", s, n, o, e) + body, st.integers(-3, 5),
              st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, 12, 24, 13, F.MAX_BODY + 1])),
              st.integers(-(2**63), 2**63 - 1), st.integers(-(2**31), 2**31 - 1), st.binary(max_size=40)),
    st.builds(lambda n, o, body: F.encode_master_transfer_header(o, 1, 0, 0, n) + body,
              st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**40), st.binary(max_size=40)),
)


@FUZZ
@given(st.one_of(st.binary(max_size=200), st.lists(_slave_frames, max_size=4).map(b"".join)),
       st.lists(st.integers(0, 300), max_size=4))
def test_the_master_s_decoder_of_slave_frames(data: bytes, cuts: list[int]) -> None:
    for f in _ha_feed(F.SlaveFrameDecoder(), data, cuts):
        assert isinstance(f, F.SlaveHandshake | F.SlaveTransfer | F.FrameError)


@FUZZ
@given(st.one_of(st.binary(max_size=200), st.lists(_master_frames, max_size=4).map(b"".join)),
       st.lists(st.integers(0, 300), max_size=4))
def test_the_slave_s_decoder_of_master_frames(data: bytes, cuts: list[int]) -> None:
    for f in _ha_feed(F.MasterFrameDecoder(), data, cuts):
        assert isinstance(f, F.MasterHandshake | F.MasterTransfer | F.FrameError)
        if isinstance(f, F.MasterTransfer):
            assert len(f.body) <= F.MAX_BODY


# ------------------------------------------------------------------------------------------------ no false alarms


@pytest.mark.parametrize("profile", ["safe", "jraft"])
def test_every_command_the_nodes_send_decodes_to_itself(profile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[tuple[int, bool], int] = {}
    route = world.Simulation._route

    def check(self: world.Simulation, src: str, dst: str, cmd: Command) -> None:
        (back,) = wire.decode_frames(wire.command_frame(cmd))
        again = wire.parse_command(back)
        as_json = json.loads(json.dumps({"header": cmd.header, "body": cmd.body}))  # JSON's keys are strings
        assert (again.code, again.opaque, again.header, again.body, again.response, again.oneway, again.remark) == \
            (cmd.code, cmd.opaque, as_json["header"], as_json["body"], cmd.response, cmd.oneway, cmd.remark)
        seen[(int(cmd.code), cmd.response)] = seen.get((int(cmd.code), cmd.response), 0) + 1
        route(self, src, dst, cmd)

    monkeypatch.setattr(world.Simulation, "_route", check)
    run(config_from_dict(PROFILES[profile]), 3, 3000, record=False)
    assert sum(seen.values()) > 500 and len({c for c, resp in seen if not resp}) >= 8, seen


# ------------------------------------------------------------------------------------------------ end to end


def _send(port: int, data: bytes, half_close: bool) -> bool:
    """Send ``data`` on a new connection (then end our side, if asked); whether the node closed it (bounded)."""
    with socket.create_connection((HOST, port), 3) as s:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        s.settimeout(10)
        try:
            while s.recv(65536):  # bounded by the timeout: the node closes the connection
                pass
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return True


def _bad_lines(spec: ClusterSpec, node: str) -> list[str]:
    return [ln for ln in spec.log_path(node).read_text().splitlines() if " closing " in ln]


def _wait(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


E2E: list[tuple[str, str, bytes, bool, str]] = [  # node, port, bytes, half-close, what the line says
    ("b1", "rpc_in", _frame(b"not json"), False, "not JSON"),
    ("b1", "rpc_in", b"\x00\x00", True, "inside a frame length"),
    ("b1", "rpc_in", struct.pack(">I", wire.MAX_FRAME + 1), False, "exceeds"),
    ("b1", "rpc_in", struct.pack(">I", 100) + b"{" * 10, True, "inside a 100-byte frame"),
    ("b1", "rpc_in", _frame(b"[" * 100_000 + b"]" * 100_000), False, "nested deeper"),
    ("b1", "rpc_in", _hello + _frame(b'{"code":10,"opaque":1,"header":{"bodySize":' + b"7" * 5000 + b"}}"), False,
     "digits"),
    ("b1", "rpc_in", _hello + _frame(json.dumps({"code": 10, "opaque": 1, "header": {"key": "k",
                                                                                     "bodySize": 10**30}}).encode()),
     False, "Java long"),
    ("b1", "rpc_in", _frame(b"[1, 2]"), False, "not a JSON object"),
    ("b1", "rpc_in", _frame(b'{"hello":"x","kind":"tcp"}'), False, "bad hello"),
    ("b1", "rpc_in", _hello + _frame(b'{"code":4242,"opaque":1}'), False, "unknown request code 4242"),
    ("b1", "rpc_in", _hello + _frame(b'{"code":10,"opaque":1,"header":{"key":"k","bodySize":"x"}}'), False,
     "'bodySize'"),
    ("ctl", "rpc_in", _hello + _frame(b'{"code":904,"opaque":1,"header":{"brokerId":"one"}}'), False, "'brokerId'"),
    ("ctl", "rpc_in", _hello + _frame(b'{"code":1001,"opaque":1,"header":{"brokerName":"b"}}'), False, "lacks"),
    ("b1", "ha_in", wire.hello("x", "ha") + b"\xff" * 64, False, "state -1"),
    ("b1", "ha_in", wire.hello("x", "ha") + struct.pack(">ihhq", 1, 7, 0, 2), False, "flags 7/0"),
    ("b1", "ha_in", wire.hello("x", "rpc") + b"\x00" * 16, False, "rpc connection on the HA port"),
    ("b1", "ha_in", _frame(b'{"hello":' + b"9" * 5000 + b',"kind":"ha"}'), False, "not JSON"),
]  # fmt: skip


def test_malformed_frames_get_one_line_and_a_closed_connection(tmp_path: Path) -> None:
    spec = C.up(tmp_path / "c", local_config(PROFILES["safe"]), max_lifetime=300)
    try:
        for node, port, data, half_close, says in E2E:
            before = len(_bad_lines(spec, node))
            assert _send(spec.ports[node][port], data, half_close), f"{node} kept the connection open: {says}"
            assert _wait(lambda n=node, b=before: len(_bad_lines(spec, n)) > b, 10), f"no log line: {says}"
            new = _bad_lines(spec, node)[before:]
            assert len(new) == 1 and says in new[0] and "127.0.0.1:" in new[0], (says, new)
        for node in ("b1", "ctl"):
            st = C.query(spec, node)
            assert st is not None and st["node"] == node  # still up, still serving
            log = spec.log_path(node).read_text()
            assert "Traceback" not in log and len(_bad_lines(spec, node)) == sum(1 for e in E2E if e[0] == node)
        assert all(C.alive(p) for p in C.read_pids(spec).values())
    finally:
        C.down(spec)
