"""Shrinking a failing run: delta debugging (Zeller's ddmin) over its explicit fault schedule.

A generated run's faults are turned into an explicit schedule (``faults.explicit_from_trace``); then chunks
of actions are removed for as long as the run still fails the same invariant. Any subset of a schedule is a
valid schedule (a heal without its partition, or a crash without its restart, is harmless), so no repair is
needed. The seed stays the same: the network and workload streams are still drawn from it, and every
candidate is judged by re-running the deterministic simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TypeVar

from .actions import Action
from .config import Config
from .runner import run

T = TypeVar("T")


@dataclass
class ShrinkResult:
    schedule: list[Action]
    runs: int
    original: int
    invariant: str
    step: int
    time: int


def fails(cfg: Config, seed: int, steps: int, bugs: list[str], invariant: str, max_time: int | None,
          disabled: Collection[str] = ()) -> Callable[[list[Action]], tuple[int, int] | None]:
    """A predicate: does this schedule still fail ``invariant``? Returns (step, time) if it does."""

    def check(schedule: list[Action]) -> tuple[int, int] | None:
        r = run(cfg, seed, steps, bugs=bugs, schedule=schedule, max_time=max_time, record=False, disabled=disabled)
        if r.violation is not None and r.violation.invariant == invariant:
            return r.violation.step, r.violation.time
        return None

    return check


def ddmin(schedule: list[T], check: Callable[[list[T]], tuple[int, int] | None],
          budget: int = 300) -> tuple[list[T], int]:
    """The classic ddmin loop over list items (actions, or a partition's links); ``budget`` bounds the number of
    runs."""
    current = list(schedule)
    runs = 0
    n = 2
    while len(current) >= 2 and runs < budget:
        chunk = max(1, len(current) // n)
        removed_any = False
        for start in range(0, len(current), chunk):
            if runs >= budget:
                break
            candidate = current[:start] + current[start + chunk:]
            runs += 1
            if check(candidate) is not None:
                current = candidate
                n = max(n - 1, 2)
                removed_any = True
                break
        if not removed_any:
            if chunk == 1:
                break
            n = min(len(current), n * 2)
    if len(current) == 1 and runs < budget:
        runs += 1
        if check([]) is not None:
            current = []
    return current, runs


def shrink(cfg: Config, seed: int, steps: int, bugs: list[str], schedule: list[Action], invariant: str,
           max_time: int | None = None, budget: int = 300, disabled: Collection[str] = ()) -> ShrinkResult:
    check = fails(cfg, seed, steps, bugs, invariant, max_time, disabled)
    first = check(schedule)
    if first is None:
        raise ValueError(f"the schedule does not fail {invariant}; nothing to shrink")
    small, runs = ddmin(schedule, check, budget)
    end = check(small)
    assert end is not None
    return ShrinkResult(small, runs + 2, len(schedule), invariant, end[0], end[1])
