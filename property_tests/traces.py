"""A failing example as a kit trace: re-run its whole explicit schedule from a trace header, write the file.

The file name is fixed per (suite, invariant), so the last failing example Hypothesis runs (the shrunk one)
leaves its trace; ``rmqha replay PATH`` re-runs it and checks it byte for byte.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmqha.impl.bugs import DEFAULT_RELEASE
from rmqha.impl.sim.runner import header_for, run_header
from rmqha.impl.sim.tracefile import write_text
from rmqha.impl.sim.world import Violation

DEFAULT_DIR = Path(".hypothesis") / "rmqha-traces"
ENV_DIR = "RMQHA_TRACE_DIR"


def trace_dir() -> Path:
    """Where traces go: ``$RMQHA_TRACE_DIR``, else ``.hypothesis/rmqha-traces`` under the working directory."""
    return Path(os.environ.get(ENV_DIR) or DEFAULT_DIR)


def trace_path(suite: str, invariant: str) -> Path:
    return trace_dir() / f"{suite}--{invariant}.jsonl"


@dataclass
class WrittenTrace:
    path: Path
    header: dict[str, Any]
    violation: Violation


class NotReproduced(AssertionError):
    """The re-run of the example's schedule did not end in the same violation (a determinism bug)."""


def write_failure(suite: str, header: dict[str, Any], seen: Violation) -> WrittenTrace:
    """Re-run ``header``, check it ends in ``seen`` (same invariant, step and time), write its trace."""
    result = run_header(header)
    again = result.violation
    if again is None or (again.invariant, again.step, again.time) != (seen.invariant, seen.step, seen.time):
        got = "no violation" if again is None else f"{again.invariant} at step {again.step}, t={again.time}"
        raise NotReproduced(f"the explicit schedule re-run gives {got}, the example gave {seen.invariant} at step "
                            f"{seen.step}, t={seen.time}")
    assert result.text is not None
    path = trace_path(suite, seen.invariant)
    write_text(str(path), result.text)
    return WrittenTrace(path, header, again)


def header(machine_cfg: Any, seed: int, max_steps: int, bugs: list[str], schedule: list[dict[str, Any]],
           ran_before: int, disabled: tuple[str, ...], rocketmq: str = DEFAULT_RELEASE) -> dict[str, Any]:
    """The trace header of a run driven up to (not including) time ``ran_before``."""
    return header_for(machine_cfg, seed, max_steps, bugs, [dict(a) for a in schedule], max_time=ran_before - 1,
                      profile=None, disabled=list(disabled), rocketmq=rocketmq)
