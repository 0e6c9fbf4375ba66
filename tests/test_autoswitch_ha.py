"""Port of RocketMQ's ``AutoSwitchHATest`` (store/src/test/java/org/apache/rocketmq/store/ha/autoswitch/).

The Java test wires up to three ``DefaultMessageStore``s by hand: it calls ``changeToMaster`` /
``changeToSlave`` on their HA services, sets SyncStateSets directly and runs no controller. Here each
scenario runs in the deterministic simulator with a controller, so roles, epochs and SyncStateSets come from
real elections and ``alterSyncStateSet`` calls. The set-up maps as follows:

* store1/2/3 are brokers b1/b2/b3. b1 boots alone, registers first (controller id 1) and is elected master at
  epoch 1; the others boot 1 s later (ids 2 and 3, the Java stores' broker ids) and follow it.
* ``init(size)`` is RocketMQ's default ``allAckInSyncStateSet=false`` with ``inSyncReplicas=2`` and
  ``haSendHeartbeatInterval=1000``; ``init(size, allAck)`` is the ``safe`` profile (``allAckInSyncStateSet``).
* ``changeMasterAndPutMessage`` is an election (at boot, or ``admin-elect`` naming the new master) followed
  by 10 sends of one producer; ``putMessage``'s status is the broker's own put result.
* Where the Java test keeps a SyncStateSet that a controller would have changed (there is none), the master
  is cut off from the controller so that its ``alterSyncStateSet`` cannot get through.
* ``checkMessage(store, n, start)`` waits (at most 30 s of simulated time) until the broker's consume queue,
  i.e. the messages it dispatched, holds ``n`` entries from queue offset ``start``.

Not ported:

* testTruncateEpochLogAndAddBroker — it deletes the master's first commit-log file
  (``MappedFileQueue.retryDeleteFirstFile``) and calls ``AutoSwitchHAService.truncateEpochFilePrefix``; our
  commit log always starts at offset 0 and has no file deletion, so a log with a deleted prefix cannot exist.
* testTruncateEpochLogAndChangeMaster — same reason (its steps 5-6, a master change in which the old master
  rejoins as a slave, are covered by ``test_change_role_many_times`` and ``test_confirm_offset``).

``test_add_broker_and_sync_from_last_file`` is a strict xfail: with the Java test's 1700-byte files our model cannot
close a file with a filler, so the start of the master's last mapped file lies inside a message (see its reason).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rmqha.impl.broker.broker import BrokerNode
from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.world import Simulation

SEED = 1
BODY = 120  # 10 messages take 1581 bytes (Java's take 1580)
AWAIT = 30_000  # checkMessage's await().atMost(30, SECONDS)


class Cluster:
    """One simulated broker set plus the observations it emitted (it is the simulation's recorder)."""

    def __init__(self, brokers: int, *, all_ack: bool, schedule: list[dict[str, Any]],
                 late: dict[str, int] | None = None, **store: Any) -> None:
        cfg = default_config("safe" if all_ack else "defaults")
        cfg.cluster.brokers = brokers
        cfg.workload.produce_interval = 0  # only the scripted sends
        cfg.workload.consume_interval = 0
        cfg.workload.route_refresh = 1000  # the producer finds a new master within a second
        if not all_ack:  # init(mappedFileSize)
            cfg.store.in_sync_replicas = 2
            cfg.store.ha_send_heartbeat_interval = 1000
        for key, value in store.items():
            setattr(cfg.store, key, value)
        # b1 boots alone so that it becomes controller id 1 and the first master; the others follow
        starts = {f"b{i}": 1000 for i in range(2, brokers + 1)}
        starts.update(late or {})
        boot = [{"t": 0, "do": "crash", "node": b} for b in starts]
        boot += [{"t": t, "do": "restart", "node": b} for b, t in starts.items()]
        actions = sorted(boot + schedule, key=lambda a: a["t"])
        self.lines: list[dict[str, Any]] = []
        self.sim = Simulation(cfg, SEED, schedule=actions, max_time=0, recorder=self)

    # ---- recorder protocol
    def step(self, step: int, now: int, event: Any, obs: list[dict[str, Any]]) -> None:
        self.lines.extend(dict(o, t=now) for o in obs)

    def finish(self, sim: Simulation) -> None:
        pass

    # ---- driving
    def run_until(self, t: int) -> None:
        self.sim.max_time = t
        violation = self.sim.run()
        assert violation is None, violation.to_dict()
        assert self.sim.now <= t

    def wait_for(self, cond: Callable[[], bool], within: int = AWAIT, tick: int = 100) -> int:
        """Advance in ``tick`` steps until ``cond()`` holds; returns the time it first held."""
        deadline = self.sim.max_time + within
        while not cond():
            assert self.sim.max_time < deadline, "condition not reached in time"
            self.run_until(self.sim.max_time + tick)
        return self.sim.max_time

    def broker(self, name: str) -> BrokerNode:
        node = self.sim.broker(name)
        assert node is not None, f"{name} is down"
        return node

    def check_message(self, name: str, total: int, start: int = 0) -> None:
        """``checkMessage``: ``name``'s consume queue holds ``total`` messages from queue offset ``start``."""
        self.wait_for(lambda: self.sim.broker(name) is not None
                      and len(self.broker(name).store.dispatched) - start >= total)

    def put_status(self, key: str) -> str:
        """The broker's status for the put of ``key`` (what ``putMessage`` returned in Java)."""
        results = [o["status"] for o in self.lines if o["k"] == "brk.put-result" and o["key"] == key]
        assert len(results) == 1, results
        return results[0]

    def observed(self, kind: str, node: str) -> list[dict[str, Any]]:
        return [o for o in self.lines if o["k"] == kind and o["n"] == node]

    def controller_sss(self) -> tuple[set[int], int]:
        ctl = self.sim.controller_node()
        assert ctl is not None
        info = ctl.rim.sync_state_set_info_table[self.sim.cfg.broker.broker_name]
        return set(info.sync_state_set), info.master_epoch


def produce(t: int, count: int = 10) -> dict[str, Any]:
    return {"t": t, "do": "produce", "count": count, "size": BODY}


def keys(node: BrokerNode) -> list[str]:
    return [r.key for r in node.store.commitlog.records]


def assert_master(node: BrokerNode, broker_id: int, epoch: int) -> None:
    status = node.status()
    assert (status["role"], status["id"], status["masterEpoch"], status["fenced"]) == ("MASTER", broker_id, epoch,
                                                                                       False)


def assert_slave_of(node: BrokerNode, master_id: int, epoch: int) -> None:
    status = node.status()
    assert (status["role"], status["master"], status["masterEpoch"]) == ("SLAVE", master_id, epoch)


def assert_same_log(slave: BrokerNode, master: BrokerNode) -> None:
    assert bytes(slave.store.commitlog.data) == bytes(master.store.commitlog.data)
    assert slave.status()["epochs"] == master.status()["epochs"]


# ------------------------------------------------------------------------------------------------- tests


def test_confirm_offset():
    """AutoSwitchHATest.testConfirmOffset.

    allAck, SSS {1, 2}: b2 syncs 10 messages; with b2 gone (and the shrink unable to reach the controller) a put
    times out and confirmOffset stays; b2 then becomes master at epoch 2 and writes 10 more; b1 comes back as its
    slave, truncates its unconfirmed tail to the epoch-1 end and syncs all 20.
    """
    c = Cluster(2, all_ack=True, schedule=[
        produce(10_000),
        # Step2: the master loses b2; its shrink proposal cannot reach the controller (Java has none)
        {"t": 20_000, "do": "partition", "id": "ctl", "links": [["b1", "ctl"], ["ctl", "b1"]]},
        {"t": 20_000, "do": "crash", "node": "b2"},
        produce(21_000, 1),
        # Step3: b1 goes down, b2 comes back and is elected (the controller still has it in the SSS)
        {"t": 26_000, "do": "crash", "node": "b1"},
        {"t": 26_000, "do": "heal", "id": "ctl"},
        {"t": 27_000, "do": "restart", "node": "b2"},
        produce(40_000),
        # Step4: b1 comes back as b2's slave
        {"t": 45_000, "do": "restart", "node": "b1"},
    ])
    # Step1
    c.run_until(9_000)
    b1 = c.broker("b1")
    assert_master(b1, 1, 1)
    assert c.broker("b1").ha.sync_state_set == {1, 2}
    c.run_until(10_000)
    c.check_message("b2", 10)
    assert all(c.put_status(f"p1-{i}") == "PUT_OK" for i in range(1, 11))
    c.run_until(19_000)
    confirm = b1.store.get_confirm_offset()
    assert confirm == b1.store.max_phy_offset == 1581
    assert_same_log(c.broker("b2"), b1)

    # Step2: the put fails, confirmOffset does not move: b2 is still in the SSS but has no connection
    c.run_until(25_000)
    assert c.sim.broker("b2") is None
    assert c.put_status("p1-11") == "FLUSH_SLAVE_TIMEOUT"
    assert b1.ha.sync_state_set == {1, 2}
    assert b1.ha.get_sync_state_set() == {1, 2}
    assert b1.store.max_phy_offset == 1581 + 159  # written, never rolled back
    assert b1.store.get_confirm_offset() == confirm

    # Step3: b2 is master at epoch 2 with SSS {2}; it writes 10 more
    c.wait_for(lambda: c.sim.broker("b2") is not None and c.broker("b2").status()["role"] == "MASTER")
    b2 = c.broker("b2")
    assert_master(b2, 2, 2)
    assert b2.ha.sync_state_set == {2}
    assert b2.status()["epochs"] == [[1, 0], [2, confirm]]
    c.run_until(44_000)
    assert all(c.put_status(f"p1-{i}") == "PUT_OK" for i in range(12, 22))
    assert b2.store.max_phy_offset == confirm + 1590

    # Step4: b1 truncates the dirty message (to the end of epoch 1) and syncs from b2
    c.run_until(45_000)
    c.check_message("b1", 20)
    b1 = c.broker("b1")
    assert_slave_of(b1, 2, 2)
    truncations = c.observed("ha.truncate", "b1")
    assert [(o["point"], o["before"]) for o in truncations] == [(confirm, confirm + 159)]
    assert "p1-11" not in keys(b1)
    assert_same_log(b1, b2)
    assert len(keys(b1)) == 20


def test_async_learner_broker_role():
    """AutoSwitchHATest.testAsyncLearnerBrokerRole.

    b2 is an async learner: it replicates every message but the master never adds it to the SyncStateSet.
    (``asyncLearner`` is set on every broker here, there is one store config; only a slave's handshake reads it.)
    """
    c = Cluster(2, all_ack=False, async_learner=True, schedule=[produce(10_000)])
    c.run_until(9_000)
    b1, b2 = c.broker("b1"), c.broker("b2")
    assert_master(b1, 1, 1)
    assert_slave_of(b2, 1, 1)
    assert [conn.async_learner for conn in b1.ha.connections.values()] == [True]
    c.check_message("b2", 10)
    assert_same_log(b2, b1)
    c.run_until(40_000)  # several SSS checks and slave acks later
    assert 2 not in b1.ha.get_sync_state_set()
    assert b1.ha.sync_state_set == {1}
    assert not b1.ha.is_synchronizing_sync_state_set
    assert c.observed("ha.expand", "b1") == []
    assert c.controller_sss() == ({1}, 1)


def test_option_all_ack_in_sync_state_set():
    """AutoSwitchHATest.testOptionAllAckInSyncStateSet.

    The SSS listener sees the expansion to {1, 2}; after b2 goes away with the SSS still {1, 2}, an allAck put
    ends with FLUSH_SLAVE_TIMEOUT.
    """
    c = Cluster(2, all_ack=True, schedule=[
        produce(10_000),
        {"t": 20_000, "do": "partition", "id": "ctl", "links": [["b1", "ctl"], ["ctl", "b1"]]},
        {"t": 20_000, "do": "crash", "node": "b2"},
        produce(21_000, 1),
    ])
    seen: list[set[int]] = []
    c.broker("b1").ha.register_sync_state_set_changed_listener(seen.append)
    c.run_until(10_000)
    c.check_message("b2", 10)
    assert seen and seen[-1] == {1, 2}
    assert seen[0] == {1, 2}  # the first proposal already held both

    c.run_until(19_000)
    b1 = c.broker("b1")
    assert b1.ha.sync_state_set == {1, 2}
    c.run_until(25_000)
    assert c.put_status("p1-11") == "FLUSH_SLAVE_TIMEOUT"
    assert b1.ha.get_sync_state_set() == {1, 2}


def test_change_role_many_times():
    """AutoSwitchHATest.testChangeRoleManyTimes (``@Ignore``d upstream as unstable on macOS; deterministic here).

    b1 master at epoch 1, then b2 at epoch 2, then b1 at epoch 3, 10 messages in each epoch; the slave of the
    moment always ends with the whole log and the same epoch entries.
    """
    c = Cluster(2, all_ack=False, schedule=[
        produce(10_000),
        {"t": 20_000, "do": "admin-elect", "brokerId": 2},
        produce(25_000),
        {"t": 40_000, "do": "admin-elect", "brokerId": 1},
        produce(45_000),
    ])
    # Step1
    c.run_until(10_000)
    assert_master(c.broker("b1"), 1, 1)
    c.check_message("b2", 10)
    c.run_until(19_000)
    end1 = c.broker("b1").store.max_phy_offset
    assert end1 == 1581

    # Step2: b2 master at epoch 2; b1 follows and gets 20
    c.run_until(24_000)
    b1, b2 = c.broker("b1"), c.broker("b2")
    assert_master(b2, 2, 2)
    assert_slave_of(b1, 2, 2)
    c.run_until(25_000)
    c.check_message("b1", 20)
    c.run_until(39_000)
    end2 = b2.store.max_phy_offset
    assert end2 == end1 + 1590
    assert_same_log(b1, b2)
    assert b1.status()["epochs"] == [[1, 0], [2, end1]]

    # Step3: b1 master at epoch 3; b2 follows and gets 30
    c.run_until(44_000)
    assert_master(b1, 1, 3)
    assert_slave_of(b2, 1, 3)
    c.run_until(45_000)
    c.check_message("b2", 30)
    c.run_until(60_000)
    assert_same_log(b2, b1)
    assert b2.status()["epochs"] == [[1, 0], [2, end1], [3, end2]]
    assert len(keys(b2)) == 30
    assert all(c.put_status(f"p1-{i}") == "PUT_OK" for i in range(1, 31))
    # no truncation was ever needed: each new slave already held a prefix of the new master's log
    assert [o["point"] for o in c.observed("ha.truncate", "b1")] == [end1]
    assert [o["point"] for o in c.observed("ha.truncate", "b2")] == [end2]


def test_add_broker():
    """AutoSwitchHATest.testAddBroker: a third broker added after 10 messages syncs them from b1."""
    c = Cluster(3, all_ack=False, late={"b3": 20_000}, schedule=[produce(10_000)])
    c.run_until(10_000)
    assert_master(c.broker("b1"), 1, 1)
    c.check_message("b2", 10)
    c.run_until(19_000)
    assert c.sim.broker("b3") is None

    # Step2: add b3
    c.run_until(20_000)
    c.check_message("b3", 10)
    b1, b3 = c.broker("b1"), c.broker("b3")
    assert_slave_of(b3, 1, 1)
    assert b3.status()["id"] == 3
    assert_same_log(b3, b1)
    c.wait_for(lambda: c.broker("b1").ha.sync_state_set == {1, 2, 3})
    assert c.controller_sss() == ({1, 2, 3}, 1)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "model gap: with syncFromLastFile the master starts at its last mapped file (max - max % fileSize), where "
    "the slave's first file starts (MappedFileQueue.getLastMappedFile(startOffset)); our CommitLog pads a file end "
    "(CommitLog.doAppend's END_OF_FILE blank) only with [sim] file_boundaries, which needs files of at least "
    "2 x message_size_max + 4 KiB, not the Java test's 1700 bytes, so that offset is inside a message. The run fails "
    "STORE-WHOLE-MESSAGES on b3. The rule itself runs in profile last-file (8 KiB files with fillers), checked by "
    "HA-TRANSFER-START."))
def test_add_broker_and_sync_from_last_file():
    """AutoSwitchHATest.testAddBrokerAndSyncFromLastFile.

    Mapped files of 1700 bytes, 20 messages on b1; b3, added later with ``syncFromLastFile``, must get only the
    messages of b1's last file (Java: 10 messages from queue offset 10). The Java test's second epoch on the same
    master (one epoch per file) does not matter to the sync-from-last-file rule and is left out.
    """
    size = 1700
    c = Cluster(3, all_ack=False, late={"b3": 20_000}, sync_from_last_file=True, mapped_file_size_commit_log=size,
                schedule=[produce(10_000), produce(15_000)])
    c.run_until(19_000)
    c.check_message("b2", 20)
    b1 = c.broker("b1")
    last_file = b1.store.max_phy_offset - b1.store.max_phy_offset % size
    assert last_file == size
    in_last_file = [r.key for r in b1.store.commitlog.records if r.offset >= last_file]

    c.run_until(20_000)
    c.wait_for(lambda: c.broker("b3").store.commitlog.records != [])
    c.run_until(c.sim.max_time + 10_000)
    b3 = c.broker("b3")
    assert b3.store.commitlog.torn == []
    assert keys(b3) == in_last_file


def test_check_synchronizing_sync_state_set_flag():
    """AutoSwitchHATest.testCheckSynchronizingSyncStateSetFlag.

    While the expansion to {1, 2} is unconfirmed (the controller's replies to b1 are lost) the master is
    synchronizing: acks and confirmOffset use the union {1, 2}; once the controller's SSS {1, 2} is adopted
    (``setSyncStateSet``) the flag clears.
    """
    c = Cluster(2, all_ack=False, schedule=[
        {"t": 2_000, "do": "partition", "id": "replies", "links": [["ctl", "b1"]]},
        produce(10_000),
        {"t": 14_000, "do": "heal", "id": "replies"},
    ])
    c.run_until(2_000)
    b1 = c.broker("b1")
    assert_master(b1, 1, 1)
    assert b1.ha.sync_state_set == {1}
    c.run_until(10_000)
    c.check_message("b2", 10)

    # Step2
    c.run_until(13_500)
    assert b1.ha.is_synchronizing_sync_state_set
    assert b1.store.get_confirm_offset() == b1.store.max_phy_offset == 1581
    assert b1.ha.get_sync_state_set() == {1, 2}
    assert b1.ha.sync_state_set == {1}
    assert b1.ha.in_sync_replicas_nums() == 2
    assert c.controller_sss() == ({1, 2}, 1)  # the controller took the proposal; its reply was lost

    # Step3: the controller-confirmed set arrives (next syncBrokerMetadata after the heal)
    when = c.wait_for(lambda: not b1.ha.is_synchronizing_sync_state_set, within=10_000)
    assert when > 14_000
    assert b1.ha.sync_state_set == {1, 2}
    assert b1.status()["sss"] == [1, 2]


def test_build_consume_queue_not_exceed_confirm_offset():
    """AutoSwitchHATest.testBuildConsumeQueueNotExceedConfirmOffset.

    The slave's checkpoint holds its confirmOffset; lowered to the end of the 5th message while it is down, the
    slave reloads with that confirmOffset and dispatches only 5 messages although its log holds 10.
    (Java lowers it to C - C/2, the 5th message's end because its messages are equal-sized; ours vary by a byte.)
    """
    c = Cluster(2, all_ack=False, schedule=[
        produce(10_000),
        {"t": 20_000, "do": "crash", "node": "b2"},
        {"t": 21_000, "do": "restart", "node": "b2"},
    ])
    c.run_until(10_000)
    c.check_message("b2", 10)
    c.run_until(19_000)
    b2 = c.broker("b2")
    tmp_confirm = b2.store.get_confirm_offset()
    assert tmp_confirm == b2.store.max_phy_offset == 1581
    fifth = b2.store.commitlog.records[4]
    set_confirm = fifth.offset + fifth.size

    c.run_until(20_000)
    assert c.sim.broker("b2") is None
    disk = c.sim.disks["b2"]
    assert disk.checkpoint_confirm == tmp_confirm
    disk.checkpoint_confirm = set_confirm

    c.run_until(21_000)  # loaded, still fenced, nothing heard yet
    b2 = c.broker("b2")
    assert b2.store.fenced
    assert b2.store.get_confirm_offset() == set_confirm
    assert b2.store.max_phy_offset == tmp_confirm
    assert [d.key for d in b2.store.dispatched] == keys(b2)[:5]
    c.check_message("b2", 5)

    # back in the set, the slave learns the master's confirmOffset and dispatches the rest
    c.check_message("b2", 10)
    assert b2.store.get_confirm_offset() == tmp_confirm
