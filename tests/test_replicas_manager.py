"""Port of RocketMQ's ``ReplicasManagerTest`` (broker/src/test/java/org/apache/rocketmq/broker/controller/).

The Java test mocks ``BrokerOuterAPI`` and starts a ``ReplicasManager`` against it; its ``before()`` then sleeps
5 s so that the first ``schedulingSyncBrokerMetadata`` round has run. Here one ``BrokerNode`` runs under
``tests.harness.ActorDriver`` and the test answers its controller requests with the same values as the mocks:

* ``getControllerMetaData``: the controller leader; ``getNextBrokerId``: 1; ``applyBrokerId``: success;
* ``registerBrokerToController``: no master, SyncStateSet {1};
* ``brokerElect``: master 1 (this broker) at masterEpoch 2, syncStateSetEpoch 2, SyncStateSet {1};
* ``getReplicaInfo`` (3 s later): master 1 at masterEpoch 3, SyncStateSet {1} at syncStateSetEpoch 3.

So every test starts from a master at epoch 3 (SyncStateSet {1}, sE 3). Each Java test only asserts that its
calls do not throw; they all pass masterEpoch 3, which the strictly-greater epoch guards ignore, so the ports
also assert that nothing changed, then check the guard's boundary with epoch 4.

Not ported:

* testUpdateControllerAddr — resolving the controller addresses by DNS (``fetchControllerAddrByDnsLookup``,
  ``BrokerOuterAPI.dnsLookupAddressByDomain``) is not modelled: a broker's controller list is fixed when it is
  built.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

import pytest
from rmqha.impl.broker.broker import BrokerNode
from rmqha.impl.broker.replicas_manager import RegisterState, State
from rmqha.impl.codes import MASTER_ID, BrokerRole, RequestCode, ResponseCode
from rmqha.impl.rng import DetRng
from rmqha.impl.runtime import Command
from rmqha.impl.sim.config import default_config
from rmqha.impl.store.disk import BrokerDisk

from tests.harness import ActorDriver

BROKER_ID_1 = 1
BROKER_ID_2 = 2
OLD_MASTER_EPOCH = 2
NEW_MASTER_EPOCH = 3
OLD_MASTER_ADDRESS = "b1:10911"  # this broker's own address (brokerController.getBrokerAddr())
NEW_MASTER_ADDRESS = "b2:10911"
CONTROLLER_LEADER = "ctl:9878"


class MockController:
    """The mocked ``BrokerOuterAPI``: answers the broker's requests and keeps everything it sent."""

    def __init__(self, driver: ActorDriver) -> None:
        self.d = driver
        self.sent: list[tuple[str, Command]] = []

    def request(self, code: RequestCode) -> Command:
        """The one pending request with ``code`` among what the broker sent since the last look."""
        fresh = self.d.take_sent()
        self.sent.extend(fresh)
        found = [cmd for _, cmd in fresh if cmd.code == code and not cmd.oneway]
        assert len(found) == 1, [RequestCode(cmd.code).name for _, cmd in fresh]
        return found[0]

    def answer(self, code: RequestCode, header: dict[str, Any], body: Any = None) -> Command:
        req = self.request(code)
        self.d.reply(req, ResponseCode.SUCCESS, header, body)
        return req

    def sent_since(self) -> list[tuple[str, str]]:
        """(destination, request name) of what the broker sent since the last look; heartbeats left out."""
        fresh = self.d.take_sent()
        self.sent.extend(fresh)
        return [(dst, RequestCode(cmd.code).name) for dst, cmd in fresh if cmd.code != RequestCode.BROKER_HEARTBEAT]


class Started:
    def __init__(self, node: BrokerNode, disk: BrokerDisk, driver: ActorDriver, ctl: MockController) -> None:
        self.node, self.disk, self.d, self.ctl = node, disk, driver, ctl
        self.rm = node.replicas

    def call(self, job: Generator) -> None:
        """Run one ReplicasManager method to its end, as the Java test calls it on its own thread."""
        strand = self.node.spawn("test", job)
        self.d._drain()
        assert not strand.busy  # it neither blocked on the monitor nor waited for an RPC

    def snapshot(self) -> dict[str, Any]:
        node = self.node
        return {**node.status(), "nameserverId": node.configured_broker_id, "masterAddress": self.rm.master_address,
                "haClient": node.ha.client is not None, "dataVersion": node.data_version}


@pytest.fixture
def started() -> Started:
    """``ReplicasManagerTest.before``: start against the mocked controller, then let 5 s pass."""
    cfg = default_config("defaults")
    disk = BrokerDisk()
    node = BrokerNode("b1", cfg.broker, cfg.store, disk, DetRng(1), ["ctl"], "ns")
    d = ActorDriver(node)
    ctl = MockController(d)
    ctl.answer(RequestCode.CONTROLLER_GET_METADATA_INFO, {"controllerLeaderAddress": CONTROLLER_LEADER,
                                                           "isLeader": True})
    ctl.answer(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, {"nextBrokerId": BROKER_ID_1})
    ctl.answer(RequestCode.CONTROLLER_APPLY_BROKER_ID, {})
    ctl.answer(RequestCode.CONTROLLER_REGISTER_BROKER, {}, {"syncStateSet": [BROKER_ID_1]})
    ctl.answer(RequestCode.CONTROLLER_ELECT_MASTER,
               {"masterBrokerId": BROKER_ID_1, "masterAddress": OLD_MASTER_ADDRESS, "masterEpoch": OLD_MASTER_EPOCH,
                "syncStateSetEpoch": OLD_MASTER_EPOCH}, {"syncStateSet": [BROKER_ID_1]})
    d.advance(3000)  # schedulingSyncBrokerMetadata's first round
    ctl.answer(RequestCode.CONTROLLER_GET_REPLICA_INFO,
               {"masterBrokerId": BROKER_ID_1, "masterAddress": OLD_MASTER_ADDRESS, "masterEpoch": NEW_MASTER_EPOCH},
               {"syncStateSet": [BROKER_ID_1], "syncStateSetEpoch": NEW_MASTER_EPOCH})
    d.advance(2000)
    s = Started(node, disk, d, ctl)
    assert_master_at_epoch_3(s)
    ctl.sent_since()
    return s


def assert_master_at_epoch_3(s: Started) -> None:
    """The state ``before()`` leaves: registered as id 1, master at mE 3 with SSS {1} at sE 3, un-fenced."""
    rm, node = s.rm, s.node
    assert (rm.state, rm.register_state) == (State.RUNNING, RegisterState.REGISTERED)
    assert rm.broker_controller_id == BROKER_ID_1 and node.ha.local_broker_id == BROKER_ID_1
    assert s.disk.broker_identity == ("DefaultCluster", "broker-a", BROKER_ID_1) and s.disk.temp_identity is None
    assert (node.store.role, node.configured_broker_id, node.store.fenced, node.isolated) == (
        BrokerRole.SYNC_MASTER, MASTER_ID, False, False)
    assert (rm.master_broker_id, rm.master_address, rm.master_epoch) == (BROKER_ID_1, OLD_MASTER_ADDRESS,
                                                                         NEW_MASTER_EPOCH)
    assert (rm.sync_state_set, rm.sync_state_set_epoch) == ({BROKER_ID_1}, NEW_MASTER_EPOCH)
    assert node.ha.sync_state_set == {BROKER_ID_1} and not node.ha.is_synchronizing_sync_state_set
    # epoch 2 starts at 0; epoch 3 would start at 0 too, so appendEntry refuses it (changeToMasterWhenLastRoleIsMaster)
    assert node.status()["epochs"] == [[OLD_MASTER_EPOCH, 0]]
    assert node.ha.client is None and node.data_version == NEW_MASTER_EPOCH


# ------------------------------------------------------------------------------------------------- tests


def test_change_broker_role(started: Started):
    """ReplicasManagerTest.changeBrokerRoleTest.

    ``changeBrokerRole`` with masterEpoch 3, naming another master (b2, empty SSS) and then this broker (SSS
    {1, 2}: the Java test adds broker 2 to set A): neither is greater than the current 3, both are ignored.
    """
    s = started
    before = s.snapshot()
    s.call(s.rm.change_broker_role(BROKER_ID_2, NEW_MASTER_ADDRESS, NEW_MASTER_EPOCH, OLD_MASTER_EPOCH, set()))
    s.call(s.rm.change_broker_role(BROKER_ID_1, OLD_MASTER_ADDRESS, NEW_MASTER_EPOCH, OLD_MASTER_EPOCH,
                                   {BROKER_ID_1, BROKER_ID_2}))
    assert s.snapshot() == before
    assert_master_at_epoch_3(s)
    assert s.ctl.sent_since() == []  # no nameserver re-registration, no alterSyncStateSet

    # the same notification at masterEpoch 4 is followed: b2 becomes the master, this broker its slave
    s.d.deliver("ctl", Command(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, 99, {
        "masterBrokerId": BROKER_ID_2, "masterAddress": NEW_MASTER_ADDRESS, "masterEpoch": NEW_MASTER_EPOCH + 1,
        "syncStateSetEpoch": NEW_MASTER_EPOCH + 1}, {"syncStateSet": [BROKER_ID_2]}))
    assert (s.node.store.role, s.rm.master_broker_id, s.rm.master_epoch) == (BrokerRole.SLAVE, BROKER_ID_2,
                                                                              NEW_MASTER_EPOCH + 1)
    assert s.node.configured_broker_id == BROKER_ID_1
    assert ("ns", "REGISTER_BROKER") in s.ctl.sent_since()


def test_change_to_master(started: Started):
    """ReplicasManagerTest.changeToMasterTest: ``changeToMaster(3, 2, {1})`` on the master at epoch 3 is a no-op."""
    s = started
    before = s.snapshot()
    s.call(s.rm.change_to_master(NEW_MASTER_EPOCH, OLD_MASTER_EPOCH, {BROKER_ID_1}))
    assert s.snapshot() == before
    assert_master_at_epoch_3(s)
    assert s.ctl.sent_since() == []

    # epoch 4: still this broker, so only the epoch moves (changeToMasterWhenLastRoleIsMaster); the SSS is taken
    # because its epoch is greater too
    s.call(s.rm.change_to_master(NEW_MASTER_EPOCH + 1, NEW_MASTER_EPOCH + 1, {BROKER_ID_1, BROKER_ID_2}))
    assert (s.rm.master_epoch, s.rm.sync_state_set, s.rm.sync_state_set_epoch) == (
        NEW_MASTER_EPOCH + 1, {BROKER_ID_1, BROKER_ID_2}, NEW_MASTER_EPOCH + 1)
    assert s.node.store.role == BrokerRole.SYNC_MASTER and s.node.data_version == NEW_MASTER_EPOCH + 1
    assert s.node.status()["epochs"] == [[OLD_MASTER_EPOCH, 0]]  # epoch 4 would start at 0 as well
    assert ("ns", "REGISTER_BROKER") in s.ctl.sent_since()


def test_change_to_slave(started: Started):
    """ReplicasManagerTest.changeToSlaveTest: ``changeToSlave(b2, 3, 2)`` on the master at epoch 3 is a no-op."""
    s = started
    before = s.snapshot()
    s.call(s.rm.change_to_slave(NEW_MASTER_ADDRESS, NEW_MASTER_EPOCH, BROKER_ID_2))
    assert s.snapshot() == before
    assert_master_at_epoch_3(s)
    assert s.ctl.sent_since() == []

    # epoch 4: it becomes b2's slave and opens an HA client (its HA address comes with the nameserver's reply)
    s.call(s.rm.change_to_slave(NEW_MASTER_ADDRESS, NEW_MASTER_EPOCH + 1, BROKER_ID_2))
    assert (s.node.store.role, s.rm.master_broker_id, s.rm.master_address, s.rm.master_epoch) == (
        BrokerRole.SLAVE, BROKER_ID_2, NEW_MASTER_ADDRESS, NEW_MASTER_EPOCH + 1)
    assert s.node.configured_broker_id == BROKER_ID_1
    client = s.node.ha.client
    assert client is not None and client.master_address == NEW_MASTER_ADDRESS and client.master_ha_address is None
    assert s.rm.check_sss_task is None
    assert ("ns", "REGISTER_BROKER") in s.ctl.sent_since()


def test_role_notification_before_the_id_is_loaded_stops_half_way():
    """QUIRK-ROLE-NO-ID. b3 (master) crashes; b1 restarts while cut from the controller, so ``startBasicService``
    has not loaded its id when the controller's NOTIFY_BROKER_ROLE_CHANGED reaches it. ``changeToSlave`` sets
    masterEpoch and the SLAVE role, then ``brokerConfig.setBrokerId(null)`` throws: the master id and the HA client
    stay unset, nothing is registered under a null id, and the run goes on (it used to crash the simulator)."""
    from rmqha.impl.sim.config import default_config
    from rmqha.impl.sim.runner import run
    from rmqha.models.conform import validate

    cut = [["ctl", b] for b in ("b1", "b2", "b3")] + [[b, "ctl"] for b in ("b1", "b2", "b3")]
    schedule = [{"t": 200, "do": "crash", "node": "b3", "powerLoss": False},
                {"t": 1200, "do": "restart", "node": "b3"}, {"t": 1200, "do": "partition", "id": "p1", "links": cut},
                {"t": 3200, "do": "crash", "node": "b1", "powerLoss": False},
                {"t": 3200, "do": "restart", "node": "b1"}, {"t": 3200, "do": "heal", "id": "p1"}]
    r = run(default_config("safe"), 0, 20_000, schedule=schedule, max_time=30_000)
    assert r.violation is None and r.text is not None
    events = [json.loads(line) for line in r.text.splitlines()[1:]]
    aborted = [o for e in events for o in e.get("obs", []) if o.get("k") == "brk.role" and o.get("aborted")]
    assert [(o["n"], o["role"]) for o in aborted] == [("b1", "SLAVE")]
    assert not any(o.get("k") == "ns.register" and o.get("brokerId") is None for e in events for o in e.get("obs", []))
    report = validate(json.loads(r.text.splitlines()[0]))
    assert report.conforms and report.extensions.get("RoleChangeWithoutId") == 1
