"""Every injectable bug is caught: its scenario fails the invariant it names with the switch on, and the same
run has no violation with it off (impl/sim/scenarios.py)."""

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.invariants import BY_ID, Checker
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.scenarios import SCENARIOS


def _run(name: str, on: bool):
    s = SCENARIOS[name]
    return run(s.config_for(on), s.seed, 200_000, bugs=s.bugs(on), schedule=s.schedule, max_time=s.max_time,
               disabled=s.disabled, record=False)


def test_every_switch_and_expected_loss_config_has_a_scenario():
    wanted = {n for n, b in B.BUGS.items() if b.kind in ("switch", "config", "fidelity")}
    assert wanted == set(SCENARIOS)
    assert len([n for n, b in B.BUGS.items() if b.kind == "switch"]) >= 6
    for s in SCENARIOS.values():
        assert s.invariant in BY_ID


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_switch_on_fails_the_named_invariant(name):
    r = _run(name, on=True)
    assert r.violation is not None, f"{name}: no violation with the switch on"
    assert r.violation.invariant == SCENARIOS[name].invariant, r.violation.message


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_switch_off_same_run_is_clean(name):
    r = _run(name, on=False)
    assert r.violation is None, f"{name}: {r.violation.invariant}: {r.violation.message}"
    assert r.sim_time > 0


def test_ha_contiguous_checker_catches_a_gap():
    """No reachable schedule makes a master send a gap (frames follow the slave's own report over TCP), so the
    HA-CONTIGUOUS predicate is shown on the observation the slave emits for each append."""
    from rmqha.impl.sim.config import default_config
    from rmqha.impl.sim.world import Simulation

    sim = Simulation(default_config("safe"), 1, schedule=[], max_time=1)
    checker = Checker(sim)
    checker.after_step([{"k": "ha.slave-append", "n": "b1", "offset": 100, "size": 10, "max": 100}])
    assert sim.violation is None
    checker.after_step([{"k": "ha.slave-append", "n": "b1", "offset": 140, "size": 10, "max": 120}])
    assert sim.violation is not None and sim.violation.invariant == "HA-CONTIGUOUS"


def test_ha_truncate_prefix_checker_catches_a_point_past_the_log_end():
    """consistent-point-uses-max's other shape: max() of the two ends of the shared epoch is past the slave's own
    log, which truncates nothing and then reports that point as acked. The bytes it holds still match, so the
    prefix comparison alone is blind to it; the truncation observation is checked against the log end."""
    from rmqha.impl.sim.config import default_config
    from rmqha.impl.sim.world import Simulation

    sim = Simulation(default_config("safe"), 1, schedule=[], max_time=1)
    checker = Checker(sim)
    base = {"k": "ha.truncate", "n": "b1", "masterMax": 900, "master": [[1, 0], [2, 500]]}
    checker.after_step([dict(base, point=500, before=700)])
    assert sim.violation is None
    checker.after_step([dict(base, point=800, before=700)])
    assert sim.violation is not None and sim.violation.invariant == "HA-TRUNCATE-PREFIX"
