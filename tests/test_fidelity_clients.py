"""Issue 6 part 2 (its client half): consumer offsets committed per group and queue, the slave's periodic sync of
them, and a consumer that resumes from them, against ``ConsumerOffsetManager``, ``ConsumerManageProcessor``,
``SlaveSynchronize`` / ``ReplicasManager.handleSlaveSynchronize`` and ``RemoteBrokerOffsetStore``.

The fidelity switch ``offset-not-found-from-last`` (caught by CLI-NO-SKIP) has its scenario in
``impl/sim/scenarios.py`` and is run by ``tests/test_bugs.py``.
"""

from __future__ import annotations

from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.world import Simulation

WORKLOAD = {"produce_interval": 0, "consume_interval": 500, "queues": 2}


class _Seen:
    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int, str]] = []

    def step(self, step: int, now: int, event: Any, obs: list[dict[str, Any]]) -> None:
        self.seen.extend((now, o["queueId"], o["queueOffset"], o["key"]) for o in obs if o["k"] == "client.seen")

    def finish(self, sim: Simulation) -> None:
        pass


def _sim(schedule: list[dict[str, Any]], max_time: int) -> tuple[Simulation, _Seen]:
    rec = _Seen()
    cfg = config_from_dict({"workload": WORKLOAD}, default_config("safe"))
    sim = Simulation(cfg, 1, schedule=schedule, max_time=max_time, recorder=rec, bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    return sim, rec


def test_offsets_are_committed_to_the_master_and_synced_to_the_slaves():
    """The consumer persists each queue's offset to the master every 5 s (RemoteBrokerOffsetStore.persistAll →
    ConsumerOffsetManager.commitOffset); a slave copies the master's table (SlaveSynchronize.syncConsumerOffset,
    putAll) once 10 s have passed since its last sync, checked every 3 s; the master persists consumerOffset.json
    every 5 s."""
    sim, _ = _sim([{"t": 2000, "do": "produce", "count": 6}], 30_000)
    master = sim.broker("b2")
    assert master is not None and master.store.role.value == "SYNC_MASTER"
    assert master.consumer_offsets == {"c1-group@0": 3, "c1-group@1": 3}
    assert sim.disks["b2"].consumer_offsets == master.consumer_offsets
    for b in ("b1", "b3"):
        node = sim.broker(b)
        assert node is not None and node.consumer_offsets == master.consumer_offsets


def test_a_restarted_consumer_resumes_from_its_committed_offsets():
    """RebalancePushImpl.computePullFromWhere reads the group's offset from the broker (QUERY_CONSUMER_OFFSET):
    a consumer killed and restarted reads on from there, not from the start."""
    _, rec = _sim([{"t": 2000, "do": "produce", "count": 4}, {"t": 9000, "do": "crash", "node": "c1"},
                     {"t": 10_000, "do": "produce", "count": 4}, {"t": 12_000, "do": "restart", "node": "c1"}], 20_000)
    after = [(q, off) for t, q, off, _ in rec.seen if t >= 12_000]
    assert sorted(after) == [(0, 2), (0, 3), (1, 2), (1, 3)]


def test_a_failover_before_the_sync_redelivers_and_does_not_skip():
    """The new master holds no offset for the group (its last sync came before the first commit):
    ConsumerManageProcessor.queryConsumerOffset answers 0 when the queue still starts at 0 with its first message
    in memory, so the restarted consumer reads everything again (duplicates, never a skip: CLI-NO-SKIP)."""
    _, rec = _sim([{"t": 2000, "do": "produce", "count": 4}, {"t": 12_000, "do": "crash", "node": "b2"},
                     {"t": 12_500, "do": "crash", "node": "c1"}, {"t": 16_000, "do": "produce", "count": 1},
                     {"t": 21_000, "do": "produce", "count": 4}, {"t": 24_000, "do": "restart", "node": "c1"}],
                    35_000)
    after = sorted((q, off) for t, q, off, _ in rec.seen if t >= 24_000)
    assert after == [(q, off) for q in (0, 1) for off in range(4)]  # from 0 again, across both masters' messages


def test_the_master_does_not_sync_from_anyone():
    """handleSlaveSynchronize cancels the sync when the broker becomes master: a master's table only changes by
    commits."""
    sim, _ = _sim([{"t": 2000, "do": "produce", "count": 2}], 15_000)
    master = sim.broker("b2")
    assert master is not None and master.replicas.slave_sync_task is None
    assert all(sim.broker(b).replicas.slave_sync_task is not None for b in ("b1", "b3"))  # type: ignore[union-attr]
