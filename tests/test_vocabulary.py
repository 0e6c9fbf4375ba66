"""The typed vocabulary between layers: each list of kinds matches the records that define them, and what the
simulator emits in a run is what the records say (every kind known, every required field there)."""

from __future__ import annotations

from typing import Any, NotRequired, get_args, get_origin, get_type_hints

from rmqha.impl.observations import OBS_KINDS, Observation, kinds_of
from rmqha.impl.sim.actions import PRIMITIVES, Action
from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.events import StepEvent
from rmqha.impl.sim.world import Simulation

from tests.harness import ObsRecorder


def _tag(cls: Any, key: str) -> str:
    return str(get_args(get_type_hints(cls)[key])[0])


def _required(cls: Any) -> set[str]:
    """The keys a record must have (``__required_keys__`` misses ``NotRequired`` under postponed annotations in
    Python 3.11)."""
    return {k for k, t in get_type_hints(cls, include_extras=True).items() if get_origin(t) is not NotRequired}


def test_observation_kinds_match_their_records():
    assert kinds_of(Observation) == OBS_KINDS
    assert len(set(OBS_KINDS)) == len(OBS_KINDS)


def test_fault_primitives_match_their_records():
    assert sorted(_tag(cls, "do") for cls in get_args(Action)) == sorted(PRIMITIVES)


def test_step_events_are_one_record_each():
    tags = [_tag(cls, "ev") for cls in get_args(StepEvent)]
    assert len(tags) == len(set(tags)) and "act" in tags and "boot" in tags


def test_a_run_emits_only_known_kinds_with_their_required_fields():
    by_kind = {_tag(cls, "k"): cls for cls in get_args(Observation)}
    rec = ObsRecorder()
    Simulation(default_config("fidelity"), 3, max_steps=4000, recorder=rec).run()
    seen = set()
    for _, o in rec.obs:
        cls = by_kind[o["k"]]
        seen.add(o["k"])
        required = _required(cls)
        assert required <= set(o), (o["k"], sorted(required - set(o)))
        assert set(o) <= set(get_type_hints(cls)), (o["k"], sorted(set(o) - set(get_type_hints(cls))))
    assert {"ctl.apply", "brk.role", "brk.append", "ha.transfer", "client.seen"} <= seen
