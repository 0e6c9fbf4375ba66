"""Explicit-state exploration of the model: BFS with symmetry reduction, random walks, and the state graph.

The BFS mirrors TLC's: breadth first from the initial state, a state is new when its fingerprint is; with
symmetry the fingerprint is that of the orbit's canonical member (the least of its permutations), so the
distinct-state count is the number of reachable orbits, as TLC counts with ``SYMMETRY``. Fingerprints are
Python's 64-bit hash of the canonical tuple (ints and tuples only: independent of ``PYTHONHASHSEED``).
Invariants are checked on every new state, action properties on every transition. A violation comes with the
shortest trace (BFS), rebuilt concretely by re-running the model along the fingerprints.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .controller_mode import NONE, Label, ModelConfig, State, initial, successors
from .properties import ACTION_PROPERTIES, INVARIANTS


def _perm_mask_table(p: tuple[int, ...]) -> list[int]:
    n = len(p)
    out = []
    for mask in range(1 << n):
        r = 0
        for i in range(n):
            if mask >> i & 1:
                r |= 1 << p[i]
        out.append(r)
    return out


class Symmetry:
    """All permutations of the broker ids, applied to whole states."""

    def __init__(self, n: int) -> None:
        self.identity = tuple(range(n))
        self.perms = [p for p in itertools.permutations(range(n)) if p != self.identity]
        self.tables = [(p, tuple(p.index(j) for j in range(n)), _perm_mask_table(p)) for p in self.perms]
        self.all_tables = [(self.identity, self.identity, _perm_mask_table(self.identity)), *self.tables]
        self.mask_tables = {p: mt for p, _, mt in self.all_tables}

    @staticmethod
    def apply(s: State, p: tuple[int, ...], inv: tuple[int, ...], mt: list[int]) -> State:
        def mp(b: int) -> int:
            return NONE if b == NONE else p[b]

        def order(t: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(t[i] for i in inv)

        return State(
            ctlMaster=mp(s.ctlMaster), ctlME=s.ctlME, ctlSSS=mt[s.ctlSSS], ctlSE=s.ctlSE,
            registered=mt[s.registered],
            reqs=tuple(sorted((p[f], me, se, mt[x]) for f, me, se, x in s.reqs)),
            alive=order(s.alive), reach=order(s.reach), role=tuple(mp(s.role[i]) for i in inv),
            bME=order(s.bME), bSE=order(s.bSE), local=tuple(mt[s.local[i]] for i in inv),
            remote=tuple(NONE if s.remote[i] == NONE else mt[s.remote[i]] for i in inv), log=order(s.log),
            epochs=order(s.epochs), flushed=order(s.flushed), confirm=order(s.confirm),
            conn=tuple(mp(s.conn[i]) for i in inv), ack=order(s.ack), sent=s.sent, acked=s.acked,
            pend=tuple(sorted((p[b], m) for b, m in s.pend)), nCrash=s.nCrash, nPart=s.nPart, nAdmin=s.nAdmin,
            nShrink=s.nShrink)

    def canonical(self, s: State) -> State:
        """The least permutation of s among those that sort the brokers by their own (id-free) fields: a
        function of the orbit, and usually a single permutation to apply."""
        n = len(s.alive)
        sig = [(s.alive[i], s.reach[i], s.role[i] == i, s.ctlMaster == i, s.ctlSSS >> i & 1, s.bME[i], s.bSE[i],
                s.log[i], s.epochs[i], s.flushed[i], s.confirm[i], s.ack[i]) for i in range(n)]
        order = sorted(range(n), key=sig.__getitem__)
        ties = any(sig[order[k]] == sig[order[k + 1]] for k in range(n - 1))
        if not ties:
            inv = tuple(order)
            p = tuple(inv.index(j) for j in range(n))
            if p == self.identity:
                return s
            return self.apply(s, p, inv, self.mask_tables[p])
        best: State | None = None
        for p, inv, mt in self.all_tables:
            if all(sig[inv[k]] <= sig[inv[k + 1]] for k in range(n - 1)):
                q = s if p == self.identity else self.apply(s, p, inv, mt)
                if best is None or q < best:
                    best = q
        assert best is not None
        return best

    def orbit(self, s: State) -> set[State]:
        return {s, *(self.apply(s, p, inv, mt) for p, inv, mt in self.tables)}


@dataclass
class Violation:
    name: str  # TLA+ operator name, e.g. SYNC_NO_ACK_LOSS
    kind: str  # "invariant" | "property"
    trace: list[tuple[Label | None, State]]  # (label that led here, state); the first label is None


def _checks(invariants: Iterable[str] | None, properties: Iterable[str] | None) -> tuple[list[Any], list[Any]]:
    """(name, predicate) pairs of the invariants and action properties to check (None: all of them)."""
    return ([(k, INVARIANTS[k]) for k in (INVARIANTS if invariants is None else invariants)],
            [(k, ACTION_PROPERTIES[k]) for k in (ACTION_PROPERTIES if properties is None else properties)])


def _outcome_json(v: Violation | None) -> dict[str, Any]:
    return {"status": "pass" if v is None else v.kind, "violated": None if v is None else v.name,
            "traceLength": None if v is None else len(v.trace)}


@dataclass
class BFSResult:
    distinct: int = 0
    generated: int = 0
    depth: int = 0
    seconds: float = 0.0
    violation: Violation | None = None
    by_action: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"distinct": self.distinct, "generated": self.generated, "depth": self.depth,
                "seconds": round(self.seconds, 3), **_outcome_json(self.violation)}


def bfs(cfg: ModelConfig, *, symmetry: bool = True, invariants: Iterable[str] | None = None,
        properties: Iterable[str] | None = None, on_progress: Callable[[dict[str, int]], None] | None = None,
        max_states: int | None = None) -> BFSResult:
    """Breadth-first search of every reachable state (orbit, with symmetry); stops at the first violation."""
    invs, props = _checks(invariants, properties)
    sym = Symmetry(cfg.Brokers) if symmetry else None
    canon: Callable[[State], State] = sym.canonical if sym else (lambda x: x)
    t0 = time.perf_counter()
    res = BFSResult()
    s0 = canon(initial(cfg))
    parent: dict[int, tuple[int, Label | None]] = {hash(s0): (0, None)}
    res.distinct = 1
    for name, inv in invs:
        if not inv(s0, cfg):
            res.violation = Violation(name, "invariant", [(None, initial(cfg))])
            res.seconds = time.perf_counter() - t0
            return res
    queue: deque[tuple[State, int]] = deque([(s0, 0)])
    last_report = t0
    while queue:
        s, d = queue.popleft()
        fs = hash(s)
        for label, t in successors(s, cfg):
            res.generated += 1
            res.by_action[label[0]] = res.by_action.get(label[0], 0) + 1
            for name, prop in props:
                if not prop(s, t, cfg):
                    res.violation = Violation(name, "property", [*_trace(cfg, parent, fs, canon), (label, t)])
                    res.depth = max(res.depth, d + 1)
                    res.seconds = time.perf_counter() - t0
                    return res
            c = canon(t)
            ft = hash(c)
            if ft in parent:
                continue
            parent[ft] = (fs, label)
            res.distinct += 1
            res.depth = max(res.depth, d + 1)
            for name, inv in invs:
                if not inv(c, cfg):
                    res.violation = Violation(name, "invariant", _trace(cfg, parent, ft, canon))
                    res.seconds = time.perf_counter() - t0
                    return res
            queue.append((c, d + 1))
        if on_progress is not None and time.perf_counter() - last_report > 2:
            last_report = time.perf_counter()
            on_progress({"distinct": res.distinct, "generated": res.generated, "queue": len(queue), "depth": d})
        if max_states is not None and res.distinct >= max_states:
            break
    res.seconds = time.perf_counter() - t0
    return res


def _trace(cfg: ModelConfig, parent: dict[int, tuple[int, Label | None]], fp: int,
           canon: Callable[[State], State]) -> list[tuple[Label | None, State]]:
    """A concrete shortest trace to the state with fingerprint ``fp``: follow the parents back, then re-run
    forward from the initial state, at each step taking a successor in the next orbit."""
    chain = []
    while True:
        p, label = parent[fp]
        chain.append(fp)
        if label is None:
            break
        fp = p
    chain.reverse()
    s = initial(cfg)
    out: list[tuple[Label | None, State]] = [(None, s)]
    for target in chain[1:]:
        for label, t in successors(s, cfg):
            if hash(canon(t)) == target:
                s = t
                out.append((label, t))
                break
        else:  # pragma: no cover - would mean the model is not deterministic
            raise RuntimeError("trace reconstruction lost its way")
    return out


@dataclass
class WalkResult:
    walks: int = 0
    steps: int = 0
    distinct: int = 0  # distinct states (orbits) met on all walks: a coverage figure
    max_depth: int = 0
    seconds: float = 0.0
    violation: Violation | None = None
    by_action: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """As ``BFSResult.to_json``; ``generated`` counts the steps taken."""
        return {"walks": self.walks, "steps": self.steps, "generated": self.steps, "distinct": self.distinct,
                "depth": self.max_depth, "seconds": round(self.seconds, 3), **_outcome_json(self.violation)}


def random_walks(cfg: ModelConfig, *, seed: int, walks: int, depth: int, invariants: Iterable[str] | None = None,
                 properties: Iterable[str] | None = None,
                 on_progress: Callable[[dict[str, int]], None] | None = None) -> WalkResult:
    """Random walks from the initial state for scopes too deep for BFS (as TLC's ``-simulate``): at each step one
    enabled action, uniformly, from ``random.Random(seed)``; a walk ends at ``depth`` or in a deadlock. Same seed,
    same walks. Stops at the first violation, whose trace is the walk so far."""
    rng = random.Random(seed)
    invs, props = _checks(invariants, properties)
    sym = Symmetry(cfg.Brokers)
    seen: set[int] = set()
    res = WalkResult()
    t0 = time.perf_counter()
    last_report = t0
    for w in range(walks):
        s = initial(cfg)
        path: list[tuple[Label | None, State]] = [(None, s)]
        for _ in range(depth):
            succ = list(successors(s, cfg))
            if not succ:
                break
            label, t = succ[rng.randrange(len(succ))]
            res.steps += 1
            res.by_action[label[0]] = res.by_action.get(label[0], 0) + 1
            path.append((label, t))
            bad = next((n for n, p in props if not p(s, t, cfg)), None)
            kind = "property"
            if bad is None:
                bad, kind = next((n for n, inv in invs if not inv(t, cfg)), None), "invariant"
            seen.add(hash(sym.canonical(t)))
            s = t
            if bad is not None:
                res.violation = Violation(bad, kind, path)
                break
        res.walks = w + 1
        res.max_depth = max(res.max_depth, len(path) - 1)
        if res.violation is not None:
            break
        if on_progress is not None and time.perf_counter() - last_report > 2:
            last_report = time.perf_counter()
            on_progress({"distinct": len(seen), "generated": res.steps, "queue": walks - w - 1, "depth": depth})
    res.distinct = len(seen)
    res.seconds = time.perf_counter() - t0
    return res
