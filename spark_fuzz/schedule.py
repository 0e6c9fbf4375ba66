"""Per-seed fault mixes (swarm testing) and schedules drawn without a live cluster (for mutants).

A seed's **mix** is drawn from the seed alone (``DetRng(seed).fork("fuzz-swarm")``) and written into the run's
config (``[faults]`` weights and timing, ``[cluster] brokers``), so the trace header replays it like any other
run. Drawing a mix:

1. a **family** by weight (``[fuzz] families``): which part of the fault catalogue the seed leans on;
2. the family's *core* kinds are on, with their default weight times the family's multiplier; every other
   kind is on with probability ``include`` (swarm testing: a seed that never crashes the controller explores
   differently from one that does; a focused family lowers it) and its default weight times a factor drawn
   from ``scale``;
3. a mean fault spacing from ``mean_intervals`` (unless the family fixes it) and a broker-set size from
   ``brokers``.

Weights the user's config sets replace the defaults (``0`` keeps a kind off in every seed).

The **faults at the guards** (issue 21: ``GUARD_KINDS`` in ``impl/sim/actions.py``) are drawn apart, from the seed's
own ``fuzz-guards`` stream, after everything above (so a seed's family, kinds, spacing and brokers are what they were
before them): with probability ``[fuzz] guards`` a seed also gets the TCP-faithful ones (each on with probability
``include``, at its default weight times a ``scale`` draw) and its brokers' long steps interleaved (``[sim]
interleave``); with probability ``[fuzz] adversarial`` (0 by default: they go beyond what TCP does) the adversarial
ones too.

The **epoch-conflict** families use the generator's primitives with timings that make the conflict happen:
``stale-epoch`` keeps a master or the controller cut off or slow for longer than the controller's heartbeat
timeout, so a new epoch starts while the old master's proposals and heartbeats queue up and arrive late;
``old-master-restart`` keeps a crashed or isolated master away long enough to be replaced, so it comes back into a
newer epoch; ``concurrent-sss`` breaks HA connections and cuts broker pairs every few seconds while the master's
link to the controller fails, so that SyncStateSet shrinks and expansions overlap; ``admin`` issues ``electMaster``
while brokers are dead or cut off; ``dispatch-lag`` stalls a slave's dispatch, breaks HA connections during the
stall and cuts the master from the controller.

``ghost_schedule`` draws faults for a time window with the kit's own ``FaultGenerator`` against a *ghost* of the
cluster (up/down and paused states follow the drawn actions; the master comes from a hint), giving the explicit
actions a mutant splices in (``mutate.py``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from rmqha.impl.rng import DetRng
from rmqha.impl.sim.actions import (
    ADVERSARIAL_KINDS,
    DEFAULT_WEIGHTS,
    FAULT_KINDS,
    GUARD_KINDS,
    LATE_GUARD_WEIGHTS,
    Action,
)
from rmqha.impl.sim.config import Config, config_from_dict
from rmqha.impl.sim.faults import FaultGenerator, WorldView

from .settings import DEFAULT_FAMILIES, FuzzSettings


@dataclass(frozen=True)
class Family:
    """A region of the fault catalogue: core kinds (weight multipliers) and generator timings."""

    name: str
    purpose: str
    core: dict[str, float] = field(default_factory=dict)
    timing: dict[str, int] = field(default_factory=dict)
    include: float | None = None  # a focused family's own swarm inclusion (None: [fuzz] include)


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("uniform", "the whole catalogue at the kit's default weights (swarm-thinned)"),
    Family("stale-epoch", "stale-epoch requests: a master or the controller cut off or slow past the heartbeat "
                          "timeout, its queued requests arriving after a new epoch began",
           {"partition-controller": 3, "isolate-master": 3, "partition-oneway": 2, "slow-commit": 3,
            "lossy-network": 2},
           {"heal_after_min": 8000, "heal_after_max": 30000}),
    Family("old-master-restart", "restarts of an old master into a newer epoch: the master crashes or is cut off "
                                 "for longer than it takes to elect another",
           {"crash-master": 4, "isolate-master": 2},
           {"restart_after_min": 11000, "restart_after_max": 30000, "heal_after_min": 11000,
            "heal_after_max": 30000}),
    Family("concurrent-sss", "concurrent SyncStateSet proposals: HA breaks and broker cuts every few seconds while "
                             "the master's link to the controller fails, so shrinks and expansions overlap",
           {"break-ha": 4, "partition-brokers": 3, "partition-oneway": 2, "partition-controller": 2},
           {"mean_interval": 3000}, include=0.3),
    Family("admin", "mqadmin electMaster while brokers are dead or cut off from the controller",
           {"admin-elect": 6, "crash-broker": 2, "isolate-broker": 2, "partition-controller": 2},
           {"restart_after_min": 10000, "restart_after_max": 30000, "heal_after_min": 10000,
            "heal_after_max": 30000, "mean_interval": 4000}),
    Family("dispatch-lag", "a slave's dispatch stalls while its HA connection breaks and the master is cut off "
                           "from the controller",
           {"slow-dispatch": 5, "break-ha": 4, "partition-controller": 3},
           {"mean_interval": 2000, "heal_after_min": 6000}, include=0.1),
]}
if tuple(FAMILIES) != tuple(DEFAULT_FAMILIES):  # settings.py validates [fuzz] families by these names
    raise RuntimeError("schedule.FAMILIES and settings.DEFAULT_FAMILIES name different families")


@dataclass(frozen=True)
class Mix:
    """What one seed's swarm draw chose."""

    family: str
    brokers: int
    mean_interval: int
    weights: dict[str, float]
    interleave: bool = False  # the faults at the guards were drawn: the brokers' long steps interleaved too

    def kinds(self) -> list[str]:
        return [k for k in FAULT_KINDS if self.weights.get(k, 0) > 0]


def draw_mix(seed: int, base: Config, settings: FuzzSettings) -> Mix:
    """The seed's family, kinds and weights, spacing and broker count (deterministic in the seed)."""
    rng = DetRng(seed).fork("fuzz-swarm")
    families = [(name, w) for name, w in settings.families.items() if w > 0 and name in FAMILIES]
    fam = FAMILIES[rng.weighted(families)]
    user = base.faults.weights
    weights: dict[str, float] = {}
    for kind in FAULT_KINDS:
        if kind in GUARD_KINDS and kind not in user:
            continue  # the faults at the guards: drawn below, from their own stream
        if kind not in DEFAULT_WEIGHTS and kind not in user:
            continue  # a fidelity part's fault kind, off unless the profile weighs it (no draw, no header entry)
        w0 = user.get(kind, DEFAULT_WEIGHTS.get(kind, 0.0))
        if w0 <= 0:
            weights[kind] = 0.0
        elif kind in fam.core:
            weights[kind] = round(w0 * fam.core[kind], 4)
        elif rng.chance(settings.include if fam.include is None else min(fam.include, settings.include)):
            weights[kind] = round(w0 * rng.choice(settings.scale), 4)
        else:
            weights[kind] = 0.0
    off = [k for k in weights if weights[k] == 0 and user.get(k, DEFAULT_WEIGHTS.get(k, 0.0)) > 0]
    while sum(1 for w in weights.values() if w > 0) < 2 and off:  # a swarm draw never leaves fewer than 2 kinds
        k = off.pop(rng.below(len(off)))
        weights[k] = user.get(k, DEFAULT_WEIGHTS.get(k, 0.0))
    mean = fam.timing.get("mean_interval") or rng.choice(settings.mean_intervals)
    sizes = [(n, w) for n, w in sorted(settings.brokers.items()) if w > 0]
    brokers = rng.weighted(sizes) if sizes and not base.cluster.election_priorities else base.cluster.brokers
    return Mix(fam.name, brokers, mean, weights, _draw_guards(seed, weights, user, settings))


def _draw_guards(seed: int, weights: dict[str, float], user: dict[str, float], settings: FuzzSettings) -> bool:
    """The faults at the guards for this seed, into ``weights`` (from the seed's ``fuzz-guards`` stream: the draws
    above are the ones a seed made before them). True when any were drawn (the steps are interleaved then)."""
    g = DetRng(seed).fork("fuzz-guards")
    faithful, adversarial = g.chance(settings.guards), g.chance(settings.adversarial)
    if not (faithful or adversarial):
        return False
    for kind in FAULT_KINDS:
        if kind not in GUARD_KINDS or kind in user or not (adversarial if kind in ADVERSARIAL_KINDS else faithful) \
                or kind in LATE_GUARD_WEIGHTS:
            continue
        weights[kind] = round(DEFAULT_WEIGHTS[kind] * g.choice(settings.scale), 4) if g.chance(settings.include) \
            else 0.0
    for kind, w0 in LATE_GUARD_WEIGHTS.items():  # after the others: a seed's earlier draws are those it made before
        if kind not in user and (adversarial if kind in ADVERSARIAL_KINDS else faithful):
            weights[kind] = round(w0 * g.choice(settings.scale), 4) if g.chance(settings.include) else 0.0
    return True


def mix_config(base: Config, mix: Mix) -> Config:
    """``base`` with the mix written into ``[faults]`` and ``[cluster]`` (what the trace header records)."""
    timing = {k: v for k, v in FAMILIES[mix.family].timing.items() if k != "mean_interval"}
    faults: dict[str, Any] = {"weights": dict(mix.weights), "mean_interval": mix.mean_interval, **timing}
    if "heal_after_min" in timing:
        faults["heal_after_max"] = max(timing.get("heal_after_max", base.faults.heal_after_max),
                                       timing["heal_after_min"])
    if "restart_after_min" in timing:
        faults["restart_after_max"] = max(timing.get("restart_after_max", base.faults.restart_after_max),
                                          timing["restart_after_min"])
    sections: dict[str, Any] = {"faults": faults, "cluster": {"brokers": mix.brokers}}
    if mix.interleave:
        sections["sim"] = {"interleave": True}
    return config_from_dict(sections, base)


# ------------------------------------------------------------------------------------------ ghost schedules


class _Ghost(WorldView):
    """What the generator may ask, answered from the actions drawn so far and a master hint."""

    def __init__(self, brokers: int, master_at: Any, controllers: int = 1) -> None:
        self.brokers = [f"b{i + 1}" for i in range(brokers)]
        self.controllers = ["ctl"] if controllers == 1 else [f"ctl{i + 1}" for i in range(controllers)]
        self.controller = self.controllers[0]
        self.down: set[str] = set()
        self.paused: set[str] = set()
        self.now = 0
        self._master_at = master_at

    def is_up(self, node: str) -> bool:
        return node not in self.down

    def is_paused(self, node: str) -> bool:
        return node in self.paused

    def believed_master(self) -> str | None:
        m = self._master_at(self.now)
        return m if m is not None and m not in self.down else None

    def broker_id(self, node: str) -> int | None:
        return self.brokers.index(node) + 1 if node in self.brokers else None

    def controller_leader(self) -> str | None:
        """Unknown ahead of the run: the first controller node that is up stands in for it."""
        return next((c for c in self.controllers if c not in self.down), None)

    def apply(self, a: Action) -> None:
        if a["do"] == "crash":
            self.down.add(a["node"])
        elif a["do"] == "restart":
            self.down.discard(a["node"])
        elif a["do"] == "pause":
            self.paused.add(a["node"])
        elif a["do"] == "resume":
            self.paused.discard(a["node"])


def ghost_schedule(cfg: Config, rng: DetRng, start: int, end: int, master_at: Any, tag: str) -> list[Action]:
    """Faults drawn by ``FaultGenerator`` (``cfg``'s weights and timings) for ``[start, end)``, follow-ups included.

    ``master_at(t)`` names the broker believed master at ``t`` (or None); partition ids get ``tag`` so they never
    collide with the ids of a schedule they are spliced into."""
    gen = FaultGenerator(cfg.faults, rng)
    ghost = _Ghost(cfg.cluster.brokers, master_at, cfg.cluster.controllers)
    out: list[Action] = []
    pending: list[tuple[int, int, Action]] = []
    seq = 0
    t = gen.first_time(start) if start > 0 else gen.first_time(0)
    while t < end:
        while pending and pending[0][0] <= t:
            _, _, a = heapq.heappop(pending)
            ghost.now = a["t"]
            ghost.apply(a)
            gen.release(a.get("release", []))
        ghost.now = t
        for a in gen.draw(t, ghost):
            if a["do"] == "partition" or a["do"] == "heal":  # the actions with an id
                a["id"] = f"{tag}{a['id']}"
            if a["t"] == t:
                ghost.apply(a)
            else:
                seq += 1
                heapq.heappush(pending, (a["t"], seq, a))
            out.append(a)
        t += rng.exp_ms(cfg.faults.mean_interval)
    for a in out:
        a.pop("release", None)
    out.sort(key=lambda a: a["t"])
    return out
