"""The settle tail of a run with progress checks (``[sim] progress``): no new fault, then the LIVE-* invariants.

Theory of operation. A run's fault phase ends where it always did (``max_steps``, ``max_time``, or for the Hypothesis
machines the time their rules reached). With ``[sim] progress`` on, the run then goes on (``Tail``):

1. The fault generator draws nothing more (its pending draw leaves the heap). What the faults already taken still
   have scheduled runs: the heals, restarts and resumes of a generated run, every later action of an explicit
   schedule; but a generated run leaves a broker that is down for good with probability ``DEAD_CHANCE`` (its
   pending restart is dropped, a draw of the run's ``settle`` stream), so that the progress checks also see a set
   that lost a replica for good (LIVE-SSS-NO-DEAD).
2. The *heal point* is the time of the last pending action, or later when a fault's effect outlasts it (a lossy
   window's ``until``, a slow commit or apply, a stalled dispatch: ``effect_end``). There the run records a
   ``settle`` step: *healed* when no partition is left, no process is paused, and the nameserver, every controller
   node and the producer run; the brokers then down are *dead* (the schedule left them down). A run that is not
   healed ends there, unchecked.
3. Each progress invariant is checked at the heal point plus its settle bound (``impl/invariants/settle.py``), in a
   ``progress-check`` step; two probe sends (``probe`` steps) go out for LIVE-PUTS. The run ends after the last
   check, or at its first violation.

A trace header without ``[sim] progress`` (every trace written before it) replays as before: the tail does not run.
Everything here is a function of the heap and the configuration, so the tail is deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..invariants.registry import progress_invariants
from ..invariants.settle import IDLE_WAKEUPS, IDLE_WINDOW, POLLING, Settle, Timeouts, probe_gap, probe_start, total
from .actions import Action
from .clients import ProducerNode
from .config import Config
from .events import SettleEvent

if TYPE_CHECKING:
    from .world import Simulation

DEAD_CHANCE = 0.5
"""A generated run's broker down at the end of the fault phase stays down with this probability."""

TAIL_STEPS = 100_000
"""Steps the tail may take beyond the fault phase's. A healthy tail takes far fewer: at most 12 137 in seeds 1-6 of
the safe, fidelity, jraft, guards and large-logs profiles with every fix (4 000-5 000 for one controller, 10 000-12 000
for a group), so a tail that runs out of them before its last progress check is a busy loop: a timer that fires again
and again while simulated time stands still or crawls (LIVE-TIME-ADVANCES)."""


def effect_end(a: Action) -> int:
    """When a fault action's effect is over (its own time for the instantaneous ones). A new fault kind whose effect
    lasts says so here."""
    if a["do"] == "net":
        return int(a["until"])
    if a["do"] in ("slow-commit", "slow-apply"):
        return int(a["t"]) + int(a["duration"]) + int(a["extra"])
    if a["do"] == "slow-dispatch":
        return int(a["t"]) + int(a["ms"])
    return int(a["t"])


def timeouts(cfg: Config) -> Timeouts:
    net = cfg.network
    return Timeouts(cfg.controller, cfg.broker, cfg.store, cfg.cluster.controllers, cfg.workload.send_timeout,
                    legacy=cfg.cluster.mode == "legacy",
                    net_delay=net.delay_max + (net.slow_delay if net.slow > 0 else 0),  # as Simulation.net_delay
                    consume_interval=cfg.workload.consume_interval)


def deadlines(t: Timeouts) -> dict[int, list[str]]:
    """Settle bound -> the progress invariants checked then, in catalogue order (one without stages under these
    settings, LIVE-CONSUME in a 5.x run, is not checked)."""
    out: dict[int, list[str]] = {}
    for inv in progress_invariants():
        assert inv.settle is not None
        terms = inv.settle(t)
        if terms:  # no stage: it does not apply to this deployment (LIVE-CTL-*: one controller node)
            out.setdefault(total(terms), []).append(inv.id)
    return dict(sorted(out.items()))


class Tail:
    """The settle tail of one simulation (see the module's theory)."""

    def __init__(self, sim: Simulation, end: int) -> None:
        self.sim = sim
        self.end = end
        self.timeouts = timeouts(sim.cfg)
        self.settle: Settle | None = None
        self.last_check = -1
        self.steps_from, self.time_from = sim.step, sim.now
        self.ended = False  # the tail ended itself: not healed, or its last progress check ran
        # LIVE-IDLE-WAKEUPS, from the heal point on (``counting``): (node, service object, callback) -> [window,
        # idle wake-ups in it, the service object]; node -> {window: [events delivered, idle wake-ups among them]}
        self.counting = False
        self._idle: dict[tuple[str, int, str], list[Any]] = {}
        self._events: dict[str, dict[int, list[int]]] = {}
        store = sim.cfg.store
        self._lookback = -(-max(store.ha_send_heartbeat_interval, store.sync_flush_timeout,
                                sim.cfg.workload.send_timeout) // IDLE_WINDOW)
        self.idle_breach: tuple[str, str, int, int, int] | None = None  # (node, callback, wake-ups, allowed, start)

    def start(self) -> None:
        """The fault phase has ended at ``end`` (every event up to it has run): no new fault from now on."""
        sim = self.sim
        keep = [e for e in sim._heap if e[2] != SETTLE_GEN]
        if sim.generator is not None:
            rng = sim._root.fork("settle")
            restarts = sorted((e for e in keep if e[2] == SETTLE_ACT and e[3][0]["do"] == "restart"
                               and e[3][0]["node"] in sim.brokers), key=lambda e: (e[0], e[1]))
            dropped = {id(e) for e in restarts if rng.chance(DEAD_CHANCE)}
            keep = [e for e in keep if id(e) not in dropped]
        sim._heap = keep
        heapq.heapify(sim._heap)
        sim.max_time = None
        sim.max_steps = sim.step + TAIL_STEPS
        last = max([e[0] for e in sim._heap if e[2] == SETTLE_ACT] + [self.end])
        sim._push(last, SETTLE, None)

    def on_settle(self, rec: bool) -> None:
        """The last pending action has run: wait out the longest effect, then take the heal point."""
        sim = self.sim
        if sim.quiet_at > sim.now:
            if rec:
                sim._step_event = {"ev": "settle", "wait": sim.quiet_at}
            sim._push(sim.quiet_at, SETTLE, None)
            return
        up = sim.up
        healed = not any(sim.blocked.values()) and not sim.paused and up[sim.nameserver] and up["p1"] \
            and (sim.legacy or all(up[c] for c in sim.controllers))  # 4.x runs start no controller
        dead = tuple(b for b in sim.brokers if not up[b])
        if rec:
            event: SettleEvent = {"ev": "settle", "healed": healed}
            if dead:
                event["dead"] = list(dead)
            sim._step_event = event
        if not healed:
            sim.max_steps = sim.step  # the run ends here, unchecked
            self.ended = True
            return
        self.settle = Settle(sim.now, dead, self.timeouts)
        self.counting = True
        plan = deadlines(self.timeouts)
        for bound in plan:
            sim._push(sim.now + bound, CHECK, bound)
        self.last_check = sim.now + max(plan)
        first = sim.now + probe_start(self.timeouts)
        for at in (first, first + probe_gap(self.timeouts)):
            sim._push(at, PROBE, None)

    def on_probe(self, rec: bool) -> None:
        sim = self.sim
        producer = sim.nodes.get("p1")
        assert self.settle is not None
        if not isinstance(producer, ProducerNode) or not sim.up["p1"]:
            if rec:
                sim._step_event = {"ev": "probe", "key": None}
            return
        producer.now = sim.now
        (key,) = producer.produce(1)
        self.settle.probes.append(key)
        if rec:
            sim._step_event = {"ev": "probe", "key": key}
        sim._drain(producer)

    def on_check(self, bound: int, rec: bool) -> None:
        sim = self.sim
        assert self.settle is not None
        ids = deadlines(self.timeouts)[bound]
        if rec:
            sim._step_event = {"ev": "progress-check", "ids": ids, "bound": bound}
        sim.check_progress(ids, self.settle)
        if sim.now >= self.last_check:
            sim.max_steps = sim.step  # the last check: the run ends with this step
            self.ended = True
            self.counting = False

    def _window(self) -> int:
        assert self.settle is not None
        return (self.sim.now - self.settle.heal) // IDLE_WINDOW

    def delivered(self, node: str) -> None:
        """After the heal point, ``node`` was handed an event (a message, HA bytes, a connection's result or close,
        a timer): what LIVE-IDLE-WAKEUPS allows one more idle wake-up for, over the next deadlines."""
        counts = self._events.setdefault(node, {}).setdefault(self._window(), [0, 0])
        counts[0] += 1

    def idle_wakeup(self, node: str, fn: Callable[[], None]) -> None:
        """After the heal point, a timer of ``node`` ran ``fn`` and the process did nothing but arm timers: one idle
        wake-up of the service ``fn`` belongs to (the object its bound method is of, or the node's for a timer with
        arguments), in the quiet second (``IDLE_WINDOW``) it fell in. Past ``IDLE_WAKEUPS`` of one service in one
        second (a ``POLLING`` one excepted), plus one for each other event the node was handed in that second and
        the ``_lookback`` before it, the tail ends here, for LIVE-IDLE-WAKEUPS to report."""
        assert self.settle is not None
        owner, name = _service(fn)
        window = self._window()
        events = self._events.setdefault(node, {})
        events.setdefault(window, [0, 0])[1] += 1  # ``delivered`` then counts it among the events
        key = (node, id(owner), name)
        seen = self._idle.get(key)
        if seen is None or seen[0] != window:
            seen = self._idle[key] = [window, 0, owner]  # holds the object: its id names no other while counted
        seen[1] += 1
        if seen[1] <= IDLE_WAKEUPS or name in POLLING or self.idle_breach is not None:
            return
        # the events that did something, this second and the lookback before it (+ 1: this idle wake-up is not
        # among the events yet)
        busy = 1 + sum(e - i for w in range(window - self._lookback, window + 1) for e, i in [events.get(w, (0, 0))])
        allowed = IDLE_WAKEUPS + busy
        if seen[1] > allowed:
            self.idle_breach = (node, name, seen[1], allowed, self.settle.heal + window * IDLE_WINDOW)
            self.sim.max_steps = self.sim.step  # the run ends with this step
            self.ended = True
            self.counting = False

    def stalled(self) -> tuple[int, int, int] | None:
        """After the tail ran: (steps, from, to) when it used its whole step budget (``TAIL_STEPS``) before its last
        progress check, simulated time going only from ``from`` (the tail's start) to ``to`` ms; None when it ended
        itself (or a violation or an empty heap ended it)."""
        sim = self.sim
        if self.ended or sim.violation is not None or sim.step < sim.max_steps:
            return None
        return sim.step - self.steps_from, self.time_from, sim.now


def _service(fn: Callable[[], None]) -> tuple[object, str]:
    """The object a timer callback belongs to and the callback's name: a bound method's own, or, for a timer armed
    with arguments (``Actor.after``'s closure), the bound method it calls."""
    owner = getattr(fn, "__self__", None)
    if owner is None:
        for cell in getattr(fn, "__closure__", None) or ():
            inner = cell.cell_contents
            if getattr(inner, "__self__", None) is not None:
                fn, owner = inner, inner.__self__
                break
    return owner, getattr(fn, "__qualname__", type(fn).__name__)


# heap event kinds of the simulator that the tail reads or adds (world.py owns the numbering)
SETTLE_ACT, SETTLE_GEN = 6, 7
SETTLE, PROBE, CHECK = 9, 10, 11
