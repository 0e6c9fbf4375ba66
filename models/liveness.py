"""Liveness of the model under the spec's fairness (``FairSpec``), checked on the explicit state graph.

Everything that decides a liveness verdict lives here: the properties (each named after its TLA+ operator), the
fairness classes of the model's action labels, the state graph (networkx), and the lasso check.

Theory of operation. ``FairSpec`` puts weak fairness (WF) on every action but the perturbations (Crash,
Partition, AdminElect) and Produce; the perturbations are bounded, so every fair behaviour ends in a finite
graph. A lasso (a path, then a loop for ever) is a fair behaviour iff every fairness class enabled in *all* loop
states is taken on some loop edge; a state may also stutter for ever iff no fairness class is enabled there.
For WF this is exact on strongly connected components: a component fails the test iff every cycle inside it
fails (a sub-cycle only enables more classes everywhere and takes fewer), so no refinement is needed.

* ``P ~> Q`` fails iff from some reachable ``P /\\ ~Q`` state a fair lasso stays in ``~Q``: search the subgraph of
  ``~Q`` states reachable from ``P /\\ ~Q`` states, with enabledness taken in the full graph.
* ``<>[]Q`` fails iff a fair lasso's loop holds a ``~Q`` state.

The state graph is built without symmetry (as TLC checks liveness). Counterexamples are concrete lassos,
re-checked by ``check_lasso``, the same function that checks TLC's temporal counterexamples on the model.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx

from .controller_mode import NONE, Label, ModelConfig, State, initial, successors

UNFAIR = frozenset({"Produce", "Crash", "Partition", "AdminElect"})


def fair_class(label: Label) -> Label | None:
    """The WF conjunct of ``FairSpec`` an action label belongs to (None: no fairness)."""
    kind = label[0]
    if kind in UNFAIR:
        return None
    if kind in ("ControllerElect", "ControllerAlter"):
        return (kind,)
    if kind == "BrokerElect" and len(label) > 1:  # ("BrokerElect", requester, elected): fair per requester
        return (kind, label[1])
    return label


Pred = Callable[[State, ModelConfig, int], bool]


def _some_sss_member_up(s: State, cfg: ModelConfig, b: int) -> bool:
    return any(s.ctlSSS >> x & 1 and s.alive[x] and s.reach[x] for x in range(cfg.Brokers))


def _master_up(s: State, cfg: ModelConfig, b: int) -> bool:
    return s.ctlMaster != NONE and s.alive[s.ctlMaster] and s.reach[s.ctlMaster]


def _caught_up(s: State, cfg: ModelConfig, b: int) -> bool:
    m = s.conn[b]
    return s.alive[b] and m != NONE and s.ack[b] >= len(s.log[m])


def _in_sss_or_down(s: State, cfg: ModelConfig, b: int) -> bool:
    return bool(s.ctlSSS >> b & 1) or not s.alive[b]


def _all_in_sss(s: State, cfg: ModelConfig, b: int) -> bool:
    return s.ctlSSS == (1 << cfg.Brokers) - 1


@dataclass(frozen=True)
class LiveProp:
    """``P ~> Q`` (p set) or ``<>[]Q`` (p None); per_broker: one instance per broker b (``\\A b``)."""

    name: str
    doc: str
    q: Pred
    p: Pred | None = None
    per_broker: bool = False


LIVENESS: dict[str, LiveProp] = {x.name: x for x in (
    LiveProp("L_MASTER_ELECTED", "while an SSS member is alive and reachable, a live reachable master is "
             "eventually elected", _master_up, _some_sss_member_up),
    LiveProp("L_REJOIN", "a slave that has caught up with its master is eventually in the controller's SSS (or "
             "down)", _in_sss_or_down, _caught_up, per_broker=True),
    LiveProp("L_ALL_IN_SSS", "every broker is eventually in the SSS for good", _all_in_sss),
)}


@dataclass
class StateGraph:
    """Reachable states (node ids in BFS order, 0 the initial state), labelled edges, fair classes enabled."""

    states: list[State]
    graph: nx.DiGraph  # edge attribute "labels": the action labels of that step
    enabled: list[frozenset[Label]]


def state_graph(cfg: ModelConfig, max_states: int = 2_000_000) -> StateGraph:
    """The full reachable graph (no symmetry); steps that leave the state unchanged are stutters, not edges."""
    s0 = initial(cfg)
    ids = {s0: 0}
    states = [s0]
    g = nx.DiGraph()
    g.add_node(0)
    enabled: list[frozenset[Label]] = []
    q = deque([0])
    while q:
        i = q.popleft()
        s = states[i]
        en = set()
        for label, t in successors(s, cfg):
            if t == s:
                continue
            c = fair_class(label)
            if c is not None:
                en.add(c)
            j = ids.get(t)
            if j is None:
                if len(states) >= max_states:
                    raise RuntimeError(f"state graph larger than {max_states:,} states")
                j = ids[t] = len(states)
                states.append(t)
                q.append(j)
            if g.has_edge(i, j):
                g[i][j]["labels"].append(label)
            else:
                g.add_edge(i, j, labels=[label])
        enabled.append(frozenset(en))  # states leave the FIFO queue in id order
    return StateGraph(states, g, enabled)


@dataclass
class Lasso:
    """A behaviour: ``steps`` (label, state) from the initial state; the loop goes back to ``loop_start``
    (None: the last state stutters for ever)."""

    prop: str
    broker: int | None
    steps: list[tuple[Label | None, State]]
    loop_start: int | None


@dataclass
class LivenessResult:
    distinct: int
    edges: int
    violation: Lasso | None


def _edge_classes(sg: StateGraph, u: int, v: int) -> set[Label]:
    return {c for lab in sg.graph[u][v]["labels"] if (c := fair_class(lab)) is not None}


def _path(sg: StateGraph, nodes: set[int] | None, src: int, dst: int) -> list[int]:
    g = sg.graph if nodes is None else sg.graph.subgraph(nodes)
    return list(nx.shortest_path(g, src, dst))


def _steps(sg: StateGraph, path: list[int]) -> list[tuple[Label | None, State]]:
    out: list[tuple[Label | None, State]] = [(None, sg.states[path[0]])]
    for u, v in itertools.pairwise(path):
        out.append((sg.graph[u][v]["labels"][0], sg.states[v]))
    return out


def _fair_loop(sg: StateGraph, comp: set[int], entry: int) -> list[int] | None:
    """A closed walk entry -> ... -> entry inside comp along which every fairness class is taken or somewhere
    disabled; None if the component admits no fair loop (some class enabled in all of comp is never taken)."""
    if len(comp) == 1 and not sg.graph.has_edge(entry, entry):
        return None
    need = frozenset.intersection(*(sg.enabled[x] for x in comp))
    taken: dict[Label, tuple[int, int]] = {}
    for u in comp:
        for v in sg.graph.successors(u):
            if v in comp:
                for c in _edge_classes(sg, u, v):
                    taken.setdefault(c, (u, v))
    if not need <= set(taken):
        return None
    walk = [entry]
    for c in sorted(need, key=repr):  # take each class enabled everywhere
        u, v = taken[c]
        walk += [*_path(sg, comp, walk[-1], u)[1:], v]
    if walk[-1] != entry:
        walk += _path(sg, comp, walk[-1], entry)[1:]
    if len(walk) == 1:  # go round some cycle through entry
        nxt = next(v for v in sg.graph.successors(entry) if v in comp)
        walk += [nxt, *_path(sg, comp, nxt, entry)[1:]]
    # a class enabled all along this walk but not taken on it: visit a state of comp where it is disabled
    done = set().union(*(_edge_classes(sg, u, v) for u, v in itertools.pairwise(walk)))
    for c in sorted(frozenset.intersection(*(sg.enabled[x] for x in walk)) - done, key=repr):
        x = next(y for y in sorted(comp) if c not in sg.enabled[y])
        walk += [*_path(sg, comp, walk[-1], x)[1:], *_path(sg, comp, x, entry)[1:]]
    return walk


def _search(sg: StateGraph, cfg: ModelConfig, prop: LiveProp, b: int, dist: dict[int, int]) -> Lasso | None:
    """A fair lasso violating ``prop`` (for broker b), with the shortest prefix; ``dist``: BFS distance from 0."""
    n = len(sg.states)
    notq = [not prop.q(s, cfg, b) for s in sg.states]
    if prop.p is None:
        region = {i for i in range(n) if notq[i]}
        starts = region
    else:
        starts = {i for i in range(n) if notq[i] and prop.p(sg.states[i], cfg, b)}
        region = set(starts)
        q = deque(starts)
        while q:
            u = q.popleft()
            for v in sg.graph.successors(u):
                if notq[v] and v not in region:
                    region.add(v)
                    q.append(v)
    if not region:
        return None
    best: tuple[int, int, list[int] | None] | None = None  # (distance, entry, loop or None for stutter)
    for x in region:
        if not sg.enabled[x] and (best is None or dist[x] < best[0]):
            best = (dist[x], x, None)
    sub = sg.graph.subgraph(region)
    for comp in nx.strongly_connected_components(sub):
        entry = min(comp, key=lambda x: dist[x])
        if best is not None and dist[entry] >= best[0]:
            continue
        loop = _fair_loop(sg, set(comp), entry)
        if loop is not None:
            best = (dist[entry], entry, loop)
    if best is None:
        return None
    _, entry, loop = best
    if prop.p is None:
        prefix = _path(sg, None, 0, entry)
    else:  # reach a P /\ ~Q state, then stay in ~Q up to the entry
        back = nx.single_source_shortest_path_length(sub.reverse(copy=False), entry)
        s0 = min((x for x in starts if x in back), key=lambda x: (dist[x] + back[x], x))
        prefix = _path(sg, None, 0, s0) + _path(sg, region, s0, entry)[1:]
    if loop is None:
        return Lasso(prop.name, b if prop.per_broker else None, _steps(sg, prefix), None)
    return Lasso(prop.name, b if prop.per_broker else None, _steps(sg, prefix + loop[1:]), len(prefix) - 1)


def check(cfg: ModelConfig, names: list[str], sg: StateGraph | None = None) -> LivenessResult:
    """Check the named properties in order; the first violated one gives a shortest-prefix fair lasso."""
    unknown = [x for x in names if x not in LIVENESS]
    if unknown:
        raise KeyError(f"not a liveness property of the model: {', '.join(unknown)}")
    sg = sg or state_graph(cfg)
    dist = nx.single_source_shortest_path_length(sg.graph, 0)
    for name in names:
        prop = LIVENESS[name]
        for b in range(cfg.Brokers) if prop.per_broker else [0]:
            lasso = _search(sg, cfg, prop, b, dist)
            if lasso is not None:
                return LivenessResult(len(sg.states), sg.graph.number_of_edges(), lasso)
    return LivenessResult(len(sg.states), sg.graph.number_of_edges(), None)


def _enabled(s: State, cfg: ModelConfig) -> set[Label]:
    return {c for lab, t in successors(s, cfg) if t != s and (c := fair_class(lab)) is not None}


def check_lasso(cfg: ModelConfig, name: str, states: list[State], loop_start: int | None) -> tuple[bool, str]:
    """Whether a lasso of model states (each a successor of the previous, or equal) is a fair behaviour that
    violates the property: (verdict, one line). TLC's temporal counterexamples are checked with this."""
    prop = LIVENESS[name]
    labels: list[set[Label]] = [set()]
    for i in range(1, len(states)):
        if states[i] == states[i - 1]:
            labels.append(set())
            continue
        cls = {fair_class(lab) for lab, t in successors(states[i - 1], cfg) if t == states[i]}
        if not cls:
            return False, f"step {i}: no model action leads there"
        labels.append({c for c in cls if c is not None})
    if loop_start is None:
        en = _enabled(states[-1], cfg)
        if en:
            return False, f"the last state stutters while {sorted(en)[0]} is enabled: not fair"
        loop = [len(states) - 1]
    else:
        back = {fair_class(lab) for lab, t in successors(states[-1], cfg) if t == states[loop_start]}
        if not back and states[-1] != states[loop_start]:
            return False, "the loop's closing step is no model action"
        loop = list(range(loop_start, len(states)))
        taken = set().union(*(labels[i] for i in loop[1:]), {c for c in back if c is not None})
        need = set.intersection(*(_enabled(states[i], cfg) for i in loop))
        if not need <= taken:
            return False, f"the loop never takes {sorted(need - taken)[0]}, enabled throughout: not fair"
    for b in range(cfg.Brokers) if prop.per_broker else [0]:
        notq = [not prop.q(s, cfg, b) for s in states]
        if prop.p is None:
            if any(notq[i] for i in loop):
                return True, f"{name}: the loop keeps ~Q for ever"
        else:
            for i in range(len(states)):
                if notq[i] and prop.p(states[i], cfg, b) and all(notq[i:]) and all(notq[j] for j in loop):
                    return True, f"{name}{'' if not prop.per_broker else f' (b{b + 1})'}: P at step {i}, ~Q ever after"
    return False, f"{name} holds on this lasso"
