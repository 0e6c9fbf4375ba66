"""Every injectable bug and expected-loss configuration is found by the cluster machine, by its invariant.

For each suite of ``suites.BUG_SUITES`` a fixed, derandomized Hypothesis run (``BUG_SETTINGS``, whatever the
profile) must fail the invariant ``impl/bugs.py`` names. The shrunk example must be short: at most
``MAX_SHRUNK_ACTIONS`` fault or workload actions, and ``MAX_SHRUNK_RULES`` rules counting ``advance``. Its
trace must replay with ``rmqha replay``, and the same schedule with the switch off (the setting back at its
safe value) must not fail at all, so the failure is the bug's doing.

Two bugs are out of the search's reach in this budget: confirm-counts-new-connection needs four brokers and
seven faults in order (a lagging broker out of the SyncStateSet, lost controller replies, another member
reconnecting, traffic in its 5 s handshake window); recover-confirms-scan-end is found, but its example shrinks to
eight actions (sends no slave receives, the master's death, a failover, its restart). Their tests run those programs
through the machine's own rules instead (``SCRIPTED``), with the same checks.
"""

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from rmqha.impl import bugs as B
from rmqha.impl.invariants import CATALOGUE
from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.runner import run_header

from property_tests.cluster_machine import (
    ClusterMachine,
    Failure,
    InvariantViolated,
    invariant_method_name,
    machine_for,
)
from property_tests.profiles import SUPPRESS
from property_tests.suites import BUG_SUITES, Suite
from property_tests.traces import ENV_DIR
from rmqha.cli import main as rmqha_main

BUG_SETTINGS = settings(max_examples=600, stateful_step_count=30, derandomize=True, database=None, deadline=None,
                        report_multiple_bugs=False, print_blob=True, suppress_health_check=SUPPRESS,
                        phases=(Phase.explicit, Phase.generate, Phase.shrink))
MAX_SHRUNK_ACTIONS = 5  # primitive actions the shrunk rules scheduled (boot's priming message not counted)
MAX_SHRUNK_RULES = 20  # rules after boot, ``advance`` included (it cannot merge two waits into one)


def _check_failure(name: str, suite: Suite, found: str, failure: Failure | None, shrunk: bool = True) -> None:
    """The found invariant, a short example, a trace that replays, and a clean run without the bug."""
    assert failure is not None and failure.trace is not None
    assert found == suite.expect, found
    assert failure.invariant == found
    if shrunk:
        assert failure.actions <= MAX_SHRUNK_ACTIONS, f"shrunk example schedules {failure.actions} actions"
        assert failure.rules <= MAX_SHRUNK_RULES, f"shrunk example runs {failure.rules} rules"
    assert rmqha_main(["replay", failure.trace]) == 0  # a reproduced violating trace exits 0
    header = json.loads(Path(failure.trace).read_text().splitlines()[0])
    off = run_header(_without_bug(header, suite), keep=False)
    assert off.violation is None, f"without {name}: {off.violation}"


def _confirm_counts_new_connection(m: ClusterMachine) -> None:
    """impl/sim/scenarios.py's program for this bug, in the machine's rules (brokers named by role at run time)."""
    m.boot(seed=1, warmup=7000)
    master = m._resolve("master")
    others = [b for b in m.suite.brokers_names if b != master]
    lagging, reconnecting = others[-1], others[0]
    pid = m.cut(pair=(master, lagging), both=True, wait=0)  # the lagging broker drops out of the SSS...
    m.break_ha(ref=lagging, wait=2000)
    m.produce_burst(count=5, size=None, wait=1500)  # ... and misses acknowledged messages
    m.heal(pid=pid, wait=400)
    m.cut(pair=("ctl", master), both=False, wait=100)  # the master's controller replies are lost
    m.break_ha(ref=reconnecting, wait=3000)  # an SSS member reconnects: 5 s of handshake, ack -1
    m.advance(ms=3000)
    m.produce_burst(count=5, size=None, wait=3000)  # acks recompute confirmOffset over the new connection
    m.advance(ms=6000)


def _recover_confirms_scan_end(m: ClusterMachine) -> None:
    """impl/sim/scenarios.py's program for this bug: the master's last sends reach no slave, it dies, a slave is
    elected, and the old master restarts (the search finds it, in eight actions where a short example has five)."""
    m.boot(seed=1, warmup=8000)
    master = m._resolve("master")
    slaves = [b for b in m.suite.brokers_names if b != master]
    pids = [m.cut(pair=(master, s), both=False, wait=0) for s in slaves]
    m.produce_burst(count=3, size=None, wait=500)
    m.crash_broker(ref=master, power_loss=False, wait=10_000)
    for pid in pids:
        m.heal(pid=pid, wait=0)
    m.advance(ms=5000)
    m.restart(node=master, wait=5000)


SCRIPTED: dict[str, Callable[[ClusterMachine], None]] = {
    B.CONFIRM_COUNTS_NEW_CONNECTION: _confirm_counts_new_connection,
    B.RECOVER_CONFIRMS_SCAN_END: _recover_confirms_scan_end,
}


# Switches this search does not look for, each with why; each is shown by its scenario instead (tests/test_bugs.py:
# the switch's invariant fails with it on and the same run is clean with it off) and by the quick campaign of
# bench/mutation_campaign.py, whose profile draws its faults.
NOT_SEARCHED: dict[str, str] = {
    B.CLEAN_SKIPS_LIVING_CHECK: "reached only by the admin's cleanBrokerData naming a living broker "
                                "(fault clean-living-broker, the jraft-ops profile); the machine has no such rule",
    B.ADDRESS_UPDATE_DROPPED: "reached only by a broker restarted on another listenPort (fault move-broker, the "
                              "jraft-ops profile); the machine has no such rule",
    B.PULL_NEXT_OFFSET_STALE: "a 4.x consumer's pull (LIVE-CONSUME is checked in 4.x runs only); the machine runs "
                              "controller mode",
    B.ELECT_REQUEST_NOT_NOTIFIED: "BRK-ROLE-LATENCY is judged only over a window with no fault acting or in force; "
                                  "not found in the search's 600 examples (the fuzz finds it: tests/test_fuzz.py)",
    B.CLOSE_KEEPS_MEMBER: "SYNC-SHRINK-LATENCY is judged only over a window with no fault acting or in force; not "
                          "found in the search's 600 examples (the fuzz finds it: tests/test_fuzz.py)",
    B.HA_ADDRESS_NO_WAKEUP: "HA-CLIENT-WAKEUP is judged only over a window with no fault acting or in force; not "
                            "found in the search's 600 examples (the fuzz finds it: tests/test_fuzz.py)",
    B.HA_CLIENT_SPINS: "every example spins to the machine's step limit once a slave reaches TRANSFER: 600 examples "
                       "of that are too slow for the suite (the fuzz finds it: tests/test_fuzz.py)",
}


def _without_bug(header: dict[str, Any], suite: Suite) -> dict[str, Any]:
    """The same run with the switch off, or with an expected-loss setting back at its safe value."""
    bug = B.BUGS[suite.name]
    if bug.kind == "switch":
        return dict(header, bugs=[b for b in header["bugs"] if b != suite.name])
    safe = default_config("safe").to_dict()
    config = {sec: dict(values) for sec, values in header["config"].items()}
    for section, key, _ in bug.settings:
        config[section][key] = safe[section][key]
    return dict(header, config=config)


def test_every_switch_and_expected_loss_config_has_a_suite():
    """Every switch has a suite; one the search does not look for (NOT_SEARCHED) has a scenario instead."""
    from rmqha.impl.sim.scenarios import SCENARIOS

    assert set(BUG_SUITES) == {n for n, b in B.BUGS.items() if b.kind in ("switch", "config")}
    assert set(NOT_SEARCHED) <= set(BUG_SUITES) and set(NOT_SEARCHED) <= set(SCENARIOS)
    for name, suite in BUG_SUITES.items():
        assert suite.expect == B.BUGS[name].invariant
        assert set(suite.bugs) >= set(B.FIXES_ALL) - {B.FIX_CONFIRM_WAITS_FIRST_ACK}


@pytest.mark.parametrize("name", sorted(set(BUG_SUITES) - set(SCRIPTED) - set(NOT_SEARCHED)))
def test_bug_is_found_and_shrunk(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    suite = BUG_SUITES[name]
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    machine = machine_for(suite)
    machine.reset_counters()
    t0 = time.perf_counter()
    with pytest.raises(InvariantViolated) as err:
        run_state_machine_as_test(machine, settings=BUG_SETTINGS)
    wall = time.perf_counter() - t0
    failure = machine.last_failure
    with capsys.disabled():
        print(f"\n{name}: {err.value.invariant} first failed at example {machine.first_found}; shrunk to "
              + (f"{failure.rules} rules ({failure.actions} actions, {failure.sim_time} simulated ms); "
                 if failure else "? ")
              + f"{machine.examples} examples, {wall:.1f} s")
    _check_failure(name, suite, err.value.invariant, failure)


@pytest.mark.parametrize("name", sorted(SCRIPTED))
def test_scripted_bug_program(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = BUG_SUITES[name]
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    machine = machine_for(suite)
    machine.reset_counters()
    m = machine()
    SCRIPTED[name](m)
    assert m.sim is not None and m.sim.violation is not None, "the program ran without a violation"
    with pytest.raises(InvariantViolated) as err:
        for inv in CATALOGUE:
            getattr(m, invariant_method_name(inv.id))()
    _check_failure(name, suite, err.value.invariant, machine.last_failure, shrunk=False)
