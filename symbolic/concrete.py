"""Concrete values of a step: what a z3 model says, in the kit's words (ids, epochs, sets, liveness).

Rules: ids are ``1..n``, a null master is ``None``; sets are sorted tuples; a removed ``SyncStateInfo`` keeps the
values it had (``info`` false), as in ``state.py``. Only the ``*_from_model`` readers and ``pin`` touch z3.

Theory of operation: ``witness_from_model`` reads a satisfying assignment of a ``Step`` (pre, request,
environment, post, code); ``pin`` goes the other way, turning concrete values into equalities over a ``Step`` so
that the encoding can be evaluated on a given pre-state (``prover.run_step``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import z3
from rmqha.impl.codes import ResponseCode

from .state import NONE, SymState, ids
from .transitions import Env, Step


@dataclass(frozen=True)
class Controller:
    """One broker set's controller state."""

    registered: tuple[int, ...]
    info: bool  # the SyncStateSet table holds the set
    master: int | None
    me: int
    se: int
    sss: tuple[int, ...]

    @property
    def exists(self) -> bool:
        return bool(self.registered) and self.info

    def text(self) -> str:
        if not self.info:  # only the epochs of a removed SyncStateInfo matter (a returning set is compared to them)
            return f"registered {_set(self.registered)}; no SyncStateInfo (it was at mE {self.me}, sE {self.se})"
        return (f"registered {_set(self.registered)}; master {self.master if self.master is not None else 'null'}, "
                f"mE {self.me}, sE {self.se}, SSS {_set(self.sss)}")


@dataclass(frozen=True)
class Environment:
    alive: tuple[int, ...]
    live_info: tuple[int, ...]
    rank: dict[int, tuple[int, int, int]]  # id -> (epoch, maxOffset, electionPriority) of its heartbeat entry

    def text(self) -> str:
        dead_info = [i for i in self.live_info if i not in self.alive]
        extra = f", expired heartbeat entries {_set(tuple(dead_info))}" if dead_info else ""
        return f"alive {_set(self.alive)}{extra}"


@dataclass(frozen=True)
class Witness:
    """A satisfying assignment of one step: a CTI, or the witness of a documented exception."""

    transition: str
    pre: Controller
    params: dict[str, Any]
    env: Environment
    post: Controller
    code: int
    detail: dict[str, int]
    hinted: str  # which preferences the solver could keep: "model", "reachable" or "none"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["env"]["rank"] = {str(k): list(v) for k, v in self.env.rank.items()}
        return d

    def request_text(self) -> str:
        parts = []
        for k, v in self.params.items():
            parts.append(f"{k}={_set(v) if isinstance(v, tuple) else v}")
        return f"{self.transition}({', '.join(parts)})"


def code_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return str(code)


def _set(xs: tuple[int, ...]) -> str:
    return "{" + ", ".join(map(str, xs)) + "}"


def _int(m: z3.ModelRef, e: z3.ExprRef) -> int:
    return int(m.eval(e, model_completion=True).as_long())


def _bool(m: z3.ModelRef, e: z3.ExprRef) -> bool:
    return bool(z3.is_true(m.eval(e, model_completion=True)))


def _bits(m: z3.ModelRef, bits: tuple[z3.BoolRef, ...]) -> tuple[int, ...]:
    return tuple(i for i, b in zip(ids(len(bits)), bits) if _bool(m, b))


def controller_from_model(m: z3.ModelRef, s: SymState) -> Controller:
    master = _int(m, s.master)
    return Controller(_bits(m, s.reg), _bool(m, s.inf), None if master == NONE else master, _int(m, s.me),
                      _int(m, s.se), _bits(m, s.sss))


def env_from_model(m: z3.ModelRef, env: Env) -> Environment:
    n = len(env.alive)
    return Environment(_bits(m, env.alive), _bits(m, env.live_info),
                       {i: (_int(m, env.epoch[i - 1]), _int(m, env.max_offset[i - 1]), _int(m, env.priority[i - 1]))
                        for i in ids(n)})


def witness_from_model(m: z3.ModelRef, st: Step, hinted: str) -> Witness:
    params: dict[str, Any] = {}
    for k, v in st.params.items():
        params[k] = _bits(m, v) if isinstance(v, tuple) else (_bool(m, v) if z3.is_bool(v) else _int(m, v))
    return Witness(st.transition, controller_from_model(m, st.pre), params, env_from_model(m, st.env),
                   controller_from_model(m, st.post), _int(m, st.code),
                   {k: _int(m, v) for k, v in st.detail.items()}, hinted)


# ------------------------------------------------------------------------------------------ pinning


def _pin_bits(bits: tuple[z3.BoolRef, ...], members: tuple[int, ...]) -> list[z3.BoolRef]:
    return [b == (i in members) for i, b in zip(ids(len(bits)), bits)]


def pin(st: Step, pre: Controller, params: dict[str, Any], env: Environment) -> z3.BoolRef:
    """Equalities fixing the step's pre-state, request and environment to concrete values."""
    s, e = st.pre, st.env
    eqs = [*_pin_bits(s.reg, pre.registered), s.inf == pre.info, s.master == (pre.master or NONE),
           s.me == pre.me, s.se == pre.se, *_pin_bits(s.sss, pre.sss),
           *_pin_bits(e.alive, env.alive), *_pin_bits(e.live_info, env.live_info)]
    for i, (ep, off, prio) in env.rank.items():
        eqs += [e.epoch[i - 1] == ep, e.max_offset[i - 1] == off, e.priority[i - 1] == prio]
    for k, v in params.items():
        term = st.params[k]
        eqs += _pin_bits(term, tuple(v)) if isinstance(term, tuple) else [term == v]
    return z3.And(*eqs)
