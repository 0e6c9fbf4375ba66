"""Issue 6 part 7, offsets at full width: logs that start past 2^31, 2^32 and 2^40 (``[sim] base_offset``), the
64-bit fields that carry them, and RocketMQ's own ``(int)`` narrowing where it has one.

The fidelity switch of this part, ``confirm-min-int32`` (caught by SYNC-CONFIRM-BOUND), has its scenario in
``impl/sim/scenarios.py`` and is run by ``tests/test_bugs.py``.
"""

from __future__ import annotations

import pickle

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.controller.elect_policy import BrokerLiveInfo, ElectPolicy, compare_live_info
from rmqha.impl.ha import frames as F
from rmqha.impl.sim.config import ConfigError, config_from_dict, default_config
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.world import Simulation
from rmqha.impl.store.disk import BrokerDisk
from rmqha.impl.store.message import check, encode
from rmqha.impl.store.offsets import BasedLog

BASES = (2**31 - 4096, 2**32 - 4096, 2**40)


def test_based_log_answers_in_physical_offsets():
    """DefaultMessageStore.getMinPhyOffset / getMaxPhyOffset of a log whose older files were deleted: the bytes
    start at the base, and every length, index and slice is a physical offset."""
    base = 2**32 + 7
    log = BasedLog(base)
    assert len(log) == base and log[:base + 10] == b"" and log[base - 5:] == b""
    msg = encode("k1", b"x" * 50, base, 1)
    log += msg
    assert len(log) == base + len(msg) and type(log) is BasedLog
    assert bytes(log[base:base + 4]) == msg[:4] and log[base + 1] == msg[1] and log[:] == msg
    assert check(log, base, len(log)) == (len(msg), "k1")
    assert check(log, base + 1, len(log))[0] == -1
    del log[base + 10:]
    assert len(log) == base + 10 and check(log, base, len(log)) == (0, None)
    assert pickle.loads(pickle.dumps(log)) == log and pickle.loads(pickle.dumps(log)).base == base


def test_base_zero_keeps_the_plain_log():
    """The default path is unchanged: a fresh disk at base 0 is the plain bytearray store of every other run."""
    assert BrokerDisk.fresh(0) == BrokerDisk() and type(BrokerDisk.fresh(0).commitlog) is bytearray
    disk = BrokerDisk.fresh(2**40)
    assert len(disk.commitlog) == disk.flushed == disk.checkpoint_confirm == 2**40


def test_power_loss_of_a_based_log_drops_the_unflushed_tail():
    """A power loss keeps what was flushed (FlushCommitLogService), wherever the log starts."""
    disk = BrokerDisk.fresh(2**31)
    disk.commitlog += b"a" * 100
    disk.flushed = 2**31 + 40
    assert disk.power_loss() == 60 and len(disk.commitlog) == 2**31 + 40


def test_frames_carry_64_bit_offsets():
    """AutoSwitchHAConnection's TRANSFER header and the slave's ack hold offsets as longs (putLong / getLong)."""
    frame = F.MasterTransfer(2**40 + 3, 7, 2**40, 2**40 + 1, b"abc")
    assert F.MasterFrameDecoder().feed(F.encode_master_transfer(frame)) == [frame]
    ack = F.SlaveTransfer(2**33 + 1)
    assert F.SlaveFrameDecoder().feed(F.encode_slave_transfer(ack)) == [ack]


def _live(broker_id: int, epoch: int, max_offset: int) -> BrokerLiveInfo:
    return BrokerLiveInfo("broker-a", f"b{broker_id}", broker_id, 0, 10_000, epoch, max_offset, max_offset, 2**31 - 1)


def test_elect_policy_compares_offsets_as_java_ints():
    """DefaultElectPolicy's comparator returns ``(int) (o2.getMaxOffset() - o1.getMaxOffset())`` for candidates of
    one epoch (QUIRK, mirrored): a difference of 2^31 or more wraps, so the less advanced replica sorts first,
    and at exactly 2^32 the two compare equal and TreeSet.add drops the second."""
    low, high = _live(1, 3, 10), _live(2, 3, 10 + 2**31 + 5)
    assert compare_live_info(low, high) < 0  # "low first": Java's ordering, not the intended one
    near = _live(3, 3, 10 + 2**31 - 5)
    assert compare_live_info(low, near) > 0  # below 2^31 the most advanced wins, as intended
    infos = {1: low, 2: high}
    policy = ElectPolicy(valid=lambda c, n, b: True, live_info=lambda c, n, b: infos[b])
    assert policy.elect("c", "broker-a", {1, 2}, None, None, None) == 1
    infos[2] = _live(2, 3, 10 + 2**32)
    assert compare_live_info(infos[1], infos[2]) == 0
    assert policy.elect("c", "broker-a", {1, 2}, None, None, None) == 1  # the more advanced one is gone


@pytest.mark.parametrize("base", BASES)
def test_a_set_runs_clean_past_2_31_and_2_32(base):
    """Elections, HA handshakes, truncation and transfer with every offset past the base: three seeds of the safe
    profile under random faults run clean, the logs end past the base, and the epoch file starts there."""
    for seed in (1, 2, 3):
        cfg = config_from_dict({"sim": {"base_offset": base}}, default_config("safe"))
        r = run(cfg, seed, 6000, bugs=sorted(B.FIXES_ALL), record=False)
        assert r.violation is None, r.violation.to_dict()
    sim = Simulation(config_from_dict({"sim": {"base_offset": base}, "cluster": {"brokers": 3},
                                       "workload": {"produce_interval": 0}}, default_config("safe")), 1,
                     schedule=[{"t": 8000, "do": "produce", "count": 20, "size": 900}], max_time=20_000)
    assert sim.run() is None
    master = sim.broker(sim.believed_master() or "")
    assert master is not None and master.store.max_phy_offset > base + 18_000
    assert master.store.commitlog.min_offset == base and master.ha.epoch_cache.all_entries()[0].start_offset == base
    for b in sim.brokers:
        node = sim.broker(b)
        assert node is not None and bytes(node.store.commitlog.data) == bytes(master.store.commitlog.data)


def test_base_offset_is_validated():
    with pytest.raises(ConfigError, match="base_offset"):
        config_from_dict({"sim": {"base_offset": -1}}, default_config("safe"))
