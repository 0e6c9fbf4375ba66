"""The invariant catalogue: every invariant once, with a stable id, for every layer of the kit.

Each entry gives the id (from digest §i, plus the kit's client-visible ones), a one-line statement, the
RocketMQ source place that is supposed to keep it, the name of its TLA+ operator (the id with ``_``), the
exceptions RocketMQ itself documents, and the implementation-level predicate.

Predicates come in two shapes. *Event* predicates look at one observation the core emitted (an applied
controller event, a transfer batch, a put result...) together with the cluster state at that moment.
*State* predicates look at the cluster state after a step; they only re-run when a component they read
changed in that step. ``Checker.after_step`` runs both after every simulator step and stops the run at the
first violation, with the id, the step and the state.
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .codes import MASTER_ID, BrokerRole

if TYPE_CHECKING:
    from .broker.broker import BrokerNode
    from .sim.world import Simulation


@dataclass(frozen=True)
class Invariant:
    id: str
    statement: str
    source: str
    layer: str  # "controller" | "broker" | "ha" | "sync" | "client" | "store"
    exceptions: str = ""
    on: tuple[str, ...] = ()  # observation kinds the event predicate handles
    reads: tuple[str, ...] = ()  # "controller" | "brokers" | "nameserver": state predicate re-runs when these ran

    @property
    def tla(self) -> str:
        return self.id.replace("-", "_")


CATALOGUE: list[Invariant] = [
    # ---------------------------------------------------------------------------------- controller
    Invariant("CTL-EPOCH-MONO",
              "Per broker set, masterEpoch and syncStateSetEpoch never decrease; an applied ElectMaster raises mE "
              "by 1, an elected master or an AlterSyncStateSet raises sE by 1, nothing else moves them.",
              "SyncStateInfo.updateMasterInfo / updateSyncStateSetInfo; ReplicasInfoManager.applyEvent",
              "controller",
              "cleanBrokerData of a whole set, or of every member of its SyncStateSet (the SyncStateSet entry goes "
              "and the next applyBrokerId rebuilds the set: QUIRK), restarts both epochs at 0 when the set returns",
              on=("ctl.apply",)),
    Invariant("CTL-ONE-MASTER-PER-EPOCH",
              "For each broker set and masterEpoch, the controller records at most one master.",
              "ReplicasInfoManager.handleElectMaster (the only writer of the master)", "controller",
              on=("ctl.apply",)),
    Invariant("CTL-MASTER-IN-SSS", "The controller's master is null or a member of its SyncStateSet.",
              "ReplicasInfoManager.alterSyncStateSet (check 7); handleElectMaster sets SSS := {master}",
              "controller", "CleanBrokerDataEvent with explicit ids can remove the master from the SSS",
              reads=("controller",)),
    Invariant("CTL-SSS-REGISTERED", "The SyncStateSet only holds registered broker ids.",
              "ReplicasInfoManager.alterSyncStateSet (check 6); DefaultElectPolicy candidates", "controller",
              "a first-time election takes the requester's id unchecked", reads=("controller",)),
    Invariant("CTL-ALTER-FENCED",
              "An applied AlterSyncStateSet was requested by the current master with the current masterEpoch and "
              "syncStateSetEpoch, and keeps the master.",
              "ReplicasInfoManager.alterSyncStateSet (checks 3-7)", "controller",
              "DLedger validates at the leader only; an event applied later is not re-checked", on=("ctl.apply",)),
    Invariant("CTL-CLEAN-ELECTION",
              "With unclean election off, a newly elected master was in the SyncStateSet and alive when elected.",
              "DefaultElectPolicy.tryElect; ReplicasInfoManager.electMaster (all = null when unclean is off)",
              "controller", "a first-time election (mE == 0) skips every check", on=("ctl.apply",)),
    Invariant("CTL-ID-UNIQUE", "No two brokers of a set hold the same controller id.",
              "ReplicasInfoManager.applyBrokerId (check-code CAS); ReplicasManager.register", "controller",
              "a partial clean followed by a re-apply can rebuild a set", reads=("brokers",)),
    Invariant("CTL-ONE-LEADER-PER-TERM",
              "A replicated controller group has at most one leader per term.",
              "DLedgerLeaderElector (one vote per term, a majority to lead)", "controller",
              "only with [cluster] controllers > 1", on=("ctl.elected",)),
    Invariant("CTL-APPLY-PREFIX",
              "Every controller node applies the same entries in the same order: what a node applies at an index is "
              "what every other node applied there.",
              "DLedgerEntryPusher (a follower drops a conflicting suffix, never a committed entry) + "
              "StateMachineCaller (applies committed entries in order)", "controller",
              "only with [cluster] controllers > 1", on=("ctl.apply", "ctl.result")),
    Invariant("CTL-READ-COMMITTED",
              "A controller node computes every reply on a state that includes every entry it knows committed: its "
              "apply position has reached its commit position when it validates a request.",
              "DLedgerController.EventScheduler (validates on the state machine) + StateMachineCaller (applies "
              "committed entries, possibly late)", "controller",
              "only with [cluster] controllers > 1; the DLedger flavour validates on the applied state, which may lag "
              "the commit position (F-DLEDGER-STALE-VALIDATION's family)", on=("ctl.validate",)),
    # -------------------------------------------------------------------------------------- broker
    Invariant("BRK-EPOCH-MONO",
              "Within a broker process, its masterEpoch and syncStateSetEpoch never decrease, and its role changes "
              "only for a strictly greater masterEpoch.",
              "ReplicasManager.changeBrokerRole / changeToMaster / changeToSlave / changeSyncStateSet", "broker",
              on=("brk.role", "brk.sss")),
    Invariant("BRK-SLAVE-NO-WRITE", "Only an unfenced master appends producer messages.",
              "HookUtils.checkBeforePutMessage; ReplicasManager.setFenced", "broker",
              "a deposed master that has not heard of the new epoch still writes (no lease)", on=("brk.append",)),
    Invariant("BRK-FENCED-UNTIL-RUNNING",
              "A broker appends producer messages only once its start-up has reached RUNNING: it has synced the "
              "controller's metadata, registered (its controller id applied) and taken its role from the controller.",
              "ReplicasManager.startBasicService (INITIAL -> FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE -> "
              "REGISTER_TO_CONTROLLER_DONE -> RUNNING, then setFenced(false)); BrokerController.start", "broker",
              on=("brk.append",)),
    # ------------------------------------------------------------------------------------ nameserver
    Invariant("NS-ROUTE-HIGHEST-EPOCH",
              "The master route the nameserver serves for a broker set names, among the live brokers that last "
              "registered as its master, one with the highest state version (masterEpoch).",
              "RouteInfoManager.registerBroker (a registration for a broker id held by another live address with a "
              "higher stateVersion is ignored); ReplicasManager.registerBrokerWhenRoleChange", "client",
              "a broker that never reached the nameserver makes no claim", reads=("nameserver",)),
    # ------------------------------------------------------------------------------------------ HA
    Invariant("HA-EPOCH-BOUNDARY",
              "Every transfer batch has a non-negative size and lies in one epoch of the master (it crosses no epoch "
              "boundary), and its header names an epoch entry of the master: the batch's own, or (RocketMQ builds "
              "the header after switching) the next one starting exactly at the batch's end.",
              "AutoSwitchHAConnection.transferToSlave; changeTransferEpochToNext", "ha",
              "changeToMasterWhenLastRoleIsMaster keeps connections on the old epoch (#9689, fixed by #9690 after "
              "5.3.3)", on=("ha.transfer",)),
    Invariant("HA-CONTIGUOUS", "A slave appends transferred bytes only at its own max offset (or anywhere when empty).",
              "AutoSwitchHAClient.HAClientReader (TRANSFER offset check)", "ha", on=("ha.slave-append",)),
    Invariant("HA-ACK-BOUND",
              "A slave never acks bytes it does not hold: the max offset its HA client last reported is at most its "
              "own log end.",
              "AutoSwitchHAClient.reportSlaveMaxOffset (reports messageStore.getMaxPhyOffset after "
              "HAClientReader.processReadResult appended a whole frame's body)", "ha",
              "a slave's log shrinks only in a handshake, which also resets the reported offset; a power loss "
              "restarts the process (and its client)", reads=("brokers",)),
    Invariant("HA-LOG-MATCHING",
              "If two replicas hold the same epoch entry (epoch, start), their logs are byte-identical from start to "
              "the smaller of the two ends of that epoch.",
              "one master per epoch; AutoSwitchHAClient.doTruncate; EpochFileCache.appendEntry", "ha",
              "the stale end after truncateSuffixByOffset; the #9689 quirk", reads=("brokers",)),
    Invariant("HA-TRUNCATE-PREFIX",
              "After a successful handshake the slave's log is a prefix of the log of the broker it connected to, "
              "and its truncation point is not past its own log end.",
              "EpochFileCache.findConsistentPoint + DefaultMessageStore.truncateFiles in AutoSwitchHAClient.doTruncate",
              "ha", "an empty local epoch cache truncates nothing", on=("ha.truncate", "ha.handshake-done")),
    Invariant("EPOCH-FILE-WF",
              "A broker's epoch entries have strictly increasing epochs and starts, and each entry but the last ends "
              "where the next starts.",
              "EpochFileCache.appendEntry / initEntries", "ha", reads=("brokers",)),
    Invariant("QUEUE-OFFSET-GAPLESS",
              "Per topic queue, the queue offsets the messages of a broker's log carry run 0, 1, 2, ... in log order: "
              "none reused, none skipped.",
              "CommitLog.asyncPutMessage (assignOffset / increaseOffset under the topic-queue lock); "
              "DefaultMessageStore.recoverTopicQueueTable (after recovery, truncation and changeToMaster)", "store",
              "only with [workload] queues (the default single queue has no offsets of its own)", reads=("brokers",)),
    Invariant("STORE-NO-RESURRECT",
              "Recovery never brings back bytes a broker no longer had: the log a restarted broker recovers ends at "
              "or before where its files ended when its process went.",
              "CommitLog.recoverNormally / recoverAbnormally (scan to the first invalid message) after "
              "MappedFileQueue.truncateDirtyFiles (moves the write position, leaves the bytes)", "store",
              "", reads=("brokers",)),
    Invariant("STORE-NO-SPAN-FILE",
              "No message crosses the end of a mapped file: a message that does not fit in what is left of a file "
              "(keeping 8 bytes for a filler) goes to the next file, after a filler that closes this one.",
              "CommitLog.DefaultAppendMessageCallback.doAppend (END_OF_FILE, BLANK_MAGIC_CODE) + "
              "ReputMessageService.doReput / recoverAbnormally (a filler rolls to the next file)", "store",
              "only with [sim] file_boundaries", reads=("brokers",)),
    Invariant("STORE-WHOLE-MESSAGES",
              "Every commit log is a sequence of whole, valid messages (and end-of-file fillers), except for an "
              "incomplete last one.",
              "CommitLog.checkMessageAndReturnSize; AutoSwitchHAService.truncateInvalidMsg; recovery", "store",
              reads=("brokers",)),
    # ---------------------------------------------------------------------------------------- sync
    Invariant("SYNC-ACK-ALL",
              "In allAck mode a put returns PUT_OK only when every member of the master's ack set (local ∪ remote "
              "while a proposal is in flight) has acked past the message.",
              "GroupTransferService.doWaitTransfer (ALL branch); AutoSwitchHAService.getSyncStateSet", "sync",
              "acks mean bytes in the slave's page cache, not on its disk", on=("brk.put-result",)),
    Invariant("SYNC-EXPAND-SAFE",
              "A master proposes a slave for its SyncStateSet only when the slave holds every message it has "
              "acknowledged (ack >= end of every PUT_OK message in its log).",
              "AutoSwitchHAService.maybeExpandInSyncStateSet (ack >= confirmOffset, >= epoch start)", "sync",
              on=("ha.expand",)),
    Invariant("SYNC-CONFIRM-BOUND",
              "Every message ending at or before a master's confirmOffset is whole in the log of every member of its "
              "SyncStateSet (allAck mode); a slave's confirmOffset never passes its own log end.",
              "AutoSwitchHAService.computeConfirmOffset; AutoSwitchHAClient (min(header, max))", "sync",
              "a power loss on a slave can lose page-cache bytes it had acked", reads=("brokers",)),
    Invariant("SYNC-VISIBLE-BOUND", "A broker dispatches a message to consumers only if it ends at or before its "
              "confirmOffset at that moment.",
              "ReputMessageService.getReputEndOffset / doReput", "client",
              "readUnCommitted=true; confirmOffset itself can move back (e.g. when a second member joins the SSS), "
              "so messages dispatched earlier can end past the current value", on=("store.dispatch",)),
    Invariant("SYNC-SSS-HOLDS-ACKED",
              "Every member of the controller's SyncStateSet holds every message a producer saw PUT_OK for.",
              "AutoSwitchHAService.maybeExpandInSyncStateSet + ReplicasInfoManager.alterSyncStateSet fencing", "sync",
              "as SYNC-NO-ACK-LOSS (this is what makes a clean election safe)",
              on=("client.send-result", "ctl.apply", "store.truncated"), reads=("brokers", "controller")),
    Invariant("CLI-QUEUE-POSITION-STABLE",
              "A queue position (queue id, queue offset) a consumer has read is never bound to another message: no "
              "consumer reads two messages there, and the established master appends no other one there.",
              "QUEUE-OFFSET-GAPLESS + confirmOffset (consumers read only confirmed messages, which every SSS member "
              "holds)", "client", "only with [workload] queues; a deposed master that has not heard of the new epoch "
              "still appends (no lease: BRK-SLAVE-NO-WRITE), unconfirmed, at positions the new master reuses",
              on=("client.seen", "brk.append")),
    Invariant("CLI-NO-SKIP",
              "A consumer group skips no message of a queue: when it reads at a queue offset, it has read every offset "
              "below it (reading one again is allowed).",
              "RemoteBrokerOffsetStore (commits what was consumed) + ConsumerOffsetManager + SlaveSynchronize "
              "(a slave's offsets lag the master's: a failover re-delivers, it does not skip) + "
              "ConsumerManageProcessor.queryConsumerOffset", "client", "only with [workload] queues",
              on=("client.seen",)),
    Invariant("QUEUE-ACKED-READABLE",
              "Every queue that holds an acknowledged message stays readable: the established master's topic config "
              "has more read queues than the highest queue id any PUT_OK message was written to.",
              "TopicConfigManager.updateTopicConfig (an admin grows the topic on the master) + "
              "SlaveSynchronize.syncTopicConfig (a slave copies it every 10 s) + PullMessageProcessor (a queue id "
              ">= readQueueNums is refused)", "client",
              "only with [workload] topic_config; the kit's admin only grows the topic", reads=("brokers",)),
    Invariant("SYNC-NO-ACK-LOSS",
              "Every message a producer saw PUT_OK for is in the log of the master the controller has established "
              "(after any failover).",
              "SYNC-ACK-ALL + CTL-CLEAN-ELECTION + controller SSS ⊆ ack set + SYNC-EXPAND-SAFE", "client",
              "expected to fail with allAckInSyncStateSet=false (RocketMQ's default), with unclean election, and when "
              "every ack holder loses its page cache (power loss); GAP-UNION is the prime suspect otherwise",
              on=("client.send-result", "brk.role", "store.truncated"), reads=("brokers", "controller")),
    Invariant("SYNC-SEEN-NO-LOSS",
              "Every message a consumer received is in the log of the master the controller has established.",
              "confirmOffset (min over the SSS) + consumers read only the confirmed prefix", "client",
              on=("client.seen", "brk.role", "store.truncated"), reads=("brokers", "controller")),
]

BY_ID: dict[str, Invariant] = {inv.id: inv for inv in CATALOGUE}


# ------------------------------------------------------------------------------------------ checker


@dataclass
class _PairCache:
    verified: int = 0
    key: tuple = ()


@dataclass
class Coverage:
    """Things that happened ("sometimes" properties): counts per label."""

    counts: dict[str, int] = field(default_factory=dict)

    def hit(self, label: str, n: int = 1) -> None:
        self.counts[label] = self.counts.get(label, 0) + n


class Checker:
    """Evaluates the catalogue on a ``Simulation`` after every step."""

    def __init__(self, world: Simulation, enabled: set[str] | None = None) -> None:
        self.world = world
        self.enabled = set(BY_ID) if enabled is None else enabled
        self.coverage = Coverage()
        # history
        self.acked: dict[str, int] = {}  # PUT_OK key -> time
        self.acked_list: list[str] = []  # the same keys, in ack order
        self.acked_pending: list[str] = []
        self.seen: dict[str, int] = {}
        self.seen_pending: list[str] = []
        self.epoch_masters: dict[tuple[str, int, int], int | None] = {}  # (set, incarnation, mE) -> master
        self.set_incarnation: dict[str, int] = {}
        self.ctl_epoch_marks: dict[tuple[str, int], tuple[int, int]] = {}  # (set, incarnation) -> highest (mE, sE)
        self.broker_epochs: dict[tuple[str, int], tuple[int, int]] = {}  # (broker, inc) -> (mE, sE)
        self.handshake_versions: dict[int, int] = {}
        self._pairs: dict[tuple[str, str], _PairCache] = {}
        self._full_recheck = True
        self._fingerprints: dict[str, tuple] = {}
        self._sss_verified: dict[int, tuple[Any, int]] = {}
        self._id_key: tuple = ()
        self._ids_step = -1
        self._ids: dict[int, str] = {}
        self._pair_fp: dict[tuple[str, str], tuple] = {}
        self._shared: dict[tuple[str, str], tuple[tuple, tuple, list]] = {}
        self._disk_key_cache: dict[str, tuple[Any, dict[str, list[int]]]] = {}
        self._expanding: set[str] = set()  # masters whose SSS expansion is in flight (coverage only)
        self.term_leaders: dict[int, str] = {}  # a replicated controller group: term -> its leader
        self.applied_log: dict[int, tuple[tuple[int, str], str]] = {}  # index -> ((term, event), first node)
        self.applied_results: dict[int, tuple[tuple, str]] = {}  # jRaft: index -> ((term, op, code, event), node)
        self.queue_seen: dict[tuple[int, int], str] = {}  # (queueId, queueOffset) -> key a consumer read there
        self.queue_contig: dict[int, int] = {}  # queueId -> the first offset the group has not read
        self.crash_end: dict[str, int] = {}  # broker -> its log end when its process went (STORE-NO-RESURRECT)
        self.key_queue: dict[str, int] = {}  # key -> the queue id of its first append (QUEUE-ACKED-READABLE)
        self.acked_queue_max = -1
        self._handlers: dict[str, list[Callable[[dict[str, Any]], None]]] = {}
        for kind, fn in [
            ("ctl.apply", self._on_ctl_apply), ("brk.role", self._on_brk_role), ("brk.sss", self._on_brk_sss),
            ("brk.append", self._on_brk_append), ("ha.transfer", self._on_transfer),
            ("ha.slave-append", self._on_slave_append), ("ha.handshake-done", self._on_handshake_done),
            ("brk.put-result", self._on_put_result), ("ha.expand", self._on_expand),
            ("client.seen", self._on_seen), ("client.send-result", self._on_send_result),
            ("store.dispatch", self._on_dispatch), ("client.seen", self._on_seen_queue),
            ("brk.append", self._on_append_queue),
            ("store.truncated", self._on_truncated), ("sim.crash", self._on_crash),
            ("ha.truncate", self._on_ha_truncate), ("ctl.append-timeout", self._on_append_timeout),
            ("ctl.elected", self._on_ctl_elected), ("ctl.validate", self._on_ctl_validate),
            ("ctl.result", self._on_ctl_result),
        ]:
            self._handlers.setdefault(kind, []).append(fn)

    # ------------------------------------------------------------------------------- plumbing

    def _fail(self, inv: str, message: str, **state: Any) -> None:
        if inv in self.enabled:
            self.world.fail(inv, message, state)

    def after_step(self, observations: list[dict[str, Any]]) -> None:
        for obs in observations:
            for fn in self._handlers.get(obs["k"], ()):
                fn(obs)
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
        if world.nameserver in touched or self._full_recheck:
            self._check_nameserver()
        if ran_brokers or ran_ctl or self.acked_pending or self.seen_pending:
            master = self.reference_master()
            self._check_no_loss(master)
            if "SYNC-SSS-HOLDS-ACKED" in self.enabled:
                self._check_sss_holds_acked()
            if self.acked_queue_max >= 0:
                self._check_queues_readable(master)
        self._full_recheck = False

    def _check_nameserver(self) -> None:
        world = self.world
        ns = world.nodes.get(world.nameserver)
        claims_by_set = getattr(ns, "master_claims", None) if world.up.get(world.nameserver) else None
        if not claims_by_set:
            return
        for name, claims in claims_by_set.items():
            route = ns.broker_addrs.get(name, {}).get(MASTER_ID)  # type: ignore[union-attr]
            if route is None or route not in ns.live or not claims:  # type: ignore[union-attr]
                continue
            served = ns.live[route][0]  # type: ignore[union-attr]
            best = max(claims, key=lambda a: (claims[a], a))
            if claims[best] > served:
                self._fail("NS-ROUTE-HIGHEST-EPOCH", f"the nameserver routes {name}'s master to {route} (stateVersion "
                           f"{served}) while {best} registered as master with stateVersion {claims[best]}",
                           route=route, claims=dict(claims))
                return

    # ------------------------------------------------------------------------- controller rules

    def _on_ctl_validate(self, obs: dict[str, Any]) -> None:
        if obs["applied"] < obs["commit"]:
            self._fail("CTL-READ-COMMITTED", f"{obs['n']} validated {obs['op']} on a state with {obs['applied']} "
                       f"entries applied of {obs['commit']} committed", obs=obs)

    def _on_ctl_result(self, obs: dict[str, Any]) -> None:
        """A JRaft node's answer to a logged request: every node must compute the same one at an index."""
        key = (obs["term"], obs["op"], obs["code"], json.dumps(obs["event"], sort_keys=True))
        had = self.applied_results.setdefault(obs["index"], (key, obs["node"]))
        if had[0] != key:
            self._fail("CTL-APPLY-PREFIX", f"{obs['node']} computed at index {obs['index']} {obs['op']} -> code "
                       f"{obs['code']}, event {key[3]}; {had[1]} computed code {had[0][2]}, event "
                       f"{had[0][3]} from the same entry", obs=obs)

    def _on_ctl_elected(self, obs: dict[str, Any]) -> None:
        had = self.term_leaders.setdefault(obs["term"], obs["n"])
        if had != obs["n"]:
            self._fail("CTL-ONE-LEADER-PER-TERM", f"{obs['n']} and {had} both lead term {obs['term']}", obs=obs)

    def _on_ctl_apply(self, obs: dict[str, Any]) -> None:
        if "node" in obs:  # a replicated group: every node applies every entry; the first apply is checked below
            key = (obs["term"], json.dumps(obs["event"], sort_keys=True))
            had = self.applied_log.setdefault(obs["index"], (key, obs["node"]))
            if had[0] != key:
                self._fail("CTL-APPLY-PREFIX", f"{obs['node']} applied at index {obs['index']} an entry (term "
                           f"{key[0]}) other than the one {had[1]} applied there (term {had[0][0]})", obs=obs)
                return
            if had[1] != obs["node"]:
                return
        ev, ctx, before, after = obs["event"], obs["ctx"], obs["before"], obs["after"]
        name = ev.get("brokerName", "")
        kind = ev["type"]
        if before is None or before.get("masterEpoch") is None:
            self.set_incarnation[name] = self.set_incarnation.get(name, 0) + 1
        inc = self.set_incarnation.get(name, 0)
        if before is not None and after is not None and before.get("masterEpoch") is not None \
                and after.get("masterEpoch") is not None:
            dme = after["masterEpoch"] - before["masterEpoch"]
            dse = after["syncStateSetEpoch"] - before["syncStateSetEpoch"]
            want_me = 1 if kind == "ElectMaster" else 0
            want_se = 1 if (kind == "ElectMaster" and ev["newMasterElected"]) or kind == "AlterSyncStateSet" else 0
            if dme != want_me or dse != want_se:
                self._fail("CTL-EPOCH-MONO",
                           f"{kind} moved mE by {dme} and sE by {dse} (expected {want_me}, {want_se})",
                           event=ev, before=before, after=after)
        if kind == "ElectMaster" and after is not None and after.get("masterEpoch") is not None:
            key = (name, inc, after["masterEpoch"])
            master = after["master"]
            if key in self.epoch_masters and self.epoch_masters[key] != master:
                self._fail("CTL-ONE-MASTER-PER-EPOCH",
                           f"masterEpoch {after['masterEpoch']} of {name} had master "
                           f"{self.epoch_masters[key]}, now {master}",
                           event=ev, after=after)
            self.epoch_masters[key] = master
            self.coverage.hit("election" if ev["newMasterElected"] else "election-none")
            if ev["newMasterElected"] and before is not None and before.get("masterEpoch", 0) > 0:
                new = ev["newMasterBrokerId"]
                if not ctx.get("unclean"):
                    alive = ctx.get("alive", {}).get(str(new))
                    old_sss = before.get("syncStateSet") or []
                    if new not in old_sss or alive is False:
                        why = f"outside the SSS {before.get('syncStateSet')}" if new not in old_sss else "not alive"
                        self._fail("CTL-CLEAN-ELECTION", f"broker {new} was elected while {why}",
                                   event=ev, ctx=ctx, before=before)
                elif new not in (before.get("syncStateSet") or []):
                    self.coverage.hit("unclean-election")
        if kind == "AlterSyncStateSet" and before is not None:
            b = before
            problems = []
            if b.get("master") != ctx.get("masterBrokerId"):
                problems.append(f"requested by {ctx.get('masterBrokerId')} but master is {b.get('master')}")
            if b.get("masterEpoch") != ctx.get("masterEpoch"):
                problems.append(f"request mE {ctx.get('masterEpoch')} != controller mE {b.get('masterEpoch')}")
            if b.get("syncStateSetEpoch") != ctx.get("syncStateSetEpoch"):
                problems.append(f"request sE {ctx.get('syncStateSetEpoch')} != "
                                f"controller sE {b.get('syncStateSetEpoch')}")
            if b.get("master") not in ev["newSyncStateSet"]:
                problems.append(f"new SSS {ev['newSyncStateSet']} drops master {b.get('master')}")
            if problems:
                self._fail("CTL-ALTER-FENCED", "; ".join(problems), event=ev, ctx=ctx, before=before)

    def _on_append_timeout(self, obs: dict[str, Any]) -> None:
        self.coverage.hit("lost-reply-event-applies")

    def _brokers_changed(self, touched: set[str]) -> bool:
        """Re-run broker state predicates only when a broker's checked state actually moved."""
        changed = self._full_recheck
        for b in self.world.brokers:
            if b not in touched and not self._full_recheck:
                continue
            node = self.world.broker(b)
            disk = self.world.disks[b]
            if node is None:
                fp: tuple = (None, disk.generation, len(disk.commitlog))
            else:
                st = node.store
                ha = getattr(node, "ha", None)
                fp = (self.world.inc[b], st.commitlog.version, disk.generation, st.epoch_cache.version,
                      st.confirm_offset, st.role, st.fenced, tuple(sorted(ha.sync_state_set)) if ha else (),
                      disk.broker_identity)
            if self._fingerprints.get(b) != fp:
                self._fingerprints[b] = fp
                changed = True
        return changed

    def _check_controller_state(self) -> None:
        ctl = self.world.controller_node()
        if ctl is None:
            return
        rim = ctl.rim
        for name, info in rim.sync_state_set_info_table.items():
            mark_key = (name, self.set_incarnation.get(name, 0))
            mark = self.ctl_epoch_marks.get(mark_key, (0, 0))
            if info.master_epoch < mark[0] or info.sync_state_set_epoch < mark[1]:
                self._fail("CTL-EPOCH-MONO", f"{name} is at mE {info.master_epoch} sE {info.sync_state_set_epoch} "
                           f"after mE {mark[0]} sE {mark[1]}", controller=rim.snapshot())
                return
            self.ctl_epoch_marks[mark_key] = (info.master_epoch, info.sync_state_set_epoch)
            if info.master_broker_id is not None and info.master_broker_id not in info.sync_state_set:
                self._fail("CTL-MASTER-IN-SSS",
                           f"master {info.master_broker_id} not in SSS {sorted(info.sync_state_set)}",
                           controller=rim.snapshot())
                return
            replicas = rim.replica_info_table.get(name)
            registered = set(replicas.broker_id_info) if replicas else set()
            if not info.sync_state_set <= registered:
                self._fail("CTL-SSS-REGISTERED", f"SSS {sorted(info.sync_state_set)} has unregistered ids "
                           f"(registered {sorted(registered)})", controller=rim.snapshot())
                return

    # ----------------------------------------------------------------------------- broker rules

    def _on_brk_role(self, obs: dict[str, Any]) -> None:
        name = obs["n"]
        key = (name, self.world.inc[name])
        held, se = self.broker_epochs.get(key, (0, 0))
        if obs["masterEpoch"] <= max(obs["previous"], held):  # the broker's own word, and what it held before
            self._fail("BRK-EPOCH-MONO", f"{name} changed role to {obs['role']} at mE {obs['masterEpoch']} "
                       f"from mE {max(obs['previous'], held)}", obs=obs)
        self.broker_epochs[key] = (obs["masterEpoch"], se)
        if obs["role"] == "MASTER":
            self.coverage.hit("became-master" if not obs.get("again") else "master-again")
            self._full_recheck = True

    def _on_brk_sss(self, obs: dict[str, Any]) -> None:
        name = obs["n"]
        key = (name, self.world.inc[name])
        me, se = self.broker_epochs.get(key, (0, 0))
        if obs["syncStateSetEpoch"] <= se:
            self._fail("BRK-EPOCH-MONO", f"{name} adopted SSS epoch {obs['syncStateSetEpoch']} after {se}", obs=obs)
        self.broker_epochs[key] = (me, obs["syncStateSetEpoch"])
        self._expanding.discard(name)

    def _on_brk_append(self, obs: dict[str, Any]) -> None:
        if obs["role"] == BrokerRole.SLAVE.value or obs["fenced"]:
            self._fail("BRK-SLAVE-NO-WRITE", f"{obs['n']} appended {obs['key']} as {obs['role']} "
                       f"(fenced={obs['fenced']})", obs=obs)
            return
        replicas = getattr(self.world.broker(obs["n"]), "replicas", None)
        if replicas is not None and replicas.state.value != "RUNNING":
            self._fail("BRK-FENCED-UNTIL-RUNNING", f"{obs['n']} appended {obs['key']} while its start-up was at "
                       f"{replicas.state.value}", obs=obs)

    def _on_crash(self, obs: dict[str, Any]) -> None:
        self._full_recheck = True
        if obs["node"] in self._expanding:
            self._expanding.discard(obs["node"])
            self.coverage.hit("sss-expand-raced-crash")
        self.coverage.hit("stop" if obs.get("clean") else "crash-power-loss" if obs.get("powerLoss") else "crash")
        disk = self.world.disks.get(obs["node"])
        if disk is not None:  # what the files hold when the process is gone: recovery may only cut from it
            self.crash_end[obs["node"]] = len(disk.commitlog)

    def _on_truncated(self, obs: dict[str, Any]) -> None:
        self._full_recheck = True

    def _on_ha_truncate(self, obs: dict[str, Any]) -> None:
        if obs["point"] > obs["before"]:  # findConsistentPoint takes min(local end, master end): never past the log
            self._fail("HA-TRUNCATE-PREFIX", f"{obs['n']} truncated to {obs['point']}, past its own log end "
                       f"{obs['before']}: it will report bytes it does not hold", obs=obs)
            return
        if obs["point"] < obs["before"]:
            self.coverage.hit("slave-truncated")
            entries = obs.get("master") or []
            starts = [s for _, s in entries]
            if any(obs["point"] <= s < obs["before"] for s in starts) or len(starts) > 1:
                self.coverage.hit("truncation-across-epochs")

    # --------------------------------------------------------------------------------- HA rules

    def _on_transfer(self, obs: dict[str, Any]) -> None:
        offset, size = obs["offset"], obs["size"]
        if size < 0:  # transferToSlave: size = epoch end - nextTransferFromWhere, with the end below the position
            self._fail("HA-EPOCH-BOUNDARY", f"batch [{offset}, {offset + size}) has a negative size ({size}): it lies "
                       f"in no epoch of the master (header epoch {obs['epoch']}, start {obs['start']})", obs=obs)
            return
        if obs["epoch"] is None:
            return
        entries = obs["entries"]
        starts = [s for _, s in entries]
        idx = bisect.bisect_right(starts, offset) - 1
        if idx < 0:
            self._fail("HA-EPOCH-BOUNDARY", f"batch at {offset} precedes every epoch of the master", obs=obs)
            return
        epoch_end = starts[idx + 1] if idx + 1 < len(starts) else None
        end = offset + size
        if epoch_end is not None and end > epoch_end:
            self._fail("HA-EPOCH-BOUNDARY", f"batch [{offset}, {end}) labelled epoch {obs['epoch']} crosses the start "
                       f"{epoch_end} of epoch {entries[idx + 1][0]}", obs=obs)
            return
        own = tuple(entries[idx])
        nxt = tuple(entries[idx + 1]) if idx + 1 < len(entries) else None
        label = (obs["epoch"], obs["start"])
        if label != own and not (nxt is not None and label == nxt and nxt[1] == end):
            self._fail("HA-EPOCH-BOUNDARY", f"batch [{offset}, {end}) lies in epoch {own} but its header says {label}",
                       obs=obs)

    def _on_slave_append(self, obs: dict[str, Any]) -> None:
        if obs["max"] != 0 and obs["offset"] != obs["max"]:
            self._fail("HA-CONTIGUOUS", f"{obs['n']} appended bytes for offset {obs['offset']} at its end {obs['max']}",
                       obs=obs)

    def _on_handshake_done(self, obs: dict[str, Any]) -> None:
        world = self.world
        slave = world.broker(obs["n"])
        stream = world.streams.get(obs["conn"])
        if slave is None or stream is None:
            return
        master = world.broker(stream.b)
        if master is None:
            return
        n = slave.store.max_phy_offset
        mdata = master.store.commitlog.data
        if len(mdata) < n or mdata[:n] != slave.store.commitlog.data[:n]:
            diverge = next((i for i in range(min(n, len(mdata))) if mdata[i] != slave.store.commitlog.data[i]),
                           min(n, len(mdata)))
            self._fail("HA-TRUNCATE-PREFIX", f"after the handshake {obs['n']} holds {n} bytes but they differ from "
                       f"{stream.b}'s log at byte {diverge} (its log has {len(mdata)})", obs=obs)

    def _logs(self) -> dict[str, tuple[bytearray, list[tuple[int, int]], Any]]:
        out = {}
        for b in self.world.brokers:
            node = self.world.broker(b)
            disk = self.world.disks[b]
            if node is not None:
                entries = node.store.epoch_cache.pairs()
                out[b] = (disk.commitlog, entries, node)
            else:
                out[b] = (disk.commitlog, list(disk.epoch_file or []), None)
        return out

    def _check_broker_state(self) -> None:
        world = self.world
        logs = self._logs()
        ids: dict[int, str] = {}
        for b in world.brokers:
            ident = world.disks[b].broker_identity
            if ident is not None:
                if ident[2] in ids:
                    self._fail("CTL-ID-UNIQUE", f"{ids[ident[2]]} and {b} both hold controller id {ident[2]}")
                    return
                ids[ident[2]] = b
        for b, (_, entries, node) in logs.items():
            for (e1, s1), (e2, s2) in itertools.pairwise(entries):
                if not (e1 < e2 and s1 < s2):
                    self._fail("EPOCH-FILE-WF", f"{b} has epoch entries {entries}", broker=b)
                    return
            if node is not None:
                mem = node.store.epoch_cache._map
                vals = list(mem.values())
                for x, y in itertools.pairwise(vals):
                    if x.end_offset != y.start_offset:
                        self._fail("EPOCH-FILE-WF", f"{b}: entry {x.to_list()} does not end where {y.to_list()} starts",
                                   broker=b)
                        return
                spans = node.store.commitlog.spans
                if spans and node.store.commitlog.file_size:
                    pos, size = spans[0]
                    self._fail("STORE-NO-SPAN-FILE", f"{b} holds a {size}-byte record at {pos} that crosses the end "
                               f"of its {node.store.commitlog.file_size}-byte mapped file", broker=b)
                    return
                if b in self.crash_end and self.world.inc.get(b, 0) > 0:
                    was = self.crash_end.pop(b)
                    if node.store.max_phy_offset > was:
                        self._fail("STORE-NO-RESURRECT", f"{b} recovered a log ending at {node.store.max_phy_offset}, "
                                   f"past {was} where it ended when its process went", broker=b)
                        return
                client = getattr(getattr(node, "ha", None), "client", None)
                reported = getattr(client, "current_reported_offset", -1)
                if client is not None and client.conn is not None and reported > node.store.max_phy_offset:
                    self._fail("HA-ACK-BOUND", f"{b} reported offset {reported} to its master but its log ends at "
                               f"{node.store.max_phy_offset}", broker=b)
                    return
                log = node.store.commitlog
                if log.queue_anomalies:
                    pos, qid, qoff, expected = log.queue_anomalies[0]
                    self._fail("QUEUE-OFFSET-GAPLESS", f"{b} holds at {pos} a message of queue {qid} with queue offset "
                               f"{qoff} where {expected} was next", broker=b)
                    return
                if log.torn:
                    self._fail("STORE-WHOLE-MESSAGES", f"{b} holds bytes at {log.torn[0]} that are not a message, "
                               f"followed by more data (log end {log.max_offset})", broker=b, torn=log.torn[:5])
                    return
        self._check_log_matching(logs)
        self._check_confirm_bound()

    def _check_log_matching(self, logs: dict[str, tuple[bytearray, list[tuple[int, int]], Any]]) -> None:
        names = sorted(logs)
        disks = self.world.disks
        for i, a in enumerate(names):
            da, ea, _ = logs[a]
            for bname in names[i + 1:]:
                db, eb, _ = logs[bname]
                fp = (disks[a].generation, len(da), tuple(ea), disks[bname].generation, len(db), tuple(eb))
                if self._pair_fp.get((a, bname)) == fp:
                    continue  # neither log nor epoch list moved since this pair was last verified
                self._pair_fp[(a, bname)] = fp
                shared = self._shared_epochs(a, bname, fp[2], fp[5])
                if not shared:
                    continue
                gens = (disks[a].generation, disks[bname].generation)
                la, lb = len(da), len(db)
                for epoch, start, next_a, next_b in shared:
                    # an epoch ends where the next one starts, or at the log end if that comes first (a power loss
                    # or a truncation can leave the epoch file naming a start past the log)
                    end_a = la if next_a is None else min(next_a, la)
                    end_b = lb if next_b is None else min(next_b, lb)
                    hi = min(end_a, end_b)
                    ckey = (a, bname, epoch, start)
                    cached = self._pairs.get(ckey)
                    lo = start
                    if cached is not None and cached.key == gens:
                        lo = max(start, min(cached.verified, hi))
                    if hi > lo and da[lo:hi] != db[lo:hi]:
                        at = next(j for j in range(lo, hi) if da[j] != db[j])
                        self._pair_fp.pop((a, bname), None)
                        self._fail("HA-LOG-MATCHING", f"{a} and {bname} share epoch {epoch} from {start} but differ at "
                                   f"byte {at} (epoch ends {end_a} / {end_b})", entries={a: ea, bname: eb})
                        return
                    self._pairs[ckey] = _PairCache(max(hi, lo), gens)

    def _shared_epochs(self, a: str, b: str, ea: tuple, eb: tuple) -> list[tuple[int, int, int | None, int | None]]:
        """The (epoch, start) entries two epoch lists share, in order, each with the start of the entry after it
        on either side (None: the epoch runs to the log end). Cached per pair until either list changes."""
        cached = self._shared.get((a, b))
        if cached is not None and cached[0] == ea and cached[1] == eb:
            return cached[2]
        next_a = _next_starts(ea)
        next_b = _next_starts(eb)
        shared = [(e, st, next_a[e], next_b[e]) for e, st in sorted(set(ea) & set(eb))]
        self._shared[(a, b)] = (ea, eb, shared)
        return shared

    def _check_confirm_bound(self) -> None:
        world = self.world
        for b in world.brokers:
            node = world.broker(b)
            if node is None or not hasattr(node, "ha"):
                continue
            store = node.store
            if store.role == BrokerRole.SLAVE:
                if store.confirm_offset > store.max_phy_offset:
                    self._fail("SYNC-CONFIRM-BOUND", f"slave {b} has confirmOffset {store.confirm_offset} past its "
                               f"log end {store.max_phy_offset}", broker=node.status())
                    return
                continue
            if store.fenced or not world.cfg.store.all_ack_in_sync_state_set:
                continue
            local = node.ha.sync_state_set
            if len(local) <= 1:
                continue
            confirm = store.get_confirm_offset_directly()
            ends = store.commitlog.ends
            k = bisect.bisect_right(ends, confirm)
            if k == 0:
                continue
            need = ends[k - 1]
            for member in sorted(local):
                if member == node.replicas.broker_controller_id:
                    continue
                holder = self._broker_by_id(member)
                if holder is None:
                    continue
                whole = self._whole_end(holder)
                if whole < need:
                    self._fail("SYNC-CONFIRM-BOUND",
                               f"master {b} confirms up to {confirm} (messages to {need}) but SSS "
                               f"member {member} ({holder}) holds whole messages only to {whole}",
                               master=node.status(), member=holder)
                    return

    def _broker_by_id(self, broker_id: int) -> str | None:
        world = self.world
        if self._ids_step != world.step:  # identities only change inside a step; look once per step
            self._ids_step = world.step
            disks = world.disks
            key = tuple(disks[b].broker_identity for b in world.brokers)
            if key != self._id_key:
                self._id_key = key
                self._ids = {ident[2]: b for b, ident in zip(world.brokers, key) if ident is not None}
        return self._ids.get(broker_id)

    def _whole_end(self, broker: str) -> int:
        node = self.world.broker(broker)
        if node is not None:
            return node.store.commitlog.whole_end()
        from .store.commitlog import CommitLog

        return CommitLog(self.world.disks[broker]).whole_end()

    # ------------------------------------------------------------------------------- sync rules

    def _on_put_result(self, obs: dict[str, Any]) -> None:
        ack = obs.get("ack")
        if obs["status"] != "PUT_OK" or ack is None:
            return
        world = self.world
        node = world.broker(obs["n"])
        if node is None:
            return
        self_id = node.replicas.broker_controller_id
        members = set(ack["local"]) | (set(ack["remote"]) if ack["inFlight"] else set())
        if len(members) <= 1:
            return
        end = obs.get("end")
        if end is None:
            return
        best: dict[int, int] = {}
        for sid, off in ack["acks"]:
            best[sid] = max(best.get(sid, -1), off)
        missing = [m for m in sorted(members) if m != self_id and best.get(m, -1) < end]
        if missing:
            self._fail("SYNC-ACK-ALL",
                       f"{obs['n']} acked {obs['key']} (end {end}) though SSS members {missing} had not "
                       f"acked it (ack set {sorted(members)}, acks {ack['acks']})", obs=obs)

    def _on_expand(self, obs: dict[str, Any]) -> None:
        world = self.world
        node = world.broker(obs["n"])
        self.coverage.hit("sss-expand")
        if node is None or node.store.role != BrokerRole.SYNC_MASTER or node.store.fenced:
            return  # every broker accepts HA connections; only a master's proposal can reach the controller
        self._expanding.add(obs["n"])
        log = node.store.commitlog
        need = 0
        for key in self.acked:
            offsets = log.keys.get(key)
            if offsets:  # the first copy is the one that had to be acked
                i = bisect.bisect_left(log.ends, offsets[0] + 1)
                need = max(need, log.ends[i])
        if obs["ack"] < need:
            self._fail("SYNC-EXPAND-SAFE", f"{obs['n']} proposes slave {obs['slave']} with ack {obs['ack']} but has "
                       f"acknowledged messages up to {need} (confirmOffset it saw: {obs['confirm']})", obs=obs)

    def _on_dispatch(self, obs: dict[str, Any]) -> None:
        if obs["upto"] > obs["confirm"]:
            self._fail("SYNC-VISIBLE-BOUND", f"{obs['n']} dispatched messages up to {obs['upto']} with confirmOffset "
                       f"{obs['confirm']}", obs=obs)

    def _on_seen_queue(self, obs: dict[str, Any]) -> None:
        if "queueId" not in obs:
            return
        pos = (obs["queueId"], obs["queueOffset"])
        contig = self.queue_contig.get(pos[0], 0)
        if pos[1] > contig:
            self._fail("CLI-NO-SKIP", f"the consumer read queue {pos[0]} at offset {pos[1]} but never read offset "
                       f"{contig}", obs=obs)
        elif pos[1] == contig:
            while (pos[0], contig) in self.queue_seen or contig == pos[1]:
                contig += 1
            self.queue_contig[pos[0]] = contig
        had = self.queue_seen.setdefault(pos, obs["key"])
        if had != obs["key"]:
            self._fail("CLI-QUEUE-POSITION-STABLE", f"a consumer read {obs['key']} at queue {pos[0]} offset {pos[1]}, "
                       f"where it had read {had}", obs=obs)

    def _on_append_queue(self, obs: dict[str, Any]) -> None:
        if "queueId" not in obs:
            return
        self.key_queue.setdefault(obs["key"], obs["queueId"])
        had = self.queue_seen.get((obs["queueId"], obs["queueOffset"]))
        if had is None or had == obs["key"]:
            return
        master = self.reference_master()  # a deposed master that has not heard of the new epoch still writes
        if master is not None and master.name == obs["n"]:
            self._fail("CLI-QUEUE-POSITION-STABLE", f"{obs['n']} appended {obs['key']} at queue {obs['queueId']} "
                       f"offset {obs['queueOffset']}, where a consumer had read {had}", obs=obs)

    def _on_seen(self, obs: dict[str, Any]) -> None:
        if obs["key"] not in self.seen:
            self.seen[obs["key"]] = self.world.now
            self.seen_pending.append(obs["key"])

    def _on_send_result(self, obs: dict[str, Any]) -> None:
        if obs["status"] == "PUT_OK" and obs["key"] not in self.acked:
            self.acked[obs["key"]] = self.world.now
            self.acked_list.append(obs["key"])
            self.acked_pending.append(obs["key"])
            self.acked_queue_max = max(self.acked_queue_max, self.key_queue.get(obs["key"], -1))

    def reference_master(self) -> BrokerNode | None:
        """The master the controller has established: named by it, up, and master at the controller's mE."""
        world = self.world
        if world.cfg.cluster.mode == "legacy":  # 4.x: the configured master, once it is up again
            node = world.broker(world.brokers[0])
            return node if node is not None and node.store.role != BrokerRole.SLAVE else None  # type: ignore[return-value]
        ctl = world.controller_node()
        disk_state = ctl.rim if ctl is not None else None
        if disk_state is None:
            return None
        info = disk_state.sync_state_set_info_table.get(world.cfg.broker.broker_name)
        if info is None or info.master_broker_id is None:
            return None
        name = self._broker_by_id(info.master_broker_id)
        node = world.broker(name) if name else None
        if node is None or node.replicas.master_epoch != info.master_epoch:
            return None
        if node.store.role != BrokerRole.SYNC_MASTER:
            return None
        return node

    def _check_no_loss(self, master: BrokerNode | None) -> None:
        if master is None:
            return
        epoch = master.replicas.master_epoch if hasattr(master, "replicas") else 0
        full = self._full_recheck or getattr(self, "_last_ref", None) != (master.name, epoch)
        self._last_ref = (master.name, epoch)
        keys = master.store.commitlog.keys
        acked = list(self.acked) if full else self.acked_pending
        for key in acked:
            if key not in keys:
                self._fail("SYNC-NO-ACK-LOSS", f"{key} was acknowledged PUT_OK but master {master.name} "
                           f"(mE {epoch}) does not have it", master=master.status(), key=key)
                return
        seen = list(self.seen) if full else self.seen_pending
        for key in seen:
            if key not in keys:
                self._fail("SYNC-SEEN-NO-LOSS", f"{key} was delivered to a consumer but master {master.name} "
                           f"(mE {epoch}) does not have it", master=master.status(), key=key)
                return
        self.acked_pending = []
        self.seen_pending = []

    def _check_queues_readable(self, master: BrokerNode | None) -> None:
        topics = getattr(master, "topics", None)
        if master is None or topics is None or topics.read > self.acked_queue_max:
            return
        what = f"serves {topics.read} read queues" if topics.topic is not None else \
            "has no config for the topic (TOPIC_NOT_EXIST)"
        self._fail("QUEUE-ACKED-READABLE", f"master {master.name} (mE {master.replicas.master_epoch}) {what}, but "
                   f"a message was acknowledged PUT_OK in queue {self.acked_queue_max}: consumers cannot read that "
                   f"queue", master=master.status(), topic=topics.to_wire())

    def _check_sss_holds_acked(self) -> None:
        world = self.world
        ctl = world.controller_node()
        if ctl is None or not self.acked:
            return
        info = ctl.rim.sync_state_set_info_table.get(world.cfg.broker.broker_name)
        if info is None:
            return
        acked = self.acked_list
        for member in sorted(info.sync_state_set):
            name = self._broker_by_id(member)
            if name is None:
                continue
            node = world.broker(name)
            disk = world.disks[name]
            if node is not None:
                keys, gen = node.store.commitlog.keys, (world.inc[name], disk.generation)
            else:
                keys, gen = self._disk_keys(name), (None, disk.generation, len(disk.commitlog))
            start = 0
            cached = self._sss_verified.get(member)
            if cached is not None and cached[0] == gen:
                start = cached[1]
                if start == len(acked):
                    continue
            for key in acked[start:]:
                if key not in keys:
                    self._fail("SYNC-SSS-HOLDS-ACKED", f"SSS member {member} ({name}) lacks {key}, which was "
                               f"acknowledged PUT_OK (controller SSS {sorted(info.sync_state_set)}, "
                               f"mE {info.master_epoch})",
                               key=key, member=name, broker=node.status() if node is not None else None)
                    return
            self._sss_verified[member] = (gen, len(acked))

    def _disk_keys(self, name: str) -> dict[str, list[int]]:
        from .store.commitlog import CommitLog

        disk = self.world.disks[name]
        cached = self._disk_key_cache.get(name)
        if cached is not None and cached[0] == (disk.generation, len(disk.commitlog)):
            return cached[1]
        keys = CommitLog(disk).keys
        self._disk_key_cache[name] = ((disk.generation, len(disk.commitlog)), keys)
        return keys


def _next_starts(entries: tuple[tuple[int, int], ...]) -> dict[int, int | None]:
    """Each epoch's next entry start, or None for the last one (whose end is the log end)."""
    return {e: (entries[i + 1][1] if i + 1 < len(entries) else None) for i, (e, _) in enumerate(entries)}


def catalogue_rows() -> list[dict[str, str]]:
    """The catalogue as plain rows (``rmqha invariants --json`` and the generated docs)."""
    return [{"id": i.id, "statement": i.statement, "source": i.source, "layer": i.layer, "tla": i.tla,
             "exceptions": i.exceptions} for i in CATALOGUE]
