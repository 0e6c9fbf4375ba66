"""Issue 20, items 1 and 2: which channel a controller's heartbeat entry holds, and the key of a heartbeat without
a broker id.

RocketMQ 5.3.3 ``DefaultBrokerHeartbeatManager.onBrokerHeartbeat`` stores the channel only when it *creates* an
entry; a heartbeat for an existing entry refreshes its timestamp, timeout, priority and (forward only) its epoch and
offsets, never its channel. ``onBrokerChannelClose(channel)`` removes the entry whose channel is that one. So once a
broker reconnects on a new connection while its entry lives, closing the *old* connection removes the entry and
reports the broker inactive, and closing the *new* one finds nothing: only the timeout scan (or, for a master, the
DLedger leader's inactive-master scan) sees the broker go. The JRaft flavour (``RaftBrokerHeartBeatManager``) maps
every channel a heartbeat came on to the identity, so either close removes the entry.

The identity key is ``BrokerIdentityInfo(cluster, brokerName, brokerId)`` with the id as given: a null id is a null
key (the entry's own brokerId is -1). A lookup with a null id does not find that entry: ``BrokerIdentityInfo.equals``
calls ``brokerId.equals(...)`` on the lookup key, so once an entry of the same hash exists the map's comparison
throws a NullPointerException (``NullBrokerIdError`` here).

In the simulator a channel is one connection of one process incarnation (``b1#0``, then ``b1#1`` after a restart);
a controller hears of a crashed broker's close unless a partition loses it, and then closes the connection itself
once it has read nothing on it for ``serverChannelMaxIdleTimeSeconds`` (120 s, NettyRemotingServer's idle handler ->
``BrokerHousekeepingService.onChannelIdle`` -> ``onBrokerChannelClose``).
"""

from __future__ import annotations

from typing import Any

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.codes import RequestCode
from rmqha.impl.config import ControllerConfig
from rmqha.impl.controller.heartbeat import BrokerHeartbeatManager, NullBrokerIdError
from rmqha.impl.controller.jraft import RaftLiveTable, execute, request
from rmqha.impl.controller.node import ControllerDisk, ControllerNode
from rmqha.impl.controller.replicas_info import ReplicasInfoManager
from rmqha.impl.rng import DetRng
from rmqha.impl.runtime import Command
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.world import Simulation

from tests.harness import ActorDriver, ObsRecorder

C, N = "DefaultCluster", "broker-a"


def _beat(hb: BrokerHeartbeatManager, now: int, channel: str, broker_id: int | None = 1, epoch: int = 1,
          max_offset: int = 100) -> None:
    hb.on_broker_heartbeat(now, C, N, "b1:10911", broker_id, 10_000, channel, epoch, max_offset, 50, 0)


# ------------------------------------------------------------------------------------- item 1: the unit


def test_a_repeat_heartbeat_keeps_the_channel_the_entry_was_created_on():
    """onBrokerHeartbeat: the else branch (entry exists) sets no channel. After a reconnect, the new connection's
    close finds nothing; the old one's removes the entry and names the broker (the old kit rule did the opposite)."""
    hb = BrokerHeartbeatManager()
    _beat(hb, 0, "b1#0")
    _beat(hb, 5000, "b1#1", epoch=2, max_offset=200)  # the broker restarted and reconnected
    info, channel = hb.table[(C, N, 1)]
    assert channel == "b1#0"
    assert (info.last_update_timestamp, info.epoch, info.max_offset) == (5000, 2, 200)  # everything else refreshed

    assert hb.on_broker_channel_close("b1#1") is None  # the new connection: no entry holds it
    assert hb.get_broker_live_info(C, N, 1) is not None and hb.is_broker_active(5000, C, N, 1)
    assert hb.on_broker_channel_close("b1#0") == (C, N, 1)  # the old one: the broker is reported inactive
    assert hb.get_broker_live_info(C, N, 1) is None


def test_a_new_entry_after_removal_takes_the_new_channel():
    hb = BrokerHeartbeatManager()
    _beat(hb, 0, "b1#0")
    assert hb.scan_not_active_broker(10_001) == [(C, N, 1)]  # expired: now - last > timeout
    _beat(hb, 11_000, "b1#1")
    assert hb.table[(C, N, 1)][1] == "b1#1"
    assert hb.on_broker_channel_close("b1#1") == (C, N, 1)


def test_the_dledger_node_reports_only_the_old_connection_closing():
    """The same through ``ControllerNode`` (DLedger flavour): heartbeats arrive on the channel the driver names."""
    node = ControllerNode("ctl", ControllerConfig(), DetRng(1), ControllerDisk())
    d = ActorDriver(node)
    d.advance(100)  # the single node leads once its empty entry commits
    assert node.leader
    beat = {"clusterName": C, "brokerName": N, "brokerAddr": "b1:10911", "brokerId": 1, "heartbeatTimeoutMills": 10_000,
            "epoch": 1, "maxOffset": 1, "confirmOffset": -1, "electionPriority": 0}
    d.deliver("b1", Command(int(RequestCode.BROKER_HEARTBEAT), 0, dict(beat), oneway=True), "b1#0")
    d.deliver("b1", Command(int(RequestCode.BROKER_HEARTBEAT), 0, dict(beat), oneway=True), "b1#1")
    node.on_channel_closed("b1", "b1#1")
    d._drain()
    assert d.observed("ctl.inactive") == [] and node.heartbeats.get_broker_live_info(C, N, 1) is not None
    node.on_channel_closed("b1", "b1#0")
    d._drain()
    assert d.observed("ctl.inactive") == [{"brokerName": N, "brokerId": 1}]


def test_the_jraft_node_maps_every_channel_so_either_close_removes_the_entry():
    """RaftBrokerHeartBeatManager.onBrokerHeartbeat puts (channel -> identity) for every heartbeat;
    onBrokerChannelClose logs BROKER_CLOSE_CHANNEL_REQUEST for the identity of the closed channel."""
    for closed in ("b1#0", "b1#1"):
        node = ControllerNode("ctl", ControllerConfig(controller_type="jRaft"), DetRng(1), ControllerDisk())
        d = ActorDriver(node)
        d.advance(100)
        beat = {"clusterName": C, "brokerName": N, "brokerAddr": "b1:10911", "brokerId": 1,
                "heartbeatTimeoutMills": 10_000, "epoch": 1, "maxOffset": 1, "confirmOffset": -1,
                "electionPriority": 0}
        d.deliver("b1", Command(int(RequestCode.BROKER_HEARTBEAT), 0, dict(beat), oneway=True), "b1#0")
        d.deliver("b1", Command(int(RequestCode.BROKER_HEARTBEAT), 0, dict(beat), oneway=True), "b1#1")
        d.advance(100)
        assert set(node.channels) == {"b1#0", "b1#1"} and node.live.live_info(C, N, 1) is not None
        node.on_channel_closed("b1", closed)
        d._drain()
        d.advance(100)
        assert node.live.live_info(C, N, 1) is None, closed
        assert d.observed("ctl.inactive") == [{"brokerName": N, "brokerId": 1}], closed


# ---------------------------------------------------------------------------------- item 2: a null broker id


def test_a_heartbeat_without_broker_id_is_keyed_null():
    """BrokerIdentityInfo keeps a null brokerId: the first heartbeat is stored under it (the entry's brokerId is -1);
    a lookup with -1 does not find it, and every lookup with null throws once it is there (BrokerIdentityInfo.equals
    dereferences the lookup key's null id), a repeat heartbeat included. The scan and a close, which iterate, remove it
    and report the entry's brokerId (-1), as notifyBrokerInActive does."""
    hb = BrokerHeartbeatManager()
    assert hb.get_broker_live_info(C, N, None) is None and not hb.is_broker_active(0, C, N, None)  # nothing to compare
    _beat(hb, 0, "x#0", broker_id=None)
    assert list(hb.table) == [(C, N, None)] and hb.table[(C, N, None)][0].broker_id == -1
    assert hb.get_broker_live_info(C, N, -1) is None and not hb.is_broker_active(0, C, N, -1)
    for call in (lambda: hb.get_broker_live_info(C, N, None), lambda: hb.is_broker_active(0, C, N, None),
                 lambda: _beat(hb, 1000, "x#1", broker_id=None, epoch=2)):
        with pytest.raises(NullBrokerIdError):
            call()
    assert hb.scan_not_active_broker(10_001) == [(C, N, -1)] and hb.table == {}

    _beat(hb, 0, "x#0", broker_id=None)
    assert hb.on_broker_channel_close("x#0") == (C, N, -1)


def test_the_jraft_live_table_keys_a_null_broker_id_null():
    """RaftReplicasInfoManager.onBrokerHeartBeat: the key is the request's BrokerIdentityInfo (null id), the live info
    says -1; lookups with null throw as in the DLedger table; checkNotActiveBroker, which iterates, reports the key."""
    live, rim = RaftLiveTable(), ReplicasInfoManager()
    execute(rim, live, request("heartbeat", 0, clusterName=C, brokerName=N, brokerAddr="x:1", brokerId=None,
                               heartbeatTimeoutMills=3000, epoch=1, maxOffset=5, confirmOffset=2,
                               electionPriority=0), 0)
    assert list(live.table) == [(C, N, None)] and live.table[(C, N, None)].broker_id == -1
    assert live.live_info(C, N, -1) is None and not live.is_active(C, N, -1, 0)
    with pytest.raises(NullBrokerIdError):
        live.is_active(C, N, None, 3000)
    result = execute(rim, live, request("checkNotActive", 3001), 3001)
    assert result is not None and result.body == {"inactive": [[C, N, None]]}


# ------------------------------------------------------------------------------------ item 1: in the simulator


def _run(target: str, schedule: list[dict[str, Any]], max_time: int) -> ObsRecorder:
    """Seed 1 of the safe profile (b2 is the first master, id 1; b1 is id 3); ``target`` is partitioned from the
    controller at 10 s, killed at 11 s (the controller never hears the close), healed at 12 s and restarted at
    12.5 s: it re-registers and heartbeats on a new connection while its entry (and the entry's old channel) lives."""
    rec = ObsRecorder()
    cfg = config_from_dict({"workload": {"consume_interval": 0}}, default_config("safe"))
    base = [{"t": 10_000, "do": "partition", "id": "p", "links": [[target, "ctl"], ["ctl", target]]},
            {"t": 11_000, "do": "crash", "node": target}, {"t": 12_000, "do": "heal", "id": "p"},
            {"t": 12_500, "do": "restart", "node": target}]
    sim = Simulation(cfg, 1, schedule=base + schedule, max_time=max_time, recorder=rec, bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    return rec


def test_a_reconnected_master_killed_again_is_found_by_the_scan_not_its_close():
    """Master b2 (id 1) restarts on a new connection while its entry lives; killed again at 30 s, the close of its new
    connection finds no entry, so the controller learns only when the inactive-master scan finds its heartbeat expired
    (40 s) and elects id 2 then. With the old kit rule (the entry takes the newest channel) the close reported it at
    once and the election came 10 s sooner."""
    rec = _run("b2", [{"t": 30_000, "do": "crash", "node": "b2"}, {"t": 50_000, "do": "restart", "node": "b2"}],
               60_000)
    reports = [(t, o["brokerId"]) for t, o in rec.kinds("ctl.inactive")]
    assert reports and all(t >= 40_000 for t, _ in reports), reports
    elections = [(t, o["event"]["newMasterBrokerId"]) for t, o in rec.kinds("ctl.apply")
                 if o["event"]["type"] == "ElectMaster" and t > 12_500]
    assert elections and elections[0][0] >= 40_000 and elections[0][1] == 2, elections


def test_the_old_connection_idling_out_reports_a_live_master_inactive():
    """Master b2 restarted on a new connection and runs on. 120 s after the controller last read the old connection,
    the idle handler closes it; the entry still holds it, so the live master is reported inactive and, its entry
    gone, not elected again: id 2 takes over (a failover of a healthy master, as RocketMQ would do). With the old
    kit rule the entry held the new connection and nothing happened."""
    rec = _run("b2", [], 140_000)
    idle = [t for t, o in rec.kinds("ctl.inactive") if o["brokerId"] == 1]
    assert idle and 125_000 < idle[0] < 135_000, idle
    elections = [(t, o["event"]["newMasterBrokerId"]) for t, o in rec.kinds("ctl.apply")
                 if o["event"]["type"] == "ElectMaster" and t > 12_500]
    assert elections and elections[0][0] >= idle[0] and elections[0][1] == 2, elections


def test_no_idle_close_without_the_setting():
    """``serverChannelMaxIdleTimeSeconds = 0`` leaves idle closes out: the restarted master stays."""
    rec = ObsRecorder()
    cfg = config_from_dict({"workload": {"consume_interval": 0},
                            "controller": {"serverChannelMaxIdleTimeSeconds": 0}}, default_config("safe"))
    sched = [{"t": 10_000, "do": "partition", "id": "p", "links": [["b2", "ctl"], ["ctl", "b2"]]},
             {"t": 11_000, "do": "crash", "node": "b2"}, {"t": 12_000, "do": "heal", "id": "p"},
             {"t": 12_500, "do": "restart", "node": "b2"}]
    sim = Simulation(cfg, 1, schedule=sched, max_time=140_000, recorder=rec, bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None
    assert rec.kinds("ctl.inactive") == []
