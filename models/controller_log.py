"""Conformance of a controller's committed event log to the model's controller actions.

A real RocketMQ controller's log (``rmqha real``: every ``ApplyBrokerId``, ``ElectMaster``, ``AlterSyncStateSet``,
``CleanBrokerData``, ``UpdateBrokerAddress`` its DLedger store committed, in order) says *what* the controller
applied, not what it read when it decided: the brokers' liveness, their heartbeat ranks, the request's epochs.
So each event must be the result of one of the model's controller actions (``models/controller_mode.py``) from
the state the events before it built, **for some** value of what was not observed:

* ``ElectMaster`` is ``ControllerElect``, ``BrokerElect`` or ``AdminElect`` (a first election: the requester,
  unchecked), for some set of live brokers and ranks; or one of the extensions the simulator's conformance
  checker (``rmqha conform``) also accepts: ``NotElectedAgain`` (no master, nothing elected again: mE rises),
  ``ElectOnInactive`` (``onBrokerInactive`` elects without the scan's "some broker alive" test).
* ``AlterSyncStateSet`` passes ``alter_outcome`` (checks 2-7 of ``ReplicasInfoManager.alterSyncStateSet``) for a
  request from the master with the current epochs (the log holds only applied events, and a DLedger leader
  validates before it proposes) and some set of live brokers, and has the model's effect.
* ``ApplyBrokerId`` registers (``Register``: the model starts registered), ``CleanBrokerData`` and
  ``UpdateBrokerAddress`` are extensions the model leaves out (``Clean``, ``UpdateBrokerAddress``).

The controller state after each event is the kit's replay of it (``ReplicasInfoManager.apply_event``, which
mirrors RocketMQ's own); the first event no model action explains is the divergence, with the state before it
and what the model would have allowed. Broker ids map to model indexes in the order they were applied.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..impl.controller.replicas_info import ReplicasInfoManager, event_from_dict
from . import controller_mode as M
from .controller_mode import NONE, ModelConfig, State


@dataclass
class LogDivergence:
    index: int  # the log entry's index (or the event's position)
    event: dict[str, Any]
    before: dict[str, Any]
    why: str


@dataclass
class LogReport:
    events: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    extensions: Counter[str] = field(default_factory=Counter)
    divergence: LogDivergence | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def to_json(self) -> dict[str, Any]:
        d = self.divergence
        return {"ok": self.ok, "events": self.events, "actions": dict(self.actions),
                "extensions": dict(self.extensions),
                "divergence": None if d is None else {"index": d.index, "event": d.event, "before": d.before,
                                                      "why": d.why}}


def _mask(ids: Iterable[int], index: dict[int, int]) -> int:
    m = 0
    for i in ids:
        m |= 1 << index[i]
    return m


def _subsets(mask: int) -> list[int]:
    bits = list(M.members(mask))
    return [sum(1 << b for b in combo) for r in range(len(bits) + 1) for combo in itertools.combinations(bits, r)]


class LogValidator:
    """Feed it the events in log order (``step``); ``report`` says how far they conform."""

    def __init__(self, brokers: int, unclean: bool, broker_name: str | None = None) -> None:
        self.cfg = ModelConfig(Brokers=brokers, Unclean=unclean, MaxAdminElect=1 << 30)
        self.rim = ReplicasInfoManager(enable_elect_unclean_master=unclean)
        self.name = broker_name
        self.index: dict[int, int] = {}  # broker id -> model index
        self.s = M.initial(self.cfg)._replace(registered=0)
        self.report = LogReport()

    def _controller(self, snap: dict[str, Any] | None) -> tuple[int, int, int, int, int]:
        if not snap:
            return NONE, 0, 0, 0, 0
        reg = [int(i) for i in (snap.get("replicas") or {})]
        for i in sorted(reg):
            if i not in self.index:
                self.index[i] = len(self.index)
        master = snap.get("master")
        sss = [i for i in (snap.get("syncStateSet") or []) if i in self.index]
        return (NONE if master is None or master not in self.index else self.index[master],
                int(snap.get("masterEpoch") or 0), _mask(sss, self.index), int(snap.get("syncStateSetEpoch") or 0),
                _mask(reg, self.index))

    def _with(self, alive: int) -> State:
        n = self.cfg.Brokers
        return self.s._replace(alive=tuple(bool(alive >> b & 1) for b in range(n)), reach=(True,) * n,
                               epochs=((),) * n, log=((),) * n)  # equal ranks: every candidate can be the best

    def step(self, index: int, event: dict[str, Any]) -> bool:
        """Apply one event; False (and the report's divergence) once one does not conform."""
        if self.report.divergence is not None:
            return False
        if self.name is not None and event.get("brokerName") != self.name:
            return True
        self.report.events += 1
        before_snap = self.rim.snapshot().get(event["brokerName"])
        self.rim.apply_event(event_from_dict(event))
        after_snap = self.rim.snapshot().get(event["brokerName"])
        master, me, sss, se, reg = self._controller(after_snap)
        if len(self.index) > self.cfg.Brokers:
            return self._diverge(index, event, before_snap, f"more broker ids than the {self.cfg.Brokers} brokers")
        target = (master, me, sss, se)
        kind = event["type"]
        if kind == "ApplyBrokerId":
            self.report.extensions["Register"] += 1
        elif kind in ("CleanBrokerData", "UpdateBrokerAddress"):
            self.report.extensions["Clean" if kind == "CleanBrokerData" else kind] += 1
        elif kind == "ElectMaster":
            label = self._elect(event, target)
            if label is None:
                return self._diverge(index, event, before_snap, self._why_elect(event, target))
            (self.report.extensions if label in ("NotElectedAgain", "ElectOnInactive")
             else self.report.actions)[label] += 1
        elif kind == "AlterSyncStateSet":
            why = self._alter(target)
            if why:
                return self._diverge(index, event, before_snap, why)
            self.report.actions["ControllerAlter"] += 1
        self.s = self.s._replace(ctlMaster=master, ctlME=me, ctlSSS=sss, ctlSE=se, registered=reg)
        return True

    def _elect(self, event: dict[str, Any], target: tuple[int, int, int, int]) -> str | None:
        s = self.s
        if not event.get("newMasterElected") and s.ctlMaster == NONE and s.ctlME > 0:
            return "NotElectedAgain" if target == (NONE, s.ctlME + 1, s.ctlSSS, s.ctlSE) else None
        for alive in _subsets(s.registered):
            e = self._with(alive)
            cands = list(M.controller_elect(e, self.cfg))
            for b in M.members(s.registered):
                cands += list(M.broker_elect(e, self.cfg, b)) + list(M.admin_elect(e, self.cfg, b))
            for label, t in cands:
                if (t.ctlMaster, t.ctlME, t.ctlSSS, t.ctlSE) == target:
                    return "FirstElect" if s.ctlME == 0 else str(label[0])
            if not event.get("newMasterElected") and alive == 0 and target == (NONE, s.ctlME + 1, s.ctlSSS, s.ctlSE):
                return "ElectOnInactive"
        return None

    def _why_elect(self, event: dict[str, Any], target: tuple[int, int, int, int]) -> str:
        s = self.s
        possible = sorted({M.elect_policy(self._with(alive), self.cfg, NONE, NONE)[0]
                           for alive in _subsets(s.registered) if M.elect_policy(self._with(alive), self.cfg, NONE,
                                                                                  NONE)} - {NONE})
        names = {v: k for k, v in self.index.items()}
        return (f"ElectMaster to broker {names.get(target[0], target[0])} (mE {target[1]}, sE {target[3]}) from "
                f"master {names.get(s.ctlMaster, s.ctlMaster)} mE {s.ctlME} sE {s.ctlSE} SSS "
                f"{[names[b] for b in M.members(s.ctlSSS)]}: for no set of live brokers is it a model election "
                f"(the electable ones, for some liveness: {[names[b] for b in possible]})")

    def _alter(self, target: tuple[int, int, int, int]) -> str:
        s = self.s
        req = (s.ctlMaster, s.ctlME, s.ctlSE, target[2])
        outcomes = []
        for alive in (s.registered, *_subsets(s.registered)):
            e = self._with(alive)._replace(reqs=(req,))
            out = M.alter_outcome(e, self.cfg, req)
            if out == "":
                t = next(t for _, t in M.controller_alter(e, self.cfg, req))
                if (t.ctlSSS, t.ctlSE) == (target[2], target[3]) and target[:2] == (s.ctlMaster, s.ctlME):
                    return ""
                return f"AlterSyncStateSet's effect differs: model sE {t.ctlSE}, log sE {target[3]}"
            outcomes.append(out)
        return f"AlterSyncStateSet fails alterSyncStateSet check {outcomes[0]} on the state before it"

    def _diverge(self, index: int, event: dict[str, Any], before: Any, why: str) -> bool:
        self.report.divergence = LogDivergence(index, event, before or {}, why)
        return False


def validate_log(events: Iterable[tuple[int, dict[str, Any]]], brokers: int, unclean: bool,
                 broker_name: str | None = None) -> LogReport:
    """``events``: (log index, the kit's event dict) in log order."""
    v = LogValidator(brokers, unclean, broker_name)
    for index, ev in events:
        if not v.step(index, ev):
            break
    return v.report
