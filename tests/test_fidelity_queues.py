"""Issue 6 part 3, topics, queues and dispatch (``[workload] queues``): queue offsets assigned at put, consume
queues built by the reput from the offsets the messages carry, the topicQueueTable recovered, and consumers that
read per queue only what is dispatched and confirmed, each against the RocketMQ method it mirrors.

The part's fidelity switch, ``queue-table-not-recovered`` (caught by QUEUE-OFFSET-GAPLESS), has its scenario in
``impl/sim/scenarios.py`` (run by ``tests/test_bugs.py``); CLI-QUEUE-POSITION-STABLE is shown in
``tests/test_checker_catches.py``.
"""

from __future__ import annotations

from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.world import Simulation
from rmqha.impl.store.commitlog import CommitLog, MessageStore
from rmqha.impl.store.disk import BrokerDisk
from rmqha.impl.store.message import check, encode, queue_body, queue_of

QUIET = {"workload": {"produce_interval": 0, "consume_interval": 0, "queues": 3}}


def _sim(schedule: list[dict[str, Any]], max_time: int, **workload: Any) -> Simulation:
    """A scripted run with every finding's fix on, so that only this part's rules are in play."""
    cfg = config_from_dict({"workload": {**QUIET["workload"], **workload}}, default_config("safe"))
    sim = Simulation(cfg, 1, schedule=schedule, max_time=max_time, bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    return sim


def _positions(sim: Simulation, broker: str) -> dict[int, list[str]]:
    node = sim.broker(broker)
    assert node is not None
    return {q: [cq[i].key for i in sorted(cq)] for q, cq in sorted(node.store.consume_queues.items())}


def test_a_message_carries_its_queue_and_queue_offset():
    """RocketMQ stores QUEUEID and QUEUEOFFSET in the message; the kit puts them in front of the body, inside the
    CRC, so a slave's copy carries them as the master wrote them."""
    raw = encode("p1-7", queue_body("p1-7", 200, 2, 41), 0, 1)
    assert check(raw, 0, len(raw)) == (len(raw), "p1-7") and queue_of(raw, 0) == (2, 41)
    plain = encode("p1-8", b"p1-8|" * 10, 0, 1)
    assert queue_of(plain, 0) is None


def test_queue_offsets_are_assigned_at_put_and_replicated():
    """CommitLog.asyncPutMessage assigns the queue offset from the topicQueueTable (QueueOffsetOperator) and
    increases it after the append; the producer picks queues in turn (selectOneMessageQueue); every replica's
    consume queue (CommitLogDispatcherBuildConsumeQueue) has the same message at the same position."""
    sim = _sim([{"t": 8000, "do": "produce", "count": 9}], 15_000)
    master = sim.believed_master()
    assert master is not None
    positions = _positions(sim, master)
    assert sorted(len(v) for v in positions.values()) == [3, 3, 3]
    node = sim.broker(master)
    assert node is not None and node.store.topic_queue_table == {0: 3, 1: 3, 2: 3}
    for b in sim.brokers:
        assert _positions(sim, b) == positions


def test_the_queue_table_is_recovered_from_the_consume_queues():
    """DefaultMessageStore.recoverTopicQueueTable: after recovery and after truncateDirtyFiles, each queue's next
    offset is its consume queue's max + 1."""
    disk = BrokerDisk()
    for i in range(6):
        body = queue_body(f"k{i}", 80, i % 2, i // 2)
        disk.commitlog += encode(f"k{i}", body, len(disk.commitlog), i)
    disk.checkpoint_confirm = len(disk.commitlog)
    store = MessageStore(disk, default_config("safe").store, queues=2)
    assert store.topic_queue_table == {0: 3, 1: 3}
    store.truncate_dirty_files(store.commitlog.ends[3])  # keep k0..k3
    assert store.topic_queue_table == {0: 2, 1: 2} and sorted(store.consume_queues[1]) == [0, 1]


def test_the_queue_table_accounts_for_the_log_past_confirm_offset():
    """ConsumeQueueStore.recoverOffsetTable in controller mode (compensateForHA, 5.2.0+): the messages the commit log
    holds from confirmOffset on are in no consume queue after recovery (recoverAbnormally dispatches only what
    confirmOffset covers), yet their queue offsets are taken: the table goes on from the last one's + 1. Fillers
    are passed; a start inside a message reads no message (Java throws there: docs/fidelity.md, part 3)."""
    disk = BrokerDisk()
    for i in range(6):
        body = queue_body(f"k{i}", 80, i % 2, i // 2)
        disk.commitlog += encode(f"k{i}", body, len(disk.commitlog), i)
    ends = CommitLog(disk).ends
    disk.checkpoint_confirm = ends[1]  # k0 and k1 confirmed; k2..k5 past confirmOffset
    disk.abort = True  # the last run crashed: recoverAbnormally
    store = MessageStore(disk, default_config("safe").store, queues=2)
    assert {q: sorted(cq) for q, cq in store.consume_queues.items()} == {0: [0], 1: [0]}
    assert store.topic_queue_table == {0: 3, 1: 3}  # not {0: 1, 1: 1}: k2..k5 hold offsets 1 and 2
    store.confirm_offset = ends[1] + 10  # inside k2: no message starts there
    store.recover_topic_queue_table()
    assert store.topic_queue_table == {0: 1, 1: 1}
    legacy = MessageStore(BrokerDisk(commitlog=bytearray(disk.commitlog), checkpoint_confirm=ends[1]),
                          default_config("safe").store, controller_mode=False, queues=2)
    assert legacy.topic_queue_table == {0: 3, 1: 3}  # outside controller mode everything is dispatched anyway


def test_dispatch_stops_at_confirm_offset_and_consumers_read_only_the_dispatched():
    """ReputMessageService dispatches up to getConfirmOffset in controller mode; PullMessageProcessor reads the
    consume queue, so a message a slave holds but has not confirmed is in its log and not in its queues."""
    sim = _sim([{"t": 8000, "do": "produce", "count": 6}], 9_000, consume_interval=500)
    for b in sim.brokers:
        node = sim.broker(b)
        assert node is not None
        dispatched = {d.key for cq in node.store.consume_queues.values() for d in cq.values()}
        confirmed = {r.key for r in node.store.commitlog.records if r.offset + r.size <= node.store.confirm_offset}
        assert dispatched <= confirmed


class _Seen:
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def step(self, step: int, now: int, event: Any, obs: list[dict[str, Any]]) -> None:
        self.seen.extend(o for o in obs if o["k"] == "client.seen")

    def finish(self, sim: Simulation) -> None:
        pass


def test_a_failover_continues_the_queue_offsets():
    """AutoSwitchHAService.changeToMaster waits until the dispatch has caught up, then recovers the topicQueueTable:
    the new master's next message in each queue takes the next offset, and a consumer reading every queue across the
    failover reads each position once, in order, without a gap."""
    rec = _Seen()
    cfg = config_from_dict({"workload": {**QUIET["workload"], "consume_interval": 300}}, default_config("safe"))
    schedule = [{"t": 8000, "do": "produce", "count": 6}, {"t": 12_000, "do": "crash", "node": "b2"},
                {"t": 25_000, "do": "produce", "count": 1}, {"t": 35_000, "do": "produce", "count": 6}]
    sim = Simulation(cfg, 1, schedule=schedule, max_time=45_000, recorder=rec, bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None
    master = sim.believed_master()
    assert master not in (None, "b2")
    positions = _positions(sim, master)  # type: ignore[arg-type]
    assert sum(len(v) for v in positions.values()) >= 11
    for q, keys in positions.items():
        read = [o for o in rec.seen if o["queueId"] == q]
        assert [o["queueOffset"] for o in read] == list(range(len(read)))
        assert [o["key"] for o in read] == keys[:len(read)]


def test_queues_run_clean_under_random_faults():
    """Five seeds of the safe profile with 4 queues and every fix on: QUEUE-OFFSET-GAPLESS and
    CLI-QUEUE-POSITION-STABLE hold (60 seeds in docs/fidelity.md)."""
    cfg = config_from_dict({"workload": {"queues": 4}}, default_config("safe"))
    for seed in range(1, 6):
        r = run(cfg, seed, 8000, bugs=sorted(B.FIXES_ALL), record=False)
        assert r.violation is None, r.violation.to_dict()
