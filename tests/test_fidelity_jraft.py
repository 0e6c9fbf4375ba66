"""Issue 6 part 1, the JRaft flavour (``[controller] controllerType = jRaft``, RocketMQ 5.2+), against
``JRaftController``, ``JRaftControllerStateMachine``, ``RaftReplicasInfoManager`` and ``RaftBrokerHeartBeatManager``
(``impl/controller/jraft.py``).

Its fidelity switch, ``jraft-apply-local-time`` (caught by CTL-APPLY-PREFIX), has its scenario in
``impl/sim/scenarios.py`` (``tests/test_bugs.py``).
"""

from __future__ import annotations

from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.controller.jraft import RaftLiveTable, execute, request
from rmqha.impl.controller.replicas_info import ApplyBrokerIdEvent, ElectMasterEvent, ReplicasInfoManager, RequestEntry
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.world import Simulation

from tests.harness import ObsRecorder

CTLS = ("ctl1", "ctl2", "ctl3")



def _sim(schedule: list[dict[str, Any]], max_time: int, controllers: int = 3, flavour: str = "jRaft",
         seed: int = 1, bugs: frozenset[str] = frozenset(B.FIXES_ALL),
         **workload: Any) -> tuple[Simulation, ObsRecorder]:
    rec = ObsRecorder()
    cfg = config_from_dict({"cluster": {"controllers": controllers}, "controller": {"controllerType": flavour},
                            "workload": {"produce_interval": 0, "consume_interval": 0, **workload}},
                           default_config("safe"))
    sim = Simulation(cfg, seed, schedule=schedule, max_time=max_time, recorder=rec, bugs=bugs)
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    return sim, rec


def test_every_request_is_an_entry_validated_at_apply_on_every_node():
    """JRaftController.applyToJRaft logs the request itself (heartbeats too); processEvent runs it on each node's
    applied state, so every node computes the same answer at every index; the leader never validates ahead of the
    log (no ctl.validate, which the DLedger flavour emits)."""
    sim, rec = _sim([{"t": 9000, "do": "produce", "count": 5}], 15_000)
    leader = sim.controller_node()
    assert leader is not None and sim.believed_master() is not None
    ops = {e.event.op for e in leader.disk.entries if isinstance(e.event, RequestEntry)}
    assert {"heartbeat", "registerSuccess", "electMaster", "alterSyncStateSet", "applyBrokerId"} <= ops
    results: dict[int, set[tuple]] = {}
    for _, o in rec.kinds("ctl.result"):
        results.setdefault(o["index"], set()).add((o["op"], o["code"], str(o["event"])))
    assert results and all(len(v) == 1 for v in results.values())
    nodes_per_index = {}
    for _, o in rec.kinds("ctl.result"):
        nodes_per_index.setdefault(o["index"], set()).add(o["node"])
    assert max(len(v) for v in nodes_per_index.values()) == 3
    assert rec.kinds("ctl.validate") == []
    applied = {sim.nodes[c].applied for c in CTLS}  # type: ignore[union-attr]
    if len(applied) == 1:  # every node at the same index holds the same replicated live table
        tables = [sim.nodes[c].live.table for c in CTLS]  # type: ignore[union-attr]
        assert tables[0] and tables[0] == tables[1] == tables[2]


def test_a_new_leader_serves_as_soon_as_raft_elects_it():
    """JRaftController.isLeaderState is node.isLeader(): no empty entry first (DLedger's RoleChangeHandler appends
    one and waits for it to commit before it serves)."""
    _, jr = _sim([], 6_000)
    _, dl = _sim([], 6_000, flavour="DLedger")
    (t_elected, _), = [x for x in jr.kinds("ctl.elected")][-1:]
    (t_leader, _), = jr.kinds("ctl.leader")[-1:]
    assert t_leader == t_elected
    (d_elected, _), = dl.kinds("ctl.elected")[-1:]
    (d_leader, _), = dl.kinds("ctl.leader")[-1:]
    assert d_leader > d_elected


def test_heartbeats_keep_confirm_offset_and_move_forward_only():
    """RaftReplicasInfoManager.onBrokerHeartBeat: a new entry keeps the confirmOffset it carries (the DLedger
    flavour's DefaultBrokerHeartbeatManager drops it); later ones refresh the timestamp and move (epoch, maxOffset,
    confirmOffset) forward only."""
    live = RaftLiveTable()
    hb = {"clusterName": "c", "brokerName": "a", "brokerAddr": "b1:10911", "brokerId": 1,
          "heartbeatTimeoutMills": 3000, "epoch": 2, "maxOffset": 500, "confirmOffset": 400, "electionPriority": None}
    live.on_heartbeat(hb, 100)
    assert live.live_info("c", "a", 1).confirm_offset == 400  # type: ignore[union-attr]
    live.on_heartbeat(dict(hb, epoch=1, maxOffset=900, confirmOffset=900), 200)
    info = live.live_info("c", "a", 1)
    assert info is not None and (info.last_update_timestamp, info.epoch, info.max_offset) == (200, 2, 500)
    assert live.is_active("c", "a", 1, 3200) and not live.is_active("c", "a", 1, 3201)


def test_check_not_active_reports_expired_brokers_and_the_negated_predicate_quirk():
    """RaftReplicasInfoManager.checkNotActiveBroker: expired entries leave the table and are reported; then
    scanNeedReelectBrokerSets runs with the *negated* liveness predicate (QUIRK), which picks a set whose master is
    alive and which has an inactive member (reported as (null, name, null) unless the set was just reported)."""
    rim, live = ReplicasInfoManager(False), RaftLiveTable()
    for bid in (1, 2, 3):
        rim.apply_event(ApplyBrokerIdEvent("c", "a", f"b{bid}:10911", bid, "x"))
    rim.apply_event(ElectMasterEvent(True, "a", 1))

    def beat(bid: int, t: int) -> None:
        live.on_heartbeat({"clusterName": "c", "brokerName": "a", "brokerAddr": f"b{bid}:10911", "brokerId": bid,
                           "heartbeatTimeoutMills": 1000}, t)

    beat(1, 900), beat(2, 0), beat(3, 900)
    out = execute(rim, live, request("checkNotActive", 1500), 0)
    assert out is not None and out.body == {"inactive": [["c", "a", 2]]}  # broker 2 expired; set "a" reported once
    assert ("c", "a", 2) not in live.table
    beat(2, 1500), beat(1, 1500)
    out = execute(rim, live, request("checkNotActive", 1600), 0)
    assert out is not None and out.body == {"inactive": []}  # everyone alive
    execute(rim, live, request("closeChannel", 1600, clusterName="c", brokerName="a", brokerId=3), 0)
    out = execute(rim, live, request("checkNotActive", 1700), 0)
    assert out is not None and out.body == {"inactive": [[None, "a", None]]}  # the QUIRK: master alive, 3 is not
    live.table.clear()
    out = execute(rim, live, request("checkNotActive", 1800), 0)
    assert out is not None and out.body == {"inactive": []}  # master dead: the negated predicate skips the set


def test_the_scan_waits_for_the_first_heartbeat_and_runs_through_the_log():
    """RaftBrokerHeartBeatManager.scanNotActiveBroker of 5.3.4+ (PR #9718, upstream switch jraft-scan-after-wait):
    on the leader only, first after 2 s, skipped until jRaftScanWaitTimeoutMs after the first heartbeat this node
    received; the check is a logged entry. With 5.3.3's inverted test (the switch off) the scans at 2 s, 7 s and
    12 s all come more than a second after the first heartbeat, and none is logged."""
    sim, _ = _sim([], 12_000, controllers=1, bugs=frozenset([*B.FIXES_ALL, B.JRAFT_SCAN_AFTER_WAIT]))
    node = sim.controller_node()
    assert node is not None
    checks = [e for e in node.disk.entries if isinstance(e.event, RequestEntry) and e.event.op == "checkNotActive"]
    assert len(checks) == 3 and all(e.event.stamp >= node.first_heartbeat + 1000 for e in checks)  # type: ignore[union-attr]
    old, _ = _sim([], 12_000, controllers=1)
    node = old.controller_node()
    assert node is not None and 0 <= node.first_heartbeat < 1000
    assert not [e for e in node.disk.entries if isinstance(e.event, RequestEntry) and e.event.op == "checkNotActive"]


def test_a_master_crash_elects_from_the_replicated_live_table():
    """A channel close is a BROKER_CLOSE_CHANNEL_REQUEST entry; once applied, onBrokerInactive triggers an
    election, validated at apply with the request's invokeTime against the replicated table: a live SSS member."""
    sim, _ = _sim([{"t": 10_000, "do": "produce", "count": 3}], 11_000)
    master = sim.believed_master()
    assert master is not None
    sim2, rec2 = _sim([{"t": 10_000, "do": "produce", "count": 3}, {"t": 12_000, "do": "crash", "node": master}],
                      20_000)
    new = sim2.believed_master()
    assert new not in (None, master)
    elects = [o for t, o in rec2.kinds("ctl.apply") if o["event"]["type"] == "ElectMaster" and t > 12_000]
    assert elects and all(o["ctx"]["alive"][str(o["event"]["newMasterBrokerId"])] for o in elects)


def test_validate_at_apply_closes_the_dledger_stale_validation_family():
    """F-DLEDGER-STALE-VALIDATION: the DLedger leader validates on an applied state that may lag its commit
    position (CTL-READ-COMMITTED). The same seed and faults with the JRaft flavour, which validates at apply, keep
    every controller invariant (docs/fidelity.md gives the 200-seed comparison)."""
    weights = {"slow-apply": 2.0, "crash-controller-leader": 0.7, "isolate-controller-leader": 0.7}
    fixes = frozenset(B.FIXES_ALL) - {B.FIX_VALIDATE_AFTER_COMMIT}
    outcome = {}
    for flavour in ("DLedger", "jRaft"):
        cfg = config_from_dict({"cluster": {"controllers": 3}, "controller": {"controllerType": flavour},
                                "faults": {"weights": weights}}, default_config("safe"))
        v = Simulation(cfg, 23, bugs=fixes, max_time=20_000).run()
        outcome[flavour] = v and v.invariant
    assert outcome == {"DLedger": "CTL-READ-COMMITTED", "jRaft": None}


# ------------------------------------------------------------------------------- snapshots (issue 20 item 3)


def test_the_state_serializes_with_the_live_table():
    """RaftReplicasInfoManager.serialize / deserializeFrom: the ReplicasInfoManager tables (cluster names, ids,
    addresses, check codes, the next-id counter, master, epochs, SSS) and the replicated live table round-trip;
    equal states give equal bytes."""
    from rmqha.impl.controller.jraft import load_state, serialize_state

    rim, live = ReplicasInfoManager(), RaftLiveTable()
    rim.apply_event(ApplyBrokerIdEvent("c", "a", "b1:10911", 1, "b1:10911;5"))
    rim.apply_event(ApplyBrokerIdEvent("c", "a", "b2:10911", 2, "b2:10911;6"))
    rim.apply_event(ElectMasterEvent(True, "a", 1))
    for bid in (1, 2):
        execute(rim, live, request("heartbeat", 100 * bid, clusterName="c", brokerName="a",
                                   brokerAddr=f"b{bid}:10911", brokerId=bid, heartbeatTimeoutMills=10_000, epoch=1,
                                   maxOffset=50 * bid, confirmOffset=40, electionPriority=bid), 0)
    data = serialize_state(rim, live)
    rim2, live2 = ReplicasInfoManager(), RaftLiveTable()
    live2.table[("x", "y", 9)] = live.table[("c", "a", 1)]  # replaced, not merged
    load_state(rim2, live2, data)
    assert rim2.replica_info_table == rim.replica_info_table
    assert rim2.sync_state_set_info_table == rim.sync_state_set_info_table
    assert live2.table == live.table and ("x", "y", 9) not in live2.table
    assert serialize_state(rim2, live2) == data


def _snapshot_run(schedule: list[dict[str, Any]], max_time: int, **controller: Any) -> tuple[Simulation, ObsRecorder]:
    rec = ObsRecorder()
    cfg = config_from_dict({"controller": controller, "workload": {"consume_interval": 0}}, default_config("jraft"))
    sim = Simulation(cfg, 1, schedule=schedule, max_time=max_time, recorder=rec, bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    return sim, rec


def test_a_follower_down_past_two_snapshots_installs_the_leaders():
    """jRaftSnapshotIntervalSecs = 5: every node snapshots its applied state (NodeImpl's snapshotTimer, the first in
    [2.5, 5) s) and drops its log up to its previous snapshot (LogManagerImpl.setSnapshot). Follower ctl1 (seed 1:
    ctl2 leads) is killed at 8 s and restarted at 38 s: it loads its own snapshot (onSnapshotLoad) and replays the
    entries after it; the leader no longer has the entry before ctl1's next one, so it sends its snapshot
    (Replicator.installSnapshot); ctl1 loads it, starts its log after it, and ends with the leader's state."""
    sim, rec = _snapshot_run([{"t": 8000, "do": "crash", "node": "ctl1"},
                              {"t": 38_000, "do": "restart", "node": "ctl1"}], 60_000, jRaftSnapshotIntervalSecs=5)
    assert sim.controller_leader() == "ctl2"
    replay = [o for t, o in rec.kinds("ctl.replay") if o["n"] == "ctl1" and t == 38_000]
    assert replay and replay[0]["snapshot"] > 0  # its own snapshot, taken before the crash
    installs = [(t, o) for t, o in rec.kinds("ctl.install-snapshot") if o["node"] == "ctl1"]
    assert len(installs) == 1 and 38_000 <= installs[0][0] < 39_000 and not installs[0][1]["kept"]
    leader_snaps = [o for t, o in rec.kinds("ctl.snapshot") if o["node"] == "ctl2" and t < installs[0][0]]
    assert installs[0][1]["index"] == leader_snaps[-1]["index"]
    assert leader_snaps[-1]["firstIndex"] > replay[0]["snapshot"]
    nodes = [sim.nodes[c] for c in CTLS]
    assert all(n.disk.first_index > 0 for n in nodes)  # type: ignore[union-attr]
    assert len({n.applied for n in nodes}) == 1  # type: ignore[union-attr]
    assert all(n.rim.snapshot() == nodes[1].rim.snapshot() and n.live.table == nodes[1].live.table  # type: ignore[union-attr]
               for n in nodes)


def test_without_the_setting_no_snapshot_is_taken():
    """jRaftSnapshotIntervalSecs defaults to 0 here (RocketMQ's 3600 s is beyond any simulated run): no snapshot, and
    the restarted node replays its whole log, as before."""
    sim, rec = _snapshot_run([{"t": 8000, "do": "crash", "node": "ctl1"},
                              {"t": 38_000, "do": "restart", "node": "ctl1"}], 45_000)
    assert rec.kinds("ctl.snapshot") == [] and rec.kinds("ctl.install-snapshot") == []
    assert all(sim.nodes[c].disk.first_index == 0 for c in CTLS)  # type: ignore[union-attr]
    assert "snapshot" not in [o for t, o in rec.kinds("ctl.replay") if o["n"] == "ctl1"][-1]


def test_the_crash_controller_follower_fault_forces_an_install():
    """The fault kind crash-controller-follower (weight 0 by default) keeps a non-leading node down for 20-40 s; with
    5 s snapshots each restart ends in an installed snapshot, and the run keeps every invariant (fixes on)."""
    from rmqha.impl.sim.runner import run

    cfg = config_from_dict({"controller": {"jRaftSnapshotIntervalSecs": 5},
                            "faults": {"weights": {"crash-controller-follower": 3.0}}}, default_config("jraft"))
    r = run(cfg, 1, 20_000, bugs=list(B.FIXES_ALL))
    assert r.violation is None, r.violation
    assert r.text.count('"fault":"crash-controller-follower"') >= 2  # a crash and its restart
    assert r.text.count('"k":"ctl.install-snapshot"') >= 1
