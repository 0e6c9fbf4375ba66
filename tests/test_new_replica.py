"""``[sim] join_at`` (profile new-replica): a replica added to a running set, on a new store at offset 0, while
the set's logs start past 2^32. Its first HA transfer starts at its master's min offset
(AutoSwitchHAConnection: a slave request of 0), it takes it although it starts past its own end (its log is empty:
AutoSwitchHAClient.processReadResult checks contiguity only when the slave's max offset is not 0), and its first
mapped file starts there (CommitLog.appendData / MappedFileQueue.getLastMappedFile)."""

from __future__ import annotations

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import simulation
from rmqha.impl.store.offsets import base_of

FIXES = sorted(B.FIXES_ALL)


def test_a_replica_added_later_starts_its_log_at_its_masters_min_offset_and_catches_up() -> None:
    cfg = config_from_dict({"workload": {"produce_interval": 300}}, default_config("new-replica"))
    sim = simulation(cfg, 3, 200_000, bugs=FIXES, max_time=60_000, schedule=[
        {"t": cfg.sim.join_at, "do": "restart", "node": "b3"}, {"t": 45_000, "do": "produce", "count": 3}])
    assert sim.disks["b3"].commitlog == bytearray() and base_of(sim.disks["b1"].commitlog) == cfg.sim.base_offset
    assert not sim.is_up("b3")
    assert sim.run() is None
    joined = sim.broker("b3")
    assert joined is not None and sim.is_up("b3")
    master = next(b for b in ("b1", "b2") if sim.broker(b) is not None and sim.broker(b).store.role.name != "SLAVE")
    mlog, slog = sim.disks[master].commitlog, sim.disks["b3"].commitlog
    assert base_of(slog) == base_of(mlog) == cfg.sim.base_offset  # its first file starts at its master's min offset
    assert len(slog) == len(mlog) > cfg.sim.base_offset and bytes(slog[len(slog) - 64:]) == bytes(mlog[len(mlog) - 64:])


def test_without_join_at_every_broker_starts_at_boot() -> None:
    sim = simulation(default_config("large-logs"), 1, 10, bugs=FIXES, schedule=[])
    assert all(sim.is_up(b) for b in sim.brokers) and sim.joining is None
