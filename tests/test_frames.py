"""Byte-level HA frames: ``rmqha.impl.ha.frames`` (AutoSwitch, 5.x) and the frame codecs of ``rmqha.impl.ha.legacy``
(``DefaultHAService``, 4.x).

Java truth, all under store/src/main/java/org/apache/rocketmq/store/ha/ (``ByteBuffer``, so big-endian):

* slave -> master, AutoSwitch: ``autoswitch/AutoSwitchHAClient.java`` ``sendHandshakeHeader`` (16 B) and
  ``reportSlaveOffset`` (12 B); read by ``AutoSwitchHAConnection.ReadSocketService.HAServerReader``.
* master -> slave, AutoSwitch: ``autoswitch/AutoSwitchHAConnection.java`` ``buildHandshakeBuffer`` (20 B header +
  12 B per epoch entry) and ``buildTransferHeaderBuffer`` (36 B header + commit-log bytes); read by
  ``AutoSwitchHAClient.HAClientReader.processReadResult``.
* 4.x: ``DefaultHAClient.reportSlaveMaxOffset`` (8 B offset) and ``DefaultHAConnection.WriteSocketService.run``
  (12 B header: offset + body size, then the body); read by ``DefaultHAConnection.ReadSocketService`` and
  ``DefaultHAClient.dispatchReadRequest``.

The decoders are streaming (``feed`` returns the whole frames received so far), like the Java readers, so a
truncated frame is not an error: it yields nothing and completes when the rest arrives. The truncation tests check
exactly that at every cut; "malformed" means a header that no continuation can make valid, and those must raise
``FrameError`` (``LegacyFrameError`` for the 4.x codecs, a separate ``ValueError`` subclass).

Inputs the Java readers accept with a defined meaning, where ours raise, are strict xfails in
``test_java_tolerated_input`` (see the reasons). Inputs our decoders reject that the Java readers do not handle
(negative or oversized body sizes, unknown state ordinals: swallowed exceptions, a stuck read position, a buffer
that can never hold the frame, or a closed connection) must raise here.

Not covered here: the Java client also rejects a frame whose state differs from its own connection state; our
decoders do not know that state (``impl/ha/client.py`` checks it), so that check belongs to the HA tests.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rmqha.impl.ha import frames as F
from rmqha.impl.ha import legacy as L

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

PROPS = settings(max_examples=100, deadline=None)

ints = st.integers(INT_MIN, INT_MAX)
longs = st.integers(LONG_MIN, LONG_MAX)


def feed_all(decoder: Any, chunks: Sequence[bytes]) -> list[Any]:
    out: list[Any] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    return out


def single_line_naming(exc: pytest.ExceptionInfo[BaseException], *values: int) -> None:
    """A clear message: one line, mentioning each offending value."""
    msg = str(exc.value)
    assert msg and "\n" not in msg
    for v in values:
        assert re.search(rf"(?<![\d-]){re.escape(str(v))}(?!\d)", msg), (v, msg)


# ----------------------------------------------------------------------------------------- golden vectors
# Each hex string was written out field by field from the Java writer named next to it.

# AutoSwitchHAClient.sendHandshakeHeader: putInt(HANDSHAKE.ordinal()=1), putShort(isSyncFromLastFile),
# putShort(isAsyncLearner), putLong(brokerId).
SLAVE_HANDSHAKE = F.SlaveHandshake(sync_from_last_file=True, async_learner=False, slave_broker_id=0x0102030405060708)
SLAVE_HANDSHAKE_HEX = "00000001" "0001" "0000" "0102030405060708"

# AutoSwitchHAClient.reportSlaveOffset: putInt(TRANSFER.ordinal()=2), putLong(offset).
SLAVE_TRANSFER = F.SlaveTransfer(max_offset=0x1122334455667788)
SLAVE_TRANSFER_HEX = "00000002" "1122334455667788"

# AutoSwitchHAConnection.buildHandshakeBuffer: putInt(state=1), putInt(entries * 12), putLong(maxPhyOffset),
# putInt(lastEpoch); then per entry putInt(epoch), putLong(startOffset).
MASTER_HANDSHAKE = F.MasterHandshake(max_offset=1000, last_epoch=3, entries=((1, 0), (3, 500)))
MASTER_HANDSHAKE_HEX = ("00000001" "00000018" "00000000000003e8" "00000003"
                        "00000001" "0000000000000000"
                        "00000003" "00000000000001f4")

# AutoSwitchHAConnection.buildTransferHeaderBuffer: putInt(state=2), putInt(bodySize), putLong(nextOffset),
# putInt(epoch), putLong(epochStartOffset), putLong(confirmOffset); WriteSocketService.transferData writes the body.
MASTER_TRANSFER = F.MasterTransfer(offset=500, epoch=3, epoch_start_offset=500, confirm_offset=480, body=b"abc")
MASTER_TRANSFER_HEX = ("00000002" "00000003" "00000000000001f4" "00000003" "00000000000001f4" "00000000000001e0"
                       "616263")

# A heartbeat (sendHeartbeatIfNeeded -> buildTransferHeaderBuffer(nextTransferFromWhere, 0)) before any transfer
# position is known: nextTransferFromWhere = -1, i.e. two's complement on the wire, and no body.
MASTER_HEARTBEAT = F.MasterTransfer(offset=-1, epoch=1, epoch_start_offset=0, confirm_offset=-1, body=b"")
MASTER_HEARTBEAT_HEX = ("00000002" "00000000" "ffffffffffffffff" "00000001" "0000000000000000" "ffffffffffffffff")

# DefaultHAClient.reportSlaveMaxOffset: putLong(maxOffset).
LEGACY_REPORT = 0x0102030405060708
LEGACY_REPORT_HEX = "0102030405060708"

# DefaultHAConnection.WriteSocketService.run: putLong(thisOffset), putInt(size), then the selected bytes.
LEGACY_PUSH = (1000, b"xyz")
LEGACY_PUSH_HEX = "00000000000003e8" "00000003" "78797a"


def test_header_sizes_match_java_constants() -> None:
    assert F.SLAVE_HANDSHAKE_SIZE == 4 + 4 + 8  # AutoSwitchHAClient.HANDSHAKE_HEADER_SIZE
    assert F.SLAVE_TRANSFER_SIZE == 4 + 8  # AutoSwitchHAClient.TRANSFER_HEADER_SIZE
    assert F.SLAVE_MIN_HEADER_SIZE == 12  # AutoSwitchHAClient.MIN_HEADER_SIZE
    assert F.MASTER_HANDSHAKE_SIZE == 4 + 4 + 8 + 4  # AutoSwitchHAConnection.HANDSHAKE_HEADER_SIZE
    assert F.MASTER_TRANSFER_SIZE == 20 + 8 + 8  # AutoSwitchHAConnection.TRANSFER_HEADER_SIZE
    assert F.EPOCH_ENTRY_SIZE == 12  # AutoSwitchHAConnection.EPOCH_ENTRY_SIZE
    assert F.MAX_HANDSHAKE_ENTRIES == 1000  # AbstractWriteSocketService.handShakeBuffer = EPOCH_ENTRY_SIZE * 1000
    assert F.MAX_BODY == 4 * 1024 * 1024  # AutoSwitchHAClient.READ_MAX_BUFFER_SIZE
    assert (F.HANDSHAKE, F.TRANSFER) == (1, 2)  # HAConnectionState: READY, HANDSHAKE, TRANSFER, SUSPEND, SHUTDOWN
    assert L.REPORT_SIZE == 8  # DefaultHAClient.REPORT_HEADER_SIZE
    assert L.HEADER_SIZE == 8 + 4  # DefaultHAConnection.TRANSFER_HEADER_SIZE


@pytest.mark.parametrize(("frame", "hexstr", "encode", "decoder"), [
    pytest.param(SLAVE_HANDSHAKE, SLAVE_HANDSHAKE_HEX, F.encode_slave_handshake, F.SlaveFrameDecoder,
                 id="slave-handshake"),
    pytest.param(F.SlaveHandshake(False, True, 2), "00000001" "0000" "0001" "0000000000000002",
                 F.encode_slave_handshake, F.SlaveFrameDecoder, id="slave-handshake-learner"),
    pytest.param(SLAVE_TRANSFER, SLAVE_TRANSFER_HEX, F.encode_slave_transfer, F.SlaveFrameDecoder,
                 id="slave-transfer"),
    pytest.param(MASTER_HANDSHAKE, MASTER_HANDSHAKE_HEX, F.encode_master_handshake, F.MasterFrameDecoder,
                 id="master-handshake"),
    pytest.param(MASTER_TRANSFER, MASTER_TRANSFER_HEX, F.encode_master_transfer, F.MasterFrameDecoder,
                 id="master-transfer"),
    pytest.param(MASTER_HEARTBEAT, MASTER_HEARTBEAT_HEX, F.encode_master_transfer, F.MasterFrameDecoder,
                 id="master-heartbeat"),
])
def test_golden_autoswitch(frame: Any, hexstr: str, encode: Callable[[Any], bytes], decoder: Any) -> None:
    wire = bytes.fromhex(hexstr)
    assert encode(frame) == wire
    assert decoder().feed(wire) == [frame]


def test_golden_master_transfer_header_alone() -> None:
    # encode_master_transfer_header writes the 36-byte header only (the body follows separately, as in Java).
    wire = bytes.fromhex(MASTER_TRANSFER_HEX)
    assert F.encode_master_transfer_header(500, 3, 500, 480, 3) == wire[:36]


def test_golden_legacy() -> None:
    assert L.encode_report(LEGACY_REPORT) == bytes.fromhex(LEGACY_REPORT_HEX)
    assert L.ReportDecoder().feed(bytes.fromhex(LEGACY_REPORT_HEX)) == [LEGACY_REPORT]
    assert L.encode_push(*LEGACY_PUSH) == bytes.fromhex(LEGACY_PUSH_HEX)
    assert L.PushDecoder().feed(bytes.fromhex(LEGACY_PUSH_HEX)) == [LEGACY_PUSH]


# ------------------------------------------------------------------------------- streaming: cuts and splits

GOLDEN_STREAMS = [
    pytest.param(F.SlaveFrameDecoder, [SLAVE_HANDSHAKE_HEX, SLAVE_TRANSFER_HEX],
                 [SLAVE_HANDSHAKE, SLAVE_TRANSFER], id="slave"),
    pytest.param(F.MasterFrameDecoder, [MASTER_HANDSHAKE_HEX, MASTER_TRANSFER_HEX, MASTER_HEARTBEAT_HEX],
                 [MASTER_HANDSHAKE, MASTER_TRANSFER, MASTER_HEARTBEAT], id="master"),
    pytest.param(L.ReportDecoder, [LEGACY_REPORT_HEX, "0000000000000000"], [LEGACY_REPORT, 0], id="legacy-report"),
    pytest.param(L.PushDecoder, [LEGACY_PUSH_HEX, "00000000000003eb00000000"],
                 [LEGACY_PUSH, (1003, b"")], id="legacy-push"),
]


@pytest.mark.parametrize(("decoder", "hexes", "frames"), GOLDEN_STREAMS)
def test_truncated_at_every_length_waits_then_completes(decoder: Any, hexes: list[str], frames: list[Any]) -> None:
    for hexstr, frame in zip(hexes, frames):
        wire = bytes.fromhex(hexstr)
        for cut in range(len(wire)):
            d = decoder()
            assert d.feed(wire[:cut]) == [], cut  # incomplete: nothing yet, and no error
            assert d.feed(wire[cut:]) == [frame], cut
            assert d.feed(b"") == []  # nothing left over


@pytest.mark.parametrize(("decoder", "hexes", "frames"), GOLDEN_STREAMS)
def test_split_at_every_byte_reassembles(decoder: Any, hexes: list[str], frames: list[Any]) -> None:
    wire = b"".join(bytes.fromhex(h) for h in hexes)
    ends = [sum(len(bytes.fromhex(h)) for h in hexes[:i + 1]) for i in range(len(hexes))]
    for cut in range(len(wire) + 1):
        d = decoder()
        first = d.feed(wire[:cut])
        assert first == frames[:sum(1 for e in ends if e <= cut)], cut  # exactly the frames wholly received
        assert first + d.feed(wire[cut:]) == frames, cut
    d = decoder()
    one_by_one = [d.feed(wire[i:i + 1]) for i in range(len(wire))]
    assert [i for i, got in enumerate(one_by_one) if got] == [e - 1 for e in ends]  # a frame pops at its last byte
    assert [f for got in one_by_one for f in got] == frames


# ---------------------------------------------------------------------------------------- round trips

slave_handshakes = st.builds(F.SlaveHandshake, st.booleans(), st.booleans(), st.integers(1, LONG_MAX))
slave_transfers = st.builds(F.SlaveTransfer, st.integers(-1, LONG_MAX))
epoch_entries = st.lists(st.tuples(ints, longs), max_size=20).map(tuple)
master_handshakes = st.builds(F.MasterHandshake, longs, ints, epoch_entries)
master_transfers = st.builds(F.MasterTransfer, longs, ints, longs, longs, st.binary(max_size=64))


def encode_slave(f: F.SlaveFrame) -> bytes:
    return F.encode_slave_handshake(f) if isinstance(f, F.SlaveHandshake) else F.encode_slave_transfer(f)


def encode_master(f: F.MasterFrame) -> bytes:
    return F.encode_master_handshake(f) if isinstance(f, F.MasterHandshake) else F.encode_master_transfer(f)


@PROPS
@given(frames=st.lists(slave_handshakes | slave_transfers, min_size=1, max_size=6), data=st.data())
def test_prop_slave_frames_round_trip(frames: list[F.SlaveFrame], data: st.DataObject) -> None:
    parts = [encode_slave(f) for f in frames]
    for f, p in zip(frames, parts):
        assert len(p) == (16 if isinstance(f, F.SlaveHandshake) else 12)
        assert struct.unpack(">i", p[:4])[0] == (1 if isinstance(f, F.SlaveHandshake) else 2)
        assert F.SlaveFrameDecoder().feed(p) == [f]
    wire = b"".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    chunks = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)])]
    assert feed_all(F.SlaveFrameDecoder(), chunks) == frames


@PROPS
@given(frames=st.lists(master_handshakes | master_transfers, min_size=1, max_size=4), data=st.data())
def test_prop_master_frames_round_trip(frames: list[F.MasterFrame], data: st.DataObject) -> None:
    parts = [encode_master(f) for f in frames]
    for f, p in zip(frames, parts):
        if isinstance(f, F.MasterHandshake):
            assert len(p) == 20 + 12 * len(f.entries)
            assert struct.unpack(">ii", p[:8]) == (1, 12 * len(f.entries))
        else:
            assert len(p) == 36 + len(f.body)
            assert struct.unpack(">ii", p[:8]) == (2, len(f.body))
            assert p[36:] == f.body
        assert F.MasterFrameDecoder().feed(p) == [f]
    wire = b"".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    chunks = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)])]
    assert feed_all(F.MasterFrameDecoder(), chunks) == frames


@PROPS
@given(reports=st.lists(st.integers(0, LONG_MAX), min_size=1, max_size=6),
       pushes=st.lists(st.tuples(st.integers(0, LONG_MAX), st.binary(max_size=40)), min_size=1, max_size=4),
       data=st.data())
def test_prop_legacy_frames_round_trip(reports: list[int], pushes: list[tuple[int, bytes]],
                                       data: st.DataObject) -> None:
    wire = b"".join(L.encode_report(r) for r in reports)
    assert len(wire) == 8 * len(reports)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=4)))
    assert feed_all(L.ReportDecoder(), [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)])]) == reports
    wire = b"".join(L.encode_push(o, b) for o, b in pushes)
    assert len(wire) == sum(12 + len(b) for _, b in pushes)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=4)))
    assert feed_all(L.PushDecoder(), [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)])]) == pushes


def test_master_handshake_entry_limit() -> None:
    # The Java master's handshake buffer holds 1000 entries (EPOCH_ENTRY_SIZE * 1000): 1000 round-trip, 1001 do not
    # encode.
    full = F.MasterHandshake(7, 1000, tuple((e, 10 * e) for e in range(1, 1001)))
    wire = F.encode_master_handshake(full)
    assert len(wire) == 20 + 12_000
    assert F.MasterFrameDecoder().feed(wire) == [full]
    with pytest.raises(F.FrameError) as exc:
        F.encode_master_handshake(F.MasterHandshake(7, 1001, tuple((e, e) for e in range(1, 1002))))
    single_line_naming(exc, 1001, 1000)


JAVA_READ_BUFFER = 4 * 1024 * 1024  # AutoSwitchHAClient / DefaultHAClient READ_MAX_BUFFER_SIZE, header included


@pytest.mark.parametrize(("decoder", "header_size", "header"), [
    pytest.param(F.MasterFrameDecoder, 36, lambda n: F.encode_master_transfer_header(0, 1, 0, 0, n), id="master"),
    pytest.param(L.PushDecoder, 12, lambda n: struct.pack(">qi", 0, n), id="legacy"),
])
def test_largest_body_the_java_read_buffer_holds(decoder: Any, header_size: int,
                                                 header: Callable[[int], bytes]) -> None:
    # The Java slave reads a whole frame (header + body) into one 4 MiB buffer before using it.
    size = JAVA_READ_BUFFER - header_size
    d = decoder()
    assert d.feed(header(size) + b"\x00" * (size - 1)) == []
    got = d.feed(b"\x01")
    assert len(got) == 1
    body = got[0].body if decoder is F.MasterFrameDecoder else got[0][1]
    assert len(body) == size and body[-1:] == b"\x01"


def _beyond_buffer(decoder: Any, header: bytes, size: int, reason: str) -> Any:
    return pytest.param(decoder, header, size, id=f"{decoder.__name__}-{size}",
                        marks=pytest.mark.xfail(strict=True, raises=pytest.fail.Exception, reason=reason))


BEYOND_REASON = ("{java} can never hold a frame of {size} body bytes plus the {hdr}-byte header in its 4 MiB read "
                 "buffer, so the frame is never processed and the connection ends by housekeeping; ours accepts "
                 "body sizes up to MAX_BODY = 4 MiB and waits for the body")


@pytest.mark.parametrize(("decoder", "header", "size"), [
    _beyond_buffer(F.MasterFrameDecoder, F.encode_master_transfer_header(0, 1, 0, 0, size), size,
                   BEYOND_REASON.format(java="AutoSwitchHAClient.HAClientReader", size=size, hdr=36))
    for size in (JAVA_READ_BUFFER - 35, F.MAX_BODY)
] + [
    _beyond_buffer(L.PushDecoder, struct.pack(">qi", 0, size), size,
                   BEYOND_REASON.format(java="DefaultHAClient.dispatchReadRequest", size=size, hdr=12))
    for size in (JAVA_READ_BUFFER - 11, L.MAX_BODY)
])
def test_body_beyond_the_java_read_buffer_is_rejected(decoder: Any, header: bytes, size: int) -> None:
    with pytest.raises(ValueError, match=str(size)):
        decoder().feed(header)


# ---------------------------------------------------------------------------------------- malformed input


def slave_header(state: int, rest: bytes = b"\x00" * 12) -> bytes:
    return struct.pack(">i", state) + rest


def master_header(state: int, body_size: int, rest: bytes = b"\x00" * 32) -> bytes:
    return struct.pack(">ii", state, body_size) + rest


BAD_STATES = [0, 3, 4, 5, -1, 255, 0x01000000, INT_MAX, INT_MIN]  # READY, SUSPEND, SHUTDOWN, non-ordinals


@pytest.mark.parametrize("state", BAD_STATES)
def test_slave_decoder_rejects_bad_state(state: int) -> None:
    # HAServerReader: HAConnectionState.values()[state] throws for a non-ordinal; READY/SUSPEND/SHUTDOWN hit
    # "Current state illegal" and return false. Either way the connection is closed.
    with pytest.raises(F.FrameError) as exc:
        F.SlaveFrameDecoder().feed(slave_header(state))
    single_line_naming(exc, state)


@pytest.mark.parametrize("state", BAD_STATES)
def test_master_decoder_rejects_bad_state(state: int) -> None:
    # HAClientReader: a state other than the client's own (HANDSHAKE or TRANSFER) makes processReadResult return
    # false. (For a non-ordinal, Java's "State not matched" log call evaluates HAConnectionState.values()[state],
    # which throws after processPosition has moved past the frame; the catch swallows it, so the frame is skipped.
    # That is an accident of the logging, not a rule, and ours rejects.)
    with pytest.raises(F.FrameError) as exc:
        F.MasterFrameDecoder().feed(master_header(state, 0))
    single_line_naming(exc, state)


@pytest.mark.parametrize("state", [F.HANDSHAKE, F.TRANSFER])
@pytest.mark.parametrize("body_size", [-1, -12, INT_MIN, F.MAX_BODY + 1, INT_MAX])
def test_master_decoder_rejects_impossible_body_size(state: int, body_size: int) -> None:
    # Java: a negative size throws NegativeArraySizeException (swallowed; the read position never moves) or moves
    # processPosition backwards; a size beyond the 4 MiB read buffer can never complete. Ours rejects at the header.
    with pytest.raises(F.FrameError) as exc:
        F.MasterFrameDecoder().feed(master_header(state, body_size))
    single_line_naming(exc, body_size)


@pytest.mark.parametrize(("decoder", "good", "bad", "value"), [
    pytest.param(F.SlaveFrameDecoder, SLAVE_TRANSFER_HEX, slave_header(7), 7, id="slave"),
    pytest.param(F.MasterFrameDecoder, MASTER_TRANSFER_HEX, master_header(9, 0), 9, id="master"),
    pytest.param(F.MasterFrameDecoder, MASTER_HANDSHAKE_HEX, master_header(2, -5), -5, id="master-size"),
])
def test_trailing_garbage_after_a_frame(decoder: Any, good: str, bad: bytes, value: int) -> None:
    # The stream has no padding: bytes after a frame are the next frame's header and must be valid.
    with pytest.raises(F.FrameError) as exc:
        decoder().feed(bytes.fromhex(good) + bad)
    single_line_naming(exc, value)
    # Fewer bytes than a header after the frame: the frame comes out and the rest waits.
    d = decoder()
    assert len(d.feed(bytes.fromhex(good) + bad[:11])) == 1
    with pytest.raises(F.FrameError):
        d.feed(bad[11:])


def test_legacy_decoders_reject_impossible_headers() -> None:
    assert issubclass(L.LegacyFrameError, ValueError)
    # DefaultHAClient.dispatchReadRequest: a negative body size cannot be appended; a size beyond its 4 MiB read
    # buffer never completes. A negative offset never matches a slave's max offset.
    for off, size in [(0, -1), (0, INT_MIN), (0, L.MAX_BODY + 1), (-1, 0), (LONG_MIN, 3)]:
        with pytest.raises(L.LegacyFrameError) as exc:
            L.PushDecoder().feed(struct.pack(">qi", off, size))
        single_line_naming(exc, off, size)
    d = L.PushDecoder()
    assert d.feed(bytes.fromhex(LEGACY_PUSH_HEX) + struct.pack(">qi", 5, -2)[:11]) == [LEGACY_PUSH]
    with pytest.raises(L.LegacyFrameError):
        d.feed(b"\xfe")


def test_frame_error_is_a_value_error() -> None:
    assert issubclass(F.FrameError, ValueError)


# Java readers that accept these inputs with a defined meaning, where ours raise.
JAVA_TOLERATED = [
    pytest.param(F.SlaveFrameDecoder, slave_header(1, struct.pack(">hhq", 2, 0, 7)),
                 [F.SlaveHandshake(False, False, 7)], id="slave-flag-2",
                 marks=pytest.mark.xfail(strict=True, raises=F.FrameError, reason=(
                     "AutoSwitchHAConnection.HAServerReader.processReadResult sets isSyncFromLastFile only when "
                     "the short equals 1 and otherwise ignores it; ours raises FrameError for any flag but 0/1"))),
    pytest.param(F.SlaveFrameDecoder, slave_header(1, struct.pack(">hhq", 0, -1, 7)),
                 [F.SlaveHandshake(False, False, 7)], id="slave-learner-flag--1",
                 marks=pytest.mark.xfail(strict=True, raises=F.FrameError, reason=(
                     "HAServerReader sets isAsyncLearner only when the short equals 1; ours raises for -1"))),
    pytest.param(F.SlaveFrameDecoder, slave_header(1, struct.pack(">hhq", 0, 0, 0)),
                 [F.SlaveHandshake(False, False, 0)], id="slave-broker-id-0",
                 marks=pytest.mark.xfail(strict=True, raises=F.FrameError, reason=(
                     "HAServerReader stores slaveBrokerId = getLong(...) unchecked; ours rejects ids < 1"))),
    pytest.param(F.SlaveFrameDecoder, slave_header(1, struct.pack(">hhq", 1, 1, -5)),
                 [F.SlaveHandshake(True, True, -5)], id="slave-broker-id-negative",
                 marks=pytest.mark.xfail(strict=True, raises=F.FrameError, reason=(
                     "HAServerReader stores slaveBrokerId unchecked; ours rejects ids < 1"))),
    pytest.param(F.SlaveFrameDecoder, slave_header(2, struct.pack(">q", -2)), [F.SlaveTransfer(-2)],
                 id="slave-ack-below--1",
                 marks=pytest.mark.xfail(strict=True, raises=F.FrameError, reason=(
                     "HAServerReader (TRANSFER) sets slaveAckOffset = getLong(readPosition + 4) unchecked; "
                     "ours rejects offsets < -1"))),
    pytest.param(F.MasterFrameDecoder, master_header(1, 13, struct.pack(">qiiq", 9, 1, 1, 0) + b"\xee"),
                 [F.MasterHandshake(9, 1, ((1, 0),))], id="master-handshake-body-13",
                 marks=pytest.mark.xfail(strict=True, raises=F.FrameError, reason=(
                     "AutoSwitchHAClient.HAClientReader (HANDSHAKE) reads bodySize / EPOCH_ENTRY_SIZE entries and "
                     "skips the whole body, so 13 bytes give one entry; ours rejects a size not a multiple of 12"))),
    pytest.param(F.MasterFrameDecoder,
                 master_header(1, 12 * 1001, struct.pack(">qi", 9, 1001)
                               + b"".join(struct.pack(">iq", e, e) for e in range(1, 1002))),
                 [F.MasterHandshake(9, 1001, tuple((e, e) for e in range(1, 1002)))], id="master-handshake-1001",
                 marks=pytest.mark.xfail(strict=True, raises=F.FrameError, reason=(
                     "HAClientReader has no entry limit (only the Java master's 12000-byte handShakeBuffer bounds "
                     "what it sends); ours rejects more than 1000 entries on decode"))),
    pytest.param(L.ReportDecoder, struct.pack(">q", -3), [-3], id="legacy-negative-report",
                 marks=pytest.mark.xfail(strict=True, raises=L.LegacyFrameError, reason=(
                     "DefaultHAConnection.ReadSocketService.processReadEvent takes readOffset = getLong(pos - 8) "
                     "unchecked; ours raises LegacyFrameError for a negative report"))),
    pytest.param(L.ReportDecoder, struct.pack(">qq", 5, 9), [9], id="legacy-last-report-only",
                 marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
                     "DefaultHAConnection.ReadSocketService.processReadEvent rounds the read position down to a "
                     "multiple of 8 and reads only the last whole report of each read; ours yields every report, "
                     "so LegacyConnection takes slaveRequestOffset from the first report of a read, Java from the "
                     "last"))),
]


@pytest.mark.parametrize(("decoder", "wire", "expected"), JAVA_TOLERATED)
def test_java_tolerated_input(decoder: Any, wire: bytes, expected: list[Any]) -> None:
    assert decoder().feed(wire) == expected


# --------------------------------------------------------------------------------------- arbitrary bytes


DECODERS = [
    # decoder, its error, what it yields, encoded valid frames for it
    (F.SlaveFrameDecoder, F.FrameError, (F.SlaveHandshake, F.SlaveTransfer),
     (slave_handshakes | slave_transfers).map(encode_slave)),
    (F.MasterFrameDecoder, F.FrameError, (F.MasterHandshake, F.MasterTransfer),
     (master_handshakes | master_transfers).map(encode_master)),
    (L.ReportDecoder, L.LegacyFrameError, (int,), st.integers(0, LONG_MAX).map(L.encode_report)),
    (L.PushDecoder, L.LegacyFrameError, (tuple,), st.builds(L.encode_push, st.integers(0, LONG_MAX),
                                                            st.binary(max_size=32))),
]

# Chunks mixing valid frames of every kind (noise to the other decoders), headers with plausible states and
# sizes, and raw bytes.
noisy_chunks = st.lists(
    st.one_of(*(valid for *_, valid in DECODERS),
              st.builds(lambda s, n, rest: struct.pack(">ii", s, n) + rest,
                        st.integers(-1, 5), st.integers(-2, 64), st.binary(max_size=48)),
              st.binary(max_size=48)),
    max_size=6)


@settings(max_examples=200, deadline=None)
@given(chunks=noisy_chunks)
def test_prop_arbitrary_bytes_give_frames_or_frame_error(chunks: list[bytes]) -> None:
    # Every decoder, fed the same chunks, returns frames of its own kinds or raises its own ValueError subclass;
    # any other exception fails the test.
    for decoder_cls, error, kinds, _ in DECODERS:
        d = decoder_cls()
        for chunk in chunks:
            try:
                got = d.feed(chunk)
            except error as exc:
                assert isinstance(exc, ValueError) and str(exc)
                break  # the connection would be closed here
            assert all(isinstance(f, kinds) for f in got)
