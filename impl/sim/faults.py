"""Fault generation: composite fault kinds drawn by weight, expanded into primitive, replayable actions.

A run's faults are a list of primitive *actions* at simulated times (``actions.py`` defines them and the
composite kinds). In *generated* mode the generator draws the next fault lazily from its
own RNG stream; every action taken is written to the trace, so a trace can be turned into an *explicit*
schedule (``explicit_from_trace``) and replayed or shrunk without the generator.

Only perturbations are bounded (``max_down`` brokers down at once, one fault at a time per target); healing
is never bounded: every crash restarts and every partition heals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from ..rng import DetRng
from .actions import (
    ADVERSARIAL_KINDS,
    DEFAULT_WEIGHTS,
    FAULT_KINDS,
    GUARD_KINDS,
    PRIMITIVES,
    Action,
    CrashAt,
    HaFault,
    HaStale,
    Restart,
    TamperMode,
    TrapPoint,
    without_release,
)
from .config import FaultConfig

MOVED_PORTS = (10921, 10931, 10941)  # listenPorts a moved broker may come back on (BrokerConfig.listenPort 10911)
TAMPER: dict[str, TamperMode] = {"ha-dup": "dup", "ha-reorder": "reorder", "ha-replay": "replay",
                                 "ha-corrupt": "corrupt"}
POINTS: dict[str, TrapPoint] = {"crash-split-confirm": "confirm-split", "crash-role-change": "role-change",
                                "crash-empty-epoch": "empty-epoch", "crash-torn-write": "torn-write"}


class WorldView:
    """What the generator may ask about the cluster (implemented by the simulation)."""

    brokers: list[str]
    controller: str

    def is_up(self, node: str) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def is_paused(self, node: str) -> bool:  # pragma: no cover - interface
        raise NotImplementedError

    def believed_master(self) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    def broker_id(self, node: str) -> int | None:  # pragma: no cover - interface
        raise NotImplementedError

    def controller_leader(self) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    controllers: list[str]


def guard_default_on(kind: str, cfg: FaultConfig) -> bool:
    """Whether a kind takes its default weight: every kind from before issue 21 does; a kind at the guards only with
    ``[faults] guards`` (TCP-faithful) or ``[faults] adversarial`` (``ADVERSARIAL_KINDS``)."""
    if kind in ADVERSARIAL_KINDS:
        return cfg.adversarial
    return kind not in GUARD_KINDS or cfg.guards


class FaultGenerator:
    """Draws composite faults; ``next_actions(now)`` returns primitive actions with their follow-ups."""

    def __init__(self, cfg: FaultConfig, rng: DetRng) -> None:
        self.cfg = cfg
        self.rng = rng
        # a kind of issue 21 takes its default weight only with [faults] guards (adversarial: [faults] adversarial): a
        # header written before them (which names none of them) draws exactly what it drew then
        weights = {k: w for k, w in DEFAULT_WEIGHTS.items() if guard_default_on(k, cfg)}
        weights.update(cfg.weights)
        self.weights = [(k, weights[k]) for k in FAULT_KINDS if weights.get(k, 0) > 0]
        self.busy: set[str] = set()  # nodes with a pending heal/restart/resume
        self.seq = 0

    def first_time(self, now: int) -> int:
        return now + self.rng.exp_ms(self.cfg.mean_interval)

    def draw(self, now: int, world: WorldView) -> list[Action]:
        """Actions for one composite fault at ``now`` (possibly none if nothing applies)."""
        if not self.weights:
            return []
        for _ in range(8):  # a few draws: some kinds do not apply to the current state
            kind = self.rng.weighted(self.weights)
            actions = self._make(kind, now, world)
            if actions:
                for a in actions:
                    a["fault"] = kind
                return actions
        return []

    # ---- helpers
    def _heal_at(self, now: int) -> int:
        return now + self.rng.between(self.cfg.heal_after_min, self.cfg.heal_after_max)

    def _restart_at(self, now: int) -> int:
        return now + self.rng.between(self.cfg.restart_after_min, self.cfg.restart_after_max)

    def _down(self, world: WorldView) -> int:
        return sum(1 for b in world.brokers if not world.is_up(b) or world.is_paused(b) or b in self.busy)

    def _free_brokers(self, world: WorldView) -> list[str]:
        return [b for b in world.brokers if world.is_up(b) and not world.is_paused(b) and b not in self.busy]

    def _pid(self) -> str:
        self.seq += 1
        return f"f{self.seq}"

    def _partition(self, now: int, links: list[list[str]], nodes: list[str]) -> list[Action]:
        pid = self._pid()
        self.busy.update(nodes)
        return [{"t": now, "do": "partition", "id": pid, "links": links},
                {"t": self._heal_at(now), "do": "heal", "id": pid, "release": nodes}]

    def _make(self, kind: str, now: int, world: WorldView) -> list[Action]:
        free = self._free_brokers(world)
        ctl = world.controller
        ctls = list(getattr(world, "controllers", [ctl]))  # a replicated group: every controller node
        rng = self.rng
        if kind in ("crash-broker", "crash-master", "pause-broker"):
            if self._down(world) >= self.cfg.max_down:
                return []
            if kind == "crash-master":
                m = world.believed_master()
                target = m if m in free else None
            else:
                target = rng.choice(free) if free else None
            if target is None:
                return []
            self.busy.add(target)
            if kind == "pause-broker":
                return [{"t": now, "do": "pause", "node": target},
                        {"t": self._heal_at(now), "do": "resume", "node": target, "release": [target]}]
            power = rng.chance(self.cfg.lose_unflushed_tail)
            return [{"t": now, "do": "crash", "node": target, "powerLoss": power},
                    {"t": self._restart_at(now), "do": "restart", "node": target, "release": [target]}]
        if kind in ("stop-broker", "lose-epoch-file", "lose-checkpoint"):
            if self._down(world) >= self.cfg.max_down or not free:
                return []
            target = rng.choice(free)
            self.busy.add(target)
            restart: Restart = {"t": self._restart_at(now), "do": "restart", "node": target, "release": [target]}
            if kind == "stop-broker":
                return [{"t": now, "do": "stop", "node": target}, restart]
            file = "epoch" if kind == "lose-epoch-file" else "checkpoint"
            return [{"t": now, "do": "crash", "node": target, "powerLoss": False},
                    {"t": now, "do": "lose-file", "node": target, "file": file}, restart]
        if kind in ("crash-controller-leader", "isolate-controller-leader"):
            leader = world.controller_leader()
            if leader is None or len(world.controllers) == 1 or leader in self.busy:
                return []
            self.busy.add(leader)
            if kind == "crash-controller-leader":
                return [{"t": now, "do": "crash", "node": leader, "powerLoss": False},
                        {"t": self._restart_at(now), "do": "restart", "node": leader, "release": [leader]}]
            others = [n for n in [*world.controllers, *world.brokers] if n != leader]
            links = [[leader, o] for o in others] + [[o, leader] for o in others]
            pid = self._pid()
            return [{"t": now, "do": "partition", "id": pid, "links": links},
                    {"t": self._heal_at(now), "do": "heal", "id": pid, "release": [leader]}]
        if kind == "crash-controller-follower":
            leader = world.controller_leader()
            followers = [c for c in world.controllers if c != leader and world.is_up(c) and c not in self.busy]
            if len(world.controllers) == 1 or leader is None or not followers:
                return []
            target = rng.choice(followers)
            self.busy.add(target)
            return [{"t": now, "do": "crash", "node": target, "powerLoss": False},
                    {"t": now + rng.between(20_000, 40_000), "do": "restart", "node": target, "release": [target]}]
        if kind == "slow-apply":
            up = [c for c in world.controllers if world.is_up(c)]
            if len(world.controllers) == 1 or not up:
                return []
            return [{"t": now, "do": "slow-apply", "node": rng.choice(up), "extra": rng.between(2000, 8000),
                     "duration": rng.between(1000, 8000)}]
        if kind == "ctl-replay":  # the group's own messages replayed (DLedger's RPCs are requests too)
            if len(ctls) == 1:
                return []
            return [{"t": now, "do": "rpc-replay", "node": rng.choice(ctls), "lag": rng.between(500, 10_000),
                     "p": rng.choice([0.3, 1.0]), "until": self._heal_at(now)}]
        if kind in ("crash-ctl-unapplied", "cut-ctl-unapplied"):
            return self._ctl_unapplied(kind, now, world, ctls)
        if kind == "restart-consumer":
            if not world.is_up("c1") or "c1" in self.busy:
                return []
            self.busy.add("c1")
            return [{"t": now, "do": "crash", "node": "c1", "powerLoss": False},
                    {"t": self._restart_at(now), "do": "restart", "node": "c1", "release": ["c1"]}]
        if kind == "crash-controller":
            if len(ctls) > 1:
                ctl = rng.choice(ctls)
            if not world.is_up(ctl) or ctl in self.busy:
                return []
            self.busy.add(ctl)
            return [{"t": now, "do": "crash", "node": ctl, "powerLoss": False},
                    {"t": self._restart_at(now), "do": "restart", "node": ctl, "release": [ctl]}]
        if kind in ("isolate-broker", "isolate-master"):
            target = world.believed_master() if kind == "isolate-master" else (rng.choice(free) if free else None)
            if target is None or target not in free:
                return []
            others = [n for n in [*ctls, *world.brokers] if n != target]
            links = [[target, o] for o in others] + [[o, target] for o in others]
            return self._partition(now, links, [target])
        if kind == "partition-controller":
            if not free:
                return []
            b = rng.choice(free)
            return self._partition(now, [link for c in ctls for link in ([b, c], [c, b])], [b])
        if kind == "partition-oneway":
            if not free:
                return []
            b = rng.choice(free)
            other = rng.choice([n for n in [*ctls, *world.brokers] if n != b])
            link = [b, other] if rng.chance(0.5) else [other, b]
            return self._partition(now, [link], [b])
        if kind == "partition-brokers":
            if len(free) < 2:
                return []
            a = rng.choice(free)
            b = rng.choice([x for x in free if x != a])
            return self._partition(now, [[a, b], [b, a]], [a, b])
        if kind == "partition-halves":
            nodes = [*ctls, *world.brokers]
            if any(n in self.busy for n in nodes):
                return []
            side = [n for n in nodes if rng.chance(0.5)]
            if not side or len(side) == len(nodes):
                return []
            other = [n for n in nodes if n not in side]
            links = [[a, b] for a in side for b in other] + [[b, a] for a in side for b in other]
            return self._partition(now, links, nodes)
        if kind == "break-ha":
            if not free:
                return []
            return [{"t": now, "do": "break-ha", "node": rng.choice(free)}]
        if kind == "lossy-network":
            return [{"t": now, "do": "net", "drop": rng.choice([0.1, 0.3, 0.6]), "dup": rng.choice([0.0, 0.1, 0.3]),
                     "slow": rng.choice([0.0, 0.2, 0.5]), "until": self._heal_at(now)}]
        if kind == "slow-commit":
            if not world.is_up(ctl):
                return []
            return [{"t": now, "do": "slow-commit", "extra": rng.between(5500, 9000),
                     "duration": rng.between(1000, 8000)}]
        if kind == "slow-dispatch":
            if not free:
                return []
            return [{"t": now, "do": "slow-dispatch", "node": rng.choice(free), "ms": rng.between(500, 8000)}]
        if kind in GUARD_KINDS or kind == "crash-torn-write":
            return self._make_guard(kind, now, world, free)
        if kind == "expand-queues":
            return [{"t": now, "do": "expand-queues", "by": 2}]
        if kind in ("clean-living-broker", "decommission-broker", "move-broker"):
            return self._make_operator(kind, now, world, free)
        if kind == "expand-then-crash-master":
            master = world.believed_master()
            if master not in free or self._down(world) >= self.cfg.max_down:
                return []
            self.busy.add(master)
            crash = now + rng.between(13_000, 18_000)  # just past slaveSynchronize's worst case: 10 s + 3 s
            return [{"t": now, "do": "expand-queues", "by": 2},
                    {"t": crash, "do": "crash", "node": master, "powerLoss": False},
                    {"t": self._restart_at(crash), "do": "restart", "node": master, "release": [master]}]
        if kind == "admin-elect":
            ids = [i for i in (world.broker_id(b) for b in world.brokers) if i is not None]
            designate = rng.choice(ids) if ids and rng.chance(0.8) else None
            return [{"t": now, "do": "admin-elect", "brokerId": designate}]
        raise ValueError(f"unknown fault kind {kind}")  # pragma: no cover

    def _ctl_unapplied(self, kind: str, now: int, world: WorldView, ctls: list[str]) -> list[Action]:
        """A replicated group's state machines lag for ``within`` ms (a slow apply on every node) and a node is hit
        between an entry's commit and its apply: killed (``crash-ctl-unapplied``), or, after the leader's crash, the
        new leader cut off while its empty entry waits to apply (``cut-ctl-unapplied``)."""
        rng = self.rng
        leader = world.controller_leader()
        up = [c for c in ctls if world.is_up(c)]
        if len(ctls) == 1 or leader is None or len(up) < len(ctls) or any(c in self.busy for c in ctls):
            return []
        self.busy.update(ctls)
        within = rng.between(8000, 20_000)
        # cut: an apply late by more than the leader's step-down (maxHeartBeatLeak heartbeats), often less than the
        # election timeout after it (the empty entry then applies in the leader's own term, after it stepped down)
        low, high = (3000, 8000) if kind == "crash-ctl-unapplied" else (2000, 5000)
        out: list[Action] = [{"t": now, "do": "slow-apply", "node": c, "extra": rng.between(low, high),
                              "duration": within} for c in ctls]
        end = self._restart_at(now + within)
        if kind == "crash-ctl-unapplied":
            out.append({"t": now, "do": "ctl-at", "point": "unapplied", "then": "crash", "within": within})
        else:
            pid = self._pid()
            out += [{"t": now + 1, "do": "crash", "node": leader, "powerLoss": False},
                    {"t": now + 2, "do": "ctl-at", "point": "unapplied", "then": "isolate", "leader": True,
                     "within": within, "id": pid},
                    {"t": end, "do": "heal", "id": pid}]
        out += [{"t": end, "do": "restart", "node": c} for c in ctls]
        out[-1]["release"] = list(ctls)
        return out

    def _make_guard(self, kind: str, now: int, world: WorldView, free: list[str]) -> list[Action]:
        """The kinds of issue 21 (faults at the guards), each one primitive action or a short sequence."""
        rng = self.rng
        if not free:
            return []
        if kind in TAMPER:
            until = self._heal_at(now)
            tamper: HaFault = {"t": now, "do": "ha-fault", "node": rng.choice(free), "mode": TAMPER[kind],
                               "p": rng.choice([0.1, 0.3, 1.0]), "until": until}
            if kind != "ha-replay":
                return [tamper]
            # a new connection within the window: the replay comes on it
            return [tamper, {"t": now + rng.between(1000, max(1000, (until - now) // 2)), "do": "break-ha",
                             "node": tamper["node"]}]
        if kind == "rpc-replay":
            return [{"t": now, "do": "rpc-replay", "node": rng.choice(free), "lag": rng.between(500, 10_000),
                     "p": rng.choice([0.3, 1.0]), "until": self._heal_at(now)}]
        if kind == "ha-stale-tail":
            target = rng.choice(free)
            window: HaStale = {"t": now, "do": "ha-stale", "node": target, "lag": rng.between(1000, 12_000),
                               "until": now + 20_000}
            if rng.chance(0.5) or self._down(world) >= self.cfg.max_down:
                return [window, {"t": now + 1, "do": "break-ha", "node": target}]
            self.busy.add(target)
            crash_at = now + rng.between(1, 2000)
            return [window, {"t": crash_at, "do": "crash", "node": target, "powerLoss": False},
                    {"t": crash_at + rng.between(1000, 4000), "do": "restart", "node": target, "release": [target]}]
        if kind == "stale-request":
            return self._stale_request(now, world, free)
        if self._down(world) >= self.cfg.max_down:
            return []
        # crash-split-confirm, crash-role-change, crash-empty-epoch: a trap, perhaps a role change, a restart
        target = rng.choice(free)
        self.busy.add(target)
        within = rng.between(10_000, 30_000)
        arm: CrashAt = {"t": now, "do": "crash-at", "node": target, "point": POINTS[kind], "within": within}
        if kind == "crash-role-change":
            arm["step"] = rng.between(1, 3)
        out: list[Action] = [arm]
        bid = world.broker_id(target)
        if kind == "crash-torn-write":  # the torn record meets recovery; perhaps then the broker's promotion
            back = self._restart_at(now + within)
            out.append({"t": back, "do": "restart", "node": target, "release": [target]})
            if bid is not None and rng.chance(0.5):
                out.append({"t": back + rng.between(2000, 8000), "do": "admin-elect", "brokerId": bid})
            return out
        if kind != "crash-split-confirm" and bid is not None and rng.chance(0.5):  # bring a role change about
            out.append({"t": now + 1, "do": "admin-elect", "brokerId": bid})
        out.append({"t": self._restart_at(now + within), "do": "restart", "node": target, "release": [target]})
        return out

    def _make_operator(self, kind: str, now: int, world: WorldView, free: list[str]) -> list[Action]:
        """The operator's paths: cleanBrokerData of a running broker's id (refused) or of a dead slave's id (then
        the broker is redeployed without its identity), and a broker restarted on another listenPort."""
        rng = self.rng
        if kind == "clean-living-broker":
            ids = [i for i in (world.broker_id(b) for b in free) if i is not None]
            return [{"t": now, "do": "clean", "ids": str(rng.choice(ids))}] if ids else []
        if self._down(world) >= self.cfg.max_down:
            return []
        if kind == "move-broker":
            if not free:
                return []
            target = rng.choice(free)
            self.busy.add(target)
            return [{"t": now, "do": "crash", "node": target, "powerLoss": False},
                    {"t": self._restart_at(now), "do": "restart", "node": target, "port": rng.choice(MOVED_PORTS),
                     "release": [target]}]
        master = world.believed_master()
        slaves = [(b, i) for b in free if b != master and (i := world.broker_id(b)) is not None]
        if not slaves:
            return []
        target, bid = rng.choice(slaves)
        self.busy.add(target)
        # cleanBrokerData refuses an id whose heartbeat is alive: wait past controllerHeartBeatTimeoutMills (10 s)
        clean_at = now + rng.between(12_000, 16_000)
        return [{"t": now, "do": "crash", "node": target, "powerLoss": False},
                {"t": clean_at, "do": "clean", "ids": str(bid)},
                {"t": clean_at + rng.between(500, 4000), "do": "lose-file", "node": target, "file": "identity"},
                {"t": clean_at + rng.between(4000, 8000), "do": "restart", "node": target, "release": [target]}]

    def _stale_request(self, now: int, world: WorldView, free: list[str]) -> list[Action]:
        """A broker's link to the controller holds its requests (TCP retransmits); perhaps the broker crashes and
        restarts meanwhile; the heal delivers them, a dead incarnation's ``hold`` ms after its successor's."""
        rng = self.rng
        master = world.believed_master()
        target = master if master in free and rng.chance(0.6) else rng.choice(free)
        ctls = list(getattr(world, "controllers", [world.controller]))
        may_crash = self._down(world) < self.cfg.max_down  # before the target counts as busy
        self.busy.add(target)
        pid = self._pid()
        out: list[Action] = [{"t": now, "do": "partition", "id": pid, "links": [[target, c] for c in ctls],
                              "hold": rng.between(1000, 15_000)}]
        heal = now + rng.between(2000, 9000)
        if rng.chance(0.5) and may_crash:
            crash_at = now + rng.between(200, 3000)
            back = crash_at + rng.between(1000, 4000)
            out += [{"t": crash_at, "do": "crash", "node": target, "powerLoss": False},
                    {"t": back, "do": "restart", "node": target}]
            heal = max(heal, back + rng.between(1000, 6000))
        out.append({"t": heal, "do": "heal", "id": pid, "release": [target]})
        return sorted(out, key=lambda a: a["t"])

    def release(self, nodes: list[str]) -> None:
        self.busy.difference_update(nodes)


def explicit_from_trace(lines: list[dict[str, Any]]) -> list[Action]:
    """The primitive actions a generated run took, as an explicit schedule (for shrinking and replay)."""
    out: list[Action] = []
    for line in lines:
        act = line.get("act")
        if act is not None:
            out.append(without_release(cast(Action, act)))  # the trace's own record of an action it took
    return out


def validate_actions(actions: Any, known_nodes: Callable[[str], bool]) -> list[Action]:
    """Check an explicit schedule from a file; raise ``ValueError`` with one line on the first problem."""
    if not isinstance(actions, list):
        raise ValueError("faults.events must be a list of actions")
    prev = 0
    for i, a in enumerate(actions):
        if not isinstance(a, dict) or not isinstance(a.get("t"), int) or a.get("do") not in PRIMITIVES:
            raise ValueError(f"fault action #{i} needs an integer 't' and 'do' in {', '.join(PRIMITIVES)}")
        if a["t"] < prev:
            raise ValueError(f"fault action #{i} is earlier than the one before it")
        prev = a["t"]
        node = a.get("node")
        if node is not None and not known_nodes(node):
            raise ValueError(f"fault action #{i} names unknown node {node!r}")
    return actions
