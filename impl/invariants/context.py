"""What every check is handed: the cluster view, the run's history and each invariant's memory.

``Context`` is the base of ``Checker`` (``checker.py``); the checks (the area modules) read it and update only
the memory their own invariant keeps. The history (what producers saw acknowledged, what consumers read, which
queue a key went to...) is recorded by the checker before any check of the same observation runs.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from ..broker.broker import BrokerNode
from ..codes import BrokerRole
from ..observations import StoreDispatch
from ..store.commitlog import CommitLog
from .registry import BY_ID
from .view import AnyBroker, ClusterView

Fingerprint = tuple[Any, ...]


@dataclass
class Coverage:
    """Things that happened ("sometimes" properties): counts per label."""

    counts: dict[str, int] = field(default_factory=dict)

    def hit(self, label: str, n: int = 1) -> None:
        self.counts[label] = self.counts.get(label, 0) + n


@dataclass
class PairCache:
    """HA-LOG-MATCHING: how far two replicas' shared epoch is known to agree, and the generations it held for."""

    verified: int = 0
    key: tuple[int, int] = (0, 0)


@dataclass
class RolePending:
    """BRK-ROLE-LATENCY: a member that must take the role a successful election gave it by ``deadline``."""

    broker: str
    inc: int  # its process incarnation at the election
    master_epoch: int
    elected: int  # when the controller applied the election
    deadline: int


@dataclass
class ShrinkPending:
    """SYNC-SHRINK-LATENCY: a member whose HA connection its master closed, to leave the controller's SyncStateSet
    by ``deadline``."""

    master: str
    inc: int  # the master's process incarnation
    member: int  # the member's broker id
    master_epoch: int
    closed: int
    deadline: int


@dataclass
class HeldCache:
    """SYNC-CONFIRM-HELD / SYNC-DISPATCH-CONFIRMED: how far a broker's log is known to equal an SSS member's, and
    the two logs' generations it held for (a generation moves when a log loses bytes)."""

    verified: int = 0
    key: tuple[int, int] = (0, 0)


SetMembers = tuple[tuple[tuple[int, str, bytearray, int], ...], tuple[tuple[int, str, int], ...], tuple[list[int], int]]
"""The set-wide checks' view of the controller's SyncStateSet: (member id, broker, log, generation) per member, a key
of the ids, brokers and generations, and the set and its masterEpoch (for a message)."""

LogView = tuple[bytearray, list[tuple[int, int]], AnyBroker | None]
"""A broker's log bytes, its epoch entries, and its process (None while down)."""

LogKey = tuple[str, int, int, tuple[tuple[int, int], ...]]
"""HA-LOG-MATCHING's view of a log as it verified it: the broker, its files' generation, the log's length and its
epoch entries."""


class Context:
    """The view of the cluster, the history of the run, and the memory of each invariant."""

    def __init__(self, world: ClusterView, enabled: set[str] | None = None) -> None:
        self.world = world
        self.enabled = set(BY_ID) if enabled is None else enabled
        self.coverage = Coverage()
        # ------------------------------------------------------------------ history (recorded by the checker)
        self.acked: dict[str, int] = {}  # PUT_OK key -> time
        self.acked_list: list[str] = []  # the same keys, in ack order
        self.acked_pending: list[str] = []  # acknowledged since the loss checks last ran
        self.seen: dict[str, int] = {}  # key a consumer received -> time
        self.seen_pending: list[str] = []
        self.key_queue: dict[str, int] = {}  # key -> the queue id of its first append
        self.acked_queue_max = -1  # the highest queue id a PUT_OK message went to
        self.queue_seen: dict[tuple[int, int], str] = {}  # (queueId, queueOffset) -> the first key read there
        self.set_incarnation: dict[str, int] = {}  # broker set -> how many times it was built (a clean rebuilds it)
        self.apply_first = True  # the current ctl.apply is the first apply of its index (a replicated group)
        self.apply_had: tuple[tuple[int, str], str] | None = None  # what was applied first at that index, by whom
        self.apply_key: tuple[int, str] | None = None  # ... and what the current apply is: (term, event JSON)
        self.crash_end: dict[str, int] = {}  # broker -> its log end when its process went
        self.send_status: dict[str, str] = {}  # producer key -> the status of its last send result
        self.ha_opened: dict[int, int] = {}  # HA connection -> when its master side accepted it
        self.fault_times: list[int] = []  # the times of the steps a fault action ran in, in order
        self.role_pending: list[RolePending] = []  # BRK-ROLE-LATENCY: the members an election's role must reach
        self.shrink_pending: list[ShrinkPending] = []  # SYNC-SHRINK-LATENCY: closed members the SSS must drop
        self.topic_counts: dict[str, tuple[int, int]] = {}  # QUEUE-TOPIC-NO-SHRINK: broker -> its last (read, write)
        # HA-CLIENT-WAKEUP: per broker, its HA client as last seen ((incarnation, generation), HA address, when);
        # when a master last accepted a connection from it; the clients seen idle with a new address since their
        # last connection: broker -> (time first seen so, the address)
        self.ha_clients: dict[str, tuple[tuple[int, int], str | None, int]] = {}
        self.ha_accepted: dict[str, int] = {}
        self.wakeup_pending: dict[str, tuple[int, str]] = {}
        self.legacy_appends: list[tuple[int, int]] = []  # 4.x: (time, end) of each put the master wrote, in order
        # HA-LEGACY-RECONNECT: per 4.x slave, what its HA client's next connect follows (incarnation, when, the wait
        # RocketMQ's loop takes then, what happened)
        self.legacy_reconnect: dict[str, tuple[int, int, int, str]] = {}
        self.dispatched_in_step: list[StoreDispatch] = []  # the step's store.dispatch observations
        # QUEUE-CONFIRMED-DISPATCHED: per broker, its reput end's changes (incarnation, time, value), from the last one
        # at or before the settle time ago on (recorded by the checker for every broker a step touched)
        self.reput_ends: dict[str, list[tuple[int, int, int]]] = {}
        # STORE-REPUT-DRAINS: per broker, since when (incarnation, time) its reput thread has sat idle before a record
        # it could dispatch (noted by the checker for every broker a step touched)
        self.reput_idle: dict[str, tuple[int, int]] = {}
        self._expanding: set[str] = set()  # masters whose SSS expansion is in flight (coverage only)
        self._full_recheck = True  # every state check re-runs after this step (a fault, a new master, a crash...)
        # ----------------------------------------------------------------- memory of individual invariants
        self.epoch_masters: dict[tuple[str, int, int], int | None] = {}  # CTL-ONE-MASTER-PER-EPOCH
        self.ctl_epoch_marks: dict[tuple[str, int], tuple[int, int]] = {}  # CTL-EPOCH-MONO: highest (mE, sE)
        self.term_leaders: dict[int, str] = {}  # CTL-ONE-LEADER-PER-TERM: term -> its leader
        self.candidacies: set[tuple[str, int]] = set()  # CTL-VOTE-CANDIDATE: (node, term) of every candidacy
        # CTL-SCAN-REELECTS: node -> (step, the broker sets it requested an election for in that step)
        self.controller_elects: dict[str, tuple[int, set[str]]] = {}
        self.applied_results: dict[int, tuple[tuple[Any, ...], str]] = {}  # CTL-APPLY-PREFIX (jRaft results)
        self.applied_log: dict[int, tuple[tuple[int, str], str]] = {}  # index -> ((term, event), first node)
        self.broker_epochs: dict[tuple[str, int], tuple[int, int]] = {}  # BRK-EPOCH-MONO: (broker, inc) -> (mE, sE)
        self.queue_contig: dict[int, int] = {}  # CLI-NO-SKIP: queueId -> the first offset the group has not read
        self.pairs: dict[tuple[str, str, int, int], PairCache] = {}  # HA-LOG-MATCHING: verified prefix per epoch
        self.pair_fp: dict[tuple[str, str], tuple[LogKey, LogKey]] = {}  # HA-LOG-MATCHING: a pair as last verified
        self.logs_verified: tuple[LogKey, ...] | None = None  # HA-LOG-MATCHING: every log, when all pairs held
        self.shared: dict[tuple[str, str], tuple[Fingerprint, Fingerprint, list[tuple[int, int, int | None,
                                                                                  int | None]]]] = {}
        self.sss_verified: dict[int, tuple[Any, int]] = {}  # SYNC-SSS-HOLDS-ACKED: member -> (log gen, keys checked)
        self.held: dict[tuple[str, str], HeldCache] = {}  # SYNC-CONFIRM-HELD, SYNC-DISPATCH-CONFIRMED: (broker, member)
        self.held_ok: dict[tuple[str, str], tuple[int, int, tuple[tuple[int, str, int], ...]]] = {}  # ... what held
        self.held_members: tuple[int, SetMembers | None] | None = None  # ... the SSS as read at a step
        self.last_ref: tuple[str, int] | None = None  # SYNC-NO-ACK-LOSS / SEEN: the master last checked against
        self.loss_full = True  # ... it changed (or a full re-check): check every key, not only the pending ones
        # ---------------------------------------------------------------------------------------- caches
        self._id_key: tuple[Any, ...] = ()
        self._ids_step = -1
        self._ids: dict[int, str] = {}
        self._disk_key_cache: dict[str, tuple[Any, dict[str, list[int]]]] = {}
        self._ref_master: AnyBroker | None = None  # per pass (the checker resets them before each step's checks)
        self._ref_known = False
        self._logs: dict[str, LogView] | None = None

    # --------------------------------------------------------------------------------- per pass caches

    def fault_between(self, start: int, end: int) -> bool:
        """A fault action ran at a time in [start, end]."""
        times = self.fault_times
        i = bisect_left(times, start)
        return i < len(times) and times[i] <= end

    def reference_master(self) -> AnyBroker | None:
        """The master the controller has established: named by it, up, and master at the controller's mE."""
        if not self._ref_known:
            self._ref_master = self._find_reference_master()
            self._ref_known = True
        return self._ref_master

    def _find_reference_master(self) -> AnyBroker | None:
        world = self.world
        if world.legacy:  # 4.x: the configured master, once it is up again
            node = world.broker(world.brokers[0])
            return node if node is not None and node.store.role != BrokerRole.SLAVE else None
        ctl = world.controller_node()
        if ctl is None:
            return None
        info = ctl.rim.sync_state_set_info_table.get(world.broker_name)
        if info is None or info.master_broker_id is None:
            return None
        name = self.broker_by_id(info.master_broker_id)
        node = world.broker(name) if name else None
        if not isinstance(node, BrokerNode) or node.replicas.master_epoch != info.master_epoch:
            return None
        if node.store.role != BrokerRole.SYNC_MASTER:
            return None
        return node

    def logs(self) -> dict[str, LogView]:
        """Every broker's log, epoch entries and process (from its files while it is down)."""
        if self._logs is None:
            out: dict[str, LogView] = {}
            for b in self.world.brokers:
                node = self.world.broker(b)
                disk = self.world.disks[b]
                if node is not None:
                    out[b] = (disk.commitlog, node.store.epoch_cache.pairs(), node)
                else:
                    out[b] = (disk.commitlog, list(disk.epoch_file or []), None)
            self._logs = out
        return self._logs

    # ----------------------------------------------------------------------------------------- lookups

    def broker_by_id(self, broker_id: int) -> str | None:
        """The broker that holds controller id ``broker_id`` on disk."""
        world = self.world
        if self._ids_step != world.step:  # identities only change inside a step; look once per step
            self._ids_step = world.step
            disks = world.disks
            key = tuple(disks[b].broker_identity for b in world.brokers)
            if key != self._id_key:
                self._id_key = key
                self._ids = {ident[2]: b for b, ident in zip(world.brokers, key) if ident is not None}
        return self._ids.get(broker_id)

    def whole_end(self, broker: str) -> int:
        """Where the broker's whole messages end (from its files while it is down)."""
        node = self.world.broker(broker)
        if node is not None:
            return node.store.commitlog.whole_end()
        return CommitLog(self.world.disks[broker]).whole_end()

    def before_log(self, key: str, first: int) -> bool:
        """Every copy of message ``key`` the set's brokers hold lies below ``first``, the first offset of a log that
        starts past its master's: a replica that joined with an empty store and syncFromLastFile, which
        AutoSwitchHAConnection (WriteSocketService.run, a slave request offset of 0) starts at the start of its
        master's last commit-log file. It never held the earlier files: to it they are as expired files (the
        setting's trade), and the loss checks do not expect them on it."""
        world = self.world
        copies: list[int] = []
        for name in world.brokers:
            node = world.broker(name)
            copies += (node.store.commitlog.keys if node is not None else self.disk_keys(name)).get(key, [])
        return bool(copies) and max(copies) < first

    def disk_keys(self, name: str) -> dict[str, list[int]]:
        """The message keys in a down broker's files, and where each copy starts."""
        disk = self.world.disks[name]
        cached = self._disk_key_cache.get(name)
        if cached is not None and cached[0] == (disk.generation, len(disk.commitlog)):
            return cached[1]
        keys = CommitLog(disk).keys
        self._disk_key_cache[name] = ((disk.generation, len(disk.commitlog)), keys)
        return keys
