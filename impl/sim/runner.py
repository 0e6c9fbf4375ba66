"""Run one simulation from its inputs, or again from a trace header (replay).

A header records the RocketMQ release whose rules the run follows (``"rocketmq"``, ``impl/bugs.py`` ``RELEASES``)
only when it is not the default (5.3.3): every header written before release profiles existed lacks it and means
5.3.3, and replays byte for byte. The release's switches (``release_switches``) are in the header's ``bugs``, where
the core reads them; ``release_of`` checks that they are.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ..bugs import DEFAULT_RELEASE, RELEASES, check_names, release_switches
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
               recorded_by: Mapping[str, str] | None = None,
               rocketmq: str = DEFAULT_RELEASE) -> dict[str, Any]:
    """A trace header, with who records it (``kit``, ``core``: ``provenance.py``): this kit, or for a re-run of a
    recorded header ``recorded_by``, that header's own (none for a trace recorded before provenance). ``conform``:
    the run is validated against the model as it runs (``"conform": true``; left out otherwise):
    ``rmqha.models.campaign`` runs such a header, ``run_header`` here refuses it. ``rocketmq``: the release
    (recorded unless it is the default; ``bugs`` must hold its switches)."""
    header: dict[str, Any] = {
        **(provenance() if recorded_by is None else recorded_by), "seed": seed, "maxSteps": steps,
        "maxTime": max_time, "bugs": sorted(bugs), "profile": profile, "config": cfg.to_dict(),
        "disabledInvariants": sorted(disabled),
        "faults": {"mode": "generated"} if schedule is None else {"mode": "explicit", "events": schedule}}
    if conform:
        header["conform"] = True
    if rocketmq != DEFAULT_RELEASE:
        header["rocketmq"] = rocketmq
    release_of(header)
    return header


def release_of(header: dict[str, Any]) -> str:
    """The release a header's run follows (absent: the default, 5.3.3); ``ValueError`` with one line for an unknown
    one, or for a header whose ``bugs`` lack one of the release's switches."""
    release = header.get("rocketmq", DEFAULT_RELEASE)
    if release not in RELEASES:
        raise ValueError(f"trace header: unknown RocketMQ release {release!r} (known: {', '.join(RELEASES)})")
    missing = sorted(set(release_switches(release)) - set(header.get("bugs", [])))
    if missing:
        raise ValueError(f"trace header: release {release} without its switch(es) {', '.join(missing)}")
    return str(release)


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
        recorded_by: Mapping[str, str] | None = None, rocketmq: str = DEFAULT_RELEASE) -> RunResult:
    """One seeded run. ``record=False`` skips the trace entirely (fastest, no digest); ``recorded_by``: the
    provenance of a recorded header this run re-runs (``header_for``); ``rocketmq``: the release whose rules it follows.

    ``disabled`` names invariants not to check (e.g. a precursor that would stop the run before the loss a
    scenario wants to show); it is recorded in the trace header.
    """
    header = header_for(cfg, seed, steps, list(bugs), schedule, max_time, profile, disabled,
                        recorded_by=recorded_by, rocketmq=rocketmq)
    recorder = TraceRecorder(header, keep) if record else None
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
               recorded_by={k: str(header[k]) for k in KEYS if k in header}, rocketmq=release_of(header))
