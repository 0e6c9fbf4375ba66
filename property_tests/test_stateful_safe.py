"""The safe configuration with every documented finding's fix on holds every catalogue invariant, under the
active Hypothesis profile (``ci`` by default: fixed examples; ``deep``: many, random, with the database).

Beside it, the suites whose failures are expected: power loss (a documented exception of the SYNC-*
invariants), RocketMQ without the findings' fixes (documented findings), and a fresh cluster (QUIRK-EPOCH-EQ)."""

import json
import time
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from rmqha.impl import bugs as B
from rmqha.impl.findings import is_documented, triage
from rmqha.impl.sim.runner import run_header

from property_tests.cluster_machine import ConformTally, InvariantViolated, machine_for
from property_tests.profiles import SUPPRESS
from property_tests.suites import FRESH, POWER_LOSS, POWER_LOSS_INVARIANTS, SAFE, STOCK, Suite
from property_tests.traces import ENV_DIR

SafeCluster = machine_for(SAFE)


def test_safe_suite_runs_every_fix_and_no_bug():
    """Every fix, and the switches of the release the suites run (``--rocketmq``; 5.3.3: none)."""
    assert set(SAFE.bugs) == set(B.FIXES_ALL) | set(B.release_switches(SAFE.release))
    assert not SAFE.disabled and not SAFE.focus and SAFE.expect is None


def test_safe_cluster_holds_every_invariant(capsys):
    SafeCluster.reset_counters()
    t0 = time.perf_counter()
    run_state_machine_as_test(SafeCluster, settings=settings())
    wall = time.perf_counter() - t0
    with capsys.disabled():
        print(f"\nsafe suite: {SafeCluster.examples} examples in {wall:.1f} s "
              f"({SafeCluster.examples / wall:.1f} examples/s)")
    assert SafeCluster.examples >= min(settings().max_examples, 10)


@pytest.mark.slow
def test_fresh_cluster_holds_every_invariant():
    """The safe suite on logs that hold nothing yet (``FRESH``: no priming message). Before F-EPOCH-EQ-SPLICE's
    fix it failed HA-LOG-MATCHING within 655 derandomized examples (an empty epoch's entry and a new master's
    writes under it); with every fix on it holds."""
    machine = machine_for(FRESH)
    machine.reset_counters()
    run_state_machine_as_test(machine, settings=settings(max_examples=2000, derandomize=True, database=None))
    assert machine.examples >= 1000


EXPECTED_SETTINGS = settings(max_examples=300, stateful_step_count=30, derandomize=True, database=None,
                             deadline=None, report_multiple_bugs=False, suppress_health_check=SUPPRESS,
                             phases=(Phase.explicit, Phase.generate))


def _first_failure(suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict]:
    """Run ``suite`` until its first failure; return the invariant and the trace header of that example."""
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    machine = machine_for(suite)
    machine.reset_counters()
    with pytest.raises(InvariantViolated) as err:
        run_state_machine_as_test(machine, settings=EXPECTED_SETTINGS)
    failure = machine.last_failure
    assert failure is not None and failure.trace is not None
    return err.value.invariant, json.loads(Path(failure.trace).read_text().splitlines()[0])


def test_power_loss_breaks_only_what_the_catalogue_excepts(tmp_path, monkeypatch):
    """A power loss drops acknowledged page-cache bytes of a slave: the catalogue lists it as an exception of
    the SYNC-* invariants. Whatever fails is one of those, and the same run with plain crashes holds."""
    found, header = _first_failure(POWER_LOSS, tmp_path, monkeypatch)
    assert found in POWER_LOSS_INVARIANTS
    events = [dict(a, powerLoss=False) if a["do"] == "crash" else a for a in header["faults"]["events"]]
    assert any(a.get("powerLoss") for a in header["faults"]["events"])
    assert run_header(dict(header, faults={"mode": "explicit", "events": events}), keep=False).violation is None


def test_stock_rocketmq_failures_are_documented_findings(tmp_path, monkeypatch):
    """RocketMQ 5.3.3 without the findings' fixes: the first failure found is explained by a documented finding
    (``impl/findings.py``: the run no longer fails there with that finding's fix on)."""
    found, header = _first_failure(STOCK, tmp_path, monkeypatch)
    recorded = run_header(header, keep=False).violation
    assert recorded is not None and recorded.invariant == found

    def rerun(h: dict) -> dict | None:
        v = run_header(h, keep=False).violation
        return None if v is None else v.to_dict()

    explained = triage(header, recorded.to_dict(), rerun).explained_by  # one finding, or a set of them: F-A+F-B
    assert is_documented(explained), f"{found}: no documented finding explains it"


CONFORM_EXAMPLES = 60


def test_safe_examples_conform_to_the_model(capsys):
    """Trace validation of the suite's own examples: each clean example's schedule is re-run and every step
    checked against the executable model (``rmqha conform``); the ratio is the conformance overhead."""
    SafeCluster.reset_counters()
    SafeCluster.conform = tally = ConformTally()
    try:
        run_state_machine_as_test(SafeCluster, settings=settings(max_examples=CONFORM_EXAMPLES))
    finally:
        SafeCluster.conform = None
    with capsys.disabled():
        print(f"\nsafe suite conformance: {tally.conforming}/{tally.examples} examples conform; simulation "
              f"{tally.sim_seconds:.1f} s, validation {tally.validate_seconds:.1f} s (overhead {tally.overhead:.2f})")
    assert tally.examples >= min(settings().max_examples, CONFORM_EXAMPLES) // 2
    assert not tally.divergences, tally.divergences[0]
