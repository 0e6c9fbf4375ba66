"""The registry: every invariant declared once, with its id, statement, guard and check in one function.

    @invariant("CTL-MASTER-IN-SSS", layer="controller", reads=("controller",),
               source="ReplicasInfoManager.alterSyncStateSet (check 7); handleElectMaster sets SSS := {master}",
               exceptions="CleanBrokerDataEvent with explicit ids can remove the master from the SSS")
    def master_in_sss(ctx: Context) -> Violated | None:
        '''The controller's master is null or a member of its SyncStateSet.'''
        ...
        return violated("master 2 not in SSS [1, 3]", controller=...)   # or None: it holds

Rules:

* The docstring's first paragraph is the statement (``rmqha invariants``, ``docs/invariants.md``); the keyword
  arguments are the rest of the catalogue row: the RocketMQ source place that keeps it (``source``), its ``layer``
  and the exceptions RocketMQ documents (``exceptions``).
* ``on`` names the observation kinds the check is handed (an *event* check: ``check(ctx, obs)``, once per
  observation of those kinds); ``reads`` names the parts of the cluster it reads (a *state* check:
  ``check(ctx)``, re-run after a step only when one of them changed: ``controller``, ``brokers``, ``nameserver``,
  and ``history``, the acknowledged and consumed messages not yet checked). An invariant can be both: its function
  then takes ``obs=None`` for the state check. A state check of one broker at a time is ``per_broker``:
  ``check(ctx, name, log)`` for each broker (``log``: its bytes, epoch entries and process, ``Context.logs``).
* ``at_run_end``: a check of the finished run (``check(ctx)``, once, when a run ends without a violation:
  ``Checker.check_at_run_end``), for what must have happened within a settle time rather than at every step.
* ``checked_by``: the check lives in a layer above the core (the module named); the decorated function only states
  the invariant and returns None. ``MODEL-CONFORM``: ``models/conform.py`` in campaigns.
* A check returns ``None`` when the invariant holds, or ``violated(message, **state)`` at the first violation it
  sees; it never calls into the cluster to change it. Its guard (when it applies at all) is its first lines.
* The registry's order is the catalogue's: by area (``AREAS``), then in the order of declaration in its module.
  Event checks of the same observation run in that order; state checks in ``checker.STATE_CHAINS``'s.
* A *progress* invariant (``kind="progress"``, the LIVE-* ids of ``progress.py``) is neither: it says that something
  happens, so no single step can break it. It is checked once per run, at the end of its settle window (``settle``
  gives its bound: ``settle.py``), as ``check(ctx, at)`` with the run's settle point ``at`` (``settle.Settle``);
  the simulator's settle tail (``[sim] progress``) and the harnesses that settle a real run call it.

``impl/invariants/checker.py`` walks the registry after every step; the area modules (``controller.py``,
``broker.py``, ``ha.py``, ``store.py``, ``sync.py``, ``queues.py``, ``client.py``, ``progress.py``) declare the
invariants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ..observations import OBS_KINDS, ObsKind
from .settle import Term, Timeouts

Layer = Literal["controller", "broker", "ha", "sync", "client", "store", "model"]
Component = Literal["controller", "brokers", "nameserver", "history"]
COMPONENTS: tuple[Component, ...] = ("controller", "brokers", "nameserver", "history")
Kind = Literal["safety", "progress"]
Bound = Callable[[Timeouts], list[Term]]


@dataclass(frozen=True, slots=True)
class Violated:
    """A check's verdict that its invariant does not hold: the message and the state worth showing."""

    message: str
    state: dict[str, Any] = field(default_factory=dict)


def violated(message: str, **state: Any) -> Violated:
    return Violated(message, state)


Check = Callable[..., Violated | None]
F = TypeVar("F", bound=Check)


@dataclass(frozen=True)
class Invariant:
    """One catalogue row and its check."""

    id: str
    statement: str
    source: str
    layer: Layer
    exceptions: str
    on: tuple[ObsKind, ...]  # observation kinds the check is handed
    reads: tuple[Component, ...]  # what a state check reads: it re-runs when one of them changed
    per_broker: bool  # a state check of one broker: check(ctx, name, log)
    check: Check
    where: str  # module.function of the check, for the docs
    kind: Kind = "safety"  # "progress": checked once, at the heal point plus its settle bound (check(ctx, at))
    settle: Bound | None = None  # a progress invariant's settle bound, as the stages it adds up
    at_run_end: bool = False  # a check of the finished run: check(ctx), once (Checker.check_at_run_end)
    checked_by: str = ""  # the module above the core that checks it (the function only states it)

    @property
    def tla(self) -> str:
        """The name of its TLA+ operator and of the model's predicate."""
        return self.id.replace("-", "_")


AREAS = ("controller", "broker", "ha", "store", "sync", "queues", "client", "progress", "conform")
"""The area modules of ``impl/invariants``, in catalogue order."""

CATALOGUE: list[Invariant] = []
"""Every invariant, by area, then in the order of declaration."""

BY_ID: dict[str, Invariant] = {}


def _statement(fn: Check) -> str:
    doc = (fn.__doc__ or "").strip()
    first = doc.split("\n\n", 1)[0]
    return " ".join(first.split())


def invariant(inv_id: str, *, layer: Layer, source: str, exceptions: str = "", on: tuple[ObsKind, ...] = (),
              reads: tuple[Component, ...] = (), per_broker: bool = False, at_run_end: bool = False,
              checked_by: str = "", settle: Bound | None = None) -> Callable[[F], F]:
    """Declare the invariant ``inv_id`` with the decorated function as its check (see the module's rules); with
    ``settle`` (its bound), a progress invariant."""

    def register(fn: F) -> F:
        if inv_id in BY_ID:
            raise ValueError(f"invariant {inv_id} declared twice")
        if settle is not None and (on or reads or per_broker or at_run_end or checked_by):
            raise ValueError(f"invariant {inv_id}: a progress invariant is checked at its settle bound, not per step")
        if settle is None and sum(map(bool, (on or reads, at_run_end, checked_by))) != 1:
            raise ValueError(f"invariant {inv_id}: give the observation kinds it checks (on=) or what it reads, or "
                             "at_run_end, or the layer that checks it (checked_by)")
        unknown = [k for k in on if k not in OBS_KINDS] + [c for c in reads if c not in COMPONENTS]
        if unknown:
            raise ValueError(f"invariant {inv_id}: unknown {unknown}")
        statement = _statement(fn)
        if not statement:
            raise ValueError(f"invariant {inv_id}: the check's docstring states the invariant")
        inv = Invariant(inv_id, statement, source, layer, exceptions, on, reads, per_broker, fn,
                        f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}",
                        "progress" if settle is not None else "safety", settle, at_run_end, checked_by)
        rank = AREAS.index(inv.where.split(".")[0])
        at = next((i for i, other in enumerate(CATALOGUE) if AREAS.index(other.where.split(".")[0]) > rank),
                  len(CATALOGUE))
        CATALOGUE.insert(at, inv)
        BY_ID[inv_id] = inv
        return fn

    return register


def progress_invariants() -> list[Invariant]:
    """The progress invariants, in catalogue order."""
    return [i for i in CATALOGUE if i.kind == "progress"]


def catalogue_rows() -> list[dict[str, str]]:
    """The catalogue as plain rows (``rmqha invariants --json`` and the generated docs)."""
    return [{"id": i.id, "statement": i.statement, "source": i.source, "layer": i.layer, "tla": i.tla,
             "exceptions": i.exceptions, "kind": i.kind} for i in CATALOGUE]
