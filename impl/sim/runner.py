"""Run one simulation from its inputs, or again from a trace header (replay)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ..bugs import check_names
from ..invariants import BY_ID, Checker
from ..trace import TraceRecorder
from .actions import Action
from .config import Config, ConfigError, config_from_dict
from .provenance import KEYS, provenance
from .world import Recorder, Simulation, StepChecker, Violation


@dataclass
class RunResult:
    seed: int
    steps: int
    sim_time: int
    violation: Violation | None
    digest: str | None
    text: str | None
    coverage: dict[str, int]


def header_for(cfg: Config, seed: int, steps: int, bugs: list[str], schedule: list[Action] | None,
               max_time: int | None = None, profile: str | None = None,
               disabled: Collection[str] = (), conform: bool = False,
               recorded_by: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A trace header, with who records it (``kit``, ``core``: ``provenance.py``): this kit, or for a re-run of a
    recorded header ``recorded_by``, that header's own (none for a trace recorded before provenance). ``conform``:
    the run is validated against the model as it runs (``"conform": true``; left out otherwise):
    ``rmqha.models.campaign`` runs such a header, ``run_header`` here refuses it."""
    header: dict[str, Any] = {
        **(provenance() if recorded_by is None else recorded_by), "seed": seed, "maxSteps": steps,
        "maxTime": max_time, "bugs": sorted(bugs), "profile": profile, "config": cfg.to_dict(),
        "disabledInvariants": sorted(disabled),
        "faults": {"mode": "generated"} if schedule is None else {"mode": "explicit", "events": schedule}}
    if conform:
        header["conform"] = True
    return header


def simulation(cfg: Config, seed: int, steps: int, *, bugs: list[str] | tuple[str, ...] = (),
               schedule: list[Action] | None = None, max_time: int | None = None,
               disabled: Collection[str] = (), recorder: Recorder | None = None,
               wrap: Callable[[Simulation, Checker], StepChecker] | None = None,
               note_actions: bool = False) -> Simulation:
    """The simulation ``run`` runs, not yet started. ``wrap(world, checker)`` may put a read-only probe where the
    checker stands (the fuzzer's coverage probe); ``note_actions`` keeps the fault actions applied (``sim.taken``)."""
    switches = check_names(list(bugs))
    unknown = set(disabled) - set(BY_ID)
    if unknown:
        raise ValueError(f"unknown invariant(s): {', '.join(sorted(unknown))}")
    enabled = set(BY_ID) - set(disabled)

    def factory(w: Simulation) -> StepChecker:
        checker = Checker(w, enabled=enabled)
        return wrap(w, checker) if wrap is not None else checker

    return Simulation(cfg, seed, bugs=switches, schedule=schedule, max_steps=steps, max_time=max_time,
                      recorder=recorder, checker_factory=factory, note_actions=note_actions)


def run(cfg: Config, seed: int, steps: int, *, bugs: list[str] | tuple[str, ...] = (),
        schedule: list[Action] | None = None, max_time: int | None = None, profile: str | None = None,
        record: bool = True, keep: bool = True, disabled: Collection[str] = (),
        recorded_by: Mapping[str, str] | None = None) -> RunResult:
    """One seeded run. ``record=False`` skips the trace entirely (fastest, no digest); ``recorded_by``: the
    provenance of a recorded header this run re-runs (``header_for``).

    ``disabled`` names invariants not to check (e.g. a precursor that would stop the run before the loss a
    scenario wants to show); it is recorded in the trace header.
    """
    recorder = TraceRecorder(header_for(cfg, seed, steps, list(bugs), schedule, max_time, profile, disabled,
                                        recorded_by=recorded_by), keep) if record else None
    sim = simulation(cfg, seed, steps, bugs=bugs, schedule=schedule, max_time=max_time, disabled=disabled,
                     recorder=recorder)
    violation = sim.run()
    return RunResult(seed, sim.step, sim.now, violation, recorder.digest() if recorder else None,
                     recorder.text() if recorder and keep else None, dict(sim.checker.coverage.counts))


def header_args(header: dict[str, Any]) -> dict[str, Any]:
    """A trace header as the keyword arguments of ``run`` / ``simulation`` (``ValueError`` with one line)."""
    try:
        cfg = config_from_dict(header["config"])
    except ConfigError as exc:
        raise ValueError(f"trace config: {exc}") from None
    faults = header["faults"]
    if not isinstance(faults, dict) or faults.get("mode") not in ("generated", "explicit"):
        raise ValueError("trace header: faults.mode must be 'generated' or 'explicit'")
    schedule = None if faults["mode"] == "generated" else list(faults.get("events", []))
    return {"cfg": cfg, "seed": int(header["seed"]), "steps": int(header["maxSteps"]),
            "bugs": list(header.get("bugs", [])), "schedule": schedule, "max_time": header.get("maxTime"),
            "disabled": list(header.get("disabledInvariants", []))}


def run_header(header: dict[str, Any], keep: bool = True, record: bool = True) -> RunResult:
    """Re-run exactly what a trace header describes (not a run validated against the model: ``ValueError``)."""
    if header.get("conform"):
        raise ValueError("this run was validated against the model (\"conform\": true): re-run it with "
                         "rmqha.models.campaign.run_header (rmqha replay does)")
    return run(**header_args(header), profile=header.get("profile"), keep=keep, record=record,
               recorded_by={k: str(header[k]) for k in KEYS if k in header})
