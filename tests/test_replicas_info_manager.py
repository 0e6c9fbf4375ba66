"""Port of RocketMQ's ``ReplicasInfoManagerTest``.

Java: controller/src/test/java/org/apache/rocketmq/controller/impl/manager/ReplicasInfoManagerTest.java.

The class under test is ``rmqha.impl.controller.replicas_info.ReplicasInfoManager``, our model of
controller/src/main/java/org/apache/rocketmq/controller/impl/manager/ReplicasInfoManager.java.

How the Java set-up maps to ours:

* ``init()`` builds a ``ReplicasInfoManager`` with ``enableElectUncleanMaster=false`` and a started
  ``DefaultBrokerHeartbeatManager`` whose scan interval is so long that it never runs. Here the ``m`` fixture
  holds a ``ReplicasInfoManager(enable_elect_unclean_master=False)`` and a ``BrokerHeartbeatManager``; ours
  reads no clock, so every heartbeat and every liveness question is asked at ``NOW`` (= 0) and nothing scans.
* Every operation returns a ``ControllerResult``; like the Java helper ``apply(events)``, ``Manager.apply``
  feeds its events to ``apply_event`` (and keeps them, which ``test_serialize`` replays).
* The request headers become plain arguments. ``ElectMasterRequestHeader.ofBrokerTrigger(c, b, id)`` is
  ``elect_master(b, id, False, ...)``; ``ofControllerTrigger(b)`` and ``new ElectMasterRequestHeader(b)`` leave
  the broker id null: ``elect_master(b, None, False, ...)``; ``ofAdminTrigger(c, b, id)`` is
  ``elect_master(b, id, True, ...)``. ``new DefaultElectPolicy(predicate, getter)`` is ``ElectPolicy``.
* ``registerCheckCode`` is ``address;System.currentTimeMillis()`` in Java; here ``address;<counter>``.
* ``mockHeartbeatData*`` send the same heartbeats: a timeout of 10^10 ms is alive at ``NOW``, one of -10^4 ms is
  already expired (``lastUpdate + timeout < now``).
* The Java helpers check the state machine through ``getSyncStateData`` (with an always-true predicate) and
  ``getReplicaInfo``; ``replicas_info`` and ``replica_info`` below do the same on our bodies and headers.

``testSerialize`` round-trips the manager through ``serialize``/``deserializeFrom`` (RocketMQ 5.2+, the JRaft
controller's snapshots). The port calls our ``serialize`` / ``deserialize_from`` on the state ``mockMetaData``
built, and compares the whole state, field by field, which is stricter than the Java test (it compares the two
tables' key sets only; its loop over the fields compares nothing). ``test_event_log_replays_to_the_same_state`` keeps
the earlier check of the other persistence, the event log (DLedger's ``onSnapshotLoad`` returns false: a DLedger
controller rebuilds from its log).

Not ported: nothing; every ``@Test`` method of ``ReplicasInfoManagerTest`` has a counterpart below.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from rmqha.impl.codes import ResponseCode
from rmqha.impl.controller.elect_policy import ElectPolicy
from rmqha.impl.controller.heartbeat import BrokerHeartbeatManager
from rmqha.impl.controller.replicas_info import (
    ApplyBrokerIdEvent,
    CleanBrokerDataEvent,
    ControllerResult,
    ElectMasterEvent,
    EventMessage,
    ReplicasInfoManager,
    event_from_dict,
)

CLUSTER = "cluster-a"  # ControllerTestBase.DEFAULT_CLUSTER_NAME
BROKER_NAME = "broker-set-a"  # ControllerTestBase.DEFAULT_BROKER_NAME
IP = ("127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.1:9002")  # ControllerTestBase.DEFAULT_IP
NOW = 0  # the one instant at which heartbeats arrive and liveness is asked
ALIVE_LONG = 10_000_000_000  # heartbeat timeout that keeps a broker alive for the whole test
EXPIRED = -10_000  # heartbeat timeout that makes a broker inactive at once


def always(cluster: str, broker_name: str, broker_id: int) -> bool:
    return True


def all_but(*dead: int):
    """A ``BrokerValidPredicate`` that rejects the ids in ``dead``."""
    return lambda cluster, broker_name, broker_id: broker_id not in dead


class Manager:
    """The Java test's fields and helpers around one ``ReplicasInfoManager``."""

    def __init__(self, unclean: bool = False) -> None:
        self.unclean = unclean
        self.rim = ReplicasInfoManager(enable_elect_unclean_master=unclean)
        self.heartbeats = BrokerHeartbeatManager()
        self.log: list[EventMessage] = []
        self._check_seq = 0

    # ------------------------------------------------------------------------------------------ plumbing

    def apply(self, events: list[EventMessage]) -> None:
        for event in events:
            self.rim.apply_event(event)
            self.log.append(event)

    def replicas_info(self, broker_name: str) -> dict[str, Any]:
        """``getReplicasInfo``: the set's entry of ``getSyncStateData`` with every broker alive."""
        result = self.rim.get_sync_state_data([broker_name], always)
        assert result.code == ResponseCode.SUCCESS
        return result.body["replicasInfoTable"][broker_name]

    def replica_info(self, broker_name: str) -> ControllerResult:
        return self.rim.get_replica_info(broker_name)

    def heartbeat_policy(self) -> ElectPolicy:
        """``new DefaultElectPolicy(heartbeatManager::isBrokerActive, heartbeatManager::getBrokerLiveInfo)``."""
        hb = self.heartbeats
        return ElectPolicy(lambda c, b, i: hb.is_broker_active(NOW, c, b, i), hb.get_broker_live_info)

    def heartbeat(self, index: int, timeout: int, epoch: int, max_offset: int, priority: int) -> None:
        """``onBrokerHeartbeat(.., DEFAULT_IP[index], index + 1, timeout, null, epoch, maxOffset, -1, priority)``."""
        self.heartbeats.on_broker_heartbeat(NOW, CLUSTER, BROKER_NAME, IP[index], index + 1, timeout, None, epoch,
                                            max_offset, -1, priority)

    # ------------------------------------------------------------------------------------- Java helpers

    def register_new_broker(self, cluster: str, broker_name: str, address: str, expect_id: int,
                            expect_master: int | None) -> None:
        """``registerNewBroker``: getNextBrokerId, applyBrokerId, then registerBroker."""
        nxt = self.rim.get_next_broker_id(cluster, broker_name)
        assert nxt.code == ResponseCode.SUCCESS
        broker_id = nxt.header["nextBrokerId"]
        assert broker_id == expect_id
        self._check_seq += 1
        check_code = f"{address};{self._check_seq}"

        applied = self.rim.apply_broker_id(cluster, broker_name, broker_id, check_code)
        self.apply(applied.events)
        assert applied.code == ResponseCode.SUCCESS

        # a fresh replica is known but not in sync
        found = [r for r in self.replicas_info(broker_name)["notInSyncReplicas"] if r["brokerId"] == broker_id]
        assert len(found) == 1
        assert (found[0]["brokerName"], found[0]["brokerId"], found[0]["brokerAddress"]) == (
            broker_name, expect_id, address)

        registered = self.rim.register_broker(cluster, broker_name, expect_id, address, always)
        self.apply(registered.events)
        assert registered.code == ResponseCode.SUCCESS
        assert registered.header["masterBrokerId"] == expect_master

    def broker_elect_master(self, cluster: str, broker_id: int, broker_name: str, address: str,
                            first_try: bool, expect_elected: bool, valid=always) -> None:
        """``brokerElectMaster``: a broker-triggered election, checked against the state before and after."""
        before = self.replica_info(broker_name).header
        sss_before = self.replicas_info(broker_name)
        result = self.rim.elect_master(broker_name, broker_id, False, ElectPolicy(valid, None), cluster)
        self.apply(result.events)
        after = self.replica_info(broker_name).header
        response = result.header

        if first_try:
            assert result.code == ResponseCode.SUCCESS
            assert (response["masterEpoch"], response["syncStateSetEpoch"]) == (1, 1)
            assert (response["masterAddress"], response["masterBrokerId"]) == (address, broker_id)
            assert (after["masterAddress"], after["masterEpoch"], after["masterBrokerId"]) == (address, 1, broker_id)
            return
        old_master = before["masterBrokerId"]
        if old_master is not None and valid(cluster, broker_name, old_master):
            assert result.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
            assert response["masterAddress"] == before["masterAddress"]
            assert response["masterEpoch"] == before["masterEpoch"]
            assert response["masterBrokerId"] == old_master
            assert after["masterBrokerId"] == old_master
            assert result.events == []
            return
        in_sync = any((r["brokerName"], r["brokerId"], r["brokerAddress"]) == (broker_name, broker_id, address)
                      for r in sss_before["inSyncReplicas"])
        if in_sync or self.unclean:
            assert result.code == ResponseCode.SUCCESS
            assert after["masterEpoch"] == before["masterEpoch"] + 1
            if expect_elected:
                assert (response["masterAddress"], response["masterBrokerId"]) == (address, broker_id)
                assert (after["masterAddress"], after["masterBrokerId"]) == (address, broker_id)
        else:
            assert result.code == ResponseCode.CONTROLLER_ELECT_MASTER_FAILED

    def alter_new_in_sync_set(self, broker_name: str, master: int, master_epoch: int, new_sss: set[int],
                              sss_epoch: int) -> bool:
        """``alterNewInSyncSet``: propose, apply, then read the SSS back from getReplicaInfo."""
        result = self.rim.alter_sync_state_set(broker_name, master, master_epoch, new_sss, sss_epoch, always)
        assert result.code == ResponseCode.SUCCESS, result.remark
        self.apply(result.events)
        body = self.replica_info(broker_name).body
        assert body["syncStateSet"] == sorted(new_sss)
        assert body["syncStateSetEpoch"] == sss_epoch + 1
        return True

    def mock_meta_data(self) -> None:
        """``mockMetaData``: three brokers, 1 elected first (mE 1, sE 1), then SSS {1, 2, 3} at sE 2."""
        self.register_new_broker(CLUSTER, BROKER_NAME, IP[0], 1, None)
        self.register_new_broker(CLUSTER, BROKER_NAME, IP[1], 2, None)
        self.register_new_broker(CLUSTER, BROKER_NAME, IP[2], 3, None)
        self.broker_elect_master(CLUSTER, 1, BROKER_NAME, IP[0], True, True)
        self.broker_elect_master(CLUSTER, 2, BROKER_NAME, IP[1], False, False)
        self.broker_elect_master(CLUSTER, 3, BROKER_NAME, IP[2], False, False)
        assert self.alter_new_in_sync_set(BROKER_NAME, 1, 1, {1, 2, 3}, 1)

    def mock_heartbeat_data_master_still_alive(self) -> None:
        self.heartbeat(0, ALIVE_LONG, 1, 1, 0)
        self.heartbeat(1, ALIVE_LONG, 1, 2, 0)
        self.heartbeat(2, ALIVE_LONG, 1, 3, 0)

    def mock_heartbeat_data_higher_epoch(self) -> None:
        self.heartbeat(0, EXPIRED, 1, 3, 0)
        self.heartbeat(1, ALIVE_LONG, 1, 2, 0)
        self.heartbeat(2, ALIVE_LONG, 0, 3, 0)

    def mock_heartbeat_data_higher_offset(self) -> None:
        self.heartbeat(0, EXPIRED, 1, 3, 0)
        self.heartbeat(1, ALIVE_LONG, 1, 2, 0)
        self.heartbeat(2, ALIVE_LONG, 1, 3, 0)

    def mock_heartbeat_data_higher_priority(self) -> None:
        self.heartbeat(0, EXPIRED, 1, 3, 3)
        self.heartbeat(1, ALIVE_LONG, 1, 3, 2)
        self.heartbeat(2, ALIVE_LONG, 1, 3, 1)


@pytest.fixture
def m() -> Manager:
    """``ReplicasInfoManagerTest.init``."""
    return Manager(unclean=False)


def assert_set_state(info: dict[str, Any], master: int, address: str, master_epoch: int, sss_epoch: int,
                     in_sync: int, not_in_sync: int) -> None:
    assert (info["masterBrokerId"], info["masterAddress"]) == (master, address)
    assert (info["masterEpoch"], info["syncStateSetEpoch"]) == (master_epoch, sss_epoch)
    assert (len(info["inSyncReplicas"]), len(info["notInSyncReplicas"])) == (in_sync, not_in_sync)


# ------------------------------------------------------------------------------------------------- tests


def test_register_broker_success(m: Manager):
    """ReplicasInfoManagerTest.testRegisterBrokerSuccess: after mockMetaData, 1 leads {1, 2, 3} at mE 1, sE 2."""
    m.mock_meta_data()
    assert_set_state(m.replicas_info(BROKER_NAME), 1, IP[0], 1, 2, 3, 0)


def test_register_with_master_exist_resp(m: Manager):
    """ReplicasInfoManagerTest.testRegisterWithMasterExistResp: a broker registering late is told the master."""
    m.register_new_broker(CLUSTER, BROKER_NAME, IP[0], 1, None)
    m.register_new_broker(CLUSTER, BROKER_NAME, IP[1], 2, None)
    m.broker_elect_master(CLUSTER, 1, BROKER_NAME, IP[0], True, True)
    m.broker_elect_master(CLUSTER, 2, BROKER_NAME, IP[1], False, False)
    m.register_new_broker(CLUSTER, BROKER_NAME, IP[2], 3, 1)
    m.broker_elect_master(CLUSTER, 3, BROKER_NAME, IP[2], False, False)
    assert_set_state(m.replicas_info(BROKER_NAME), 1, IP[0], 1, 1, 1, 2)


def test_register_with_old_master_inactive(m: Manager):
    """ReplicasInfoManagerTest.testRegisterWithOldMasterInactive: only 3 alive, so 3 takes over at mE 2."""
    m.mock_meta_data()
    m.broker_elect_master(CLUSTER, 3, BROKER_NAME, IP[2], False, True, valid=lambda c, b, i: i == 3)
    assert_set_state(m.replicas_info(BROKER_NAME), 3, IP[2], 2, 3, 1, 2)


def test_elect_master_old_master_still_alive(m: Manager):
    """ReplicasInfoManagerTest.testElectMasterOldMasterStillAlive."""
    m.mock_meta_data()
    m.mock_heartbeat_data_master_still_alive()
    result = m.rim.elect_master(BROKER_NAME, None, False, m.heartbeat_policy())
    assert result.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
    assert result.events == []


def test_elect_master_prefer_higher_epoch(m: Manager):
    """ReplicasInfoManagerTest.testElectMasterPreferHigherEpoch: 1 expired; 2 (epoch 1) beats 3 (epoch 0)."""
    m.mock_meta_data()
    m.mock_heartbeat_data_higher_epoch()
    response = m.rim.elect_master(BROKER_NAME, None, False, m.heartbeat_policy()).header
    assert (response["masterAddress"], response["masterBrokerId"], response["masterEpoch"]) == (IP[1], 2, 2)


def test_elect_master_prefer_higher_offset_when_epoch_equals(m: Manager):
    """ReplicasInfoManagerTest.testElectMasterPreferHigherOffsetWhenEpochEquals: same epoch, 3 has offset 3 > 2."""
    m.mock_meta_data()
    m.mock_heartbeat_data_higher_offset()
    response = m.rim.elect_master(BROKER_NAME, None, False, m.heartbeat_policy()).header
    assert (response["masterAddress"], response["masterBrokerId"], response["masterEpoch"]) == (IP[2], 3, 2)


def test_elect_master_prefer_higher_priority_when_epoch_and_offset_equals(m: Manager):
    """ReplicasInfoManagerTest.testElectMasterPreferHigherPriorityWhenEpochAndOffsetEquals.

    Epoch and offset tie between 2 and 3; the smaller ``electionPriority`` value (3's 1) wins.
    """
    m.mock_meta_data()
    m.mock_heartbeat_data_higher_priority()
    response = m.rim.elect_master(BROKER_NAME, None, False, m.heartbeat_policy()).header
    assert (response["masterAddress"], response["masterBrokerId"], response["masterEpoch"]) == (IP[2], 3, 2)


def test_elect_master(m: Manager):
    """ReplicasInfoManagerTest.testElectMaster: a controller-triggered election, then three admin elections."""
    m.mock_meta_data()
    result = m.rim.elect_master(BROKER_NAME, None, False, ElectPolicy(all_but(1), None))
    response = result.header
    assert response["masterEpoch"] == 2
    assert response["masterBrokerId"] != 1
    assert response["masterAddress"] != IP[0]
    m.apply(result.events)
    new_master = response["masterBrokerId"]
    assert m.alter_new_in_sync_set(BROKER_NAME, new_master, response["masterEpoch"], {1, 2, 3},
                                   response["syncStateSetEpoch"])

    # the admin designates 1, which is not alive
    r1 = m.rim.elect_master(BROKER_NAME, 1, True, ElectPolicy(all_but(1), None), CLUSTER)
    assert r1.code == ResponseCode.CONTROLLER_ELECT_MASTER_FAILED
    assert r1.events == []

    # the admin designates the current master, which is alive
    r2 = m.rim.elect_master(BROKER_NAME, new_master, True, ElectPolicy(always, None), CLUSTER)
    assert r2.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST

    # the admin designates 1 while the current master is down: 1 is elected at mE 3
    r3 = m.rim.elect_master(BROKER_NAME, 1, True, ElectPolicy(all_but(new_master), None), CLUSTER)
    assert r3.code == ResponseCode.SUCCESS
    assert (r3.header["masterBrokerId"], r3.header["masterAddress"], r3.header["masterEpoch"]) == (1, IP[0], 3)


def test_all_replicas_shutdown_and_restart(m: Manager):
    """ReplicasInfoManagerTest.testAllReplicasShutdownAndRestart.

    With the SSS shrunk to {1} and 1 down, a controller-triggered election finds nobody: it still emits one
    not-elected event, which clears the master and bumps mE to 2.
    """
    m.mock_meta_data()
    assert m.alter_new_in_sync_set(BROKER_NAME, 1, 1, {1}, 2)

    result = m.rim.elect_master(BROKER_NAME, None, False, ElectPolicy(all_but(1), None))
    assert result.code == ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE
    assert len(result.events) == 1
    event = result.events[0]
    assert isinstance(event, ElectMasterEvent) and not event.new_master_elected
    m.apply(result.events)

    info = m.replica_info(BROKER_NAME).header
    assert info["masterAddress"] is None
    assert info["masterEpoch"] == 2


def test_clean_broker_data(m: Manager):
    """ReplicasInfoManagerTest.testCleanBrokerData: the liveness checks, then the unknown-set check."""
    never = all_but(1, 2, 3)
    m.mock_meta_data()

    r1 = m.rim.clean_broker_data(CLUSTER, BROKER_NAME, "1", False, always)
    assert r1.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA

    r2 = m.rim.clean_broker_data(CLUSTER, BROKER_NAME, None, False, always)
    assert r2.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    assert r2.remark == "Broker broker-set-a is still alive, clean up failure"

    r3 = m.rim.clean_broker_data(CLUSTER, BROKER_NAME, "1", False, never)
    assert r3.code == ResponseCode.SUCCESS
    assert r3.events == [CleanBrokerDataEvent(BROKER_NAME, frozenset({1}))]

    r4 = m.rim.clean_broker_data(CLUSTER, BROKER_NAME, "1;2;3", False, never)
    assert r4.code == ResponseCode.SUCCESS
    assert r4.events == [CleanBrokerDataEvent(BROKER_NAME, frozenset({1, 2, 3}))]

    r5 = m.rim.clean_broker_data(CLUSTER, "broker12", "1;2;3", True, never)
    assert r5.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    assert r5.remark == "Broker broker12 is not existed,clean broker data failure."

    r6 = m.rim.clean_broker_data(None, "broker12", "1;2;3", True, lambda c, b, i: c is not None)
    assert r6.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA

    # cleaning "living" brokers skips every check but existence (and drops the id list: the whole set goes)
    r7 = m.rim.clean_broker_data(None, BROKER_NAME, "1;2;3", True, never)
    assert r7.code == ResponseCode.SUCCESS
    assert r7.events == [CleanBrokerDataEvent(BROKER_NAME, None)]

    # none of these results was applied: the set is untouched
    assert_set_state(m.replicas_info(BROKER_NAME), 1, IP[0], 1, 2, 3, 0)


def test_serialize(m: Manager):
    """ReplicasInfoManagerTest.testSerialize: ``serialize`` the state of ``mockMetaData``, ``deserializeFrom`` into a
    new manager, and find the same tables (here every field: cluster name, ids, addresses, check codes, the next-id
    counter, master, epochs and SyncStateSet)."""
    m.mock_meta_data()
    data = m.rim.serialize()
    restored = ReplicasInfoManager(enable_elect_unclean_master=False)
    restored.deserialize_from(data)

    assert sorted(restored.replica_info_table) == sorted(m.rim.replica_info_table) == [BROKER_NAME]
    assert sorted(restored.sync_state_set_info_table) == sorted(m.rim.sync_state_set_info_table) == [BROKER_NAME]
    assert restored.replica_info_table == m.rim.replica_info_table
    assert restored.sync_state_set_info_table == m.rim.sync_state_set_info_table
    replicas = restored.replica_info_table[BROKER_NAME]
    info = restored.sync_state_set_info_table[BROKER_NAME]
    assert (replicas.cluster_name, info.cluster_name, replicas.next_assign_broker_id) == (CLUSTER, CLUSTER, 4)
    assert replicas.broker_id_info == {1: (IP[0], f"{IP[0]};1"), 2: (IP[1], f"{IP[1]};2"), 3: (IP[2], f"{IP[2]};3")}
    assert (info.master_broker_id, info.master_epoch, info.sync_state_set_epoch, info.sync_state_set) == (
        1, 1, 2, {1, 2, 3})
    assert restored.serialize() == data  # deterministic: equal states, equal bytes


def test_deserialize_replaces_the_whole_state(m: Manager):
    """deserializeFrom clears both tables first; a set the snapshot lacks is gone, a half-present set (one table only,
    after a partial clean) comes back half-present, and the restored manager answers as the original does."""
    m.mock_meta_data()
    m.apply([CleanBrokerDataEvent(BROKER_NAME, frozenset({3}))])  # id 3 leaves both tables
    other = _half_present()
    other.deserialize_from(m.rim.serialize())
    assert other.snapshot() == m.rim.snapshot()
    assert other.get_replica_info(BROKER_NAME).header == m.rim.get_replica_info(BROKER_NAME).header
    assert other.get_next_broker_id(CLUSTER, BROKER_NAME).header["nextBrokerId"] == 4

    half = ReplicasInfoManager()
    half.deserialize_from(_half_present().serialize())
    assert (sorted(half.replica_info_table), sorted(half.sync_state_set_info_table)) == (["broker-set-b"], [])
    replicas = half.replica_info_table["broker-set-b"]
    assert (replicas.cluster_name, replicas.broker_id_info, replicas.next_assign_broker_id) == (
        "cluster-b", {2: ("h:2", "h:2;8")}, 3)
    with pytest.raises(ValueError):
        half.deserialize_from(m.rim.serialize()[:-3])


def _half_present() -> ReplicasInfoManager:
    """A set in the replica table only: ids 1 and 2, 1 elected, then 1 cleaned (the SSS {1} empties and goes)."""
    rim = ReplicasInfoManager()
    rim.apply_event(ApplyBrokerIdEvent("cluster-b", "broker-set-b", "h:1", 1, "h:1;9"))
    rim.apply_event(ApplyBrokerIdEvent("cluster-b", "broker-set-b", "h:2", 2, "h:2;8"))
    rim.apply_event(ElectMasterEvent(True, "broker-set-b", 1))
    rim.apply_event(CleanBrokerDataEvent("broker-set-b", frozenset({1})))
    assert (sorted(rim.replica_info_table), sorted(rim.sync_state_set_info_table)) == (["broker-set-b"], [])
    return rim


def test_event_log_replays_to_the_same_state(m: Manager):
    """The DLedger controller's persistence: the event log, each event through its JSON form, replayed into a fresh
    manager gives the same state."""
    m.mock_meta_data()
    data = json.dumps([event.to_dict() for event in m.log])

    restored = ReplicasInfoManager(enable_elect_unclean_master=False)
    for d in json.loads(data):
        restored.apply_event(event_from_dict(d))

    assert sorted(restored.replica_info_table) == sorted(m.rim.replica_info_table) == [BROKER_NAME]
    assert sorted(restored.sync_state_set_info_table) == sorted(m.rim.sync_state_set_info_table) == [BROKER_NAME]
    assert restored.replica_info_table == m.rim.replica_info_table
    assert restored.sync_state_set_info_table == m.rim.sync_state_set_info_table
    assert restored.snapshot() == m.rim.snapshot()
    assert restored.snapshot()[BROKER_NAME]["nextId"] == 4
