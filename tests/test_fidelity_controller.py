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
    (ctl.append-timeout) while its entry still commits and applies afterwards (the late commit is not read back:
    docs/findings/F-DLEDGER-STALE-VALIDATION.md)."""
    sim, rec = _sim([], 8_000)
    master = sim.controller_node().rim.snapshot()["broker-a"]["master"]  # type: ignore[union-attr]
    sim.schedule_action({"t": 8_000, "do": "slow-commit", "extra": 6000, "duration": 1000})
    sim.schedule_action({"t": 8_100, "do": "admin-elect", "brokerId": 1 if master != 1 else 2})
    sim.max_time = 20_000
    assert sim.run() is None
    timeouts = [t for t, o in rec.kinds("ctl.append-timeout") if o["op"] == "electMaster"]
    later = [t for t, o in rec.kinds("ctl.apply") if o["event"]["type"] == "ElectMaster" and t > 8_100]
    assert timeouts and later and min(later) > min(timeouts) - 1000


# ------------------------------------------------- DLedger's pending appends and TERM_CHANGED (issue 20 item 5)


def _raft(code: int, term: int, frm: str, body: dict[str, Any]) -> Any:
    from rmqha.impl.runtime import Command

    return Command(int(code), 0, {"term": term, "from": frm}, body, oneway=True)


def test_a_truncated_append_completes_with_term_changed_and_the_scheduler_is_interrupted():
    """DLedger 0.3.1.2: a leader's append waits in ``pendingAppendResponsesByTerm[term][index]``; once the node leads
    a later term, ``QuorumAckChecker`` completes it *normally* with code TERM_CHANGED, whatever became of the entry,
    and ``DLedgerController.appendToDLedgerAndWait`` does not read the code. What keeps that from answering SUCCESS
    for a truncated event is RocketMQ's ``RoleChangeHandler``: losing leadership runs ``stopScheduling``, whose
    ``shutdown(true)`` interrupts the EventScheduler's wait, so the request fails (SYSTEM_ERROR) at once.

    Node a leads term 1, takes an applyBrokerId (index 1), and b, leading term 2, overwrites index 1: the request is
    answered SYSTEM_ERROR in that step. a leads again at term 3: the pending append of term 1 completes with
    TERM_CHANGED, and nothing more is sent to the broker."""
    from rmqha.impl.codes import RequestCode, ResponseCode
    from rmqha.impl.config import ControllerConfig
    from rmqha.impl.controller.node import ControllerDisk, ControllerNode
    from rmqha.impl.controller.raft import TERM_CHANGED
    from rmqha.impl.rng import DetRng
    from rmqha.impl.runtime import Command

    from tests.harness import ActorDriver

    node = ControllerNode("a", ControllerConfig(), DetRng(1), ControllerDisk(), peers=["a", "b", "c"])
    d = ActorDriver(node)
    d.advance(3000)  # election timeout: a candidate of term 1
    d.deliver("b", _raft(RequestCode.RAFT_VOTE_REPLY, 1, "b", {"granted": True}))
    d.deliver("b", _raft(RequestCode.RAFT_APPEND_REPLY, 1, "b", {"ok": True, "match": 1}))  # its empty entry commits
    assert node.leader and node.repl is not None and node.repl.state.term == 1
    d.deliver("b1", Command(int(RequestCode.CONTROLLER_APPLY_BROKER_ID), 7, {
        "clusterName": "c", "brokerName": "x", "appliedBrokerId": 1, "registerCheckCode": "b1:1;1"}))
    pending = node.repl.pending[1][1]
    d.take_sent()

    d.deliver("b", _raft(RequestCode.RAFT_APPEND, 2, "b", {"prevIndex": 1, "prevTerm": 1, "commit": 1,
                                                         "entries": [[2, None, {"op": "leader-noop"}]]}))
    answers = [c for dst, c in d.take_sent() if dst == "b1"]
    assert [(c.code, c.opaque) for c in answers] == [(ResponseCode.SYSTEM_ERROR, 7)]  # stopScheduling's interrupt
    assert node.disk.entries[1].term == 2 and not pending.done  # truncated; its append still pending

    d.advance(3000)  # a times out into term 3 and wins it
    d.deliver("c", _raft(RequestCode.RAFT_VOTE_REPLY, 3, "c", {"granted": True}))
    assert node.repl.role == "leader" and node.repl.state.term == 3
    assert pending.done and pending.value == TERM_CHANGED  # a normal completion, for an entry that is gone
    assert d.observed("ctl.term-changed") == [{"node": "a", "term": 3, "oldTerm": 1, "indexes": [1]}]
    assert [c for dst, c in d.take_sent() if dst == "b1"] == []  # answered once, with SYSTEM_ERROR


class _MsgRecorder(ObsRecorder):
    def __init__(self) -> None:
        super().__init__()
        self.msgs: list[tuple[int, dict[str, Any]]] = []

    def step(self, step: int, now: int, event: Any, obs: list[dict[str, Any]]) -> None:
        super().step(step, now, event, obs)
        if event and event.get("ev") == "msg":
            self.msgs.append((now, event))


def test_a_deposed_leader_does_not_answer_an_append_that_committed_after_it_lost_the_lead():
    """The leader takes a write (applyBrokerId at boot) and is cut from the other controllers the same millisecond:
    its push reaches them, their acks do not. It steps down (maxHeartBeatLeak), and stopScheduling fails the request
    then; the next leader commits the entry. Before the heal (4 s, within the 5 s wait) the old kit kept waiting
    and, once the deposed leader applied the entry, answered SUCCESS; RocketMQ answers SYSTEM_ERROR at the
    step-down (the broker retries)."""
    rec = _MsgRecorder()
    cfg = config_from_dict({"cluster": {"controllers": 3}, "workload": {"produce_interval": 0, "consume_interval": 0}},
                           default_config("safe"))
    sim = Simulation(cfg, 1, schedule=[], max_time=None, recorder=rec, bugs=frozenset(B.FIXES_ALL))
    t = 0
    while True:  # the first write the leader appends
        t += 1
        assert sim.run_before(t) is None and t < 10_000
        node = sim.controller_node()
        if node is not None and node.disk.entries and not node.disk.entries[-1].committed \
                and node.disk.entries[-1].event is not None:
            break
    leader, index = node.name, node.disk.entries[-1].index
    op, requester = node.disk.entries[-1].ctx["op"], node.disk.entries[-1].ctx["requester"]
    others = [c for c in CTLS if c != leader]
    sim.schedule_action({"t": t, "do": "partition", "id": "p",
                         "links": [[leader, o] for o in others] + [[o, leader] for o in others]})
    sim.schedule_action({"t": t + 4000, "do": "heal", "id": "p"})
    sim.max_time = t + 8000
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    step_down = [tt for tt, o in rec.kinds("ctl.step-down") if o["n"] == leader]
    request = [e["cmd"] for tt, e in rec.msgs if tt < t and e["src"] == requester and e["dst"] == leader
               and not e["cmd"].get("response") and e["cmd"].get("op") != "BROKER_HEARTBEAT"][-1]
    answers = [(tt, e["cmd"]["code"]) for tt, e in rec.msgs if e["src"] == leader and e["dst"] == requester
               and e["cmd"].get("response") and e["cmd"]["opaque"] == request["opaque"]]
    assert step_down and len(answers) == 1 and answers[0][1] == 1, (request, answers, step_down)
    assert 0 <= answers[0][0] - step_down[0] <= 10
    applied = [o for _, o in rec.kinds("ctl.apply") if o.get("index") == index and o["ctx"].get("op") == op]
    assert {o["node"] for o in applied} == set(CTLS)  # the entry did commit, through the next leader
