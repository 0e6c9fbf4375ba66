"""Issue 6 part 5, the HA transfer in bytes: frames that arrive in pieces, batches cut at a byte size, and the
per-connection ack lifecycle, each against the RocketMQ method whose behaviour it checks.

The fidelity switch of this part, ``client-acks-announced-body`` (caught by HA-ACK-BOUND), has its scenario in
``impl/sim/scenarios.py`` and is run by ``tests/test_bugs.py``.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rmqha.impl.ha import frames as F
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.world import Simulation

MASTER_FRAMES = st.lists(st.one_of(
    st.builds(F.MasterHandshake, st.integers(0, 2**62), st.integers(0, 2**31 - 1),
              st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**62)), max_size=4).map(tuple)),
    st.builds(F.MasterTransfer, st.integers(0, 2**62), st.integers(0, 2**31 - 1), st.integers(0, 2**62),
              st.integers(-1, 2**62), st.binary(max_size=300)),
), min_size=1, max_size=6)
SLAVE_FRAMES = st.lists(st.one_of(
    st.builds(F.SlaveHandshake, st.booleans(), st.booleans(), st.integers(1, 2**62)),
    st.builds(F.SlaveTransfer, st.integers(-1, 2**62)),
), min_size=1, max_size=8)


def _encode(frame: Any) -> bytes:
    if isinstance(frame, F.MasterHandshake):
        return F.encode_master_handshake(frame)
    if isinstance(frame, F.MasterTransfer):
        return F.encode_master_transfer(frame)
    if isinstance(frame, F.SlaveHandshake):
        return F.encode_slave_handshake(frame)
    return F.encode_slave_transfer(frame)


def _pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=150, deadline=None)
@given(MASTER_FRAMES, st.lists(st.integers(0, 10_000), max_size=12))
def test_slave_reader_reassembles_master_frames_cut_anywhere(frames, cuts):
    """AutoSwitchHAClient.HAClientReader.processReadResult keeps a partial frame (header or body) in its buffer
    until the rest arrives: the frames that come out do not depend on where the stream was cut."""
    data = b"".join(_encode(f) for f in frames)
    dec = F.MasterFrameDecoder()
    out = [f for piece in _pieces(data, cuts) for f in dec.feed(piece)]
    assert out == frames and not dec.buf


@settings(max_examples=150, deadline=None)
@given(SLAVE_FRAMES, st.lists(st.integers(0, 10_000), max_size=12))
def test_master_reader_reassembles_slave_frames_cut_anywhere(frames, cuts):
    """AutoSwitchHAConnection.HAServerReader.processReadResult: a 12-byte ack or a 16-byte handshake split
    across reads is decoded once whole, never earlier."""
    data = b"".join(_encode(f) for f in frames)
    dec = F.SlaveFrameDecoder()
    out = [f for piece in _pieces(data, cuts) for f in dec.feed(piece)]
    assert out == frames and not dec.buf


def test_pending_transfer_end_is_announced_only_while_the_body_is_incomplete():
    """HAClientReader reads a TRANSFER header (36 bytes: offset, bodySize...) and processes the frame only when
    ``diff >= headerSize + bodySize``; the end the header announces is what the fidelity switch acks early."""
    frame = F.encode_master_transfer(F.MasterTransfer(4096, 3, 0, 100, b"x" * 500))
    dec = F.MasterFrameDecoder()
    assert dec.feed(frame[:20]) == [] and dec.pending_transfer_end() is None  # header incomplete
    assert dec.feed(frame[20:F.MASTER_TRANSFER_SIZE + 10]) == []
    assert dec.pending_transfer_end() == 4096 + 500
    assert len(dec.feed(frame[F.MASTER_TRANSFER_SIZE + 10:])) == 1 and dec.pending_transfer_end() is None


class _Lines:
    """A recorder that keeps the events and observations of a run."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.obs: list[dict[str, Any]] = []

    def step(self, step: int, now: int, event: Any, obs: list[dict[str, Any]]) -> None:
        self.events.append(event or {})
        self.obs.extend(obs)

    def finish(self, sim: Simulation) -> None:
        pass


def _fragmented(seed: int, **extra: Any) -> tuple[Simulation, _Lines]:
    cfg = config_from_dict({"network": {"ha_fragment": 1.0}, "cluster": {"brokers": 3},
                            "workload": {"produce_interval": 0, "consume_interval": 0}, **extra},
                           default_config("safe"))
    lines = _Lines()
    schedule = [{"t": 8000 + 500 * i, "do": "produce", "count": 3, "size": 700 + 300 * i} for i in range(6)]
    schedule.append({"t": 12_000, "do": "break-ha", "node": "b2"})
    sim = Simulation(cfg, seed, schedule=schedule, max_time=25_000, recorder=lines)
    return sim, lines


def test_fragmented_streams_replicate_byte_identical_logs():
    """With every HA write cut into pieces (inside headers too) the slaves still end with the master's bytes and
    epochs, and every invariant holds: RocketMQ's readers (HAClientReader, HAServerReader) reassemble frames."""
    for seed in (1, 2, 3):
        sim, lines = _fragmented(seed)
        assert sim.run() is None, sim.violation and sim.violation.to_dict()
        pieces = [e["n"] for e in lines.events if e.get("ev") == "ha" and "n" in e]
        assert any(n < F.SLAVE_TRANSFER_SIZE for n in pieces), "no write was cut inside a frame header"
        logs = {b: bytes(n.store.commitlog.data) for b in sim.brokers if (n := sim.broker(b)) is not None}
        master = sim.believed_master()
        assert master is not None and logs[master]
        assert all(log == logs[master] for log in logs.values()), {b: len(v) for b, v in logs.items()}


def test_a_fragmented_run_replays_byte_for_byte():
    """The cut points come from their own seeded stream: the same seed gives the same trace."""
    cfg = default_config("fidelity")
    a = run(cfg, 5, 4000)
    b = run(cfg, 5, 4000)
    assert a.digest == b.digest and a.steps == b.steps


def test_batches_are_cut_at_the_byte_size_not_at_message_boundaries():
    """AutoSwitchHAConnection.WriteSocketService.transferToSlave sends at most haTransferBatchSize bytes
    (``size = min(size, haTransferBatchSize)``), wherever that ends: batches end inside messages, and the slave
    appends raw byte ranges (a message whole only once its last batch arrived)."""
    sim, lines = _fragmented(1, store={"haTransferBatchSize": 1024})
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    batches = [o for o in lines.obs if o["k"] == "ha.transfer" and o["size"] > 0]
    assert batches and max(o["size"] for o in batches) == 1024
    master = sim.broker(sim.believed_master() or "")
    assert master is not None
    ends = set(master.store.commitlog.ends)
    assert any(o["offset"] + o["size"] not in ends for o in batches), "every batch ended on a message boundary"


def test_ack_lifecycle_per_connection():
    """AutoSwitchHAConnection: a new connection starts with slaveRequestOffset = slaveAckOffset = -1; the first
    TRANSFER frame from the slave sets both (``if (slaveRequestOffset < 0) slaveRequestOffset = offset``); later
    acks move slaveAckOffset only, never backwards on one connection; a reconnect is a new connection that
    starts at -1 again."""
    sim, _ = _fragmented(2)
    seen: dict[int, list[tuple[int, int]]] = {}
    t = 0
    while t < 25_000 and sim.violation is None:
        t += 50
        sim.run_before(t)
        master = sim.broker(sim.believed_master() or "")
        if master is None:
            continue
        for conn, c in master.ha.connections.items():
            hist = seen.setdefault(conn, [])
            state = (c.slave_request_offset, c.slave_ack_offset)
            if not hist or hist[-1] != state:
                hist.append(state)
    assert sim.violation is None
    assert len(seen) >= 3, "break-ha should have made the slave reconnect"
    for conn, hist in seen.items():
        request, ack = hist[0]
        assert (request, ack) == (-1, -1) or request == hist[0][1], (conn, hist)
        reported = [h for h in hist if h[0] >= 0]
        assert reported, (conn, hist)
        assert len({r for r, _ in reported}) == 1, f"slaveRequestOffset moved on connection {conn}: {hist}"
        acks = [a for _, a in reported]
        assert acks == sorted(acks), f"the ack went back on connection {conn}: {hist}"
    assert sum(1 for hist in seen.values() if hist[0] == (-1, -1)) >= 3
