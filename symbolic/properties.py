"""What is proved of each step: the catalogue's controller invariants, the strengthening, and their exceptions.

Everything that decides whether a step is acceptable lives here: one ``Obligation`` per catalogue id (and per
strengthening conjunct), a predicate over a ``Step`` (pre, post, request, environment) and, where RocketMQ
documents an exception, the condition on the step under which the catalogue says the invariant does not apply.

Rules:

* A state invariant ``I`` is proved as ``Inv(s) ∧ Step(s, s') ⇒ I(s')``; an action property ``P`` as
  ``Inv(s) ∧ Step(s, s') ⇒ P(s, s')``. ``Inv`` is every state invariant plus the strengthening
  (``state.inductive_invariant``).
* An exception splits the query: a counterexample outside the exception's condition is a CTI (a failure);
  one inside it is a *documented exception* (shown, not counted).
* CTL-CLEAN-ELECTION is stated without the catalogue's "with unclean election off": the prover checks what
  unclean election gives up (the ``unclean-election`` setting must fail it).
* CTL-ONE-MASTER-PER-EPOCH compares with the history of the set's incarnation (``Checker`` keys it by
  incarnation too): a set built anew after a clean starts an empty history.

Theory of operation: ``OBLIGATIONS`` is ordered as the table prints it; ``holds(step)`` and ``exception(step)``
return z3 terms that ``prover.py`` negates and hands to the solver.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3
from rmqha.impl.invariants import CATALOGUE

from .state import STATE_INVARIANTS, STRENGTHENING, STRENGTHENING_DOC, UNSET, member
from .transitions import Step

_CATALOGUE = {i.id: i for i in CATALOGUE}


@dataclass(frozen=True)
class Obligation:
    id: str
    kind: str  # "state" | "action" | "strengthening"
    statement: str
    holds: Callable[[Step], z3.BoolRef]
    exception: Callable[[Step], z3.BoolRef] | None = None
    exception_text: str = ""


def _epoch_mono(st: Step) -> z3.BoolRef:
    """mE moves by 1 exactly when an ElectMasterEvent applies, sE exactly when a master is elected or an
    AlterSyncStateSetEvent applies; nothing else moves them."""
    d_me = z3.If(z3.Or(st.elected, st.not_elected), 1, 0)
    d_se = z3.If(z3.Or(st.elected, st.altered), 1, 0)
    return z3.And(st.post.me == st.pre.me + d_me, st.post.se == st.pre.se + d_se)


def _whole_set_returns(st: Step) -> z3.BoolRef:
    """The exception's condition, as the catalogue words it: the set returns (``ApplyBrokerIdEvent`` builds it
    anew) after a clean removed it, whole or (every SyncStateSet member: the replica table remains) half."""
    return st.recreated


def _whole_set_only(st: Step) -> z3.BoolRef:
    """The narrower reading (a whole-set clean only): z3 then finds the half-present rebuild as a CTI."""
    return z3.And(st.recreated, z3.Not(st.pre.replicas))


def _one_master_per_epoch(st: Step) -> z3.BoolRef:
    """The master after the step is the one recorded (if any) for its masterEpoch in this incarnation."""
    was = st.pre.rec[st.post.me]
    return z3.Or(st.recreated, was == UNSET, was == st.post.master)


def _alter_fenced(st: Step) -> z3.BoolRef:
    if "newSyncStateSet" not in st.params:  # not an alterSyncStateSet: no AlterSyncStateSetEvent applies
        return z3.Not(st.altered)
    p, pre = st.params, st.pre
    new = p["newSyncStateSet"]
    assert isinstance(new, tuple)
    return z3.Implies(st.altered, z3.And(p["masterBrokerId"] == pre.master, p["masterEpoch"] == pre.me,
                                         p["syncStateSetEpoch"] == pre.se, member(new, pre.master)))


def _clean_election(st: Step) -> z3.BoolRef:
    new = st.post.master
    return z3.Implies(st.elected, z3.And(member(st.pre.sss, new), member(st.env.alive, new)))


def _state(inv: Callable[..., Any]) -> Callable[[Step], z3.BoolRef]:
    return lambda st: inv(st.post)


def _text(inv_id: str) -> str:
    return _CATALOGUE[inv_id].exceptions


OBLIGATIONS: dict[str, Obligation] = {o.id: o for o in (
    Obligation("CTL-EPOCH-MONO", "action", _CATALOGUE["CTL-EPOCH-MONO"].statement, _epoch_mono,
               _whole_set_returns, _text("CTL-EPOCH-MONO")),
    Obligation("CTL-ONE-MASTER-PER-EPOCH", "action", _CATALOGUE["CTL-ONE-MASTER-PER-EPOCH"].statement,
               _one_master_per_epoch),
    Obligation("CTL-MASTER-IN-SSS", "state", _CATALOGUE["CTL-MASTER-IN-SSS"].statement,
               _state(STATE_INVARIANTS["CTL-MASTER-IN-SSS"]), lambda st: st.cleaned_ids, _text("CTL-MASTER-IN-SSS")),
    Obligation("CTL-SSS-REGISTERED", "state", _CATALOGUE["CTL-SSS-REGISTERED"].statement,
               _state(STATE_INVARIANTS["CTL-SSS-REGISTERED"]), lambda st: st.took_requester,
               _text("CTL-SSS-REGISTERED")),
    Obligation("CTL-ALTER-FENCED", "action", _CATALOGUE["CTL-ALTER-FENCED"].statement, _alter_fenced),
    Obligation("CTL-CLEAN-ELECTION", "action",
               "A newly elected master was in the SyncStateSet and alive when elected (the catalogue scopes it to "
               "unclean election off).", _clean_election, lambda st: z3.And(st.elected, st.pre.me == 0),
               _text("CTL-CLEAN-ELECTION")),
    *(Obligation(name, "strengthening", STRENGTHENING_DOC[name], _state(f)) for name, f in STRENGTHENING.items()),
)}
