"""Replays of a counterexample (or exception witness) on the executable model and on the implementation.

Everything that turns a ``Witness`` into a run lives here: the model ``State`` of the pre-state, the
``ControllerNode`` (its ``ReplicasInfoManager``, its election policy and heartbeat table) built into the pre-state,
the call of the operation with the prover's switches, and the predicate of the same catalogue id on the result.

Rules:

* Model: brokers ``0..n-1`` stand for ids ``1..n``; the controller fields come from the pre-state, liveness is
  ``alive`` with every broker reachable, the alterSyncStateSet request is the one message in flight, everything
  else is ``initial``. The model action must reach the witness's post-state, and the model predicate of the id
  must fail on that transition. CTL_CLEAN_ELECTION is evaluated with ``Unclean`` off: its ``Unclean`` guard is
  the catalogue's scope, which the prover drops (``properties.py``).
* Implementation: a ``ControllerNode`` with the switches (``enableElectUncleanMaster`` for unclean-election),
  at time ``NOW``; an alive broker heartbeated at ``NOW``, a dead one with an entry heartbeated long before, the
  ranking values from the witness. The pre-state is built by applying events (``ApplyBrokerIdEvent``,
  ``ElectMasterEvent``, ``AlterSyncStateSetEvent``, ``CleanBrokerDataEvent``); the few pre-states events cannot
  reach are completed by setting the tables' fields (the replay says so). The operation runs through the
  manager's public method and its events apply; the response code and the state must equal the encoding's.
* Predicates on the implementation are the catalogue statements, on the before/after view of the set and the
  request, with the history kept as ``Checker._record_apply`` keeps it (per incarnation of the set).

Theory of operation: ``replay_result`` runs both replays of a witness and returns ``Replay`` values
("reproduced": the id fails there as well; "holds": it does not; "diverged": the run did not take the
witness's step; "n/a": that layer cannot express the step or the id).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from rmqha.impl.codes import ResponseCode as RC
from rmqha.impl.config import ControllerConfig
from rmqha.impl.controller.elect_policy import ElectionFailed
from rmqha.impl.controller.node import ControllerDisk, ControllerNode
from rmqha.impl.controller.replicas_info import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    CleanBrokerDataEvent,
    ElectMasterEvent,
    EventMessage,
)
from rmqha.impl.rng import DetRng
from rmqha.models import controller_mode as M
from rmqha.models import properties as MP

from .concrete import Controller, Witness, code_name
from .state import ids
from .transitions import TRANSITIONS, Switches

NAME, CLUSTER = "broker-a", "DefaultCluster"
NOW, HEARTBEAT_TIMEOUT = 100_000, 10_000
MAX_EVENTS = 10_000  # beyond this many events the pre-state is set directly


@dataclass(frozen=True)
class Replay:
    layer: str  # "model" | "impl"
    status: str  # "reproduced" | "holds" | "diverged" | "n/a"
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "status": self.status, "text": self.text}


def replay_result(w: Witness, inv_id: str, n: int, sw: Switches) -> dict[str, Replay]:
    return {"model": replay_on_model(w, inv_id, n, sw), "impl": replay_on_impl(w, inv_id, n, sw)}


def _mask(xs: tuple[int, ...]) -> int:
    return sum(1 << (i - 1) for i in xs)


# ------------------------------------------------------------------------------------------- model

MODEL_PREDICATES: dict[str, tuple[str, Callable[..., bool]]] = {
    "CTL-MASTER-IN-SSS": ("state", MP.CTL_MASTER_IN_SSS),
    "CTL-SSS-REGISTERED": ("state", MP.CTL_SSS_REGISTERED),
    "CTL-EPOCH-MONO": ("action", MP.CTL_EPOCH_MONO),
    "CTL-ALTER-FENCED": ("action", MP.CTL_ALTER_FENCED),
    "CTL-CLEAN-ELECTION": ("action", MP.CTL_CLEAN_ELECTION),
}


def model_config(n: int, sw: Switches) -> M.ModelConfig:
    return M.ModelConfig(Brokers=n, Unclean=sw.unclean, GuardAlterSSSEpoch=not sw.skip_sss_epoch_check,
                         GuardElectAlive=not sw.elect_ignores_liveness, MaxAdminElect=1)


def _model_id(i: int | None) -> int:
    return M.NONE if i is None else i - 1


def _model_request(w: Witness) -> tuple[int, int, int, int]:
    p = w.params
    return (p["masterBrokerId"] - 1, p["masterEpoch"], p["syncStateSetEpoch"], _mask(p["newSyncStateSet"]))


def model_pre_state(w: Witness, n: int, cfg: M.ModelConfig) -> M.State:
    pre = w.pre
    reqs = (_model_request(w),) if w.transition == "alter" else ()
    return M.initial(cfg)._replace(ctlMaster=_model_id(pre.master), ctlME=pre.me, ctlSSS=_mask(pre.sss),
                                   ctlSE=pre.se, registered=_mask(pre.registered),
                                   alive=tuple(i in w.env.alive for i in ids(n)), reqs=reqs)


def _model_successors(w: Witness, s: M.State, cfg: M.ModelConfig) -> Iterator[tuple[M.Label, M.State]]:
    if w.transition == "ctl-elect":
        return M.controller_elect(s, cfg)
    if w.transition == "brk-elect":
        return M.broker_elect(s, cfg, w.params["brokerId"] - 1)
    if w.transition == "adm-elect":
        return M.admin_elect(s, cfg, w.params["brokerId"] - 1)
    return M.controller_alter(s, cfg, _model_request(w))


def replay_on_model(w: Witness, inv_id: str, n: int, sw: Switches) -> Replay:
    action = TRANSITIONS[w.transition].model_action
    if action is None:
        return Replay("model", "n/a", "the model has no such action (ids are registered before its first state; "
                                      "no cleanBrokerData)")
    if not w.pre.exists:
        return Replay("model", "n/a", "the model's broker set always exists")
    if inv_id not in MODEL_PREDICATES:
        why = ("its CTL_ONE_MASTER_PER_EPOCH is about the brokers' roles, not the controller's record"
               if inv_id == "CTL-ONE-MASTER-PER-EPOCH" else "no model predicate for a strengthening conjunct")
        return Replay("model", "n/a", why)
    if w.hinted != "model":
        return Replay("model", "n/a", f"no such step satisfies the guard of the model's {action} (the solver found "
                                      "none from a reachable, small pre-state)")
    cfg = model_config(n, sw)
    s = model_pre_state(w, n, cfg)
    want = (_model_id(w.post.master), w.post.me, _mask(w.post.sss), w.post.se)
    succ = [t for _, t in _model_successors(w, s, cfg)]
    match = [t for t in succ if (t.ctlMaster, t.ctlME, t.ctlSSS, t.ctlSE) == want]
    if not match:
        if not succ:
            return Replay("model", "diverged", f"{action} is not enabled on this pre-state")
        return Replay("model", "diverged", f"{action} does not reach the witness's post-state")
    t = match[0]
    kind, pred = MODEL_PREDICATES[inv_id]
    pcfg = replace(cfg, Unclean=False)
    ok = pred(t, pcfg) if kind == "state" else pred(s, t, pcfg)
    name = inv_id.replace("-", "_")
    label = ",".join(f"{k}={getattr(cfg, k)}" for k in ("Unclean", "GuardAlterSSSEpoch", "GuardElectAlive"))
    if ok:
        return Replay("model", "holds", f"{action} [{label}] takes the step; {name} holds")
    return Replay("model", "reproduced", f"{action} [{label}] takes the step; {name} fails")


# -------------------------------------------------------------------------------------------- impl


def _addr(i: int) -> str:
    return f"10.0.0.{i}:10911"


def _check_code(i: int, generation: int = 1) -> str:
    return f"{_addr(i)};{generation}"


class ImplRun:
    """A ``ControllerNode`` in a witness's pre-state, with the history ``Checker._record_apply`` would keep."""

    def __init__(self, w: Witness, n: int, sw: Switches) -> None:
        self.node = ControllerNode("prove", ControllerConfig(enable_elect_unclean_master=sw.unclean), DetRng(0),
                                   ControllerDisk(), sw.impl_bugs())
        self.node.now = NOW
        self.n = n
        self.rim = self.node.rim
        for i in ids(n):
            if i in w.env.live_info or i in w.env.alive:
                ep, off, prio = w.env.rank[i]
                at = NOW if i in w.env.alive else 0  # a dead broker's entry has expired
                self.node.heartbeats.on_broker_heartbeat(at, CLUSTER, NAME, _addr(i), i, HEARTBEAT_TIMEOUT,
                                                         f"channel-{i}", ep, off, 0, prio)
        self.incarnation = 0
        self.masters: dict[tuple[int, int], int | None] = {}
        self.conflicts: list[str] = []
        self.last_epochs: tuple[int, int] | None = None
        self.built = "events"

    def alive(self, cluster: str, broker_name: str, broker_id: int) -> bool:
        return self.node.heartbeats.is_broker_active(self.node.now, cluster, broker_name, broker_id)

    def view(self) -> Controller | None:
        snap = self.rim.snapshot().get(NAME)
        if snap is None:
            return None
        registered = tuple(sorted(int(i) for i in snap["replicas"])) if snap["replicas"] else ()
        if snap["masterEpoch"] is None:
            return Controller(registered, False, None, 0, 0, ())
        return Controller(registered, True, snap["master"], snap["masterEpoch"], snap["syncStateSetEpoch"],
                          tuple(snap["syncStateSet"]))

    def apply(self, ev: EventMessage) -> None:
        """``applyEvent``, recording per (incarnation, mE) the master as the checker does."""
        before = self.rim.snapshot().get(NAME)
        if before is None or before["masterEpoch"] is None:
            self.incarnation += 1
        self.rim.apply_event(ev)
        after = self.rim.snapshot().get(NAME)
        if after is None or after["masterEpoch"] is None:
            return
        if isinstance(ev, ElectMasterEvent):
            key = (self.incarnation, after["masterEpoch"])
            if key in self.masters and self.masters[key] != after["master"]:
                self.conflicts.append(f"mE {key[1]} recorded master {self.masters[key]}, now {after['master']}")
            self.masters[key] = after["master"]
        self.last_epochs = (after["masterEpoch"], after["syncStateSetEpoch"])

    # ------------------------------------------------------------------------------- pre-state

    def build(self, pre: Controller) -> None:
        if pre.info:
            extra = {pre.master} if pre.master is not None else set()
            for i in pre.registered or tuple(sorted(set(pre.sss) | extra)) or (1,):
                self.apply(ApplyBrokerIdEvent(CLUSTER, NAME, _addr(i), i, _check_code(i)))
            self._epochs(pre)
            if not pre.registered:
                del self.rim.replica_info_table[NAME]
                self.built += " + replica table removed directly"
            return
        # a removed SyncStateInfo: build it with an extra id x (outside 1..n) as its SSS and the stale epochs,
        # then clean x alone (the SSS empties: a half-present set) or the whole set
        x = self.n + 1
        for i in (*pre.registered, x):
            self.apply(ApplyBrokerIdEvent(CLUSTER, NAME, _addr(i), i, _check_code(i)))
        stale = Controller((), True, x if pre.master is not None else None, pre.me, pre.se, (x,) if pre.se else ())
        self._epochs(stale)
        self.apply(CleanBrokerDataEvent(NAME, frozenset({x}) if pre.registered else None))

    def _epochs(self, pre: Controller) -> None:
        m, me, se, sss = pre.master, pre.me, pre.se, frozenset(pre.sss)

        def alters(k: int) -> None:
            for _ in range(k):
                self.apply(AlterSyncStateSetEvent(NAME, sss))

        def not_elected(k: int) -> None:
            for _ in range(k):
                self.apply(ElectMasterEvent(False, NAME))

        if me + se > MAX_EVENTS:
            return self._direct(pre)
        if m is None:
            if se == 0 and sss:
                return self._direct(pre)
            alters(se)
            not_elected(me)
        elif me >= 1 and se >= 1 and sss == {m}:
            alters(se - 1)
            not_elected(me - 1)
            self.apply(ElectMasterEvent(True, NAME, m))
        elif me >= 1 and se >= 2:
            alters(se - 2)
            not_elected(me - 1)
            self.apply(ElectMasterEvent(True, NAME, m))
            alters(1)
        else:
            return self._direct(pre)
        return None

    def _direct(self, pre: Controller) -> None:
        info = self.rim.sync_state_set_info_table[NAME]
        info.master_broker_id, info.master_epoch = pre.master, pre.me
        info.sync_state_set_epoch, info.sync_state_set = pre.se, set(pre.sss)
        self.masters[(self.incarnation, pre.me)] = pre.master
        self.last_epochs = (pre.me, pre.se)
        self.built = "events + SyncStateInfo fields set directly"

    # ------------------------------------------------------------------------------------ step

    def step(self, w: Witness) -> tuple[int, list[EventMessage]]:
        """Call the operation (validation), then apply its events; an election that throws changes nothing."""
        p, t = w.params, w.transition
        if t.endswith("elect"):
            broker_id = -1 if t == "ctl-elect" else p["brokerId"]
            try:
                res = self.rim.elect_master(NAME, broker_id, t == "adm-elect", self.node.elect_policy,
                                            "" if t == "ctl-elect" else CLUSTER)
            except ElectionFailed:
                return int(RC.SYSTEM_ERROR), []
        elif t == "alter":
            res = self.rim.alter_sync_state_set(NAME, p["masterBrokerId"], p["masterEpoch"], p["newSyncStateSet"],
                                                p["syncStateSetEpoch"], self.alive)
        elif t == "register":
            a = p["appliedBrokerId"]
            res = self.rim.apply_broker_id(CLUSTER, NAME, a, _check_code(a, 1 if p["sameCheckCode"] else 2))
        else:
            text = ";".join(map(str, p["brokerControllerIdsToClean"])) or None
            res = self.rim.clean_broker_data(CLUSTER, NAME, text, p["isCleanLivingBroker"], self.alive)
        for ev in res.events:
            self.apply(ev)
        return res.code, list(res.events)


def _same(a: Controller, b: Controller) -> bool:
    """Equal as the implementation can tell (a removed SyncStateInfo has no values left)."""
    if (a.registered, a.info) != (b.registered, b.info):
        return False
    return not a.info or (a.master, a.me, a.se, a.sss) == (b.master, b.me, b.se, b.sss)


def _empty() -> Controller:
    return Controller((), False, None, 0, 0, ())


def impl_violation(inv_id: str, run: ImplRun, w: Witness, before: Controller, after: Controller,
                   events: list[EventMessage], last_before: tuple[int, int] | None) -> str | None:
    """The catalogue statement of ``inv_id`` on the step just run (``None``: it holds)."""
    elected = [e for e in events if isinstance(e, ElectMasterEvent) and e.new_master_elected]
    if inv_id == "CTL-MASTER-IN-SSS" and after.info and after.master is not None and after.master not in after.sss:
        return f"master {after.master} is not in the SSS {list(after.sss)}"
    if inv_id == "CTL-SSS-REGISTERED" and after.info and not set(after.sss) <= set(after.registered):
        return f"SSS {list(after.sss)} holds unregistered ids (registered {list(after.registered)})"
    if inv_id == "CTL-EPOCH-MONO":
        d_me = 1 if any(isinstance(e, ElectMasterEvent) for e in events) else 0
        d_se = 1 if elected or any(isinstance(e, AlterSyncStateSetEvent) for e in events) else 0
        if before.info and after.info and (after.me - before.me, after.se - before.se) != (d_me, d_se):
            return f"mE {before.me}->{after.me}, sE {before.se}->{after.se} (expected +{d_me}, +{d_se})"
        if not before.info and after.info and last_before is not None and (after.me, after.se) < last_before:
            return f"the set returned at mE {after.me}, sE {after.se} after mE {last_before[0]}, sE {last_before[1]}"
    if inv_id == "CTL-ONE-MASTER-PER-EPOCH" and run.conflicts:
        return run.conflicts[-1]
    if inv_id == "CTL-ALTER-FENCED" and any(isinstance(e, AlterSyncStateSetEvent) for e in events):
        p = w.params
        if (p["masterBrokerId"], p["masterEpoch"], p["syncStateSetEpoch"]) != (before.master, before.me, before.se) \
                or before.master not in p["newSyncStateSet"]:
            return (f"applied a request (master {p['masterBrokerId']}, mE {p['masterEpoch']}, "
                    f"sE {p['syncStateSetEpoch']}) against (master {before.master}, mE {before.me}, sE {before.se})")
    if inv_id == "CTL-CLEAN-ELECTION" and elected:
        new = elected[0].new_master_broker_id
        alive = run.alive(CLUSTER, NAME, new) if new is not None else False
        if new not in before.sss or not alive:
            return f"broker {new} was elected while " + ("outside the SSS" if new not in before.sss else "not alive")
    return None


def replay_on_impl(w: Witness, inv_id: str, n: int, sw: Switches) -> Replay:
    if inv_id not in MODEL_PREDICATES and inv_id != "CTL-ONE-MASTER-PER-EPOCH":
        return Replay("impl", "n/a", "a strengthening conjunct has no implementation counterpart")
    run = ImplRun(w, n, sw)
    run.build(w.pre)
    before = run.view() or _empty()
    if not _same(before, w.pre):
        return Replay("impl", "diverged", f"built {before.text()}, wanted {w.pre.text()}")
    last_before = run.last_epochs
    code, events = run.step(w)
    after = run.view() or _empty()
    switches = ",".join(sorted(sw.impl_bugs()) + (["enableElectUncleanMaster"] if sw.unclean else [])) or "stock"
    where = f"ReplicasInfoManager [{switches}], pre-state by {run.built}"
    if code != w.code or not _same(after, w.post):
        return Replay("impl", "diverged", f"{where}: {code_name(code)}, {after.text()}; the encoding said "
                                          f"{code_name(w.code)}, {w.post.text()}")
    bad = impl_violation(inv_id, run, w, before, after, events, last_before)
    if bad is None:
        return Replay("impl", "holds", f"{where}: {code_name(code)}; {inv_id} holds")
    return Replay("impl", "reproduced", f"{where}: {code_name(code)}; {inv_id} fails: {bad}")
