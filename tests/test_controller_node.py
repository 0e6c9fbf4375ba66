"""Port of RocketMQ's ``DLedgerControllerTest``.

Java: controller/src/test/java/org/apache/rocketmq/controller/impl/DLedgerControllerTest.java.

The class under test is ``rmqha.impl.controller.node.ControllerNode``, our model of ``DLedgerController`` (plus
``ControllerManager`` and ``ControllerRequestProcessor``): requests are validated by the leader on the state it
has applied, the events appended to the log, and the answer given once they commit.

How the Java set-up maps to ours:

* ``mockMetaData`` launches three ``DLedgerController`` peers and waits for a leader. Our node stands for the whole
  Raft group (a single sans-IO actor): ``Cluster.launch`` starts one ``ControllerNode`` under
  ``tests.harness.ActorDriver`` and lets its first (empty) entry commit, which is when it starts serving
  (``RoleChangeHandler``: LEADER). The controller config is the Java one: ``scanInactiveMasterInterval`` 1000,
  ``enableElectUncleanMaster`` as given.
* The Java test calls the ``Controller`` API and waits on its futures; here every call is a ``RemotingCommand``
  delivered to the node, and the test moves the clock until the answer comes (``Cluster.request``). A future that
  fails or times out is, through the request processor, a SYSTEM_ERROR answer.
* ``new DLedgerController(config, (a, b, c) -> true)``: every broker is alive. Our node asks its heartbeat table,
  so ``mock_meta_data`` first makes brokers 1-3 heartbeat with a 10^10 ms timeout. ``setBrokerElectPolicy(c,
  dead...)`` sets ``node.elect_policy`` to ``ElectPolicy(all but dead, None)``, as the Java helper does.
  ``setBrokerAlivePredicate(c, 1)`` becomes "only brokers 2 and 3 heartbeat to that node".
* Losing or replacing controller peers: the peers that take over hold the log's committed entries (Raft never
  loses one); ``follower_disk`` builds such a log from the old leader's, and a new ``ControllerNode`` started on
  it replays it. Losing the quorum is the ``inject_slow_commit`` fault: appends stop committing in time.
* ``registerCheckCode`` is ``address;System.currentTimeMillis()`` in Java; here ``address;<counter>``.

Not ported: nothing; every ``@Test`` method of ``DLedgerControllerTest`` has a counterpart below (the multi-peer
ones through the single-node abstraction described above).
"""

from __future__ import annotations

from typing import Any

from rmqha.impl.codes import RequestCode, ResponseCode
from rmqha.impl.config import ControllerConfig
from rmqha.impl.controller.elect_policy import ElectPolicy
from rmqha.impl.controller.node import ControllerDisk, ControllerNode, LogEntry
from rmqha.impl.controller.replicas_info import ElectMasterEvent
from rmqha.impl.rng import DetRng
from rmqha.impl.runtime import Command

from tests.harness import ActorDriver

CLUSTER = "cluster-a"  # ControllerTestBase.DEFAULT_CLUSTER_NAME
BROKER_NAME = "broker-set-a"  # ControllerTestBase.DEFAULT_BROKER_NAME
IP = ("127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.1:9002")  # ControllerTestBase.DEFAULT_IP
CLIENT = "admin"  # where the test's requests come from
ALIVE_LONG = 10_000_000_000  # heartbeat timeout that keeps a broker alive for the whole test
LEAD_WITHIN = 50  # ms: the first empty entry commits (commit latency is 2 ms)


def all_but(*dead: int):
    return lambda cluster, broker_name, broker_id: broker_id not in dead


def follower_disk(disk: ControllerDisk) -> ControllerDisk:
    """The log of a peer that takes over: the committed entries, and only those."""
    return ControllerDisk([LogEntry(e.index, e.event, dict(e.ctx), e.ready_at, committed=True)
                           for e in disk.entries if e.committed])


class Cluster:
    """One controller node under a driver, answering the Java test's calls as remoting requests."""

    def __init__(self, unclean: bool = False) -> None:
        self.cfg = ControllerConfig(enable_elect_unclean_master=unclean, scan_inactive_master_interval=1000)
        self._opaque = 0
        self._check_seq = 0
        self.node, self.d = self.launch("n0", ControllerDisk(), seed=1)

    def launch(self, name: str, disk: ControllerDisk, seed: int, wait_leader: bool = True
               ) -> tuple[ControllerNode, ActorDriver]:
        node = ControllerNode(name, self.cfg, DetRng(seed), disk)
        d = ActorDriver(node)
        if wait_leader:
            d.advance(LEAD_WITHIN)
            assert node.leader
        return node, d

    def use(self, node: ControllerNode, d: ActorDriver) -> None:
        self.node, self.d = node, d

    # ------------------------------------------------------------------------------------------ plumbing

    def request(self, code: RequestCode, header: dict[str, Any], body: Any = None, wait_ms: int = 10_000) -> Command:
        """Send one request and move the clock, 1 ms at a time, until its answer is sent back."""
        self._opaque += 1
        opaque = self._opaque
        self.d.deliver(CLIENT, Command(int(code), opaque, header, body))
        for _ in range(wait_ms + 1):
            for i, (dst, cmd) in enumerate(self.d.sent):
                if dst == CLIENT and cmd.response and cmd.opaque == opaque:
                    del self.d.sent[i]
                    return cmd
            self.d.advance(1)
        raise AssertionError(f"no answer to {code.name} within {wait_ms} ms")

    def heartbeat(self, broker_id: int, timeout: int = ALIVE_LONG, epoch: int | None = None,
                  max_offset: int | None = None) -> None:
        """A oneway BROKER_HEARTBEAT from broker ``broker_id`` (its own channel ``b<id>``)."""
        header = {"clusterName": CLUSTER, "brokerName": BROKER_NAME, "brokerAddr": IP[broker_id - 1],
                  "brokerId": broker_id, "heartbeatTimeoutMills": timeout, "epoch": epoch, "maxOffset": max_offset,
                  "confirmOffset": None, "electionPriority": None}
        self.d.deliver(f"b{broker_id}", Command(int(RequestCode.BROKER_HEARTBEAT), 0, header, oneway=True))

    def set_elect_policy(self, *dead: int) -> None:
        """``setBrokerElectPolicy(controller, dead...)``."""
        self.node.elect_policy = ElectPolicy(all_but(*dead), None)

    def get_replica_info(self) -> Command:
        return self.request(RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": BROKER_NAME})

    def elect(self, broker_id: int | None = None, designate: bool = False, wait_ms: int = 10_000) -> Command:
        header: dict[str, Any] = {"brokerName": BROKER_NAME}
        if broker_id is not None:  # ofBrokerTrigger / ofAdminTrigger; ofControllerTrigger names no broker
            header.update(clusterName=CLUSTER, brokerId=broker_id, designateElect=designate)
        return self.request(RequestCode.CONTROLLER_ELECT_MASTER, header, wait_ms=wait_ms)

    # ------------------------------------------------------------------------------------- Java helpers

    def register_new_broker(self, address: str, expect_id: int) -> None:
        """``registerNewBroker``: getNextBrokerId, applyBrokerId, then registerBroker, each answered SUCCESS."""
        nxt = self.request(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": CLUSTER,
                                                                       "brokerName": BROKER_NAME}, wait_ms=2000)
        broker_id = nxt.header["nextBrokerId"]
        assert broker_id == expect_id
        self._check_seq += 1
        applied = self.request(RequestCode.CONTROLLER_APPLY_BROKER_ID, {
            "clusterName": CLUSTER, "brokerName": BROKER_NAME, "appliedBrokerId": broker_id,
            "registerCheckCode": f"{address};{self._check_seq}"}, wait_ms=2000)
        assert applied.code == ResponseCode.SUCCESS, applied.remark
        registered = self.request(RequestCode.CONTROLLER_REGISTER_BROKER, {
            "clusterName": CLUSTER, "brokerName": BROKER_NAME, "brokerId": broker_id, "brokerAddress": address},
            wait_ms=2000)
        assert registered.code == ResponseCode.SUCCESS, registered.remark

    def broker_try_elect_master(self, broker_id: int, expect_success: bool) -> None:
        resp = self.elect(broker_id)
        assert (resp.code == ResponseCode.SUCCESS) == expect_success, (resp.code, resp.remark)

    def alter_new_in_sync_set(self, master: int, master_epoch: int, new_sss: set[int], sss_epoch: int) -> bool:
        """``alterNewInSyncSet``: false unless SUCCESS; then the SSS read back is the new one at ``sss_epoch + 1``."""
        resp = self.request(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
                            {"brokerName": BROKER_NAME, "masterBrokerId": master, "masterEpoch": master_epoch},
                            {"syncStateSet": sorted(new_sss), "syncStateSetEpoch": sss_epoch})
        if resp.code != ResponseCode.SUCCESS:
            return False
        info = self.get_replica_info()
        assert info.body["syncStateSet"] == sorted(new_sss)
        assert info.body["syncStateSetEpoch"] == sss_epoch + 1
        return True

    def mock_meta_data(self) -> None:
        """``mockMetaData``: three brokers; 1 is elected at mE 1; then SSS {1, 2, 3}."""
        for broker_id in (1, 2, 3):  # (a, b, c) -> true
            self.heartbeat(broker_id)
        self.register_new_broker(IP[0], 1)
        self.register_new_broker(IP[1], 2)
        self.register_new_broker(IP[2], 3)
        self.broker_try_elect_master(1, True)
        self.broker_try_elect_master(2, False)
        self.broker_try_elect_master(3, False)
        info = self.get_replica_info()
        assert (info.header["masterEpoch"], info.header["masterAddress"]) == (1, IP[0])
        assert self.alter_new_in_sync_set(1, 1, {1, 2, 3}, 1)


# ------------------------------------------------------------------------------------------------- tests


def test_elect_master():
    """DLedgerControllerTest.testElectMaster: with 1 not electable, a controller-triggered election moves on."""
    c = Cluster()
    c.mock_meta_data()
    c.set_elect_policy(1)
    resp = c.elect()
    assert resp.code == ResponseCode.SUCCESS
    assert resp.header["masterEpoch"] == 2
    assert resp.header["masterBrokerId"] != 1
    assert resp.header["masterAddress"] != IP[0]


def test_broker_lifecycle_listener():
    """DLedgerControllerTest.testBrokerLifecycleListener.

    The quorum is lost (two peers shut down): the election's entry is appended but never commits, so the request
    fails (SYSTEM_ERROR after the 5 s wait) and the state machine keeps master 1 at mE 1. The leader goes too; the
    two other peers come back with the committed log only, elect a leader that still sees master 1 at mE 1, and,
    with 1 not alive there, its inactive-master scan (every 1 s) reports the set to the broker lifecycle listener
    (``onBrokerInactive(null, brokerName, null)``: our ``ctl.inactive`` observation) within 2 s.
    """
    c = Cluster()
    c.mock_meta_data()
    assert c.node.leader
    old_node = c.node

    old_node.inject_slow_commit(10**9, 10**9)  # nothing appended from now on commits
    c.set_elect_policy(1)
    committed_before = sum(e.committed for e in old_node.disk.entries)
    resp = c.elect(wait_ms=6000)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    last = old_node.disk.entries[-1]
    assert last.event == ElectMasterEvent(True, BROKER_NAME, 2) and not last.committed
    assert sum(e.committed for e in old_node.disk.entries) == committed_before
    stale = old_node.rim.sync_state_set_info_table[BROKER_NAME]
    assert (stale.master_broker_id, stale.master_epoch) == (1, 1)

    # the leader shuts down; a restarted peer with the committed log takes over
    new_node, new_d = c.launch("n1", follower_disk(old_node.disk), seed=2)
    c.use(new_node, new_d)
    c.heartbeat(2)  # setBrokerAlivePredicate(newLeader, 1): only 2 and 3 are alive here
    c.heartbeat(3)
    info = c.get_replica_info()
    assert info.code == ResponseCode.SUCCESS
    assert (info.header["masterBrokerId"], info.header["masterEpoch"]) == (1, 1)

    assert new_d.observed("ctl.inactive") == []  # the scan has not run yet
    new_d.advance(2000)
    assert {"brokerName": BROKER_NAME, "brokerId": None} in new_d.observed("ctl.inactive")


def test_all_replicas_shutdown_and_restart_with_un_enable_elect_un_clean_master():
    """DLedgerControllerTest.testAllReplicasShutdownAndRestartWithUnEnableElectUnCleanMaster.

    SSS {1} and 1 down: the controller's election clears the master (mE 2, SSS kept); broker 2, outside the SSS,
    cannot be elected; once 1 is electable again and asks, it is elected at mE 3.
    """
    c = Cluster(unclean=False)
    c.mock_meta_data()
    assert c.alter_new_in_sync_set(1, 1, {1}, 2)

    c.set_elect_policy(1)
    assert c.elect().code == ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE
    info = c.get_replica_info()
    assert info.body["syncStateSet"] == [1]
    assert info.header["masterAddress"] is None
    assert info.header["masterEpoch"] == 2

    r1 = c.elect(2)
    assert r1.header["masterBrokerId"] is None
    assert r1.header["masterAddress"] is None
    assert r1.code == ResponseCode.CONTROLLER_ELECT_MASTER_FAILED

    c.set_elect_policy()
    r2 = c.elect(1)
    assert r2.code == ResponseCode.SUCCESS
    assert (r2.header["masterBrokerId"], r2.header["masterAddress"], r2.header["masterEpoch"]) == (1, IP[0], 3)


def test_enable_elect_un_clean_master():
    """DLedgerControllerTest.testEnableElectUnCleanMaster: SSS {1} and 1 down, but unclean election picks another."""
    c = Cluster(unclean=True)
    c.mock_meta_data()
    assert c.alter_new_in_sync_set(1, 1, {1}, 2)

    c.set_elect_policy(1)
    c.elect()
    info = c.get_replica_info()
    master = info.header["masterBrokerId"]
    assert master is not None and master != 1
    assert info.body["syncStateSet"] == [master]
    assert info.header["masterAddress"] != IP[0]
    assert info.header["masterAddress"] == IP[master - 1]
    assert info.header["masterEpoch"] == 2


def test_change_controller_leader():
    """DLedgerControllerTest.testChangeControllerLeader.

    The leader shuts down; a peer holding the committed log becomes leader (answering CONTROLLER_NOT_LEADER until
    its first entry commits, which the Java test's await loop rides out) and serves the same replica info.
    """
    c = Cluster()
    c.mock_meta_data()
    old_log = c.node.disk.entries
    assert all(e.committed for e in old_log)
    new_node, new_d = c.launch("n1", follower_disk(c.node.disk), seed=2, wait_leader=False)
    c.use(new_node, new_d)
    assert [r["entries"] for r in new_d.observed("ctl.replay")] == [len(old_log)]  # the whole log is replayed

    early = c.get_replica_info()  # not leader yet
    assert early.code == ResponseCode.CONTROLLER_NOT_LEADER
    new_d.advance(LEAD_WITHIN)
    assert new_node.leader

    info = c.get_replica_info()
    assert info.code == ResponseCode.SUCCESS
    assert info.header["masterAddress"] == IP[0]
    assert info.header["masterEpoch"] == 1
    assert info.body["syncStateSet"] == [1, 2, 3]
