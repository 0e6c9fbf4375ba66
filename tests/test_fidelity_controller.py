"""Issue 6 part 1, the replicated controller (``[cluster] controllers = 3``): DLedger's election, push, commit and
apply (``impl/controller/raft.py``) under the controller's request handling, against ``DLedgerLeaderElector``,
``DLedgerEntryPusher``, ``StateMachineCaller``, ``DLedgerController`` and the broker's controller discovery.

The part's fidelity switch, ``two-leaders-one-term`` (caught by CTL-ONE-LEADER-PER-TERM), has its scenario in
``impl/sim/scenarios.py`` (``tests/test_bugs.py``); CTL-APPLY-PREFIX and CTL-READ-COMMITTED are shown in
``tests/test_checker_catches.py``.
"""

from __future__ import annotations

from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.controller.raft import HEARTBEAT, MAX_HEARTBEAT_LEAK
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.world import Simulation

from tests.harness import ObsRecorder

CTLS = ("ctl1", "ctl2", "ctl3")



def _sim(schedule: list[dict[str, Any]], max_time: int, **workload: Any) -> tuple[Simulation, ObsRecorder]:
    rec = ObsRecorder()
    cfg = config_from_dict({"cluster": {"controllers": 3},
                            "workload": {"produce_interval": 0, "consume_interval": 0, **workload}},
                           default_config("safe"))
    sim = Simulation(cfg, 1, schedule=schedule, max_time=max_time, recorder=rec, bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    return sim, rec


def _leader(sim: Simulation) -> str:
    node = sim.controller_node()
    assert node is not None
    return node.name


def test_one_leader_serves_and_brokers_find_it():
    """DLedgerLeaderElector elects one leader; a follower's CONTROLLER_GET_METADATA_INFO names it (its member
    state), so ReplicasManager.updateControllerMetadata finds it from any address; the set elects a master and
    acknowledges puts through it."""
    sim, rec = _sim([{"t": 8000, "do": "produce", "count": 5}], 12_000)
    leader = _leader(sim)
    assert [o["n"] for _, o in rec.kinds("ctl.leader")] == [leader]
    for c in CTLS:
        node = sim.nodes[c]
        assert node.repl.leader_id == leader and node.repl.state.term == sim.nodes[leader].repl.state.term  # type: ignore[union-attr]
    assert sum(1 for _, o in rec.kinds("client.send-result") if o["status"] == "PUT_OK") == 5
    heard = [set(sim.nodes[c].heartbeats.table) for c in CTLS]  # type: ignore[union-attr]
    assert all(len(h) == 3 for h in heard), "every node keeps its own heartbeat table (brokers beat to all)"


def test_a_new_leader_keeps_the_committed_state():
    """The leader is killed: a follower with an up-to-date log wins the next term, applies its empty entry and every
    entry before it, and serves the same SyncStateSet and master (entries committed by a majority survive)."""
    sim, _ = _sim([{"t": 8000, "do": "produce", "count": 3}], 9_000)
    first = _leader(sim)
    before = sim.controller_node().rim.snapshot()  # type: ignore[union-attr]
    term = sim.nodes[first].repl.state.term  # type: ignore[union-attr]
    sim.schedule_action({"t": 9_000, "do": "crash", "node": first})
    sim.max_time = 16_000
    assert sim.run() is None
    second = _leader(sim)
    assert second != first and sim.nodes[second].repl.state.term > term  # type: ignore[union-attr]
    after = sim.controller_node().rim.snapshot()  # type: ignore[union-attr]
    assert after["broker-a"]["master"] == before["broker-a"]["master"]
    assert after["broker-a"]["masterEpoch"] >= before["broker-a"]["masterEpoch"]


def test_a_cut_leader_steps_down_and_a_cut_follower_catches_up():
    """DLedgerLeaderElector.maintainAsLeader: a leader without a majority's acks for maxHeartBeatLeak heartbeats
    becomes a candidate; the others elect a leader of a higher term; once healed, the old leader's log is repaired
    by the new leader's pushes (DLedgerEntryPusher) and it applies exactly the same entries."""
    sim, rec = _sim([], 8_000)
    first = _leader(sim)
    others = [c for c in (*CTLS, "b1", "b2", "b3") if c != first]
    links = [[first, o] for o in others] + [[o, first] for o in others]
    sim.schedule_action({"t": 8_000, "do": "partition", "id": "cut", "links": links})
    sim.schedule_action({"t": 8_000, "do": "produce", "count": 0})
    sim.schedule_action({"t": 14_000, "do": "admin-elect", "brokerId": None})
    sim.schedule_action({"t": 20_000, "do": "heal", "id": "cut"})
    sim.max_time = 30_000
    assert sim.run() is None
    down = [t for t, o in rec.kinds("ctl.step-down") if o["n"] == first]
    assert down and down[0] - 8_000 <= (MAX_HEARTBEAT_LEAK + 2) * HEARTBEAT
    assert _leader(sim) != first
    logs = {c: [(e.term, e.event and e.event.to_dict()) for e in sim.ctl_disks[c].entries] for c in CTLS}
    applied = {c: sim.nodes[c].applied for c in CTLS}  # type: ignore[union-attr]
    assert logs[first][:applied[first]] == logs[_leader(sim)][:applied[first]]
    assert len(set(applied.values())) == 1, applied


def test_a_slow_apply_lags_the_commit_then_catches_up():
    """StateMachineCaller applies committed entries behind the commit position: during a slow-apply window a node's
    apply position lags its commit position; afterwards it has applied everything."""
    sim, _ = _sim([], 8_000)
    follower = next(c for c in CTLS if c != _leader(sim))
    sim.schedule_action({"t": 8_000, "do": "slow-apply", "node": follower, "extra": 3000, "duration": 4000})
    sim.schedule_action({"t": 8_100, "do": "admin-elect", "brokerId": None})
    sim.max_time = 9_000
    assert sim.run() is None
    node = sim.nodes[follower]
    assert node.applied < node.repl.commit  # type: ignore[union-attr]
    sim.max_time = 15_000
    assert sim.run() is None
    assert node.applied == node.repl.commit  # type: ignore[union-attr]


def test_an_append_that_times_out_may_commit_later():
    """DLedgerController.appendToDLedgerAndWait waits 5 s; a slow quorum makes the request fail
    (ctl.append-timeout) while its entry still commits and applies afterwards (digest §a.4 GAP)."""
    sim, rec = _sim([], 8_000)
    master = sim.controller_node().rim.snapshot()["broker-a"]["master"]  # type: ignore[union-attr]
    sim.schedule_action({"t": 8_000, "do": "slow-commit", "extra": 6000, "duration": 1000})
    sim.schedule_action({"t": 8_100, "do": "admin-elect", "brokerId": 1 if master != 1 else 2})
    sim.max_time = 20_000
    assert sim.run() is None
    timeouts = [t for t, o in rec.kinds("ctl.append-timeout") if o["op"] == "electMaster"]
    later = [t for t, o in rec.kinds("ctl.apply") if o["event"]["type"] == "ElectMaster" and t > 8_100]
    assert timeouts and later and min(later) > min(timeouts) - 1000
