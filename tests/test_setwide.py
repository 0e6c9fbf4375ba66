"""Issue 21 item 4, set-wide checks: the confirmOffset of every broker against the controller's SyncStateSet
(SYNC-CONFIRM-HELD), what every replica dispatches (SYNC-DISPATCH-CONFIRMED), the dispatch's progress at the end of a
run (QUEUE-CONFIRMED-DISPATCHED), and reads from slaves where RocketMQ allows them (``[broker] slaveReadEnable``), so
that the visibility checks cover what a consumer reads from a slave.

Each invariant's bug switch and scenario are in ``impl/sim/scenarios.py`` (``tests/test_bugs.py``); the findings they
also see are in ``tests/test_findings.py``."""

from __future__ import annotations

import json
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.codes import RequestCode, ResponseCode
from rmqha.impl.invariants.queues import settle_ms, settled_reput_end
from rmqha.impl.runtime import Command, Send
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.world import Simulation

QUIET = {"workload": {"produce_interval": 0, "consume_interval": 0}}


def test_the_settled_reput_end_is_the_lowest_over_the_window_of_one_incarnation():
    hist = [(1, 0, 100), (1, 500, 300), (1, 900, 200), (1, 950, 400)]
    assert settled_reput_end(hist, 1, 600) == 200  # 300 from 500 on, 200 at 900, 400 at 950
    assert settled_reput_end(hist, 1, 960) == 400
    assert settled_reput_end(hist, 1, 400) == 100
    assert settled_reput_end(hist, 2, 960) is None  # another incarnation
    assert settled_reput_end([(1, 0, 100), (2, 700, 50)], 2, 600) is None  # restarted within the window
    assert settled_reput_end([(1, 0, 100), (2, 700, 50)], 2, 800) == 50
    assert settle_ms(default_config("safe").store) == 100


def test_the_dispatch_progress_check_runs_once_when_the_run_ends():
    """dispatch-skips-range leaves confirmed messages out of the consume queue; nothing fails before the run ends,
    and the check names the message. With the switch off the same run is clean."""
    cfg = config_from_dict({"cluster": {"brokers": 2}, "store": {"haTransferBatchSize": 200}, **QUIET},
                           default_config("safe"))
    sched = [{"t": 9000, "do": "produce", "count": 5}]
    bad = run(cfg, 1, 200_000, bugs=sorted([*B.FIXES_ALL, B.DISPATCH_SKIPS_RANGE]), schedule=sched, max_time=20_000)
    assert bad.violation is not None and bad.violation.invariant == "QUEUE-CONFIRMED-DISPATCHED"
    assert bad.text is not None and bad.violation.step == json.loads(bad.text.splitlines()[-2])["i"]  # the last step
    cut = run(cfg, 1, 200_000, bugs=sorted([*B.FIXES_ALL, B.DISPATCH_SKIPS_RANGE]), schedule=sched, max_time=20_000,
              disabled=["QUEUE-CONFIRMED-DISPATCHED"])
    assert cut.violation is None  # no other invariant sees a dispatcher that skips
    assert run(cfg, 1, 200_000, bugs=list(B.FIXES_ALL), schedule=sched, max_time=20_000).violation is None


def _slave_and_master(cfg_over: dict[str, Any]) -> tuple[Simulation, Any, Any]:
    cfg = config_from_dict({**QUIET, **cfg_over}, default_config("safe"))
    sim = Simulation(cfg, 1, schedule=[{"t": 8000, "do": "produce", "count": 3}], max_time=20_000,
                     bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None
    master = sim.broker(sim.believed_master() or "")
    slave = next(n for b in sim.brokers if (n := sim.broker(b)) is not None and n is not master)
    return sim, master, slave


def _pull(node: Any, offset: int = 0) -> Command:
    node.out.clear()
    node.on_message("c1", Command(int(RequestCode.PULL_MESSAGE), 7, {"queueOffset": offset}), "c1#0")
    sent = [e for e in node.out if isinstance(e, Send)]
    assert len(sent) == 1
    return sent[0].cmd


def test_a_slave_refuses_pulls_unless_slave_read_is_enabled():
    """PullMessageProcessor.rejectRequest: without slaveReadEnable a slave answers SYSTEM_BUSY; with it, it serves
    its own consume queue and points the consumer back to the master (minBrokerIdInGroup is the master)."""
    _, master, slave = _slave_and_master({})
    assert _pull(slave).code == ResponseCode.SYSTEM_BUSY
    assert _pull(master).code == ResponseCode.SUCCESS and "suggestWhichBrokerId" not in _pull(master).header
    _, master, slave = _slave_and_master({"broker": {"slaveReadEnable": True}})
    got = _pull(slave)
    assert got.code == ResponseCode.SUCCESS and len(got.body) == 3 and got.header["suggestWhichBrokerId"] == 0
    assert _pull(slave, 3).code == ResponseCode.PULL_RETRY_IMMEDIATELY  # nothing new: try the master now
    assert _pull(master).header["suggestWhichBrokerId"] == 0  # 16 GiB x 40%: everything is in memory


def test_a_master_sends_a_consumer_that_reads_from_disk_to_slave_one():
    """DefaultMessageStore.getMessage: diff = maxOffsetPy - maxPhyOffsetPulling > memory suggests pulling from a slave
    (whichBrokerWhenConsumeSlowly = 1); accessMessageInMemoryMaxRatio = 0 makes every pull not at the log's end one."""
    _, master, slave = _slave_and_master({"broker": {"slaveReadEnable": True},
                                          "store": {"accessMessageInMemoryMaxRatio": 0}})
    assert _pull(master).header["suggestWhichBrokerId"] == 1
    assert _pull(slave).header["suggestWhichBrokerId"] == 1  # the slave keeps it while the consumer lags


def _seen_by(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines()[1:-1]:
        for o in json.loads(line).get("obs", []):
            if o["k"] == "client.seen":
                out[o["broker"]] = out.get(o["broker"], 0) + 1
    return out


def test_consumers_read_from_slaves_and_the_checks_cover_it():
    """With slaveReadEnable and accessMessageInMemoryMaxRatio 0 the consumer follows the suggestions to the slaves
    (PullAPIWrapper.updatePullFromWhichNode; findBrokerAddressInSubscribe takes id 2 when 1 is the master's), under
    random faults, and the visibility checks hold; with slave-confirms-own-max a slave's reads outrun the set."""
    cfg = config_from_dict({"broker": {"slaveReadEnable": True}, "store": {"accessMessageInMemoryMaxRatio": 0}},
                           default_config("safe"))
    r = run(cfg, 2, 6000, bugs=list(B.FIXES_ALL))
    assert r.violation is None, r.violation
    seen = _seen_by(r.text or "")
    assert len(seen) >= 2 and sum(seen.values()) > 100, seen
    bad = run(cfg, 2, 6000, bugs=sorted([*B.FIXES_ALL, B.SLAVE_CONFIRMS_OWN_MAX]), record=False)
    assert bad.violation is not None and bad.violation.invariant == "SYNC-DISPATCH-CONFIRMED"


def test_with_the_master_gone_from_the_route_the_consumer_reads_a_slave():
    """findBrokerAddressInSubscribe(brokerName, 0, false): no master in the route (the controller is down, so nobody
    replaces the dead master), the first broker of it. The consumer cannot reach master b2 while it lives; without
    slaveReadEnable it never reads, with it it reads the confirmed messages from a slave once b2 is gone."""
    sched = [{"t": 7000, "do": "partition", "id": "p", "links": [["c1", "b2"], ["b2", "c1"]]},
             {"t": 8000, "do": "produce", "count": 4}, {"t": 9500, "do": "crash", "node": "ctl"},
             {"t": 16_000, "do": "crash", "node": "b2"}]
    over = {"workload": {"produce_interval": 0, "consume_interval": 300}}
    seen = {}
    for enable in (False, True):
        cfg = config_from_dict({**over, "broker": {"slaveReadEnable": enable}}, default_config("safe"))
        r = run(cfg, 1, 200_000, bugs=list(B.FIXES_ALL), schedule=sched, max_time=30_000)
        assert r.violation is None, r.violation
        seen[enable] = _seen_by(r.text or "")
    assert seen[False] == {}
    assert sum(seen[True].values()) == 4 and "b2" not in seen[True], seen[True]
