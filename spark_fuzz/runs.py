"""One run of a trace header with the coverage probe on, and the fault actions it took.

This is ``models.campaign.run_header`` (the model's validation too, for a header that says ``"conform": true``) with
the checker wrapped by ``coverage.CoverageProbe`` and, on request, the
fault actions the simulation applied (``note_actions``: a generated run's explicit schedule, without recording a
trace). Neither changes what the run does: ``tests/test_fuzz_units.py`` checks a probed run has the same hash as
the plain one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rmqha.impl.sim.actions import Action
from rmqha.impl.sim.world import Violation
from rmqha.models.campaign import ConformingChecker, checked_simulation

from .coverage import CoverageProbe


@dataclass
class ProbedRun:
    violation: Violation | None
    steps: int
    sim_ms: int
    states: dict[str, int]
    witnesses: dict[str, int]
    actions: list[Action] = field(default_factory=list)
    roles: list[list[Any]] = field(default_factory=list)


def probed_run(header: dict[str, Any], want_actions: bool = False, recorder: Any = None) -> ProbedRun:
    """Run ``header`` (as ``run_header`` would) with the probe; ``recorder`` only for tests comparing hashes."""
    sim = checked_simulation(header, recorder=recorder, wrap=CoverageProbe, note_actions=want_actions)
    violation = sim.run()
    probe = sim.checker.inner if isinstance(sim.checker, ConformingChecker) else sim.checker
    assert isinstance(probe, CoverageProbe)
    return ProbedRun(violation, sim.step, sim.now, probe.states, probe.witnesses(), sim.taken or [], probe.roles)
