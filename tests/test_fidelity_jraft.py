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
    """RaftBrokerHeartBeatManager.scanNotActiveBroker: on the leader only, first after 2 s, skipped until
    jRaftScanWaitTimeoutMs after the first heartbeat this node received; the check is a logged entry."""
    sim, _ = _sim([], 12_000, controllers=1)
    node = sim.controller_node()
    assert node is not None
    checks = [e for e in node.disk.entries if isinstance(e.event, RequestEntry) and e.event.op == "checkNotActive"]
    assert checks and all(e.event.stamp >= node.first_heartbeat + 1000 for e in checks)  # type: ignore[union-attr]


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
