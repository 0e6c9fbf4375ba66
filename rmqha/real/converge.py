"""The settle of a real run: wait on what the admin API shows converging, with a bound that follows the run's pace.

Rules:

* The settle begins once every fault is undone and the producer has stopped. It waits until one admin snapshot
  shows the run settled and the progress invariants holding: a master whose SyncStateSet holds every broker, every
  commit log at the same end (``settled``), and ``check.live_problems`` empty (the controller's master answering as
  MASTER with the controller's masterEpoch last in its epoch cache, no other master, every SyncStateSet member
  answering and alive, every other broker in the set and caught up; a master whose entry for the controller's
  masterEpoch RocketMQ refused as starting where its last epoch starts writes under the old epoch:
  ``check.EpochRefusals``). That snapshot is the one the progress
  invariants are judged on, and the time it took is the run's convergence time.
* The run's *pace* is what this machine took, in this run, to do what the settle waits for without a fault: from
  every JVM listening to the first master with a whole SyncStateSet (registration, election, HA handshake, catch-up).
  A loaded machine takes longer for both; so the bound is ``max(settle, PACE_FACTOR × pace)`` (``settle``: the
  option, 60 s by default) and the window of no change that means "stuck" is ``max(QUIET_MIN_S, pace)``.
* The wait ends converged; or *stuck*: past the bound, nothing the admin API shows (the controller's master,
  epochs and SyncStateSet; each broker's answer, role, last epoch, max and confirm offsets, HA connections) has
  changed for the quiet window, so the progress invariants are judged on the last snapshot (their violations are
  real: nothing moves); or *still moving* at the cap (``CAP_FACTOR × bound``): the run is slow, not stuck, and
  the progress invariants are not judged (a note says so). Every wait is bounded by the cap.
* The warm-up (``Wait``) follows the same rules: it waits for a master with a whole SyncStateSet while what the admin
  API shows moves, its pace the time the JVMs took to start listening (``max(WARM_S, PACE_FACTOR × that)``).
* Per invariant, ``times`` says when (seconds into the settle) it last began to hold, so a slow machine shows as
  slower figures in the result, not as a violation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .check import LIVE_SNAPSHOT, live_problems
from .observe import Snapshot

PACE_FACTOR = 6.0
"""The bound is this many times the run's pace (an idle 2-core machine: pace about 10-15 s, bound about 60-90 s)."""
QUIET_MIN_S = 15.0
"""The shortest window without change that counts as stuck (more than three rounds of the HA housekeeping and the
broker's 5 s metadata sync at the kit's timings)."""
CAP_FACTOR = 3.0
SETTLED = "logs at one end"  # the name of the settled condition in ``times``


def whole(brokers: Sequence[str], s: Snapshot) -> bool:
    """A master whose SyncStateSet holds every broker."""
    lead = s.leader
    return lead is not None and lead.master is not None and len(lead.sss) == len(brokers)


def settled(brokers: Sequence[str], s: Snapshot) -> bool:
    """``whole``, and every broker answering with the same commit-log end."""
    if not whole(brokers, s):
        return False
    ends = {b: s.brokers[b].max_offset for b in brokers if b in s.brokers and s.brokers[b].ok}
    return len(ends) == len(brokers) and len(set(ends.values())) == 1


def shown(s: Snapshot) -> tuple[Any, ...]:
    """What a snapshot shows that can move while a run settles (see the module's rules)."""
    lead = s.leader
    ctl = None if lead is None else (lead.node, lead.master, lead.master_epoch, lead.sss_epoch, tuple(lead.sss),
                                     tuple(sorted(lead.alive.items())))
    brokers = tuple((b, v.ok, v.role, v.epochs[-1][0] if v.epochs else None, v.max_offset, v.confirm_offset,
                     len(v.ha_connections)) for b, v in sorted(s.brokers.items()))
    return ctl, brokers


@dataclass(frozen=True)
class Bounds:
    pace_s: float
    bound_s: float
    quiet_s: float
    cap_s: float

    @classmethod
    def from_pace(cls, pace_s: float, settle_s: float) -> Bounds:
        bound = max(settle_s, PACE_FACTOR * pace_s)
        return cls(round(pace_s, 1), round(bound, 1), round(max(QUIET_MIN_S, pace_s), 1), round(CAP_FACTOR * bound, 1))


@dataclass
class Convergence:
    """Fed the snapshots of the settle in order (``feed``); says when the wait is over (``outcome``)."""

    brokers: list[str]
    bounds: Bounds
    start: float  # the settle's start, on the clock ``feed`` and ``outcome`` are given
    last: Snapshot | None = None
    converged_at: float | None = None
    judged: Snapshot | None = None
    changed_at: float = 0.0
    since: dict[str, float | None] = field(default_factory=dict)  # condition -> when it began to hold (None: not)
    _shown: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        self.changed_at = self.start
        self.since = {i: None for i in (*LIVE_SNAPSHOT, SETTLED)}

    def feed(self, s: Snapshot, now: float, refused: dict[str, set[int]] | None = None) -> None:
        """One snapshot, at ``now``; ``refused``: the epoch entries RocketMQ refused (``check.EpochRefusals``)."""
        if self.converged_at is not None:
            return
        self.last = s
        view = shown(s)
        if view != self._shown:
            self._shown = view
            self.changed_at = now
        problems = live_problems(s, refused)
        holds = {**{i: not problems[i] for i in LIVE_SNAPSHOT}, SETTLED: settled(self.brokers, s)}
        for cond, ok in holds.items():
            if not ok:
                self.since[cond] = None
            elif self.since[cond] is None:
                self.since[cond] = now
        if all(holds.values()):
            self.converged_at = now
            self.judged = s

    def outcome(self, now: float) -> str | None:
        """``converged``, ``stuck``, ``moving`` (at the cap), or None: wait on."""
        if self.converged_at is not None:
            return "converged"
        elapsed = now - self.start
        if elapsed >= self.bounds.bound_s and now - self.changed_at >= self.bounds.quiet_s:
            return "stuck"
        if elapsed >= self.bounds.cap_s:
            return "moving"
        return None

    def result(self, now: float) -> dict[str, Any]:
        """The figures the run's result keeps (``convergence``)."""
        out = self.outcome(now)
        return {"outcome": out or "moving", "paceS": self.bounds.pace_s, "boundS": self.bounds.bound_s,
                "quietS": self.bounds.quiet_s, "capS": self.bounds.cap_s,
                "afterS": None if self.converged_at is None else round(self.converged_at - self.start, 1),
                "lastChangeS": round(self.changed_at - self.start, 1), "waitedS": round(now - self.start, 1),
                "times": {c: None if t is None else round(t - self.start, 1) for c, t in self.since.items()}}

    def snapshot(self) -> Snapshot | None:
        """The snapshot to judge the progress invariants on: the converged one, else the last one."""
        return self.judged if self.judged is not None else self.last


@dataclass
class Wait:
    """The same rules for a wait on one condition (the warm-up's whole SyncStateSet): ``feed`` snapshots; ``outcome``
    is ``done`` (a snapshot met ``goal``), ``stuck`` (past the bound, nothing moved for the quiet window) or
    ``moving`` (still moving at the cap)."""

    goal: Callable[[Snapshot], bool]
    bounds: Bounds
    start: float
    met: Snapshot | None = None
    changed_at: float = 0.0
    _shown: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        self.changed_at = self.start

    def feed(self, s: Snapshot, now: float) -> None:
        if self.met is not None:
            return
        view = shown(s)
        if view != self._shown:
            self._shown = view
            self.changed_at = now
        if self.goal(s):
            self.met = s

    def outcome(self, now: float) -> str | None:
        if self.met is not None:
            return "done"
        if now - self.start >= self.bounds.bound_s and now - self.changed_at >= self.bounds.quiet_s:
            return "stuck"
        return "moving" if now - self.start >= self.bounds.cap_s else None
