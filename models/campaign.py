"""Conformance in campaigns: ``rmqha simulate`` and ``rmqha fuzz`` validate each run against the model as it runs.

A run is validated when its profile allows it (``scope``: a controller-mode run inside the model, ``outside_model``,
with no code switch on: the model is the reference a bug switch deviates from) and the campaign has not been told
``--no-conform``. Its trace header then says ``"conform": true`` (absent otherwise, so that every header written
before keeps its bytes), and whatever re-runs it (replay, triage, shrinking) validates it again: ``run_header`` here
reads the flag; ``impl.sim.runner.run_header`` refuses such a header (the core cannot run the model).

The validator (``conform.Validator``) stands beside the catalogue's checker: after every step the checker runs first,
then the validator; a step that leaves the model is the catalogue violation ``MODEL-CONFORM`` (stated in
``impl/invariants/conform.py``), so that a step that also breaks a catalogue invariant reports that one, as runs
without conformance did. The run stops there, and is explained, bucketed and shrunk like any other violation.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.invariants import Checker, Coverage, Settle
from rmqha.impl.observations import Observation
from rmqha.impl.sim.actions import Action
from rmqha.impl.sim.config import Config
from rmqha.impl.sim.runner import RunResult, header_args, header_for, release_of, simulation
from rmqha.impl.sim.world import Recorder, Simulation, StepChecker
from rmqha.impl.trace import TraceRecorder

from .conform import Divergence, EventTap, Validator, model_config, outside_model

MODEL_CONFORM = "MODEL-CONFORM"


def scope(cfg: Config, bugs: Collection[str], schedule: list[Action] | None = None) -> str | None:
    """Why a run cannot be validated against the model, or None when it can."""
    if cfg.cluster.mode != "controller":
        return "a 4.x legacy run"
    switches = sorted(b for b in bugs if b in B.BUGS and B.BUGS[b].kind in ("switch", "fidelity", "upstream"))
    if switches:
        return f"a code switch is on ({', '.join(switches)}): the model is the reference it deviates from"
    faults: dict[str, Any] = {"mode": "generated"} if schedule is None else {"mode": "explicit", "events": schedule}
    beyond = outside_model(cfg, {"bugs": sorted(bugs), "faults": faults})
    return f"outside the model: {beyond}" if beyond is not None else None


class ConformingChecker:
    """The catalogue's checker (or a probe around it), then the model's validator, after every step."""

    def __init__(self, sim: Simulation, inner: StepChecker, header: dict[str, Any]) -> None:
        self.sim = sim
        self.inner = inner
        self.validator = Validator(sim, model_config(header), None, stop=False)
        self.reported = False

    @property
    def coverage(self) -> Coverage:
        return self.inner.coverage

    @property
    def divergence(self) -> Divergence | None:
        return self.validator.report.divergence

    def after_step(self, observations: list[Observation]) -> None:
        self.inner.after_step(observations)
        self.validator.after_step(observations)
        d = self.validator.report.divergence
        if d is not None and not self.reported:
            self.reported = True
            self.sim.fail(MODEL_CONFORM, f"the step is no transition of the model: {d.action}: {d.guard}"
                          + (f" ({d.detail})" if d.detail else ""), {"divergence": d.to_dict()})

    def check_progress(self, ids: list[str], at: Settle) -> None:
        self.inner.check_progress(ids, at)

    def check_at_run_end(self) -> None:
        self.inner.check_at_run_end()


def conforming(header: dict[str, Any],
               inner: Callable[[Simulation, Checker], StepChecker] | None = None
               ) -> Callable[[Simulation, Checker], StepChecker]:
    """A ``wrap`` for ``impl.sim.runner.simulation``: the checker (wrapped by ``inner`` first, e.g. the fuzzer's
    coverage probe), then the validator of ``header``'s model constants."""

    def wrap(sim: Simulation, checker: Checker) -> StepChecker:
        return ConformingChecker(sim, inner(sim, checker) if inner is not None else checker, header)

    return wrap


def checked_simulation(header: dict[str, Any], *, recorder: Recorder | None = None,
                       wrap: Callable[[Simulation, Checker], StepChecker] | None = None,
                       note_actions: bool = False) -> Simulation:
    """The simulation of ``header`` (``impl.sim.runner.simulation``), validated against the model when the header
    says ``"conform": true``. The validator reads each step's event, so a run without a recorder gets one that keeps
    nothing."""
    if not header.get("conform"):
        return simulation(**header_args(header), recorder=recorder, wrap=wrap, note_actions=note_actions)
    return simulation(**header_args(header), recorder=recorder if recorder is not None else EventTap(),
                      wrap=conforming(header, wrap), note_actions=note_actions)


def run(cfg: Config, seed: int, steps: int, *, bugs: list[str] | tuple[str, ...] = (),
        schedule: list[Action] | None = None, max_time: int | None = None, profile: str | None = None,
        record: bool = True, keep: bool = True, disabled: Collection[str] = (), conform: bool = True,
        rocketmq: str = B.DEFAULT_RELEASE) -> RunResult:
    """``impl.sim.runner.run``, validated against the model when ``conform`` and the run is in its scope."""
    on = conform and scope(cfg, bugs, schedule) is None
    header = header_for(cfg, seed, steps, list(bugs), schedule, max_time, profile, disabled, conform=on,
                        rocketmq=rocketmq)
    return run_header(header, keep=keep, record=record)


def run_header(header: dict[str, Any], keep: bool = True, record: bool = True) -> RunResult:
    """Re-run exactly what a trace header describes: ``impl.sim.runner.run_header``, and the model's validation
    when the header says ``"conform": true``."""
    release_of(header)
    recorder = TraceRecorder(header, keep) if record else None
    sim = checked_simulation(header, recorder=recorder)
    violation = sim.run()
    return RunResult(int(header["seed"]), sim.step, sim.now, violation, recorder.digest() if recorder else None,
                     recorder.text() if recorder and keep else None, dict(sim.checker.coverage.counts))


def violation_of(header: dict[str, Any]) -> dict[str, Any] | None:
    """Re-run a header without a trace; its violation as a dict (None if clean)."""
    r = run_header(header, record=False)
    return dict(r.violation.to_dict()) if r.violation else None


def fails(cfg: Config, seed: int, steps: int, bugs: list[str], invariant: str, max_time: int | None,
          disabled: Collection[str] = (), conform: bool = False) -> Callable[[list[Action]], tuple[int, int] | None]:
    """``impl.sim.shrink.fails`` with the model's validation when ``conform`` (a shrink of a validated run keeps
    validating its candidates): a predicate on explicit schedules, ``(step, time)`` when the run fails ``invariant``."""

    def check(schedule: list[Action]) -> tuple[int, int] | None:
        on = conform and scope(cfg, bugs, schedule) is None
        header = header_for(cfg, seed, steps, bugs, schedule, max_time, None, disabled, conform=on)
        r = run_header(header, record=False)
        v = r.violation
        return (v.step, v.time) if v is not None and v.invariant == invariant else None

    return check
