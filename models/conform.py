"""Conformance (trace validation): every step of an implementation run is a model transition or a stutter.

Everything that decides whether a step conforms lives here. A trace's header determines its run, so the
validator re-runs it in the deterministic simulator and, after every step, maps the implementation's state to
the model's with the abstraction function (``impl/sim/abstraction.py``). It names the model actions the step
took from what the core observed during the step, runs each on the model's code (``models/controller_mode.py``)
from the abstract state before the step, and compares the result with the abstract state after it.

Rules:

* **Checked variables** (the projection): the controller's ``ctlMaster ctlME ctlSSS ctlSE registered`` and each
  broker's ``role bME bSE local epochs``; every transfer batch's epoch header; every handshake's truncation point;
  every SyncStateSet expansion's guard. Logs, acks, confirmOffset and puts are the catalogue's business (it checks
  them on the implementation after every step); here they only feed the guards.
* **Controller events** (``ctl.apply``): ``ElectMaster`` must be a result of ``ControllerElect``, ``BrokerElect``
  or ``AdminElect`` on the controller state before it, with the liveness and the heartbeat ranks the controller
  had when it validated the request (a DLedger entry applies after validation); ``AlterSyncStateSet`` must pass
  ``alter_outcome`` (checks 2-7) there.
* **Messages carry states**: a broker adopts the controller state a reply or notification carried, which may be
  older than the controller's current one. ``Sync`` is run with that state, which must be one the controller had
  (the model collapses the message: ``Sync`` reads the current state). A handshake truncates against the
  master's epoch entries as its handshake frame carried them; a slave's new epoch entry is a header its master sent.
* **Environment**: crash / restart of a broker are the model's ``Crash`` / ``Restart``; partitions, pauses and the
  controller's crash change no checked variable.
* **Extensions**: implementation steps the model leaves out by design, accepted and counted: ``Register``
  (``ApplyBrokerId``: the model starts registered), ``Clean`` (``cleanBrokerData``), ``NotElectedAgain`` (a not-elected
  event while no master exists: ``triggerElectMaster`` retries, ``mqadmin electMaster`` without an id; the model
  raises mE once), ``ElectRetry`` (a retry that elects while no master exists: the policy's choice, as in
  ``BrokerElect``), ``ElectOnInactive``
  (a not-elected event when no broker is alive: ``onBrokerInactive`` triggers an election without the scan's
  "some broker alive" test, which the model's ``ControllerElect`` mirrors), ``DropTornTail``
  (``truncateInvalidMsg`` and the epoch entries past the log end it drops: offsets in the model count whole
  messages), ``UpdateBrokerAddress``, ``HandshakeWithNonMaster`` (a slave's HA client connects to the HA address it
  holds, which may be a former master's or one that has no role yet, and every broker's HA server answers; the
  model's ``Handshake`` requires the slave's master, and a master: the truncation point is still checked),
  ``RoleChangeWithoutId`` (QUIRK-ROLE-NO-ID: a role notification reaches a restarted broker before it has loaded its
  id; ``changeToSlave`` sets masterEpoch, then throws).

A step whose checked variables change in a way no listed action explains, or whose action's guard fails, is a
*divergence*: the report gives the step, its event, the model actions enabled before it, and the guard that failed.

The model constants come from the trace: brokers, ``allAckInSyncStateSet``, ``enableElectUncleanMaster`` and the
fix switches the model has. Bug switches are not mapped: the model is the reference they deviate from.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.invariants import BY_ID, Checker, Coverage, Settle
from rmqha.impl.observations import Observation
from rmqha.impl.sim.abstraction import brokers_state, controller_part, controller_view, id_index, mask
from rmqha.impl.sim.actions import GUARD_KINDS
from rmqha.impl.sim.config import ConfigError, config_from_dict
from rmqha.impl.sim.world import Simulation, Violation

from . import controller_mode as M
from .controller_mode import NONE, Label, ModelConfig, State

FIX_CONSTANTS = {
    B.FIX_UNION_KEEPS_ALL_PROPOSALS: "FixUnionKeepsAllProposals",
    B.FIX_CONFIRM_WAITS_FIRST_ACK: "FixConfirmWaitsFirstAck",
    B.FIX_CONFIRM_SHORTCUT_USES_UNION: "FixConfirmShortcutUsesUnion",
    B.FIX_KEEP_OWN_EPOCH_ON_RESTART: "FixKeepOwnEpochOnRestart",
    B.FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH: "FixEpochEqReplacesEmpty",
}
BIG = 1 << 30
CTL_VARS = ("ctlMaster", "ctlME", "ctlSSS", "ctlSE", "registered")
BROKER_VARS = ("role", "bME", "bSE", "local", "epochs")
RELEVANT = frozenset({"ctl.apply", "ctl.replay", "brk.role", "brk.sss", "store.truncate-invalid", "ha.truncate",
                      "ha.handshake-done", "ha.expand", "ha.transfer"})


@dataclass
class Divergence:
    step: int
    time: int
    event: dict[str, Any]
    action: str
    guard: str
    enabled: list[str]
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "t": self.time, "event": self.event, "action": self.action, "guard": self.guard,
                "enabled": self.enabled, "detail": self.detail}


@dataclass
class Report:
    steps: int = 0
    divergence: Divergence | None = None
    actions: Counter[str] = field(default_factory=Counter[str])
    extensions: Counter[str] = field(default_factory=Counter[str])
    violation: str | None = None
    seconds: float = 0.0

    @property
    def conforms(self) -> bool:
        return self.divergence is None

    def to_dict(self) -> dict[str, Any]:
        return {"conforms": self.conforms, "steps": self.steps, "actions": dict(sorted(self.actions.items())),
                "extensions": dict(sorted(self.extensions.items())), "violation": self.violation,
                "divergence": None if self.divergence is None else self.divergence.to_dict(),
                "seconds": round(self.seconds, 3)}


class _Diverged(Exception):
    pass


class EventTap:
    """A recorder that keeps nothing: it only makes the simulator describe each step's event."""

    def step(self, i: int, t: int, event: Mapping[str, Any], obs: Sequence[Mapping[str, Any]]) -> None:
        pass

    def finish(self, sim: Simulation) -> None:
        pass


def model_config(header: dict[str, Any]) -> ModelConfig:
    """The model's constants for a trace: its cluster and settings, the fixes the model knows, no bounds."""
    cfg = header["config"]
    fixes: dict[str, Any] = {FIX_CONSTANTS[b]: True for b in header.get("bugs", []) if b in FIX_CONSTANTS}
    return ModelConfig(Brokers=int(cfg["cluster"]["brokers"]), MaxMsgs=BIG, MaxCrashes=BIG, MaxPartitions=BIG,
                       MaxAdminElect=BIG, MaxLagShrinks=BIG,
                       Unclean=bool(cfg["controller"]["enableElectUncleanMaster"]),
                       AllAck=bool(cfg["store"]["allAckInSyncStateSet"]), **fixes)


def _log_of(n: int) -> tuple[tuple[int, int], ...]:
    """A log of ``n`` entries for the model, where only its length is read: a range stands in for the entries."""
    return range(n)  # type: ignore[return-value]  # a Sequence of the right length is all the model reads here


def _label(label: Label) -> str:
    return str(label[0]) + ("(" + ", ".join(str(x) for x in label[1:]) + ")" if len(label) > 1 else "")


class Validator:
    """Checks each simulator step against the model (install with ``checker_factory``)."""

    def __init__(self, sim: Simulation, cfg: ModelConfig, inner: Checker | None = None, stop: bool = True) -> None:
        self.sim = sim
        self.cfg = cfg
        self.inner = inner
        self.stop = stop  # end the run at a divergence (rmqha conform); campaigns report it themselves (campaign.py)
        self.report = Report()
        self.n = len(sim.brokers)
        self.prev: dict[str, Any] | None = None
        self.ctl_snap: dict[str, Any] = {}
        self.history: set[tuple[int, int, int, int]] = {(NONE, 0, 0, 0)}
        self.basis: dict[int, tuple[dict[int, bool], dict[int, tuple[int, int]]]] = {}
        self.headers: set[tuple[int, int]] = set()
        self._entries = 0
        self._index: dict[int, int] = {}

    # ------------------------------------------------------------------------------- plumbing

    @property
    def coverage(self) -> Coverage:
        return self.inner.coverage if self.inner is not None else Coverage()

    def check_at_run_end(self) -> None:
        if self.inner is not None and self.report.divergence is None:
            self.inner.check_at_run_end()

    def after_step(self, obs: list[Observation]) -> None:
        if self.report.divergence is None:
            try:
                self._validate(obs)
            except _Diverged:
                pass
        if self.inner is not None:
            self.inner.after_step(obs)
        if self.stop and self.report.divergence is not None and self.sim.violation is None:
            self.sim.violation = _STOP

    def check_progress(self, ids: list[str], at: Settle) -> None:
        if self.inner is not None:
            self.inner.check_progress(ids, at)

    def _abstract(self, obs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The abstraction after this step, recomputing only what the step could have changed."""
        sim, pre = self.sim, self.prev
        full = pre is None or sim.acted
        ctl_moved = full or any(o["k"] in ("ctl.apply", "ctl.replay") for o in obs)
        if not ctl_moved and not any(b in sim.touched for b in sim.brokers):
            return pre  # type: ignore[return-value]  # not full: pre is not None
        if ctl_moved:
            snap = controller_view(sim)
            self.ctl_snap = snap if snap is not None else self.ctl_snap
            self._index = id_index(sim, self.ctl_snap)
            ctl = controller_part(self.ctl_snap, self._index)
        else:
            ctl = {k: pre[k] for k in CTL_VARS}  # type: ignore[index]  # as above
        return {**ctl, "ctlSnapshot": self.ctl_snap, **brokers_state(sim, self._index)}

    def _state(self, a: dict[str, Any]) -> State:
        return State(
            ctlMaster=a["ctlMaster"], ctlME=a["ctlME"], ctlSSS=a["ctlSSS"], ctlSE=a["ctlSE"],
            registered=a["registered"], reqs=(), alive=a["alive"], reach=a["reach"], role=a["role"], bME=a["bME"],
            bSE=a["bSE"], local=a["local"], remote=a["remote"], log=tuple(_log_of(x) for x in a["log"]),
            epochs=a["epochs"], flushed=a["flushed"], confirm=a["confirm"], conn=a["conn"], ack=a["ack"], sent=0,
            acked=0, pend=(), nCrash=0, nPart=0, nAdmin=0, nShrink=0)

    def _fail(self, action: str, guard: str, detail: str, s: State | None = None) -> None:
        enabled = sorted({_label(lbl) for lbl, _ in M.successors(s, self.cfg)}) if s is not None else []
        ev = dict(self.sim._step_event or {})
        self.report.divergence = Divergence(self.sim.step, self.sim.now, ev, action, guard, enabled[:40], detail)
        raise _Diverged

    def _took(self, action: str) -> None:
        self.report.actions[action] += 1

    def _ext(self, name: str) -> None:
        self.report.extensions[name] += 1

    # ---------------------------------------------------------------------------------- a step

    def _validate(self, obs: Sequence[Mapping[str, Any]]) -> None:
        self.report.steps = self.sim.step
        pre = self.prev
        post = self._abstract(obs)
        self.prev = post
        ctl = self.sim.controller_node()
        if ctl is not None and len(ctl.disk.entries) != self._entries:  # requests validated in this step
            if len(ctl.disk.entries) > self._entries:
                basis = self._basis()
                for i in range(self._entries, len(ctl.disk.entries)):
                    self.basis[i] = basis
            self._entries = len(ctl.disk.entries)
        if pre is None:  # boot
            self._record_history(post)
            return
        relevant = any(o["k"] in RELEVANT for o in obs)
        if post is pre and not relevant:
            return  # nothing checked moved: a stutter
        s = self._state(pre)
        ev = self.sim._step_event
        if ev is not None and ev["ev"] == "act":
            s = self._act(s, ev["act"], post)
        elif not relevant and all(pre[k] == post[k] for k in CTL_VARS + BROKER_VARS):
            self._record_history(post)
            return  # a stutter
        for ob in obs:
            k = ob["k"]
            if k == "ctl.apply":
                s = self._ctl_apply(s, ob)
            elif k == "ha.transfer":
                self._transfer(s, ob)
        s = self._brokers(s, obs)
        self._compare(s, post, pre)
        self._record_history(post)

    def _record_history(self, a: dict[str, Any]) -> None:
        self.history.add((a["ctlMaster"], a["ctlME"], a["ctlSSS"], a["ctlSE"]))
        for b in range(self.n):  # the entries a master holds are what its transfer headers may name
            if a["role"][b] == b:
                self.headers.update(a["epochs"][b])

    def _basis(self) -> tuple[dict[int, bool], dict[int, tuple[int, int]]]:
        """The controller's liveness and heartbeat ranks now, per broker index (what a validation reads)."""
        ctl = self.sim.controller_node()
        assert ctl is not None
        index = id_index(self.sim, controller_view(self.sim))
        cluster, name = self.sim.cfg.broker.cluster_name, self.sim.cfg.broker.broker_name
        alive, ranks = {}, {}
        for bid, i in index.items():
            alive[i] = ctl.heartbeats.is_broker_active(self.sim.now, cluster, name, bid)
            info = ctl.heartbeats.get_broker_live_info(cluster, name, bid)
            if info is not None:
                ranks[i] = (info.epoch, info.max_offset)
        return alive, ranks

    # ------------------------------------------------------------------------------ environment

    def _act(self, s: State, act: Mapping[str, Any], post: dict[str, Any]) -> State:
        do, node = act.get("do"), act.get("node")
        if node in self.sim.brokers:
            b = self.sim.brokers.index(node)
            if do == "crash" and s.alive[b]:
                self._took("Crash")
                return M._crashed(s, self.cfg, b, bool(act.get("powerLoss")))._replace(
                    log=M._set(s.log, b, _log_of(post["log"][b])), flushed=M._set(s.flushed, b, post["flushed"][b]))
            if do == "restart" and not s.alive[b]:
                self._took("Restart")
                return s._replace(alive=M._set(s.alive, b, True))
        return s

    # ------------------------------------------------------------------------------- controller

    def _ctl_apply(self, s: State, ob: Mapping[str, Any]) -> State:
        ev = ob["event"]
        typ = ev["type"]
        index = id_index(self.sim, ob.get("after") or ob.get("before") or self.ctl_snap)
        before = controller_part(ob.get("before") or {}, index)
        after = controller_part(ob.get("after") or {}, index)
        s = s._replace(**before)
        if typ == "ElectMaster":
            s2 = self._elect(s, ob, ev, after, index)
        elif typ == "AlterSyncStateSet":
            s2 = self._alter(s, ob, after, index)
        else:
            self._ext({"ApplyBrokerId": "Register", "CleanBrokerData": "Clean"}.get(typ, typ))
            s2 = s._replace(**after)
        self.history.add((s2.ctlMaster, s2.ctlME, s2.ctlSSS, s2.ctlSE))
        return s2

    def _validated_on(self, s: State, entry: int) -> State:
        """``s`` with the controller's liveness when it validated log entry ``entry`` (reach: the request came)."""
        alive, _ = self.basis.get(entry, ({}, {}))
        return s._replace(alive=tuple(alive.get(i, False) for i in range(self.n)), reach=(True,) * self.n)

    def _elect_state(self, s: State, entry: int) -> State:
        _, ranks = self.basis.get(entry, ({}, {}))
        return self._validated_on(s, entry)._replace(
            epochs=tuple(((ranks[i][0], 0),) if i in ranks else () for i in range(self.n)),
            log=tuple(_log_of(max(0, ranks[i][1])) if i in ranks else _log_of(0) for i in range(self.n)))

    def _elect(self, s: State, ob: Mapping[str, Any], ev: Mapping[str, Any], after: dict[str, Any],
               index: dict[Any, int]) -> State:
        ctx = ob.get("ctx") or {}
        e = self._elect_state(s, ob["index"])
        target = (after["ctlMaster"], after["ctlME"], after["ctlSSS"], after["ctlSE"])
        requester = ctx.get("requester")
        if not ev.get("newMasterElected") and s.ctlMaster == NONE and s.ctlME > 0:
            # a not-elected event while no master exists (triggerElectMaster's retries, mqadmin electMaster
            # without a broker id): mE rises, nothing else moves
            self._ext("NotElectedAgain")
            return s._replace(ctlME=after["ctlME"])
        if requester == "controller" and s.ctlMaster == NONE and s.ctlME > 0:
            # triggerElectMaster's retry when no master exists: the policy's choice, as BrokerElect's
            for new in M.elect_policy(e, self.cfg, NONE, NONE):
                if (new, s.ctlME + 1, 1 << new, s.ctlSE + 1) == target:
                    self._ext("ElectRetry")
                    return s._replace(ctlMaster=new, ctlME=s.ctlME + 1, ctlSSS=1 << new, ctlSE=s.ctlSE + 1)
        if not ev.get("newMasterElected") and not any(e.alive[i] for i in M.members(e.registered)):
            self._ext("ElectOnInactive")  # onBrokerInactive -> triggerElectMaster: no scan for a live broker first
            return s._replace(ctlMaster=NONE, ctlME=after["ctlME"])
        cands: list[tuple[Label, State]] = list(M.controller_elect(e, self.cfg))
        if requester in self.sim.brokers and e.ctlMaster == NONE and e.ctlME > 0:
            # BrokerElect: the requester reached the controller (its heartbeat may have lapsed: the guard's
            # "alive" is the request's arrival); the candidates are the model's, on the controller's liveness
            b = self.sim.brokers.index(requester)
            cands += [(("BrokerElect", b, new), M._elected(e, new)) for new in M.elect_policy(e, self.cfg, NONE, NONE)]
        elif ctx.get("designateElect") and ctx.get("brokerId") in index:
            cands += list(M.admin_elect(e, self.cfg, index[ctx["brokerId"]]))
        elif requester == "admin":
            cands += [(("AdminElect", b), t) for b in range(self.n) for _, t in M.admin_elect(e, self.cfg, b)]
        if e.ctlME == 0 and requester in [*self.sim.brokers, "admin"]:  # first election: the requester, unchecked
            new = index.get(ctx.get("brokerId"), NONE) if requester == "admin" else self.sim.brokers.index(requester)
            if new != NONE:
                cands.append((("FirstElect", new), M._elected(e, new)))
        for label, t in cands:
            if (t.ctlMaster, t.ctlME, t.ctlSSS, t.ctlSE) == target:
                self._took(label[0])
                return s._replace(ctlMaster=t.ctlMaster, ctlME=t.ctlME, ctlSSS=t.ctlSSS, ctlSE=t.ctlSE)
        old = s.ctlMaster
        policy = M.elect_policy(e, self.cfg, old, NONE)
        alive = [i for i in range(self.n) if e.alive[i]]
        self._fail("ElectMaster", "elect_policy",
                   f"{requester} elected {_name(self.sim, target[0])} (mE {target[1]}); on the controller's state "
                   f"(master {_name(self.sim, old)}, SSS {_names(self.sim, e.ctlSSS)}, alive "
                   f"{[self.sim.brokers[i] for i in alive]}) the model's candidates are "
                   f"{[_name(self.sim, x) for x in policy] or 'none'}", e)
        return s

    def _alter(self, s: State, ob: Mapping[str, Any], after: dict[str, Any], index: dict[Any, int]) -> State:
        ctx = ob.get("ctx") or {}
        requester = ctx.get("requester")
        frm = self.sim.brokers.index(requester) if requester in self.sim.brokers else \
            index.get(ctx.get("masterBrokerId"), NONE)
        new = mask(ctx.get("newSyncStateSet"), index)
        req: tuple[int, Any, Any, int] = (frm, ctx.get("masterEpoch"), ctx.get("syncStateSetEpoch"), new)
        e = self._validated_on(s, ob["index"])._replace(reqs=(req,))
        outcome = M.alter_outcome(e, self.cfg, req)
        if outcome:
            self._fail("ControllerAlter", f"alterSyncStateSet check {outcome}",
                       f"applied alter from {requester} (mE {req[1]}, sE {req[2]}, set {_names(self.sim, new)}) on "
                       f"controller master {_name(self.sim, s.ctlMaster)} mE {s.ctlME} sE {s.ctlSE} "
                       f"SSS {_names(self.sim, s.ctlSSS)}", e)
        t = next(t for _, t in M.controller_alter(e, self.cfg, req))
        if (t.ctlSSS, t.ctlSE) != (after["ctlSSS"], after["ctlSE"]):
            self._fail("ControllerAlter", "effect", f"model SSS {_names(self.sim, t.ctlSSS)} sE {t.ctlSE}, "
                       f"implementation {_names(self.sim, after['ctlSSS'])} sE {after['ctlSE']}", e)
        self._took("ControllerAlter")
        return s._replace(ctlSSS=t.ctlSSS, ctlSE=t.ctlSE)

    # ----------------------------------------------------------------------------------- brokers

    def _brokers(self, s: State, obs: Sequence[Mapping[str, Any]]) -> State:
        by: dict[int, list[Mapping[str, Any]]] = {}
        for ob in obs:
            n = ob.get("n")
            if n in self.sim.brokers and ob["k"] in ("brk.role", "brk.sss", "store.truncate-invalid", "ha.truncate",
                                                       "ha.handshake-done", "ha.expand"):
                by.setdefault(self.sim.brokers.index(n), []).append(ob)
        for b, mine in sorted(by.items()):
            s = self._broker_step(s, b, mine)
        return s

    def _broker_step(self, s: State, b: int, mine: list[Mapping[str, Any]]) -> State:
        kinds = [o["k"] for o in mine]
        role = next((o for o in mine if o["k"] == "brk.role"), None)
        sss = next((o for o in mine if o["k"] == "brk.sss"), None)
        for o in mine:
            if o["k"] == "store.truncate-invalid":
                self._ext("DropTornTail")
                s = s._replace(log=M._set(s.log, b, _log_of(o["at"])),
                               epochs=M._set(s.epochs, b, M.truncate_suffix_by_offset(s.epochs[b], o["at"])))
        if role is not None and role.get("aborted"):
            # QUIRK-ROLE-NO-ID (ReplicasManager.changeToSlave): the epoch moves, the role change stops half way
            self._ext("RoleChangeWithoutId")
            s = s._replace(bME=M._set(s.bME, b, role["masterEpoch"]), role=M._set(s.role, b, NONE))
        elif role is not None or sss is not None:
            s = self._sync(s, b, role, sss)
        if "ha.truncate" in kinds or "ha.handshake-done" in kinds:
            s = self._handshake(s, b, mine)
        for o in mine:
            if o["k"] == "ha.expand":
                self._expand(s, b, o)
        return s

    def _sync(self, s: State, b: int, role: Mapping[str, Any] | None, sss: Mapping[str, Any] | None) -> State:
        index: dict[Any, int] = id_index(self.sim, self.ctl_snap)
        sss_mask = mask(sss["syncStateSet"], index) if sss is not None else 0
        if role is not None:
            me = role["masterEpoch"]
            master = b if role["role"] == "MASTER" else index.get(role.get("master"), NONE)
            se = sss["syncStateSetEpoch"] if sss is not None else s.bSE[b]
            carried = (master, me, sss_mask if sss is not None else s.local[b], se)
            if not any(h[0] == master and h[1] == me for h in self.history):
                self._fail("Sync", "carried state", f"{self.sim.brokers[b]} became {role['role']} of mE {me} "
                           f"(master {_name(self.sim, master)}): the controller never had that master at that epoch", s)
        else:
            assert sss is not None
            carried = (s.bME[b] and s.role[b], s.bME[b], sss_mask, sss["syncStateSetEpoch"])
            if not any(h[2] == sss_mask and h[3] == sss["syncStateSetEpoch"] for h in self.history):
                self._fail("Sync", "carried state", f"{self.sim.brokers[b]} adopted SSS {_names(self.sim, sss_mask)} "
                           f"sE {sss['syncStateSetEpoch']}, which the controller never had", s)
        saved = (s.ctlMaster, s.ctlME, s.ctlSSS, s.ctlSE, s.alive, s.reach, s.registered)
        e = s._replace(ctlMaster=carried[0], ctlME=carried[1], ctlSSS=carried[2], ctlSE=carried[3],
                       alive=M._set(s.alive, b, True), reach=M._set(s.reach, b, True),
                       registered=s.registered | 1 << b)
        res = list(M.sync(e, self.cfg, b))
        if not res:
            why = (f"role {_name(self.sim, s.role[b])}, bME {s.bME[b]}, bSE {s.bSE[b]}; carried master "
                   f"{_name(self.sim, carried[0])} mE {carried[1]} sE {carried[3]}")
            self._fail("Sync", "ctlME > bME (role change) or ctlME = bME, master, ctlSE > bSE (SSS)", why, e)
        self._took("Sync")
        t = res[0][1]
        return t._replace(ctlMaster=saved[0], ctlME=saved[1], ctlSSS=saved[2], ctlSE=saved[3], alive=saved[4],
                          reach=saved[5], registered=saved[6])

    def _handshake(self, s: State, b: int, mine: list[Mapping[str, Any]]) -> State:
        tr = next((o for o in mine if o["k"] == "ha.truncate"), None)
        done = next((o for o in mine if o["k"] == "ha.handshake-done"), None)
        m = s.role[b]
        stream = self.sim.streams.get(done["conn"]) if done is not None else None
        peer = self.sim.brokers.index(stream.b) if stream is not None and stream.b in self.sim.brokers else m
        if m in (NONE, b):
            self._fail("Handshake", "role[b] = m, m != b (a slave handshakes)",
                       f"{self.sim.brokers[b]} (role {_name(self.sim, m)}) handshook with {_name(self.sim, peer)}", s)
        if peer != m or s.role[peer] != peer:
            self._ext("HandshakeWithNonMaster")  # the HA address it holds is not its master's, or not a master's
        ep, n = s.epochs[b], len(s.log[b])
        if tr is not None and ep:
            master = tuple(tuple(x) for x in tr["master"])
            p = M.consistent_point(ep, n, master, tr["masterMax"], True)
            if p != tr["point"]:
                self._fail("Handshake", "findConsistentPoint (the smaller end of the last shared epoch)",
                           f"{self.sim.brokers[b]} truncated to {tr['point']}; the model's consistent point of "
                           f"{list(ep)} (end {n}) against the master's {list(master)} (end {tr['masterMax']}) "
                           f"is {p}", s)
            if p < n:
                n = p
            ep = M.truncate_suffix_by_offset(ep, p)
        self._took("Handshake")
        return s._replace(log=M._set(s.log, b, _log_of(n)), epochs=M._set(s.epochs, b, ep), conn=M._set(s.conn, b, m))

    def _transfer(self, s: State, ob: Mapping[str, Any]) -> None:
        """A batch [offset, offset+size) lies in one epoch entry of the master; its header names that entry (or,
        RocketMQ builds it after switching, the next one, starting exactly at the batch's end)."""
        if ob.get("epoch") is None:
            return
        hdr = (ob["epoch"], ob["start"])
        self.headers.add(hdr)
        if not ob.get("size"):
            return
        entries = tuple(tuple(x) for x in ob["entries"])
        off, end = ob["offset"], ob["offset"] + ob["size"]
        cover = M.covering_entry(entries, off, ob["max"])
        last = M.covering_entry(entries, end - 1, ob["max"])
        nxt = next((x for x in entries if x[1] == end), None)
        if cover is None or cover != last or hdr not in (cover, nxt):
            self._fail("Transfer", "the batch lies in the epoch entry its header names (covering_entry)",
                       f"{ob['n']} sent [{off}, {end}) with header {list(hdr)}; its epoch entries {list(entries)} put "
                       f"the batch in {cover} .. {last}", s)
        self._took("Transfer")

    def _expand(self, s: State, b: int, ob: Mapping[str, Any]) -> None:
        """``maybeExpandInSyncStateSet``: the model's SlaveAck guard (ack >= confirmOffset, >= last epoch start)."""
        ep = s.epochs[b]
        start = ep[-1][1] if ep else 0
        if ob["ack"] < ob["confirm"] or ob["ack"] < start:
            self._fail("SlaveAck", "expand: ack >= confirmOffset and ack >= start of the master's last epoch",
                       f"{self.sim.brokers[b]} proposed slave {ob['slave']} with ack {ob['ack']}, confirmOffset "
                       f"{ob['confirm']}, last epoch start {start}", s)
        self._took("SlaveAck")

    # ------------------------------------------------------------------------------- comparison

    def _compare(self, s: State, post: dict[str, Any], pre: dict[str, Any]) -> None:
        for k in CTL_VARS:
            if getattr(s, k) != post[k]:
                if self.sim.controller_node() is None and pre[k] == post[k]:
                    continue
                self._fail("(none)", f"{k} changed without a controller event",
                           f"model {getattr(s, k)}, implementation {post[k]}", self._state(pre))
        for b in range(self.n):
            for k in BROKER_VARS:
                want, got = getattr(s, k)[b], post[k][b]
                if want == got:
                    continue
                if k == "epochs" and self._epoch_append(s, b, want, got, post):
                    continue
                if k == "local" and s.role[b] != b:
                    continue
                self._fail("(none)", f"{k}[{self.sim.brokers[b]}] changed with no model action to explain it",
                           f"model {want}, implementation {got}", self._state(pre))

    def _epoch_append(self, s: State, b: int, want: tuple[Any, ...], got: tuple[Any, ...],
                      post: dict[str, Any]) -> bool:
        """A slave's epoch cache changed outside a handshake: a transfer header's entry appended (the model's
        Transfer), or entries past the log end dropped (``DropTornTail`` on the READY loop). A header names an
        entry its master held (heartbeat frames carry headers too, unobserved)."""
        base = M.truncate_suffix_by_offset(want, post["log"][b])
        if got == base:
            self._ext("DropTornTail")
            return True
        replace = self.cfg.FixEpochEqReplacesEmpty  # F-EPOCH-EQ-SPLICE's fix: the new entry may replace the last
        if not got or tuple(got[-1]) not in self.headers:
            return False
        epoch, start = got[-1]
        return any(M.append_entry(prior, epoch, start, replace) == got for prior in (base, want))


_STOP = Violation("CONFORMANCE", -1, -1, "diverged from the model", {})  # ends the run at a divergence


def _name(sim: Simulation, i: int) -> str:
    return "none" if i == NONE else sim.brokers[i]


def _names(sim: Simulation, mask: int) -> list[str]:
    return [sim.brokers[i] for i in M.members(mask)]


FIDELITY_ACTIONS = ("stop", "lose-file", "slow-apply", "expand-queues")
GUARD_ACTIONS = ("ha-fault", "ha-stale", "rpc-replay", "crash-at")  # the faults at the guards (issue 21)
FIDELITY_KINDS = ("stop-broker", "lose-epoch-file", "lose-checkpoint", "restart-consumer", "crash-controller-leader",
                  "isolate-controller-leader", "slow-apply", "expand-queues", "crash-torn-write")


def outside_model(cfg: Any, header: dict[str, Any]) -> str | None:
    """Why a run is outside the model's scope (a fidelity part of docs/fidelity.md is on), or None. The model
    covers one controller, one implicit queue and logs from offset 0; HA frames in pieces are below its level."""
    parts = [what for on, what in [
        (cfg.cluster.controllers != 1, "a replicated controller group"),
        (cfg.controller.controller_type != "DLedger", "the JRaft controller flavour"),
        (cfg.workload.queues != 0, "topic queues"),
        (cfg.workload.topic_config, "the topic's config"),
        (cfg.sim.base_offset != 0, "logs that start past offset 0"),
        (cfg.sim.file_residue, "truncated bytes left in files"),
        (any(cfg.faults.weights.get(k, 0) > 0 for k in FIDELITY_KINDS), "fidelity fault kinds"),
        (any(a.get("do") in FIDELITY_ACTIONS for a in header.get("faults", {}).get("events", []) or []),
         "fidelity fault actions"),
        (any(B.BUGS[b].kind == "fidelity" for b in header.get("bugs", []) if b in B.BUGS), "a fidelity switch"),
        (cfg.sim.interleave, "interleaved broker steps"),
        (cfg.faults.guards or cfg.faults.adversarial or any(cfg.faults.weights.get(k, 0) > 0 for k in GUARD_KINDS)
         or any(a.get("do") in GUARD_ACTIONS or "hold" in a for a in header.get("faults", {}).get("events", []) or []),
         "faults at the guards (a crash inside a step, held and replayed messages, HA writes beyond TCP)"),
        (any(B.BUGS[b].kind == "upstream" for b in header.get("bugs", []) if b in B.BUGS),
         "an upstream switch (a later release's rule; the model follows 5.3.3)"),
    ] if on]
    return ", ".join(parts) or None


def validate(header: dict[str, Any]) -> Report:
    """Re-run a trace's header and validate every step against the model."""
    try:
        cfg = config_from_dict(header["config"])
    except ConfigError as exc:
        raise ValueError(f"trace config: {exc}") from None
    if cfg.cluster.mode != "controller":
        raise ValueError("conformance needs a controller-mode trace (this one is a 4.x legacy run)")
    if header.get("faults", {}).get("mode") == "real":
        raise ValueError("a real run's trace (rmqha cluster test) is a record: conformance re-runs a trace's seed in "
                         "the simulator, and a real run has none (docs/cluster.md)")
    beyond = outside_model(cfg, header)
    if beyond is not None:
        raise ValueError(f"conformance covers what the model has; this run uses {beyond} (docs/fidelity.md)")
    faults = header["faults"]
    schedule = None if faults.get("mode") == "generated" else list(faults.get("events", []))
    switches = B.check_names(list(header.get("bugs", [])))
    enabled = set(BY_ID) - set(header.get("disabledInvariants", []))
    mcfg = model_config(header)
    holder: dict[str, Validator] = {}

    def factory(w: Simulation) -> Validator:
        v = Validator(w, mcfg, Checker(w, enabled=enabled))
        holder["v"] = v
        return v

    t0 = time.perf_counter()
    sim = Simulation(cfg, int(header["seed"]), bugs=switches, schedule=schedule, max_steps=int(header["maxSteps"]),
                     max_time=header.get("maxTime"), recorder=EventTap(), checker_factory=factory)
    sim.run()
    rep = holder["v"].report
    rep.seconds = time.perf_counter() - t0
    if sim.violation is not None and sim.violation is not _STOP:
        rep.violation = sim.violation.invariant
    return rep
