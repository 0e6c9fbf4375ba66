"""Port of RocketMQ's ``DefaultBrokerHeartbeatManagerTest``.

Java: controller/src/test/java/org/apache/rocketmq/controller/impl/DefaultBrokerHeartbeatManagerTest.java.

The class under test is ``rmqha.impl.controller.heartbeat.BrokerHeartbeatManager``, our model of
controller/src/main/java/org/apache/rocketmq/controller/impl/heartbeat/DefaultBrokerHeartbeatManager.java.

How the Java set-up maps to ours:

* ``init()`` starts a ``DefaultBrokerHeartbeatManager`` whose ``scanNotActiveBroker`` runs 2 s after start and
  then every ``scanNotActiveBrokerInterval`` (2000 ms here). Ours keeps only the table and reads no clock; the
  schedule and the lifecycle listener live in the controller node (``ControllerNode`` runs the scan with the same
  2 s initial delay and the configured period, and hands each expired broker to ``onBrokerInactive``). So the
  test runs a ``ControllerNode`` with ``scanNotActiveBrokerInterval`` 2000 under ``tests.harness.ActorDriver``,
  delivers the heartbeat as a oneway ``BROKER_HEARTBEAT`` and moves the clock.
* ``registerBrokerLifecycleListener(latch)``: the node's listener is ``onBrokerInactive``; each call shows up as a
  ``ctl.inactive`` observation, which stands for the latch's ``countDown``.
* ``latch.await(5000 ms)`` becomes "reported by t = 5000". The heartbeat (timeout 3000 ms) at t = 0 survives the
  scan at 2000 and expires at the scan at 4000 (``now - lastUpdate > timeout``), so the port also pins that.

Not ported: nothing; the one ``@Test`` method has a counterpart below.
"""

from __future__ import annotations

from rmqha.impl.codes import RequestCode
from rmqha.impl.config import ControllerConfig
from rmqha.impl.controller.node import ControllerDisk, ControllerNode
from rmqha.impl.rng import DetRng
from rmqha.impl.runtime import Command

from tests.harness import ActorDriver

IDENTITY = ("cluster1", "broker1", 1)


def test_detect_broker_alive():
    """DefaultBrokerHeartbeatManagerTest.testDetectBrokerAlive: a broker that stops heartbeating is reported."""
    node = ControllerNode("n0", ControllerConfig(scan_not_active_broker_interval=2000), DetRng(1), ControllerDisk())
    d = ActorDriver(node)  # now = 0
    cluster, broker_name, broker_id = IDENTITY
    d.deliver("b1", Command(int(RequestCode.BROKER_HEARTBEAT), 0, {
        "clusterName": cluster, "brokerName": broker_name, "brokerAddr": "127.0.0.1:7000", "brokerId": broker_id,
        "heartbeatTimeoutMills": 3000, "epoch": 1, "maxOffset": 1, "confirmOffset": -1, "electionPriority": 0},
        oneway=True))
    hb = node.heartbeats
    info = hb.get_broker_live_info(*IDENTITY)
    assert info is not None
    assert (info.broker_addr, info.last_update_timestamp, info.heartbeat_timeout_millis) == ("127.0.0.1:7000", 0, 3000)
    assert (info.epoch, info.max_offset, info.election_priority) == (1, 1, 0)

    d.advance(2000)  # first scan: 2000 - 0 is not more than 3000
    assert node.leader  # (the node only acts on inactive brokers as leader; it led after its first entry)
    assert d.observed("ctl.inactive") == []
    assert hb.get_broker_live_info(*IDENTITY) is not None
    assert hb.is_broker_active(3000, *IDENTITY) and not hb.is_broker_active(3001, *IDENTITY)

    d.advance(1999)  # t = 3999: expired, but no scan has run since
    assert d.observed("ctl.inactive") == []
    assert hb.get_broker_live_info(*IDENTITY) is not None

    d.advance(1)  # t = 4000: the second scan removes the entry and tells the listener, within the 5 s wait
    assert d.observed("ctl.inactive") == [{"brokerName": broker_name, "brokerId": broker_id}]
    assert hb.get_broker_live_info(*IDENTITY) is None
    assert not hb.is_broker_active(4000, *IDENTITY)

    d.advance(1000)  # t = 5000: reported once only
    assert len(d.observed("ctl.inactive")) == 1
