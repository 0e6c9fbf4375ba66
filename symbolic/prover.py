"""The inductive check: for each obligation and each transition, ask z3 for a counterexample to induction.

Everything that decides a verdict lives here (the queries, their order, the preferences used to pick a
readable counterexample); what a verdict means is ``properties.py``, what a step is ``transitions.py``.

Rules:

* Query ``Inv(s) ∧ Dom ∧ Step ∧ ¬Exc ∧ ¬P``: unsat proves the obligation for that transition (except, where
  the catalogue documents one, under the exception's condition); sat is a CTI. If the obligation has an
  exception, ``Inv ∧ Dom ∧ Step ∧ Exc ∧ ¬P`` sat is a *documented exception* (real, shown, not a failure);
  both are asked, so a cell can have a CTI and a documented exception. ``unknown`` (a timeout) is a failure.
* A satisfying model is re-solved under preferences, dropped one level at a time until satisfiable: the model's
  guard for the action plus a pre-state the implementation reaches through events ("model"), such a pre-state
  alone ("reachable"), nothing ("none"). Preferences only choose among counterexamples; they never decide one.
* Every CTI and exception witness is replayed on the executable model and on the implementation (``replay.py``).

Theory of operation: ``prove`` builds each transition's ``Step`` once over one symbolic pre-state, keeps a
solver per transition holding ``Inv ∧ Dom``, and pushes each obligation's negation on it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import z3

from .concrete import Controller, Environment, Witness, controller_from_model, pin, witness_from_model
from .properties import OBLIGATIONS, Obligation
from .replay import replay_result
from .state import NONE, SymState, fresh_state, inductive_invariant, member, singleton
from .transitions import STOCK, TRANSITIONS, Step, Switches

DEFAULT_BROKERS = 3
MAX_BROKERS = 16
SMALL = 5  # preferred bound of epochs and request epochs in a printed counterexample


@dataclass
class Result:
    """The verdict of one obligation on one transition, with its witnesses and their replays."""

    obligation: str
    transition: str
    verdict: str  # "proved" | "cti" | "exception" (a documented exception, no CTI) | "unknown"
    seconds: float
    witness: Witness | None = None  # the CTI
    exception: Witness | None = None  # a step inside the documented exception that breaks the invariant
    replays: dict[str, Any] = field(default_factory=dict)  # of the CTI: "model" / "impl" -> replay.Replay
    exception_replays: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"obligation": self.obligation, "transition": self.transition, "verdict": self.verdict,
                "seconds": round(self.seconds, 4), "witness": self.witness.to_dict() if self.witness else None,
                "replays": {k: v.to_dict() for k, v in self.replays.items()},
                "exception": self.exception.to_dict() if self.exception else None,
                "exceptionReplays": {k: v.to_dict() for k, v in self.exception_replays.items()}}


@dataclass
class ProofRun:
    brokers: int
    switches: list[str]
    dropped: list[str]
    results: list[Result]
    seconds: float

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if r.verdict in ("cti", "unknown")]

    @property
    def exceptions(self) -> list[Result]:
        """Results with a documented exception that really breaks the invariant (with or without a CTI too)."""
        return [r for r in self.results if r.exception is not None]

    @property
    def diverged(self) -> list[Result]:
        """Results whose witness a replay could not follow: the encoding and that layer disagree."""
        return [r for r in self.results
                if any(x.status == "diverged" for x in (*r.replays.values(), *r.exception_replays.values()))]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.diverged

    def verdict(self, obligation: str, transition: str) -> str:
        return next(r.verdict for r in self.results if (r.obligation, r.transition) == (obligation, transition))

    def to_dict(self) -> dict[str, Any]:
        return {"brokers": self.brokers, "switches": self.switches, "dropped": self.dropped, "ok": self.ok,
                "seconds": round(self.seconds, 3), "results": [r.to_dict() for r in self.results]}


# ---------------------------------------------------------------------------------------- preferences


def reachable(s: SymState) -> z3.BoolRef:
    """A pre-state ``replay.ImplRun`` reaches with events alone (facts of reachable states, not assumed by the
    proof): no master and sE 0 at mE 0; a master implies elected epochs and, at sE 1, the singleton SSS of its
    election; an empty SSS exactly at sE 0; a SyncStateInfo implies a replica table; a removed one is shown with
    an empty SSS (a clean emptied it, or wiped the set)."""
    n = s.n
    has_master = s.master != NONE
    return z3.And(z3.Implies(has_master, z3.And(s.me >= 1, s.se >= 1)),
                  z3.Implies(s.me == 0, z3.And(z3.Not(has_master), s.se == 0)),
                  z3.Implies(s.inf, z3.And(s.replicas, (s.se == 0) == z3.Not(z3.Or(*s.sss)))),
                  z3.Implies(z3.And(s.inf, has_master, s.se == 1),
                             z3.And(*[a == b for a, b in zip(s.sss, singleton(n, s.master))])),
                  z3.Implies(z3.Not(s.inf), z3.Not(z3.Or(*s.sss))))


def small(st: Step) -> z3.BoolRef:
    ints = [v for v in st.params.values() if not isinstance(v, tuple) and z3.is_int(v)]
    ranks = [*st.env.epoch, *st.env.max_offset, *st.env.priority]
    return z3.And(st.pre.me <= SMALL, st.pre.se <= SMALL, *[z3.And(v >= 0, v <= SMALL) for v in ints],
                  *[z3.And(v >= 0, v <= 3) for v in ranks])


def model_friendly(st: Step) -> z3.BoolRef:
    """The executable model's guard for the action, every heartbeat entry present, a registered master."""
    return z3.And(st.model_hint, *st.env.live_info,
                  z3.Implies(st.pre.master != NONE, member(st.pre.reg, st.pre.master)))


def _witness(solver: z3.Solver, st: Step) -> Witness:
    for level, prefs in (("model", [model_friendly(st), reachable(st.pre), small(st)]),
                         ("reachable", [reachable(st.pre), small(st)]), ("none", [])):
        solver.push()
        solver.add(*prefs)
        try:
            if solver.check() == z3.sat:
                return witness_from_model(solver.model(), st, level)
        finally:
            solver.pop()
    raise AssertionError("a satisfiable query became unsatisfiable without preferences")


# ----------------------------------------------------------------------------------------------- prove


def _check(solver: z3.Solver, *extra: z3.BoolRef) -> tuple[z3.CheckSatResult, float]:
    t0 = time.perf_counter()
    r = solver.check(*extra)
    return r, time.perf_counter() - t0


def _solve(solver: z3.Solver, st: Step, *query: z3.BoolRef) -> tuple[z3.CheckSatResult, float, Witness | None]:
    r, secs = _check(solver, *query)
    if r != z3.sat:
        return r, secs, None
    solver.push()
    solver.add(*query)
    w = _witness(solver, st)
    solver.pop()
    return r, secs, w


def _obligation(solver: z3.Solver, st: Step, ob: Obligation) -> Result:
    bad = z3.Not(ob.holds(st))
    if ob.exception is None:
        r, secs, cti = _solve(solver, st, bad)
        exc_r, exc = z3.unsat, None
    else:
        exc_term = ob.exception(st)
        r, secs, cti = _solve(solver, st, bad, z3.Not(exc_term))
        exc_r, secs2, exc = _solve(solver, st, bad, exc_term)
        secs += secs2
    if cti is not None:
        verdict = "cti"
    elif z3.unknown in (r, exc_r):
        verdict = "unknown"
    else:
        verdict = "exception" if exc is not None else "proved"
    return Result(ob.id, st.transition, verdict, secs, cti, exc)


def prove(brokers: int = DEFAULT_BROKERS, switches: Switches = STOCK, *, drop: Iterable[str] = (),
          obligations: Iterable[str] | None = None, transitions: Iterable[str] | None = None,
          replay: bool = True, timeout_ms: int = 60_000) -> ProofRun:
    """Check every obligation on every transition for broker ids ``1..brokers`` under ``switches``.

    ``drop`` removes conjuncts from the assumed invariant (to show they are needed)."""
    if not 1 <= brokers <= MAX_BROKERS:
        raise ValueError(f"--brokers must be within 1..{MAX_BROKERS}, got {brokers}")
    dropped = frozenset(drop)
    t0 = time.perf_counter()
    pre = fresh_state(brokers)
    inv = inductive_invariant(pre, dropped)
    obs = [OBLIGATIONS[o] for o in (obligations or OBLIGATIONS)]
    results: list[Result] = []
    for name in transitions or TRANSITIONS:
        st = TRANSITIONS[name].build(pre, switches)
        solver = z3.Solver()
        solver.set(timeout=timeout_ms)
        solver.add(inv, st.domain)
        for ob in obs:
            results.append(_obligation(solver, st, ob))
    if replay:
        for r in results:
            if r.witness is not None:
                r.replays = replay_result(r.witness, r.obligation, brokers, switches)
            if r.exception is not None:
                r.exception_replays = replay_result(r.exception, r.obligation, brokers, switches)
    return ProofRun(brokers, switches.names(), sorted(dropped), results, time.perf_counter() - t0)


def step_satisfiable(name: str, brokers: int = DEFAULT_BROKERS, switches: Switches = STOCK) -> dict[str, bool]:
    """Whether the step can change the state, and can answer SUCCESS, from a state satisfying ``Inv``."""
    pre = fresh_state(brokers)
    st = TRANSITIONS[name].build(pre, switches)
    post = st.post
    changed = z3.Or(z3.Not(z3.And(*[a == b for a, b in zip(pre.reg, post.reg)])), pre.inf != post.inf,
                    pre.master != post.master, pre.me != post.me, pre.se != post.se,
                    z3.Not(z3.And(*[a == b for a, b in zip(pre.sss, post.sss)])))
    solver = z3.Solver()
    solver.add(inductive_invariant(pre), st.domain)
    return {"changes": solver.check(changed) == z3.sat, "succeeds": solver.check(st.code == 0) == z3.sat}


@functools.cache
def _evaluator(name: str, brokers: int, switches: Switches) -> tuple[Step, z3.Solver]:
    st = TRANSITIONS[name].build(fresh_state(brokers), switches)
    solver = z3.Solver()
    solver.add(st.domain)
    return st, solver


def run_step(name: str, brokers: int, switches: Switches, pre: Controller, params: dict[str, Any],
             env: Environment) -> tuple[Controller, int]:
    """The encoding evaluated on concrete values: (post-state, response code)."""
    st, solver = _evaluator(name, brokers, switches)
    if solver.check(pin(st, pre, params, env)) != z3.sat:
        raise ValueError(f"{name}: the request or environment is outside the encoding's domain")
    m = solver.model()
    return controller_from_model(m, st.post), m.eval(st.code, model_completion=True).as_long()
