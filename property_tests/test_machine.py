"""The cluster machine itself, driven by hand: a run driven rule by rule is the run of its explicit schedule,
a failing example leaves a trace ``rmqha replay`` reproduces, and each invariant fails under its own id."""

import json
from pathlib import Path

import pytest
from rmqha.impl.invariants import CATALOGUE
from rmqha.impl.sim.runner import run_header

from property_tests.cluster_machine import (
    MAX_STEPS,
    VIOLATED,
    ClusterMachine,
    InvariantViolated,
    invariant_method_name,
    machine_for,
)
from property_tests.coverage import LABELS
from property_tests.suites import BUG_SUITES, SAFE, SUITES
from property_tests.traces import ENV_DIR, header, trace_path
from rmqha.cli import main as rmqha_main


def _drive(m: ClusterMachine) -> None:
    """A busy program: every kind of rule once, across a failover."""
    m.boot(seed=3, warmup=6000)
    m.produce_sync(size=None)
    m.produce_burst(count=5, size=5000, wait=50)
    pid = m.cut(pair=("ctl", "master"), both=False, wait=300)
    m.slow_commit(extra=6000, duration=1000, wait=1000)
    m.heal(pid=pid, wait=0)
    m.lossy_net(drop=0.3, dup=0.1, slow=0.2, duration=2000, wait=50)
    m.break_ha(ref="slave", wait=1000)
    m.pause(ref="slave", wait=300)
    m.resume(node=m._resolve("slave"), wait=5)
    m.slow_dispatch(ref="slave", ms=2000, wait=5)
    node = m.crash_broker(ref="master", power_loss=False, wait=3000)
    m.restart(node=node, wait=0)
    iso = m.isolate(ref="b1", wait=12_000)
    m.heal(pid=iso, wait=0)
    m.admin_elect(ref="slave", wait=1000)
    m.crash_controller(wait=2000)
    m.restart(node="ctl", wait=3000)
    m.produce_sync(size=100)


def test_rule_names_and_invariant_methods():
    machine = machine_for(SAFE)
    for inv in CATALOGUE:
        method = getattr(machine, invariant_method_name(inv.id))
        assert inv.id in method.__doc__
        assert issubclass(VIOLATED[inv.id], InvariantViolated) and VIOLATED[inv.id].invariant == inv.id
    assert len({VIOLATED[i.id] for i in CATALOGUE}) == len(CATALOGUE)
    assert set(LABELS) >= {"election", "truncation-across-epochs", "expand-races-master-crash", "unclean-election",
                           "lost-reply-event-applies"}
    assert {s.name for s in SUITES.values()} >= {"safe", *BUG_SUITES}


def test_a_driven_run_is_the_run_of_its_schedule():
    """The rules, then teardown's settle (the safe suite checks the progress invariants): the whole driven run is the
    run of its schedule, the fault phase ending where the rules did and the settle tail after it."""
    m = machine_for(SAFE)()
    _drive(m)
    assert m.sim is not None and m.sim.violation is None
    fault_phase = m.sim.step
    m.teardown()
    assert m.sim.violation is None and m.settled and m.sim.step > fault_phase
    assert [a["t"] for a in m.schedule] == sorted(a["t"] for a in m.schedule)
    assert {a["do"] for a in m.schedule} >= {"produce", "partition", "heal", "slow-commit", "net", "break-ha",
                                             "pause", "resume", "slow-dispatch", "crash", "restart", "admin-elect"}
    again = run_header(header(SAFE.config, m.seed, MAX_STEPS, list(SAFE.bugs), m.schedule, m._ran_before(),
                              SAFE.disabled, SAFE.release), keep=False)
    assert again.violation is None
    assert (again.steps, again.sim_time) == (m.sim.step, m.sim.now)
    assert m.checker is not None and m.checker.counts()["election"] >= 2


def test_a_failing_example_leaves_a_replayable_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    suite = BUG_SUITES["ack-local-sss-only"]
    m = machine_for(suite)()
    m.boot(seed=0, warmup=6000)  # the program Hypothesis shrinks this suite's failure to
    m.cut(pair=("ctl", "master"), both=False, wait=0)
    m.advance(ms=100)
    m.produce_sync(size=None)
    assert m.sim is not None and m.sim.violation is not None
    assert m.sim.violation.invariant == suite.expect
    for inv in CATALOGUE:  # the others stay quiet; only the one the run stopped on raises
        if inv.id != suite.expect:
            getattr(m, invariant_method_name(inv.id))()
    with pytest.raises(VIOLATED[suite.expect], match="rmqha replay"):
        getattr(m, invariant_method_name(suite.expect))()
    path = trace_path(suite.name, suite.expect)
    assert path.parent == tmp_path and path.exists()
    lines = path.read_text().splitlines()
    footer = json.loads(lines[-1])
    assert footer["violation"]["invariant"] == suite.expect
    assert json.loads(lines[0])["faults"]["events"] == m.schedule
    assert rmqha_main(["replay", str(path)]) == 0
    path.write_text("\n".join([lines[0], *lines[1:-2], lines[-1]]) + "\n")  # a trace that lost a line
    assert rmqha_main(["replay", str(path)]) == 1
