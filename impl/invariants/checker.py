"""The checker: after every step, the step's observations and the cluster's state against the registry.

Theory of operation. ``after_step(observations)`` first records the run's history from the observations (what was
acknowledged, consumed, appended to which queue; which controller apply is the first of its index), then hands
each observation to the event checks registered ``on`` its kind, in registry order. Then it re-runs the state
checks whose inputs changed: the controller's (when a controller node handled something), the brokers' (when a
broker's checked state moved: its log, epoch file, confirmOffset, role, fencing, SyncStateSet or identity), the
nameserver's, and the checks across the cluster (the loss checks: when brokers or controller changed, or new
messages were acknowledged or consumed). A fault action, a crash, a new master or a truncation forces every state
check to re-run. The first violation of a run stops it (``ClusterView.fail``). A disabled invariant reports nothing:
its event checks do not run, its state checks run in their chain (``STATE_CHAINS``) unless the whole chain is off.

Cost: an event check runs only for the kinds it names; a state check only when a part it reads changed. Broker
fingerprints decide "changed"; HA-LOG-MATCHING and SYNC-SSS-HOLDS-ACKED keep what they verified (``context.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..broker.broker import BrokerNode
from ..codes import BrokerRole
from ..observations import (
    BrkAppend,
    BrkRole,
    BrkSss,
    ClientSeen,
    ClientSendResult,
    CtlApply,
    HaAccept,
    HaExpand,
    HaTruncate,
    Observation,
    SimCrash,
    StoreDispatch,
)

# the area modules declare the invariants (imported for their registration, in catalogue order)
from . import broker, client, conform, controller, ha, progress, queues, store, sync  # noqa: F401
from .context import Context, Fingerprint
from .queues import settle_ms
from .registry import BY_ID, CATALOGUE, Invariant, Violated
from .settle import Settle
from .view import ClusterView

# The state checks, in the order they run after a step, as chains. Within a chain the first check that finds a
# violation ends the chain for this step, whether or not its invariant is enabled (a disabled invariant's violation
# hides the later checks of its chain); a chain whose invariants are all disabled does not run. When two invariants
# break in the same step, the one reported (and recorded in the trace) is the first in this order: it is the order
# the checks have always run in, and the committed traces and the finding tests depend on it. Consecutive
# ``per_broker`` checks run broker by broker. ``tests/test_architecture.py`` checks that every state invariant is here.
STATE_CHAINS: tuple[tuple[str, ...], ...] = (
    # the controller's state
    ("CTL-EPOCH-MONO", "CTL-MASTER-IN-SSS", "CTL-SSS-REGISTERED"),
    # the controller group's leaders: what they have committed
    ("CTL-COMMIT-QUORUM",),
    # the brokers' state
    ("CTL-ID-UNIQUE", "EPOCH-FILE-WF", "STORE-NO-SPAN-FILE", "STORE-NO-RESURRECT", "HA-ACK-BOUND",
     "QUEUE-OFFSET-GAPLESS", "STORE-WHOLE-MESSAGES", "STORE-REPUT-DRAINS", "HA-LOG-MATCHING", "SYNC-CONFIRM-BOUND"),
    # the nameserver's
    ("NS-ROUTE-HIGHEST-EPOCH",),
    # across the cluster: the established master and the history
    ("SYNC-NO-ACK-LOSS", "SYNC-SEEN-NO-LOSS"),
    ("SYNC-SSS-HOLDS-ACKED",),
    ("QUEUE-ACKED-READABLE",),
    # set-wide: the step's dispatches and every broker's confirmOffset against the controller's SyncStateSet (after
    # the others: a step that breaks an older invariant as well reports that one, as before)
    ("SYNC-DISPATCH-CONFIRMED",),
    ("SYNC-CONFIRM-HELD",),
    # the HA clients' address changes (HA-CLIENT-WAKEUP: the memory its accept events resolve)
    ("HA-CLIENT-WAKEUP",),
)

Entry = tuple[str | None, Callable[[Any, Any], Violated | None]]  # (invariant id, or None for history) and its call
Run = tuple[str, Callable[..., Violated | None], tuple[tuple[str, Callable[..., Violated | None]], ...] | None]
"""One step of a compiled chain: (id, check, None), or ("", nothing, block) for a block of per-broker checks run
broker by broker (each (id, check))."""
Chain = tuple[Run, ...]


def _none(*_: Any) -> None:
    return None


class Checker(Context):
    """Evaluates the catalogue on a ``ClusterView`` after every step."""

    def __init__(self, world: ClusterView, enabled: set[str] | None = None) -> None:
        super().__init__(world, enabled)
        self._fingerprints: dict[str, Fingerprint] = {}
        on: dict[str, list[Entry]] = {
            "ctl.apply": [(None, Checker._record_apply)], "brk.role": [(None, Checker._record_role)],
            "brk.sss": [(None, Checker._record_sss)], "brk.append": [(None, Checker._record_append)],
            "client.seen": [(None, Checker._record_seen)], "client.send-result": [(None, Checker._record_send)],
            "ha.expand": [(None, Checker._record_expand)], "ha.truncate": [(None, Checker._record_truncate)],
            "sim.crash": [(None, Checker._record_crash)], "store.truncated": [(None, Checker._record_truncated)],
            "store.dispatch": [(None, Checker._record_dispatch)],
            "ctl.append-timeout": [(None, Checker._record_append_timeout)],
            "ha.accept": [(None, Checker._record_accept)],
        }
        for inv in CATALOGUE:
            if inv.id in self.enabled:
                for kind in inv.on:
                    on.setdefault(kind, []).append((inv.id, inv.check))
        self._on: dict[str, tuple[Entry, ...]] = {k: tuple(v) for k, v in on.items()}
        chains = [tuple(BY_ID[i] for i in c) for c in STATE_CHAINS if any(i in self.enabled for i in c)]
        self._ctl_chains = self._chains(chains, {"controller"})
        self._broker_chains = self._chains(chains, {"brokers"})
        self._ns_chains = self._chains(chains, {"nameserver"})
        self._at_end = tuple(i for i in CATALOGUE if i.at_run_end and i.id in self.enabled)
        self._track_reput = "QUEUE-CONFIRMED-DISPATCHED" in self.enabled
        self._track_idle = "STORE-REPUT-DRAINS" in self.enabled
        self._settle = settle_ms(world.store_config)
        self._loss_chain = next((self._compile(c) for c in chains if c[0].id == "SYNC-NO-ACK-LOSS"), ())
        self._across_chains = tuple(self._compile(c) for c in chains if len(c[0].reads) > 1
                                    and c[0].id != "SYNC-NO-ACK-LOSS")

    @classmethod
    def _chains(cls, chains: list[tuple[Invariant, ...]], reads: set[str]) -> tuple[Chain, ...]:
        return tuple(cls._compile(c) for c in chains if {r for i in c for r in i.reads} == reads)

    @staticmethod
    def _compile(chain: tuple[Invariant, ...]) -> Chain:
        """The chain as (id, check, block) steps, its runs of consecutive per-broker checks grouped into blocks."""
        steps: list[Run] = []
        block: list[tuple[str, Callable[..., Violated | None]]] = []
        for inv in chain:
            if inv.per_broker:
                block.append((inv.id, inv.check))
                continue
            if block:
                steps.append(("", _none, tuple(block)))
                block = []
            steps.append((inv.id, inv.check, None))
        if block:
            steps.append(("", _none, tuple(block)))
        return tuple(steps)

    # ------------------------------------------------------------------------------------------- a step

    def after_step(self, observations: list[Observation]) -> None:
        self._ref_known = False  # the per-pass caches (Context.reference_master, Context.logs)
        self._logs = None
        if self.dispatched_in_step:
            self.dispatched_in_step = []
        if self.world.acted and (not self.fault_times or self.fault_times[-1] != self.world.now):
            self.fault_times.append(self.world.now)
        on = self._on
        for obs in observations:
            entries = on.get(obs["k"])
            if entries is not None:
                for inv_id, fn in entries:
                    v = fn(self, obs)
                    if v is not None and inv_id is not None:
                        self._violated(inv_id, v)
        world = self.world
        touched = world.touched
        if world.acted:
            self._full_recheck = True
        ran_ctl = self._full_recheck or any(c in touched for c in world.controllers)
        ran_brokers = self._brokers_changed(touched)
        if ran_ctl:
            self._check_controller_state()
        if ran_brokers:
            self._check_broker_state()
        if self._full_recheck or world.nameserver in touched:
            self._check_nameserver()
        if ran_brokers or ran_ctl or self.acked_pending or self.seen_pending or self.dispatched_in_step:
            self._check_across()
        self._full_recheck = False

    def check_progress(self, ids: list[str], at: Settle) -> None:
        """The progress invariants ``ids`` (their settle windows end now), in catalogue order; the first violation
        is the run's (``ClusterView.fail``)."""
        for inv in CATALOGUE:
            if inv.id in ids and inv.id in self.enabled:
                self._ref_known = False
                self._logs = None
                v = inv.check(self, at)
                if v is not None:
                    self._violated(inv.id, v)
                    return

    def _run(self, chain: Chain) -> bool:
        """Run a chain's checks in order; the first violation ends it (see ``STATE_CHAINS``). True: every one held."""
        for inv_id, check, block in chain:
            if block is None:
                v = check(self)
                if v is not None:
                    self._violated(inv_id, v)
                    return False
                continue
            for b, log in self.logs().items():
                for inv_id, check in block:
                    v = check(self, b, log)
                    if v is not None:
                        self._violated(inv_id, v)
                        return False
        return True

    def _violated(self, inv_id: str, v: Violated) -> None:
        if inv_id in self.enabled:
            self.world.fail(inv_id, v.message, v.state)

    def _check_controller_state(self) -> None:
        for chain in self._ctl_chains:
            self._run(chain)

    def _check_broker_state(self) -> None:
        for chain in self._broker_chains:
            self._run(chain)

    def _check_nameserver(self) -> None:
        for chain in self._ns_chains:
            self._run(chain)

    def _check_across(self) -> None:
        """The loss checks against the master the controller has established (looked up once); the pending keys are
        checked once they held against one."""
        master = self.reference_master()
        if master is not None:
            ref = (master.name, master.replicas.master_epoch if isinstance(master, BrokerNode) else 0)
            self.loss_full = self._full_recheck or self.last_ref != ref
            self.last_ref = ref
            if self._run(self._loss_chain):
                self.acked_pending = []
                self.seen_pending = []
        for chain in self._across_chains:
            self._run(chain)

    def _brokers_changed(self, touched: set[str]) -> bool:
        """Re-run broker state predicates only when a broker's checked state actually moved."""
        changed = self._full_recheck
        world = self.world
        for b in world.brokers:
            if b not in touched and not self._full_recheck:
                continue
            node = world.broker(b)
            disk = world.disks[b]
            if self._track_reput and isinstance(node, BrokerNode):
                self._note_reput_end(b, node)
            overdue = self._track_idle and isinstance(node, BrokerNode) and self._note_reput_idle(b, node)
            if node is None:
                fp: Fingerprint = (None, disk.generation, len(disk.commitlog))
            else:
                st = node.store
                ha = node.ha if isinstance(node, BrokerNode) else None
                fp = (world.inc[b], st.commitlog.version, disk.generation, st.epoch_cache.version, st.confirm_offset,
                      st.role, st.fenced, tuple(sorted(ha.sync_state_set)) if ha else (), disk.broker_identity,
                      overdue)
            if self._fingerprints.get(b) != fp:
                self._fingerprints[b] = fp
                changed = True
        return changed

    def _note_reput_end(self, b: str, node: BrokerNode) -> None:
        """QUEUE-CONFIRMED-DISPATCHED's memory: the broker's reput end when it moved, pruned to the settle time."""
        world = self.world
        value, inc = node.store.peek_reput_end(), world.inc[b]
        hist = self.reput_ends.setdefault(b, [])
        if hist and hist[-1][0] == inc and hist[-1][2] == value:
            return
        hist.append((inc, world.now, value))
        horizon = world.now - self._settle
        while len(hist) > 1 and hist[1][1] <= horizon:
            del hist[0]

    def _note_reput_idle(self, b: str, node: BrokerNode) -> bool:
        """STORE-REPUT-DRAINS' memory: since when the broker's reput thread has sat idle before a record it could
        dispatch; True once that has lasted longer than the settle time (the broker's state then counts as changed,
        so that its checks run)."""
        world = self.world
        if not store.reput_idles_over_work(node, world.now):
            self.reput_idle.pop(b, None)
            return False
        inc = world.inc[b]
        since = self.reput_idle.get(b)
        if since is None or since[0] != inc:
            self.reput_idle[b] = (inc, world.now)
            return False
        return world.now - since[1] > self._settle

    # ---------------------------------------------------------------------------------------- run's end

    def check_at_run_end(self) -> None:
        """The checks of a finished run (``at_run_end`` invariants), once, in catalogue order; the first violation
        is the run's. The simulator calls it when a run ends without a violation. (A hook the end-of-run progress
        checks can share: they run here, after every step's checks.)"""
        for inv in self._at_end:
            v = inv.check(self)
            if v is not None:
                self._violated(inv.id, v)
                return

    # ------------------------------------------------------------------------------------------ history

    def _record_apply(self, obs: CtlApply) -> None:
        if "node" in obs:  # a replicated group: every node applies every entry; the set's history takes the first
            key = (obs["term"], _event_json(obs))
            had = self.applied_log.setdefault(obs["index"], (key, obs["node"]))
            self.apply_had, self.apply_key = had, key
            self.apply_first = had == (key, obs["node"])
            if not self.apply_first:
                return
        else:
            self.apply_had = self.apply_key = None
            self.apply_first = True
        ev, before, after = obs["event"], obs["before"], obs["after"]
        name = ev.get("brokerName", "")
        if before is None or before.get("masterEpoch") is None:
            self.set_incarnation[name] = self.set_incarnation.get(name, 0) + 1
        if ev["type"] == "ElectMaster" and after is not None and after.get("masterEpoch") is not None:
            self.coverage.hit("election" if ev["newMasterElected"] else "election-none")
            if ev["newMasterElected"] and before is not None and (before.get("masterEpoch") or 0) > 0 \
                    and obs["ctx"].get("unclean") and ev["newMasterBrokerId"] not in (before.get("syncStateSet") or []):
                self.coverage.hit("unclean-election")

    def _record_role(self, obs: BrkRole) -> None:
        if obs["role"] == "MASTER":
            self.coverage.hit("became-master" if not obs.get("again") else "master-again")
            self._full_recheck = True

    def _record_sss(self, obs: BrkSss) -> None:
        self._expanding.discard(obs.get("n", ""))

    def _record_append(self, obs: BrkAppend) -> None:
        if self.world.legacy and obs["role"] != "SLAVE":
            self.legacy_appends.append((self.world.now, obs["offset"] + obs["size"]))
        if "queueId" in obs:
            self.key_queue.setdefault(obs["key"], obs["queueId"])

    def _record_seen(self, obs: ClientSeen) -> None:
        if obs["key"] not in self.seen:
            self.seen[obs["key"]] = self.world.now
            self.seen_pending.append(obs["key"])
        if "queueId" in obs:
            self.queue_seen.setdefault((obs["queueId"], obs["queueOffset"]), obs["key"])

    def _record_accept(self, obs: HaAccept) -> None:
        self.ha_opened[obs["conn"]] = self.world.now

    def _record_send(self, obs: ClientSendResult) -> None:
        self.send_status[obs["key"]] = obs["status"]
        if obs["status"] == "PUT_OK" and obs["key"] not in self.acked:
            self.acked[obs["key"]] = self.world.now
            self.acked_list.append(obs["key"])
            self.acked_pending.append(obs["key"])
            self.acked_queue_max = max(self.acked_queue_max, self.key_queue.get(obs["key"], -1))

    def _record_expand(self, obs: HaExpand) -> None:
        self.coverage.hit("sss-expand")
        node = self.world.broker(obs.get("n", ""))
        if node is not None and node.store.role == BrokerRole.SYNC_MASTER and not node.store.fenced:
            self._expanding.add(obs.get("n", ""))

    def _record_truncate(self, obs: HaTruncate) -> None:
        if obs["point"] < obs["before"]:
            self.coverage.hit("slave-truncated")
            starts = [s for _, s in obs.get("master") or []]
            if any(obs["point"] <= s < obs["before"] for s in starts) or len(starts) > 1:
                self.coverage.hit("truncation-across-epochs")

    def _record_crash(self, obs: SimCrash) -> None:
        self._full_recheck = True
        if obs["node"] in self._expanding:
            self._expanding.discard(obs["node"])
            self.coverage.hit("sss-expand-raced-crash")
        self.coverage.hit("stop" if obs.get("clean") else "crash-power-loss" if obs.get("powerLoss") else "crash")
        disk = self.world.disks.get(obs["node"])
        if disk is not None:  # what the files hold when the process is gone: recovery may only cut from it
            self.crash_end[obs["node"]] = len(disk.commitlog)

    def _record_dispatch(self, obs: StoreDispatch) -> None:
        self.dispatched_in_step.append(obs)

    def _record_truncated(self, obs: Observation) -> None:
        self._full_recheck = True

    def _record_append_timeout(self, obs: Observation) -> None:
        self.coverage.hit("lost-reply-event-applies")


def _event_json(obs: CtlApply) -> str:
    return json.dumps(obs["event"], sort_keys=True)
