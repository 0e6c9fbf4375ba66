"""The symbolic controller state of one broker set, and the state invariants over it.

Everything a transition reads or writes is a field of ``SymState``; every state invariant and every auxiliary
(strengthening) conjunct the induction assumes is a named entry of ``STATE_INVARIANTS`` / ``STRENGTHENING``.

Rules (``ReplicasInfoManager``'s ``SyncStateInfo`` and ``BrokerReplicaInfo``; ``impl/controller/replicas_info.py``):

* Broker ids are ``1..n`` (``MixAll.FIRST_BROKER_CONTROLLER_ID`` is 1); ``NONE`` (0) stands for a null master.
  Epochs are unbounded integers.
* ``reg[i]``: id ``i+1`` is in ``BrokerReplicaInfo.brokerIdInfo``; the replica table holds the set iff some id is
  registered (``addBroker`` creates it with one id, ``cleanBrokerData`` drops it when it empties).
* ``inf``: ``syncStateSetInfoTable`` holds the set. The set *exists* (``isContainsBroker``) iff both tables hold it.
  While ``inf`` is false, master, epochs and SSS keep the values of the removed ``SyncStateInfo`` (stale): they are
  what the set had before it was cleaned, so that a set returning at epoch 0 is visible as a step.
* ``rec``: a history variable, masterEpoch -> the master recorded at that epoch in this incarnation of the set
  (``UNSET`` where none was), as ``Checker._record_apply`` keeps it.

Theory of operation: a ``SymState`` is a bundle of z3 terms. ``fresh_state`` makes one of fresh constants (the
pre-state of an obligation); a transition builds the post-state as terms over the pre-state, the request and the
environment. Invariants are functions ``SymState -> BoolRef``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import z3

NONE = 0
"""A null master (``masterBrokerId == null``)."""
UNSET = -1
"""``rec`` entry of an epoch at which no master was recorded."""


@dataclass(frozen=True)
class SymState:
    """The controller state of one broker set, as z3 terms (index ``i`` of a tuple is broker id ``i + 1``)."""

    n: int
    reg: tuple[z3.BoolRef, ...]
    inf: z3.BoolRef
    master: z3.ArithRef
    me: z3.ArithRef
    se: z3.ArithRef
    sss: tuple[z3.BoolRef, ...]
    rec: z3.ArrayRef

    @property
    def replicas(self) -> z3.BoolRef:
        """The replica table holds the set."""
        return z3.Or(*self.reg)

    @property
    def contains(self) -> z3.BoolRef:
        """``ReplicasInfoManager.isContainsBroker``."""
        return z3.And(self.replicas, self.inf)


def ids(n: int) -> range:
    return range(1, n + 1)


def fresh_state(n: int, prefix: str = "pre") -> SymState:
    return SymState(
        n=n,
        reg=tuple(z3.Bool(f"{prefix}.reg{i}") for i in ids(n)),
        inf=z3.Bool(f"{prefix}.inf"),
        master=z3.Int(f"{prefix}.master"),
        me=z3.Int(f"{prefix}.mE"),
        se=z3.Int(f"{prefix}.sE"),
        sss=tuple(z3.Bool(f"{prefix}.sss{i}") for i in ids(n)),
        rec=z3.Array(f"{prefix}.rec", z3.IntSort(), z3.IntSort()),
    )


def member(bits: Sequence[z3.BoolRef], idx: z3.ArithRef) -> z3.BoolRef:
    """``idx`` is an id whose bit is set (false for ``NONE``)."""
    return z3.Or(*[z3.And(idx == i, b) for i, b in zip(ids(len(bits)), bits)])


def select(vals: Sequence[z3.ArithRef], idx: z3.ArithRef) -> z3.ArithRef:
    """``vals[idx - 1]`` for a symbolic id (the last value when ``idx`` is out of range: callers guard it)."""
    out = vals[-1]
    for i in reversed(ids(len(vals) - 1)):
        out = z3.If(idx == i, vals[i - 1], out)
    return out


def singleton(n: int, idx: z3.ArithRef) -> tuple[z3.BoolRef, ...]:
    return tuple(idx == i for i in ids(n))


def is_id_or_none(n: int, x: z3.ArithRef) -> z3.BoolRef:
    return z3.And(x >= NONE, x <= n)


# ------------------------------------------------------------------------------------- invariants


def type_ok(s: SymState) -> z3.BoolRef:
    """Domains: the master is null or an id of ``1..n``; the epochs are non-negative."""
    return z3.And(is_id_or_none(s.n, s.master), s.me >= 0, s.se >= 0)


def master_in_sss(s: SymState) -> z3.BoolRef:
    """CTL-MASTER-IN-SSS, for a set the SyncStateSet table holds (``impl/invariants/controller.master_in_sss``)."""
    return z3.Implies(s.inf, z3.Or(s.master == NONE, member(s.sss, s.master)))


def sss_registered(s: SymState) -> z3.BoolRef:
    """CTL-SSS-REGISTERED, for a set the SyncStateSet table holds."""
    return z3.Implies(s.inf, z3.And(*[z3.Implies(x, r) for x, r in zip(s.sss, s.reg)]))


def history_current(s: SymState) -> z3.BoolRef:
    """Strengthening: the record of the current masterEpoch is the current master."""
    return s.rec[s.me] == s.master


def history_none_above(s: SymState) -> z3.BoolRef:
    """Strengthening: no master is recorded above the current masterEpoch."""
    e = z3.Int("e")
    return z3.ForAll([e], z3.Implies(e > s.me, s.rec[e] == UNSET))


StateInvariant = Callable[[SymState], z3.BoolRef]

STATE_INVARIANTS: dict[str, StateInvariant] = {
    "CTL-MASTER-IN-SSS": master_in_sss,
    "CTL-SSS-REGISTERED": sss_registered,
}
"""Catalogue invariants that are predicates of one state."""

STRENGTHENING: dict[str, StateInvariant] = {
    "type-ok": type_ok,
    "history-current": history_current,
    "history-none-above": history_none_above,
}
"""Auxiliary conjuncts of the inductive invariant (each is proved preserved like a catalogue invariant)."""

STRENGTHENING_DOC: dict[str, str] = {
    "type-ok": "master ∈ {null} ∪ 1..N; mE ≥ 0; sE ≥ 0",
    "history-current": "rec[mE] = master (the current master is the one recorded for the current masterEpoch)",
    "history-none-above": "∀e > mE: rec[e] = unset (nothing is recorded above the current masterEpoch)",
}


def inductive_invariant(s: SymState, drop: frozenset[str] = frozenset()) -> z3.BoolRef:
    """The conjunction the induction assumes: the state invariants and the strengthening, minus ``drop``."""
    parts = {**STATE_INVARIANTS, **STRENGTHENING}
    return z3.And(*[f(s) for name, f in parts.items() if name not in drop])
