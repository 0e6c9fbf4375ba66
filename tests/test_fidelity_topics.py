"""Issue 6 part 2 (topic config): a broker's ``TopicConfigManager``, the admin's ``updateAndCreateTopic``, the
nameserver's queue data, the clients' use of the route's queue counts, and ``SlaveSynchronize.syncTopicConfig``.

The fidelity switch ``slave-skips-topic-sync`` (QUEUE-ACKED-READABLE) has its scenario in ``impl/sim/scenarios.py``
(``tests/test_bugs.py``); the finding F-TOPIC-CONFIG-LOST-ON-FAILOVER replays from ``docs/findings/``
(``tests/test_findings.py``).
"""

from __future__ import annotations

from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.broker.topic_config import DataVersion, TopicConfigManager
from rmqha.impl.codes import RequestCode, ResponseCode
from rmqha.impl.rng import DetRng
from rmqha.impl.runtime import Command
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.nameserver import NameServerNode
from rmqha.impl.sim.runner import simulation
from rmqha.impl.sim.world import Simulation

from tests.harness import ObsRecorder

WORKLOAD = {"produce_interval": 0, "consume_interval": 500, "queues": 4, "topic_config": True}
OTHER_FIXES = frozenset(f for f in B.FIXES_ALL if f != B.FIX_MASTER_COVERS_ITS_QUEUES)



def _sim(schedule: list[dict[str, Any]], max_time: int, bugs: frozenset[str] = OTHER_FIXES,
         workload: dict[str, Any] | None = None) -> tuple[Simulation, ObsRecorder]:
    rec = ObsRecorder()
    cfg = config_from_dict({"workload": workload or WORKLOAD}, default_config("safe"))
    sim = Simulation(cfg, 1, schedule=schedule, max_time=max_time, recorder=rec, bugs=bugs)
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    return sim, rec


def test_data_versions_are_equal_only_in_all_three_parts():
    """DataVersion.equals compares stateVersion, timestamp and counter; assignNewOne copies all three."""
    a, b = DataVersion(5, 2, 1), DataVersion(5, 2, 1)
    assert a == b and DataVersion(5, 2, 2) != a and DataVersion(6, 2, 1) != a and DataVersion(5, 3, 1) != a
    b.next_version(1, 9)
    assert (b.timestamp, b.counter, b.state_version) == (9, 3, 1)
    a.assign_new_one(b)
    assert a == b


def test_a_slave_sync_deletes_and_puts_back_so_the_next_sync_repeats():
    """syncTopicConfig (5.3.3): versions differ → assignNewOne, deleteTopicConfig (bumps the version), put; the bump
    leaves the slave's version unequal to the master's, so a sync of an unchanged master rewrites again."""
    master = TopicConfigManager(4, None)
    master.update_topic_config(6, 6, state_version=1, now=100)
    slave = TopicConfigManager(4, None)
    assert slave.sync_from_master(master.to_wire(), state_version=1, now=200)
    assert (slave.read, slave.write) == (6, 6)
    assert slave.version != master.version and slave.version.counter == master.version.counter + 2  # delete, put
    assert slave.sync_from_master(master.to_wire(), state_version=1, now=300)  # the QUIRK: again
    same = TopicConfigManager(4, None)
    same.version.assign_new_one(master.version)
    same.topic = master.topic
    assert not same.sync_from_master(master.to_wire(), state_version=1, now=400)  # equal versions: nothing


def test_topics_json_survives_a_restart():
    """TopicConfigManager.load reads what persist wrote; a fresh store starts from the deployed topic."""
    m = TopicConfigManager(4, None)
    m.update_topic_config(8, 6, 2, 50)
    back = TopicConfigManager(4, m.persisted())
    assert (back.read, back.write, back.version) == (8, 6, m.version)
    assert (TopicConfigManager(4, None).read, TopicConfigManager(4, {}).write) == (4, 4)


def test_the_fix_widens_to_the_queues_held():
    m = TopicConfigManager(4, None)
    assert not m.cover_queues([0, 3], 2, 10)
    assert m.cover_queues([0, 5], 2, 10) and (m.read, m.write) == (6, 6) and m.version.state_version == 2


def _register(ns: NameServerNode, addr: str, bid: int, version: list[int], read: int) -> None:
    ns.on_request("b", Command(RequestCode.REGISTER_BROKER, 1, {
        "brokerName": "broker-a", "brokerAddr": addr, "brokerId": bid, "stateVersion": version[2],
        "topicConfig": {"topic": {"read": read, "write": read}, "version": version}}))


def test_the_nameserver_takes_a_masters_counts_when_their_version_changes():
    """RouteInfoManager.registerBroker: isBrokerTopicConfigChanged || registerFirst → createAndUpdateQueueData;
    only a master's (id 0) registration sets the queue data."""
    ns = NameServerNode("ns", DetRng(1))
    ns.send = lambda *a, **k: None  # type: ignore[method-assign]
    ns.observe = lambda *a, **k: None  # type: ignore[method-assign]
    _register(ns, "b1:1", 2, [1, 1, 1], 8)  # a slave's registration carries no queue data
    assert "broker-a" not in ns.queue_data
    _register(ns, "b2:1", 0, [1, 1, 1], 4)  # first registration of the master
    assert ns.queue_data["broker-a"] == (4, 4)
    _register(ns, "b2:1", 0, [1, 1, 1], 6)  # same version: unchanged (a config change always bumps the version)
    assert ns.queue_data["broker-a"] == (4, 4)
    _register(ns, "b2:1", 0, [2, 2, 1], 6)
    assert ns.queue_data["broker-a"] == (6, 6)


def test_an_expansion_reaches_the_route_the_clients_and_the_slaves():
    """updateAndCreateTopic on the master, registerIncrementBrokerData, the producer's refresh (every 30 s) and the
    slaves' syncAll (10 s): messages go to queues 4 and 5, the consumer reads them, and every broker has 6."""
    sim, rec = _sim([{"t": 8000, "do": "produce", "count": 4}, {"t": 16000, "do": "expand-queues", "by": 2},
                     {"t": 31000, "do": "produce", "count": 6}], 45_000)
    assert [o["response"]["code"] for _, o in rec.kinds("admin.result")] == [0]
    assert sim.nodes["ns"].queue_data["broker-a"] == (6, 6)  # type: ignore[union-attr]
    queues = {o["queueId"] for t, o in rec.kinds("brk.append") if t >= 31000}
    assert {4, 5} <= queues
    assert {o["queueId"] for _, o in rec.kinds("client.seen")} >= {4, 5}
    for b in sim.brokers:
        topics = sim.broker(b).topics  # type: ignore[union-attr]
        assert (topics.read, topics.write) == (6, 6), b
    assert {o["why"] for _, o in rec.kinds("brk.topic")} >= {"admin", "sync"}


def test_msg_check_and_the_pull_check_refuse_queue_ids_past_the_config():
    """AbstractSendMessageProcessor.msgCheck: queueId >= max(write, read) → SYSTEM_ERROR; PullMessageProcessor:
    queueId >= readQueueNums → SYSTEM_ERROR."""
    sim, _ = _sim([], 5000)
    master = next(sim.broker(b) for b in sim.brokers if sim.broker(b).store.role.value == "SYNC_MASTER")  # type: ignore[union-attr]
    sent: list[Command] = []
    master.send = lambda dst, cmd: sent.append(cmd)  # type: ignore[method-assign,union-attr]
    master.on_request("p1", Command(RequestCode.SEND_MESSAGE, 7, {"key": "k", "bodySize": 10, "queueId": 4}))  # type: ignore[union-attr]
    master.on_request("c1", Command(RequestCode.PULL_MESSAGE, 8, {"queueId": 4, "queueOffset": 0}))  # type: ignore[union-attr]
    master.on_request("c1", Command(RequestCode.PULL_MESSAGE, 9, {"queueId": 3, "queueOffset": 0}))  # type: ignore[union-attr]
    assert [(c.opaque, c.code) for c in sent] == [(7, ResponseCode.SYSTEM_ERROR), (8, ResponseCode.SYSTEM_ERROR),
                                                  (9, ResponseCode.SUCCESS)]
    assert sent[0].header["status"] == "QUEUE_ID_ILLEGAL"


def test_the_sync_timer_restarts_after_an_unanswered_sync():
    """handleSlaveSynchronize takes lastSyncTimeMs after syncAll whatever its calls returned: a slave cut from the
    master still moves its timer on (the kit once moved it only on an answered offset sync)."""
    cut = [["b1", "b2"], ["b2", "b1"], ["b1", "b3"], ["b3", "b1"]]  # slave b1 cut from master b2 and from b3
    sim, rec = _sim([{"t": 20000, "do": "partition", "id": "x", "links": cut}], 50_000,
                    workload={"produce_interval": 0, "consume_interval": 0, "queues": 4, "topic_config": True})
    master = next(b for b in sim.brokers if sim.broker(b).store.role.value == "SYNC_MASTER")  # type: ignore[union-attr]
    assert master == "b2"
    syncs = [t for t, o in rec.kinds("brk.topic") if o["n"] == "b1"]
    assert syncs and max(syncs) < 20000  # nothing got through the cut
    assert sim.broker("b1").replicas.last_slave_sync > 20000  # type: ignore[union-attr]  # the timer moved on


def test_the_fix_keeps_an_expansion_the_slaves_had_not_synced():
    """F-TOPIC-CONFIG-LOST-ON-FAILOVER's schedule: with fix-master-covers-its-queues the new master serves 6."""
    schedule = [{"t": 8000, "do": "produce", "count": 4}, {"t": 28000, "do": "expand-queues", "by": 2},
                {"t": 31000, "do": "produce", "count": 6}, {"t": 33000, "do": "crash", "node": "b2"}]
    _, rec = _sim(schedule, 60_000, bugs=frozenset(B.FIXES_ALL))
    assert any(o["why"] == "cover" and o["read"] == 6 for _, o in rec.kinds("brk.topic"))
    cfg = config_from_dict({"workload": WORKLOAD}, default_config("safe"))
    bad = Simulation(cfg, 1, schedule=schedule, max_time=60_000, bugs=OTHER_FIXES)
    v = bad.run()
    assert v is not None and v.invariant == "QUEUE-ACKED-READABLE"


def test_the_sync_loop_persists_what_is_left_after_each_delete():
    """deleteTopicConfig persists the remaining table each time; the put phase persists it whole once."""
    from rmqha.impl.broker.topic_config import sync_loop_ms

    assert sync_loop_ms(1, 0, 3) == (0, 0, 0)
    deleted, put, on_disk = sync_loop_ms(2001, 1000, 3)
    assert (deleted, put, on_disk) == (3 * (1001 * 2000 - 1001 * 1000 // 2) // 1000, 3 * 2001 * 1000 // 1000,
                                       (3 * 2001 * 1000 + 3 * 2001) // 1000)
    assert 0 < deleted < put < on_disk


OTHER = {"produce_interval": 400, "consume_interval": 500, "queues": 4, "topic_config": True, "other_topics": 2000}
NO_SYNC_FIX = frozenset(f for f in B.FIXES_ALL if f != B.FIX_SYNC_DELETES_ONLY_MISSING)


def _run_other(schedule: list[dict[str, Any]], max_time: int, bugs: frozenset[str]) -> tuple[Simulation, ObsRecorder]:
    rec = ObsRecorder()
    cfg = config_from_dict({"workload": OTHER}, default_config("safe"))
    sim = simulation(cfg, 6, 20_000, schedule=schedule, max_time=max_time, recorder=rec, bugs=sorted(bugs),
                     disabled=["QUEUE-ACKED-READABLE"])
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    return sim, rec


# seed 6: b1 turns slave at 0.473 s; its sync task ticks every 3 s, and its first syncAll runs at the first tick
# 10 s past the broker's start (ReplicasManager.lastSyncTimeMs is set at construction): 12.473 s. The loop over the
# 2 001 topics deletes the workload's topic about 4.5 s in.
LOOP = 12_473


def test_a_slave_elected_inside_its_sync_loop_serves_without_the_topic_until_the_put_phase():
    """F-SYNC-DELETES-EVERY-TOPIC's shape: b1's loop goes on after it turns master (cancel(false))."""
    crash = [{"t": LOOP + 2242, "do": "crash", "node": "b2"}]
    sim, rec = _run_other(crash, LOOP + 9000, NO_SYNC_FIX)
    mine = [(t, o["why"], o["read"]) for t, o in rec.kinds("brk.topic") if o["n"] == "b1"]
    roles = [t for t, o in rec.kinds("brk.role") if o["n"] == "b1" and o["role"] == "MASTER"]
    (deleted,) = [t for t, why, _ in mine if why == "sync-delete"]
    restored = [t for t, why, read in mine if why == "sync" and t > deleted]
    assert roles and roles[0] < deleted < restored[0]  # elected first, then the loop deletes, then puts back
    assert sim.broker("b1").topics.read == 4  # type: ignore[union-attr]
    _, fixed = _run_other(crash, 12_000, frozenset(B.FIXES_ALL))
    assert not [o for _, o in fixed.kinds("brk.topic") if o["why"] == "sync-delete"]


def test_a_slave_killed_inside_its_sync_loop_restarts_without_the_topic():
    """The delete persisted topics.json without the topic; TopicConfigManager.load reads what is there."""
    kills = [{"t": LOOP + 2242, "do": "crash", "node": "b2"}, {"t": LOOP + 5027, "do": "crash", "node": "b1"}]
    sim, _ = _run_other(kills, LOOP + 5127, NO_SYNC_FIX)
    disk = sim.disks["b1"]
    assert disk.topics is not None and disk.topics["topic"] is None
    assert TopicConfigManager(4, disk.topics).read == 0


def test_a_slave_first_syncs_at_the_first_tick_ten_seconds_past_its_start():
    """ReplicasManager.lastSyncTimeMs starts at the broker's construction, and the task that handleSlaveSynchronize
    schedules (3 s, then every 3 s) runs syncAll only when more than 10 s have passed since: b1, a slave from
    0.473 s, syncs first at 12.473 s, not at its first tick (3.473 s)."""
    _, rec = _run_other([], LOOP + 6000, NO_SYNC_FIX)
    syncs = [t for t, o in rec.kinds("brk.topic") if o["n"] == "b1" and o["why"].startswith("sync")]
    assert syncs and LOOP < syncs[0] < LOOP + 6000
