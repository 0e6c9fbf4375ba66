"""Coverage of one run (abstract states, "sometimes" witnesses) and of a campaign (first discoveries).

**Abstract states.** After every step that can move the control plane (a fault action, a controller event
applied, a role, SyncStateSet or fencing change, a handshake, truncation, expansion, proposal or crash), the
probe takes ``abstract_state(sim)`` (``impl/sim/abstraction.py``, the model's vocabulary) and hashes a finite
projection of it: the controller's master, SyncStateSet and registered set (and whether it is up); per broker
``alive reach role local remote`` and whether its HA client is connected, its ``bME``/``bSE`` relative to the
controller's epochs (clipped to -2..1), whether its log is the longest, whether its confirmOffset is behind its log,
and its epoch file's length (clipped to 3) and last epoch relative to the controller's. Byte offsets and absolute
epochs are left out: they grow without bound, and a hash of them would call every state new.

**Witnesses** ("sometimes" properties, Antithesis style): the checker's counters (``Checker.coverage``:
elections, unclean elections, lost replies whose event applied, truncations across an epoch boundary, an SSS
expansion raced by its master's crash, ...) plus the probe's own, read from observations: a stale SyncStateSet
proposal fenced by the controller (``alter-fenced``), a proposal with no reply (``alter-no-reply``), a second
expansion while one is in flight (``sss-proposals-overlap``), an old master back as a slave of a newer epoch
(``old-master-rejoined``), a master fenced (``master-fenced``).

The probe wraps the checker (``checker_factory``); it only reads the simulation, so a probed run is the same run,
byte for byte (``tests/test_fuzz.py`` checks the hash).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rmqha.impl.invariants import Checker, Coverage, Settle
from rmqha.impl.observations import Observation
from rmqha.impl.sim.abstraction import abstract_state
from rmqha.impl.sim.world import Simulation

SAMPLE_ON = frozenset({"ctl.apply", "ctl.replay", "brk.role", "brk.sss", "brk.fenced", "brk.alter", "ha.handshake-done",
                       "ha.truncate", "ha.expand", "ha.client-close", "sim.crash", "store.truncated", "ctl.inactive",
                       "store.truncate-invalid"})
MAX_ROLES = 400


def _clip(x: int, lo: int = -2, hi: int = 1) -> int:
    return lo if x < lo else hi if x > hi else x


def project(a: dict[str, Any], ctl_up: bool) -> tuple[Any, ...]:
    """The finite projection of ``abstract_state`` that coverage counts (see the module docstring)."""
    me, se = a["ctlME"], a["ctlSE"]
    logs = a["log"]
    longest = max(logs) if logs else 0
    per = []
    for i in range(len(logs)):
        epochs = a["epochs"][i]
        last = epochs[-1][0] if epochs else 0
        per.append((a["alive"][i], a["reach"][i], a["role"][i], _clip(a["bME"][i] - me), _clip(a["bSE"][i] - se),
                    a["local"][i], a["remote"][i], a["conn"][i] >= 0, logs[i] == longest, a["confirm"][i] < logs[i],
                    min(len(epochs), 3), _clip(last - me)))
    return (ctl_up, a["ctlMaster"], a["ctlSSS"], a["registered"], tuple(per))


def state_hash(key: tuple[Any, ...]) -> str:
    return hashlib.blake2b(repr(key).encode(), digest_size=8).hexdigest()


class CoverageProbe:
    """Stands where the checker stands: runs the checker, then samples the abstraction and the observations."""

    def __init__(self, world: Simulation, inner: Checker) -> None:
        self.world = world
        self.inner = inner
        self.states: dict[str, int] = {}  # state hash -> simulated ms of its first visit
        self.own: Counter[str] = Counter()
        self.roles: list[list[Any]] = []  # [t, node, "M"|"S"|"D"]: who was what, for mutants' targeting
        self._last_ctl: dict[str, Any] | None = None
        self._expanding: set[str] = set()
        self._was_master: set[str] = set()

    @property
    def coverage(self) -> Coverage:
        return self.inner.coverage

    def check_progress(self, ids: list[str], at: Settle) -> None:
        self.inner.check_progress(ids, at)

    def check_at_run_end(self) -> None:
        self.inner.check_at_run_end()

    def after_step(self, obs: list[Observation]) -> None:
        self.inner.after_step(obs)
        world = self.world
        sample = world.acted
        for o in obs:
            if o["k"] in SAMPLE_ON:
                sample = True
                self._witness(o)
        if sample:
            a = abstract_state(world, self._last_ctl)
            self._last_ctl = a["ctlSnapshot"]
            h = state_hash(project(a, world.controller_node() is not None))
            if h not in self.states:
                self.states[h] = world.now

    def _witness(self, o: Observation) -> None:
        if o["k"] == "brk.alter":
            if o.get("code") is None:
                self.own["alter-no-reply"] += 1
            elif o["code"] != 0:
                self.own["alter-fenced"] += 1
        elif o["k"] == "ha.expand":
            n = o.get("n", "")
            if n in self._expanding:
                self.own["sss-proposals-overlap"] += 1
            self._expanding.add(n)
        elif o["k"] == "brk.sss":
            self._expanding.discard(o.get("n", ""))
        elif o["k"] == "brk.fenced" and o.get("fenced"):
            self.own["master-fenced"] += 1
        elif o["k"] == "brk.role":
            n = o.get("n", "")
            role = "M" if o["role"] == "MASTER" else "S"
            self._expanding.discard(n)
            if role == "S" and n in self._was_master and o["masterEpoch"] > o.get("previous", 0):
                self.own["old-master-rejoined"] += 1
                self._was_master.discard(n)
            if role == "M":
                self._was_master.add(n)
            self._role(n, role)
        elif o["k"] == "sim.crash":
            self._expanding.discard(o["node"])
            self._role(o["node"], "D")

    def _role(self, node: str, role: str) -> None:
        if len(self.roles) < MAX_ROLES:
            self.roles.append([self.world.now, node, role])

    def witnesses(self) -> dict[str, int]:
        out = dict(self.inner.coverage.counts)
        for k, v in self.own.items():
            out[k] = out.get(k, 0) + v
        return dict(sorted(out.items()))


def master_at(roles: list[list[Any]]) -> Any:
    """``t -> broker`` believed master at ``t`` according to a run's role log (for ghost schedules)."""

    def at(t: int) -> str | None:
        master = None
        for when, node, role in roles:
            if when > t:
                break
            if role == "M":
                master = node
            elif node == master:
                master = None
        return master

    return at


@dataclass
class CampaignCoverage:
    """One arm's discoveries, merged run by run in a fixed order (so a resumed campaign rebuilds the same)."""

    states: dict[str, str] = field(default_factory=dict)  # state hash -> run id that found it first
    witnesses: dict[str, str] = field(default_factory=dict)  # witness -> run id that hit it first
    hits: Counter[str] = field(default_factory=Counter)
    runs: int = 0

    def merge(self, run_id: str, states: list[str], witnesses: dict[str, int]) -> list[str]:
        """Add one run's coverage; returns the states it was first to reach."""
        self.runs += 1
        new = [h for h in states if h not in self.states]
        for h in new:
            self.states[h] = run_id
        for w, n in witnesses.items():
            if n > 0:
                self.witnesses.setdefault(w, run_id)
                self.hits[w] += n
        return new
