"""Counterexamples between layers: TLC states to model states, and model traces in the kit's trace format.

A model trace is an ``rmqha-trace`` v1 file whose header says ``"layer": "model"``: the header carries the spec,
the config name and its constants; each step line has ``i``, ``act`` (the action and its arguments, brokers by
name) and ``state`` (the model state, brokers by name); the footer carries the violation (catalogue id and TLA+
operator) and the hash over the lines before it, as for simulator traces (``docs/trace-format.md``).
Replaying one re-runs the model from its initial state, taking at each step the successor equal to the recorded
state, and checks the recorded violation at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rmqha.impl.invariants import CATALOGUE

from .controller_mode import NONE, Label, ModelConfig, State, initial, successors
from .properties import ACTION_PROPERTIES, INVARIANTS

TLA_TO_ID = {inv.tla: inv.id for inv in CATALOGUE}


def broker_names(n: int) -> list[str]:
    return [f"b{i + 1}" for i in range(n)]


def _idx(v: Any, names: list[str]) -> int:
    return NONE if str(v) == "NONE" else names.index(str(v))


def _mask(v: Any, names: list[str]) -> int:
    m = 0
    for x in v:
        m |= 1 << names.index(str(x))
    return m


def state_from_tla(vars: Mapping[str, Any], names: list[str]) -> State:
    """The model state for one TLC trace state (variables parsed by ``rmqha.spec.tlc.parse_value``)."""

    def per(name: str, f: Any = lambda x: x) -> tuple[Any, ...]:
        fun = vars[name]
        return tuple(f(fun[b]) for b in names)

    def seq(x: Any) -> tuple[Any, ...]:
        return tuple(tuple(int(y) for y in e) for e in x)

    return State(
        ctlMaster=_idx(vars["ctlMaster"], names), ctlME=int(vars["ctlME"]), ctlSSS=_mask(vars["ctlSSS"], names),
        ctlSE=int(vars["ctlSE"]), registered=_mask(vars["registered"], names),
        reqs=tuple(sorted((names.index(str(r[0])), int(r[1]), int(r[2]), _mask(r[3], names)) for r in vars["reqs"])),
        alive=per("alive", bool), reach=per("reach", bool), role=per("role", lambda x: _idx(x, names)),
        bME=per("bME", int), bSE=per("bSE", int), local=per("local", lambda x: _mask(x, names)),
        remote=per("remote", lambda x: NONE if str(x) == "NONE" else _mask(x, names)),
        log=per("log", seq), epochs=per("epochs", seq), flushed=per("flushed", int), confirm=per("confirm", int),
        conn=per("conn", lambda x: _idx(x, names)), ack=per("ack", int), sent=int(vars["sent"]),
        acked=sum(1 << (int(m) - 1) for m in vars["acked"]),
        pend=tuple(sorted((names.index(str(p[0])), int(p[1])) for p in vars["pend"])),
        nCrash=int(vars["nCrash"]), nPart=int(vars["nPart"]), nAdmin=int(vars["nAdmin"]),
        nShrink=int(vars["nShrink"]))


def state_to_json(s: State, names: list[str]) -> dict[str, Any]:
    def b(i: int) -> str | None:
        return None if i == NONE else names[i]

    def ms(m: int) -> list[str]:
        return [names[i] for i in range(len(names)) if m >> i & 1]

    return {
        "ctlMaster": b(s.ctlMaster), "ctlME": s.ctlME, "ctlSSS": ms(s.ctlSSS), "ctlSE": s.ctlSE,
        "registered": ms(s.registered), "reqs": [[b(f), me, se, ms(x)] for f, me, se, x in s.reqs],
        "brokers": {names[i]: {
            "alive": s.alive[i], "reach": s.reach[i], "role": b(s.role[i]), "bME": s.bME[i], "bSE": s.bSE[i],
            "local": ms(s.local[i]), "remote": None if s.remote[i] == NONE else ms(s.remote[i]),
            "log": [list(e) for e in s.log[i]], "epochs": [list(e) for e in s.epochs[i]], "flushed": s.flushed[i],
            "confirm": s.confirm[i], "conn": b(s.conn[i]), "ack": s.ack[i]} for i in range(len(names))},
        "sent": s.sent, "acked": [m + 1 for m in range(s.sent) if s.acked >> m & 1],
        "pend": [[b(x), m] for x, m in s.pend], "nCrash": s.nCrash, "nPart": s.nPart, "nAdmin": s.nAdmin,
        "nShrink": s.nShrink}


def label_to_json(label: Label, names: list[str]) -> list[Any]:
    """(name, *args) with broker indices as names where the action's arguments are brokers."""
    name, *args = label
    brokers_at = {"ControllerElect": (0,), "BrokerElect": (0, 1), "AdminElect": (0,), "ControllerAlter": (0,),
                  "AckPut": (0,), "Shrink": (0, 1)}.get(name, (0,))
    out: list[Any] = [name]
    for k, a in enumerate(args):
        out.append((None if a == NONE else names[a]) if k in brokers_at and isinstance(a, int)
                   and not isinstance(a, bool) else a)
    return out


def replay_states(cfg: ModelConfig, states: list[Any],
                  key: Callable[[State], Any] | None = None) -> list[tuple[Label | None, State]]:
    """Follow a sequence of states through the model: each must be a successor of the previous (or equal: a
    stutter). ``states`` are model states, or what ``key`` makes of one (e.g. its JSON). Raises ``ValueError``
    naming the first step the model does not allow."""
    k: Callable[[State], Any] = key or (lambda x: x)
    s = initial(cfg)
    if k(s) != states[0]:
        raise ValueError("step 0: not the model's initial state")
    out: list[tuple[Label | None, State]] = [(None, s)]
    for i in range(1, len(states)):
        prev, want = out[-1][1], states[i]
        if want == states[i - 1]:
            out.append((("Stutter",), prev))
            continue
        for label, t in successors(prev, cfg):
            if k(t) == want:
                out.append((label, t))
                break
        else:
            enabled = sorted({lab[0] for lab, _ in successors(prev, cfg)})
            raise ValueError(f"step {i}: no model action leads there (enabled: {', '.join(enabled)})")
    return out


def first_violation(cfg: ModelConfig, steps: list[tuple[Label | None, State]],
                    names: list[str] | None = None) -> tuple[int, str] | None:
    """(step, TLA+ operator) of the first invariant or action property that fails along the steps."""
    checked_inv = list(INVARIANTS) if names is None else [n for n in names if n in INVARIANTS]
    checked_prop = list(ACTION_PROPERTIES) if names is None else [n for n in names if n in ACTION_PROPERTIES]
    for i, (_, s) in enumerate(steps):
        if i:
            for n in checked_prop:
                if not ACTION_PROPERTIES[n](steps[i - 1][1], s, cfg):
                    return i, n
        for n in checked_inv:
            if not INVARIANTS[n](s, cfg):
                return i, n
    return None


def model_trace_lines(header: dict[str, Any], cfg: ModelConfig, steps: list[tuple[Label | None, State]],
                      violation: tuple[int, str] | None) -> list[dict[str, Any]]:
    """The header, step and footer objects of a model trace (``rmqha.impl.trace`` writes and hashes them)."""
    names = broker_names(cfg.Brokers)
    lines: list[dict[str, Any]] = []
    for i, (label, s) in enumerate(steps):
        lines.append({"i": i, "act": None if label is None else label_to_json(label, names),
                      "state": state_to_json(s, names)})
    v = None if violation is None else {"step": violation[0], "tla": violation[1],
                                        "id": TLA_TO_ID.get(violation[1], violation[1])}
    return [dict(header, layer="model"), *lines, {"end": True, "steps": len(steps), "violation": v}]
