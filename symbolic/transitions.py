"""One controller step over the symbolic state: validate a request, then apply its event, atomically.

Everything that affects transitions lives here: the request parameters, the environment the controller reads
(liveness view, heartbeat ranking inputs), the check order of every operation and the effect of every event.
Each function mirrors ``impl/controller/replicas_info.py`` / ``elect_policy.py`` line for line and cites the
RocketMQ method; the prover switches (``Switches``) change exactly what the bug switch or setting changes there.

Rules:

* A step is one operation on the state it validates against, followed by the apply of its event
  (``ReplicasInfoManager.applyEvent``); a refused request is a step that changes nothing. In DLedger mode the
  leader validates once before proposing (``DLedgerController.EventScheduler``); a one-step encoding is the serial
  case, where nothing is appended between validation and apply.
* The environment is free in every step: the controller's liveness view (``BrokerValidPredicate``, i.e.
  ``heartbeatManager.isBrokerActive``), whether the heartbeat table still holds an entry (an active broker
  always has one), and the (epoch, maxOffset, electionPriority) of each entry. Ranking values are bounded by
  2^30 so that the comparator's int narrowing (QUIRK in ``compare_live_info``) is the identity: that quirk
  only changes which candidate wins, never whether the winner is a candidate.
* The request parameters are free within their domains: the requester's id, the epochs and the new set of an
  alterSyncStateSet, the id (and whether the check code matches) of an applyBrokerId, the ids of a clean.

Theory of operation: a transition builder takes a ``SymState`` (the pre-state) and the ``Switches`` and returns a
``Step``: the post-state as terms, the response code, flags telling which event applied, the domain constraints
of its fresh parameters and environment, and the guard of the matching action of the executable model (a hint
used only to steer counterexamples towards ones the model can replay).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TypeAlias

import z3
from rmqha.impl import bugs as B
from rmqha.impl.codes import ResponseCode as RC

from .state import NONE, UNSET, SymState, ids, member, select, singleton

RANK_MAX = 1 << 30
"""Bound of the heartbeat ranking inputs (keeps Java's int narrowing of their differences exact)."""
ABORTED = int(RC.SYSTEM_ERROR)
"""Code of an election whose policy threw (a candidate without live info): the future fails, SYSTEM_ERROR."""


@dataclass(frozen=True)
class Switches:
    """The controller deviations the prover knows (``impl/bugs.py``), as flags of the encoding."""

    skip_sss_epoch_check: bool = False  # alter-skip-sss-epoch-check: alterSyncStateSet without check 5
    elect_ignores_liveness: bool = False  # elect-ignores-liveness: DefaultElectPolicy without a valid predicate
    unclean: bool = False  # unclean-election: ControllerConfig.enableElectUncleanMaster

    @staticmethod
    def from_names(names: Iterable[str]) -> Switches:
        flags = {PROVER_SWITCHES[n]: True for n in names}
        return Switches(**flags)

    def names(self) -> list[str]:
        return [n for n, attr in PROVER_SWITCHES.items() if getattr(self, attr)]

    def impl_bugs(self) -> frozenset[str]:
        """The code switches to pass to the implementation (``unclean-election`` is a setting, not a switch)."""
        return frozenset(n for n in self.names() if B.BUGS[n].kind == "switch")


PROVER_SWITCHES: dict[str, str] = {
    B.ALTER_SKIP_SSS_EPOCH_CHECK: "skip_sss_epoch_check",
    B.ELECT_IGNORES_LIVENESS: "elect_ignores_liveness",
    "unclean-election": "unclean",
}
"""Bug or config name -> ``Switches`` field."""
STOCK = Switches()

SWITCH_INVARIANT: dict[str, str] = {
    B.ALTER_SKIP_SSS_EPOCH_CHECK: B.BUGS[B.ALTER_SKIP_SSS_EPOCH_CHECK].invariant,
    B.ELECT_IGNORES_LIVENESS: B.BUGS[B.ELECT_IGNORES_LIVENESS].invariant,
    "unclean-election": "CTL-CLEAN-ELECTION",  # its catalogue entry names the loss it causes, SYNC-NO-ACK-LOSS
}
"""The controller invariant each prover switch must break."""


@dataclass(frozen=True)
class Env:
    """What the controller reads besides its state, fresh in every step."""

    alive: tuple[z3.BoolRef, ...]  # BrokerValidPredicate: heartbeatManager.isBrokerActive
    live_info: tuple[z3.BoolRef, ...]  # heartbeatManager.getBrokerLiveInfo != null
    epoch: tuple[z3.ArithRef, ...]  # BrokerLiveInfo.epoch
    max_offset: tuple[z3.ArithRef, ...]  # BrokerLiveInfo.maxOffset
    priority: tuple[z3.ArithRef, ...]  # BrokerLiveInfo.electionPriority

    def domain(self) -> z3.BoolRef:
        ranks = [z3.And(v >= -1, v <= RANK_MAX) for v in (*self.epoch, *self.max_offset, *self.priority)]
        return z3.And(*[z3.Implies(a, li) for a, li in zip(self.alive, self.live_info)], *ranks)


def fresh_env(n: int, prefix: str = "env") -> Env:
    return Env(alive=tuple(z3.Bool(f"{prefix}.alive{i}") for i in ids(n)),
               live_info=tuple(z3.Bool(f"{prefix}.liveInfo{i}") for i in ids(n)),
               epoch=tuple(z3.Int(f"{prefix}.epoch{i}") for i in ids(n)),
               max_offset=tuple(z3.Int(f"{prefix}.maxOffset{i}") for i in ids(n)),
               priority=tuple(z3.Int(f"{prefix}.priority{i}") for i in ids(n)))


Param: TypeAlias = "z3.ExprRef | tuple[z3.BoolRef, ...]"
FALSE, TRUE = z3.BoolVal(False), z3.BoolVal(True)


@dataclass(frozen=True)
class Step:
    """One transition instance: pre, post and what happened, all as terms."""

    transition: str
    pre: SymState
    post: SymState
    env: Env
    params: dict[str, Param]
    domain: z3.BoolRef  # domains of the request parameters and of the environment
    code: z3.ArithRef  # the response code
    elected: z3.BoolRef = FALSE  # ElectMasterEvent(newMasterElected=true) applied
    not_elected: z3.BoolRef = FALSE  # ElectMasterEvent(newMasterElected=false) applied
    altered: z3.BoolRef = FALSE  # AlterSyncStateSetEvent applied
    cleaned_ids: z3.BoolRef = FALSE  # CleanBrokerDataEvent with explicit ids applied
    recreated: z3.BoolRef = FALSE  # ApplyBrokerIdEvent built the set anew (a new incarnation)
    took_requester: z3.BoolRef = FALSE  # a first-time election took the requester's id unchecked
    model_hint: z3.BoolRef = TRUE  # the executable model's guard of this action
    detail: dict[str, z3.ExprRef] = field(default_factory=dict)  # extra outputs worth printing


# ------------------------------------------------------------------------------------- elections


def _better(env: Env, i: int, j: z3.ArithRef) -> z3.BoolRef:
    """``compare_live_info(i, j) < 0``: epoch desc, then maxOffset desc, then electionPriority asc."""
    ei, ej = env.epoch[i - 1], select(env.epoch, j)
    oi, oj = env.max_offset[i - 1], select(env.max_offset, j)
    pi, pj = env.priority[i - 1], select(env.priority, j)
    return z3.Or(ei > ej, z3.And(ei == ej, z3.Or(oi > oj, z3.And(oi == oj, pi < pj))))


def _best(env: Env, cand: tuple[z3.BoolRef, ...]) -> z3.ArithRef:
    """The first element of the ``TreeSet`` the candidates' live infos are inserted into, in ascending id
    order: the best key, ties to the smallest id (an equal element is dropped, not inserted)."""
    cur: z3.ArithRef = z3.IntVal(NONE)
    for i, c in zip(ids(len(cand)), cand):
        cur = z3.If(z3.And(c, z3.Or(cur == NONE, _better(env, i, cur))), z3.IntVal(i), cur)
    return cur


def _try_elect(sw: Switches, env: Env, brokers: tuple[z3.BoolRef, ...], old: z3.ArithRef,
               prefer: z3.ArithRef | None) -> tuple[z3.ArithRef, z3.BoolRef]:
    """``DefaultElectPolicy.tryElect``: (the elected id or NONE, whether it throws)."""
    valid = (z3.BoolVal(True),) * len(brokers) if sw.elect_ignores_liveness else env.alive
    cand = tuple(z3.And(b, v) for b, v in zip(brokers, valid))
    any_cand = z3.Or(*cand)
    old_cand = member(cand, old)
    if prefer is None:
        no_info = z3.Or(*[z3.And(c, z3.Not(li)) for c, li in zip(cand, env.live_info)])
        res = z3.If(z3.Not(any_cand), NONE, z3.If(old_cand, old, _best(env, cand)))
        return res, z3.And(any_cand, z3.Not(old_cand), no_info)
    res = z3.If(z3.Not(any_cand), NONE,
                z3.If(z3.And(old_cand, prefer == old), old, z3.If(member(cand, prefer), prefer, NONE)))
    return res, z3.BoolVal(False)


def _elect(s: SymState, sw: Switches, name: str, requester: z3.ArithRef | None, designate: bool,
           hint: Callable[[SymState, Env], z3.BoolRef]) -> Step:
    """``ReplicasInfoManager.electMaster`` (its steps in order) + ``applyEvent(ElectMasterEvent)``.

    ``requester`` is the request's brokerId (``None``: -1, a controller trigger)."""
    n = s.n
    env = fresh_env(n)
    first = s.me == 0  # SyncStateInfo.isFirstTimeForElect
    took = first if requester is not None else z3.BoolVal(False)  # QUIRK: the requester, unchecked
    prefer = requester if designate else None
    new, throws = _try_elect(sw, env, s.sss, s.master, prefer)  # DefaultElectPolicy.elect: the SSS first
    if sw.unclean:  # then every replica (allReplicaBrokers != null)
        new2, throws2 = _try_elect(sw, env, s.reg, s.master, prefer)
        throws = z3.Or(throws, z3.And(new == NONE, throws2))
        new = z3.If(new != NONE, new, new2)
    if requester is not None:
        new = z3.If(took, requester, new)
    aborted = z3.And(z3.Not(took), throws)
    failed = RC.CONTROLLER_MASTER_NOT_AVAILABLE if requester is None else RC.CONTROLLER_ELECT_MASTER_FAILED
    code = z3.If(z3.Not(s.contains), int(RC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED),
                 z3.If(aborted, ABORTED,
                       z3.If(z3.And(new != NONE, new == s.master), int(RC.CONTROLLER_MASTER_STILL_EXIST),
                             z3.If(new != NONE, int(RC.SUCCESS), int(failed)))))
    elected = code == int(RC.SUCCESS)
    not_elected = code == int(RC.CONTROLLER_MASTER_NOT_AVAILABLE)  # only a controller trigger has this event
    event = z3.Or(elected, not_elected)
    master = z3.If(elected, new, z3.If(not_elected, NONE, s.master))  # SyncStateInfo.updateMasterInfo
    me = z3.If(event, s.me + 1, s.me)
    post = replace(s, master=master, me=me, se=z3.If(elected, s.se + 1, s.se),  # updateSyncStateSetInfo({new})
                   sss=tuple(z3.If(elected, x, old) for x, old in zip(singleton(n, new), s.sss)),
                   rec=z3.If(event, z3.Store(s.rec, me, master), s.rec))
    params: dict[str, Param] = {} if requester is None else {"brokerId": requester}
    domain = env.domain() if requester is None else z3.And(env.domain(), requester >= 1, requester <= n)
    return Step(name, s, post, env, params, domain, code, elected=elected, not_elected=not_elected,
                took_requester=z3.And(took, elected), model_hint=hint(s, env), detail={"newMaster": new})


def _model_guard_controller(s: SymState, env: Env) -> z3.BoolRef:
    """``ControllerElect`` of the model: the master is set and dead, and some registered broker is alive."""
    return z3.And(s.master != NONE, z3.Not(member(env.alive, s.master)),
                  z3.Or(*[z3.And(r, a) for r, a in zip(s.reg, env.alive)]))


def controller_elect(s: SymState, sw: Switches) -> Step:
    """``ElectMasterRequestHeader.ofControllerTrigger`` (brokerId -1), from ``ControllerManager.triggerElectMaster``
    (``scanNeedReelectBrokerSets`` / ``onBrokerInactive``). Unguarded here: the trigger's condition may be stale
    by the time the request is validated (retries, other requests in between)."""
    return _elect(s, sw, "ctl-elect", None, False, _model_guard_controller)


def broker_elect(s: SymState, sw: Switches) -> Step:
    """``ElectMasterRequestHeader.ofBrokerTrigger`` (the requester's id), from ``ReplicasManager.brokerElect``."""
    req = z3.Int("req.brokerId")
    return _elect(s, sw, "brk-elect", req, False, lambda s, env: z3.And(
        member(env.alive, req), member(s.reg, req), s.master == NONE))


def admin_elect(s: SymState, sw: Switches) -> Step:
    """``ElectMasterRequestHeader.ofAdminTrigger`` (designateElect), from ``ReElectMasterSubCommand``."""
    req = z3.Int("req.brokerId")
    return _elect(s, sw, "adm-elect", req, True, lambda s, env: s.replicas)


# --------------------------------------------------------------------------------- alterSyncStateSet


ALTER_CHECK_CODES = {1: RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, 2: RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                     3: RC.CONTROLLER_INVALID_MASTER, 4: RC.CONTROLLER_FENCED_MASTER_EPOCH,
                     5: RC.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, 7: RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED}


def alter_sync_state_set(s: SymState, sw: Switches) -> Step:
    """``ReplicasInfoManager.alterSyncStateSet`` checks 1-7 in order +
    ``applyEvent(AlterSyncStateSetEvent)`` (SSS := new set, sE + 1)."""
    n = s.n
    env = fresh_env(n)
    frm, me, se = z3.Int("req.masterBrokerId"), z3.Int("req.masterEpoch"), z3.Int("req.syncStateSetEpoch")
    new = tuple(z3.Bool(f"req.newSyncStateSet{i}") for i in ids(n))
    member_code: z3.ArithRef = z3.IntVal(int(RC.SUCCESS))  # check 6: the first failing member, ascending id
    for x, r, a in reversed(list(zip(new, s.reg, env.alive))):
        member_code = z3.If(z3.And(x, z3.Not(r)), int(RC.CONTROLLER_INVALID_REPLICAS),
                            z3.If(z3.And(x, z3.Not(a)), int(RC.CONTROLLER_BROKER_NOT_ALIVE), member_code))
    check5 = z3.BoolVal(False) if sw.skip_sss_epoch_check else se != s.se
    check = z3.If(z3.Not(s.contains), 1,
                  z3.If(z3.And(*[a == b for a, b in zip(new, s.sss)]), 2,
                        z3.If(z3.Or(s.master == NONE, s.master != frm), 3,
                              z3.If(me != s.me, 4,
                                    z3.If(check5, 5,
                                          z3.If(member_code != int(RC.SUCCESS), 6,
                                                z3.If(z3.Not(member(new, s.master)), 7, 0)))))))
    code: z3.ArithRef = z3.If(check == 6, member_code, int(RC.SUCCESS))
    for k, rc in ALTER_CHECK_CODES.items():
        code = z3.If(check == k, int(rc), code)
    altered = check == 0
    post = replace(s, sss=tuple(z3.If(altered, x, old) for x, old in zip(new, s.sss)),
                   se=z3.If(altered, s.se + 1, s.se))
    domain = z3.And(env.domain(), frm >= 1, frm <= n)
    return Step("alter", s, post, env, {"masterBrokerId": frm, "masterEpoch": me, "syncStateSetEpoch": se,
                                        "newSyncStateSet": new}, domain, code, altered=altered,
                detail={"check": check})


# ----------------------------------------------------------------------------------------- register


def apply_broker_id(s: SymState, sw: Switches) -> Step:
    """``ReplicasInfoManager.applyBrokerId`` (check-code CAS) + ``applyEvent(ApplyBrokerIdEvent)``:
    adds the id to an existing set, or (QUIRK) builds the set anew when it does not exist. ``registerBroker``
    itself only emits ``UpdateBrokerAddressEvent`` (an address): it leaves this state alone."""
    n = s.n
    env = fresh_env(n)
    a, same_code = z3.Int("req.appliedBrokerId"), z3.Bool("req.sameCheckCode")
    accepted = z3.If(z3.Not(s.replicas), a == 1,  # looks at the replica table only
                     z3.Or(z3.Not(member(s.reg, a)), same_code))
    keep, rebuild = z3.And(accepted, s.contains), z3.And(accepted, z3.Not(s.contains))
    fresh_rec = z3.Store(z3.K(z3.IntSort(), z3.IntVal(UNSET)), 0, NONE)
    post = SymState(n=n, reg=tuple(z3.If(rebuild, a == i, z3.Or(r, z3.And(keep, a == i)))
                                   for i, r in zip(ids(n), s.reg)),
                    inf=z3.Or(s.inf, rebuild), master=z3.If(rebuild, NONE, s.master),
                    me=z3.If(rebuild, 0, s.me), se=z3.If(rebuild, 0, s.se),
                    sss=tuple(z3.And(z3.Not(rebuild), x) for x in s.sss), rec=z3.If(rebuild, fresh_rec, s.rec))
    code = z3.If(accepted, int(RC.SUCCESS), int(RC.CONTROLLER_BROKER_ID_INVALID))
    return Step("register", s, post, env, {"appliedBrokerId": a, "sameCheckCode": same_code},
                z3.And(env.domain(), a >= 1, a <= n), code, recreated=rebuild)


# -------------------------------------------------------------------------------------------- clean


def _clean(s: SymState, sw: Switches, name: str, explicit: bool) -> Step:
    """``ReplicasInfoManager.cleanBrokerData`` + ``applyEvent(CleanBrokerDataEvent)``."""
    n = s.n
    env = fresh_env(n)
    living = z3.Bool("req.isCleanLivingBroker")
    clean = tuple(z3.Bool(f"req.brokerControllerIdsToClean{i}") for i in ids(n))
    blank = z3.Not(z3.Or(*clean))
    refused = z3.And(z3.Not(living), z3.Or(
        z3.And(blank, s.inf, s.master != NONE),  # "is still alive": the set still has a master
        z3.And(z3.Not(blank), z3.Or(*[z3.And(x, a) for x, a in zip(clean, env.alive)]))))  # an id is alive
    ok = z3.And(z3.Not(refused), s.contains)
    wipe = z3.And(ok, z3.Or(living, blank))  # QUIRK: a living-broker clean ignores the ids: the whole set
    part = z3.And(ok, z3.Not(z3.Or(living, blank)))
    sss = tuple(z3.If(part, z3.And(x, z3.Not(c)), x) for x, c in zip(s.sss, clean))  # no sE change
    post = replace(s, reg=tuple(z3.And(z3.Not(wipe), r, z3.Not(z3.And(part, c))) for r, c in zip(s.reg, clean)),
                   sss=sss, inf=z3.If(wipe, False, z3.If(part, z3.Or(*sss), s.inf)))
    code = z3.If(ok, int(RC.SUCCESS), int(RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA))
    shape = z3.And(z3.Not(living), z3.Not(blank)) if explicit else z3.Or(living, blank)
    return Step(name, s, post, env, {"isCleanLivingBroker": living, "brokerControllerIdsToClean": clean},
                z3.And(env.domain(), shape), code, cleaned_ids=part)


def clean_ids(s: SymState, sw: Switches) -> Step:
    """cleanBrokerData with explicit ids of dead brokers: they leave the replica table and the SSS."""
    return _clean(s, sw, "clean-ids", True)


def clean_set(s: SymState, sw: Switches) -> Step:
    """cleanBrokerData of the whole set (blank ids, or isCleanLivingBroker): both tables drop the set."""
    return _clean(s, sw, "clean-set", False)


# ------------------------------------------------------------------------------------------ catalogue


@dataclass(frozen=True)
class Transition:
    name: str
    java: str
    build: Callable[[SymState, Switches], Step]
    model_action: str | None  # the executable model's action, None when the model has none


TRANSITIONS: dict[str, Transition] = {t.name: t for t in (
    Transition("ctl-elect", "ReplicasInfoManager.electMaster (ofControllerTrigger) + DefaultElectPolicy.elect",
               controller_elect, "ControllerElect"),
    Transition("brk-elect", "ReplicasInfoManager.electMaster (ofBrokerTrigger, ReplicasManager.brokerElect)",
               broker_elect, "BrokerElect"),
    Transition("adm-elect", "ReplicasInfoManager.electMaster (ofAdminTrigger, designateElect)",
               admin_elect, "AdminElect"),
    Transition("alter", "ReplicasInfoManager.alterSyncStateSet (checks 1-7) + AlterSyncStateSetEvent",
               alter_sync_state_set, "ControllerAlter"),
    Transition("register", "ReplicasInfoManager.applyBrokerId + ApplyBrokerIdEvent (registerBroker: address only)",
               apply_broker_id, None),
    Transition("clean-ids", "ReplicasInfoManager.cleanBrokerData (brokerControllerIdsToClean) + CleanBrokerDataEvent",
               clean_ids, None),
    Transition("clean-set", "ReplicasInfoManager.cleanBrokerData (whole set) + CleanBrokerDataEvent(null)",
               clean_set, None),
)}
