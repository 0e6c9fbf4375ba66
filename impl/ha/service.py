"""AutoSwitchHAService + GroupTransferService: the master's SyncStateSet, confirmOffset and put acks.

Everything that decides which replicas count, and when a put is acknowledged, lives here.

Rules (``S/ha/autoswitch/AutoSwitchHAService.java``: ``changeToMaster``, ``maybeExpandInSyncStateSet``,
``computeConfirmOffset``; ``CommitLog.GroupTransferService.doWaitTransfer``):

* Views of the SSS: *local* is the last set the controller confirmed; *remote* is the latest proposal in
  flight; while one is in flight (``isSynchronizingSyncStateSet``) the *union* local ∪ remote is what acks
  and confirmOffset use (fix of #5663), and ``inSyncReplicasNums`` is max(|local|, |remote|). A proposal
  overwrites remote (GAP-UNION: an earlier proposal the controller accepted can drop out of the union).
  Only ``setSyncStateSet`` (a controller-confirmed set) clears the flag.
* Expand, on each ack: the slave is not in local, its ack >= confirmOffset and >= the start of the current
  epoch: propose local ∪ {slave} and notify the listener (``doReportSyncStateSetChanged``) on a single
  thread. Shrink, on the periodic check: drop members not caught up for ``haMaxTimeSlaveNotCatchup`` and
  members that never connected. Disconnect: propose local ∖ {slave} at once (5.3.3: the local set waits for the
  controller's answer; 5.4.0+, switch local-shrink-on-disconnect: the local set takes it at once too).
* confirmOffset = min(max, acks > 0 of connected members of the union); a member without a connection
  freezes it (#6662); acks of 0 or -1 are ignored (#6728).
* Acks (ALL mode): |union| <= 1 acks at once; otherwise 1 (the master) + connections whose slave is in the
  union with ack >= the message end must reach |union|, within ``slaveTimeout`` (3 s), else
  FLUSH_SLAVE_TIMEOUT. Numeric mode counts any connection. Connections are counted, not slaves.
* Role switches: ``changeToMaster`` (epoch >= lastEpoch) drops every connection and the client, cuts a
  broken tail, resets confirmOffset, drops epochs from that cut and from the new epoch on, appends
  (epoch, max) and waits for dispatch; ``changeToSlave`` opens a fresh client with no HA address yet;
  ``changeToMasterWhenLastRoleIsMaster`` only appends the epoch (QUIRK #9689: connections keep
  transferring under the old epoch). Both appends fail when the last epoch holds no bytes (QUIRK-EPOCH-EQ,
  finding F-EPOCH-EQ-SPLICE); with its fix the empty last entry is replaced.

Theory: a put acked in ALL mode is on every member of the union; the controller's SSS is kept a subset of
that union, so any broker the controller may elect holds every acked message (SYNC-NO-ACK-LOSS).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import bugs as B
from ..codes import BrokerRole, PutMessageStatus, to_int32
from ..config import MessageStoreConfig
from ..observations import HaEpochAppend
from ..store.commitlog import HAView, MessageStore
from ..store.epoch_cache import EpochEntry
from ..store.message import check
from .client import AutoSwitchHAClient
from .connection import AutoSwitchHAConnection

if TYPE_CHECKING:
    from ..broker.broker import BrokerNode


@dataclass
class GroupCommitRequest:
    """``CommitLog.GroupCommitRequest``: wait for ``ack_nums`` replicas to reach ``next_offset``."""

    next_offset: int
    deadline: int
    ack_nums: int
    done: Callable[[PutMessageStatus, dict[str, Any]], None]
    finished: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    timer: int | None = None


class AutoSwitchHAService(HAView):
    def __init__(self, host: BrokerNode, store: MessageStore, store_cfg: MessageStoreConfig,
                 bugs: frozenset[str]) -> None:
        self.host = host
        self.store = store
        self.store_cfg = store_cfg
        self.bugs = bugs
        self.epoch_cache = store.epoch_cache
        self.sync_state_set: set[int] = set()
        self.remote_sync_state_set: set[int] = set()
        self.is_synchronizing_sync_state_set = False
        self.connection_caught_up_time_table: dict[int, int] = {}
        self.local_broker_id: int | None = None
        self.connections: dict[int, AutoSwitchHAConnection] = {}
        self.client: AutoSwitchHAClient | None = None
        self.listeners: list[Callable[[set[int]], None]] = []
        self.requests: list[GroupCommitRequest] = []
        self.shutdown = False
        store.ha = self

    # ------------------------------------------------------------------------------- connections

    def accept(self, conn: int, peer: str) -> AutoSwitchHAConnection:
        """``AutoSwitchAcceptSocketService``: every broker accepts, whatever its role."""
        c = AutoSwitchHAConnection(self, conn, peer)
        self.connections[conn] = c
        return c

    def remove_connection(self, c: AutoSwitchHAConnection) -> None:
        if not self.shutdown and B.CLOSE_KEEPS_MEMBER not in self.bugs:
            local = self.get_local_sync_state_set()
            if c.slave_id in local:
                local.discard(c.slave_id)
                self.mark_synchronizing_sync_state_set(local)
                self.notify_sync_state_set_changed(local)
                if B.LOCAL_SHRINK_ON_DISCONNECT in self.bugs and B.FIX_SHRINK_WAITS_FOR_CONTROLLER not in self.bugs:
                    # 5.4.0+ (AutoSwitchHAService.removeConnection, PR #9897): the local set takes the shrink too,
                    # before the controller has answered; the ack set (local ∪ remote) no longer holds the slave
                    self.sync_state_set = set(local)
                    self.host.emit({"k": "ha.local-shrink", "slave": c.slave_id, "local": sorted(local)})
                    # a local set of one: CommitLog.getConfirmOffset's shortcut now answers maxPhyOffset, which the
                    # reput thread (doReput every 1 ms) reads at its next poll; the kit wakes it (issue 28: without
                    # it the reput sat idle before a dispatchable record, STORE-REPUT-DRAINS, seeds 31, 40, 194 of
                    # rmqha simulate --rocketmq 5.5.0)
                    self.host.on_confirm_changed()
        self.connections.pop(c.conn, None)
        self._check_requests()

    def destroy_connections(self) -> None:
        for c in list(self.connections.values()):
            c.close("destroyConnections")
        self.connections.clear()

    # ------------------------------------------------------------------------------ role switches

    def change_to_master(self, master_epoch: int) -> bool:
        """``changeToMaster`` in one go (the role change runs it in two parts: ``change_to_master_epoch``, then the
        wait for dispatch and ``after_dispatch``, with other events in between under ``[sim] interleave``)."""
        if not self.change_to_master_epoch(master_epoch):
            return False
        self.host.finish_dispatch()  # while (dispatchBehindBytes() > 0) sleep(100)
        self.after_dispatch()
        return True

    def after_dispatch(self) -> None:
        """``changeToMaster`` after the dispatch caught up: the queue offsets go on from the consume queues' ends."""
        if B.QUEUE_TABLE_NOT_RECOVERED not in self.bugs:
            self.store.recover_topic_queue_table()

    def change_to_master_epoch(self, master_epoch: int) -> bool:
        """``changeToMaster`` up to its epoch append: drop the connections and the client, cut a broken tail, reset
        confirmOffset, truncate the epoch cache and append the new epoch at the log end."""
        if master_epoch < self.epoch_cache.last_epoch():
            return False
        self.destroy_connections()
        if self.client is not None:
            self.client.shutdown()
        truncate_offset = self.truncate_invalid_msg()
        self.store.set_confirm_offset(self.compute_confirm_offset())
        if truncate_offset >= 0:
            self.epoch_cache.truncate_suffix_by_offset(truncate_offset)
        new_entry = EpochEntry(master_epoch, self.store.max_phy_offset)
        keep = B.FIX_KEEP_OWN_EPOCH_ON_RESTART in self.bugs and self.epoch_cache.last_epoch() == master_epoch
        if self.epoch_cache.last_epoch() >= master_epoch and not keep:
            self.epoch_cache.truncate_suffix_by_epoch(master_epoch)  # QUIRK: moves this epoch's start to max
        replaced = self.empty_last_epoch(new_entry)
        appended = False if keep else self.epoch_cache.append_entry(new_entry, replace_empty=replaced is not None)
        self._observe_epoch_append(new_entry, appended, "changeToMaster", replaced)
        return True

    def change_to_slave(self, new_master_addr: str | None, new_master_epoch: int, slave_id: int) -> bool:
        if new_master_epoch < self.epoch_cache.last_epoch():
            return False
        self.destroy_connections()
        if self.client is None:
            self.client = AutoSwitchHAClient(self, slave_id)
        else:
            self.client.re_open()
        self.client.update_master_address(new_master_addr)
        self.client.update_ha_master_address(None)
        self.client.start()
        return True

    def change_to_master_when_last_role_is_master(self, master_epoch: int) -> bool:
        if master_epoch < self.epoch_cache.last_epoch():
            return False
        new_entry = EpochEntry(master_epoch, self.store.max_phy_offset)
        if self.epoch_cache.last_epoch() >= master_epoch:
            self.epoch_cache.truncate_suffix_by_epoch(master_epoch)
        replaced = self.empty_last_epoch(new_entry)
        appended = self.epoch_cache.append_entry(new_entry, replace_empty=replaced is not None)
        self._observe_epoch_append(new_entry, appended, "changeToMasterWhenLastRoleIsMaster", replaced)
        return True

    def empty_last_epoch(self, entry: EpochEntry) -> int | None:
        """With fix-epoch-eq-replaces-empty-epoch (F-EPOCH-EQ-SPLICE): the epoch of the last entry that ``entry``
        replaces (it starts at the same offset, so it holds no bytes), else None (``EpochFileCache.appendEntry`` as
        it is). Asked before every append of ``changeToMaster``, ``changeToMasterWhenLastRoleIsMaster`` and
        ``AutoSwitchHAClient``'s TRANSFER frames."""
        if B.FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH not in self.bugs:
            return None
        return self.epoch_cache.empty_last_epoch(entry)

    def _observe_epoch_append(self, entry: EpochEntry, appended: bool, path: str, replaced: int | None) -> None:
        obs: HaEpochAppend = {"k": "ha.epoch-append", "epoch": entry.epoch, "start": entry.start_offset,
                              "ok": appended, "path": path}
        if replaced is not None and appended:
            obs["replaced"] = replaced
        self.host.emit(obs)

    def change_to_slave_when_master_not_change(self, new_master_addr: str | None, new_master_epoch: int) -> bool:
        return new_master_epoch >= self.epoch_cache.last_epoch()

    def update_ha_master_address(self, addr: str | None) -> None:
        if self.client is not None and B.HA_ADDRESS_NO_WAKEUP in self.bugs:
            self.client.master_ha_address = addr  # the switch: stored only; the loop reads it at its next turn
        elif self.client is not None:
            self.client.update_ha_master_address(addr)

    # -------------------------------------------------------------------------------- SSS logic

    def register_sync_state_set_changed_listener(self, listener: Callable[[set[int]], None]) -> None:
        self.listeners.append(listener)

    def notify_sync_state_set_changed(self, new_sss: set[int]) -> None:
        snapshot = set(new_sss)
        for listener in self.listeners:
            listener(snapshot)

    def maybe_shrink_sync_state_set(self) -> set[int]:
        self._refresh_idle_connections()
        new_sss = self.get_local_sync_state_set()
        changed = False
        limit = self.store_cfg.ha_max_time_slave_not_catchup
        for slave, last in list(self.connection_caught_up_time_table.items()):
            if slave in new_sss and self.host.now - last > limit:
                new_sss.discard(slave)
                changed = True
        for member in sorted(new_sss):
            if member != self.local_broker_id and member not in self.connection_caught_up_time_table:
                new_sss.discard(member)
                changed = True
        if changed:
            self.mark_synchronizing_sync_state_set(new_sss)
            self.host.emit({"k": "ha.shrink", "proposal": sorted(new_sss), "local": sorted(self.sync_state_set)})
        return new_sss

    def _refresh_idle_connections(self) -> None:
        """The write loop records "caught up now" every ~100 ms while it has nothing to send."""
        cfg = self.store_cfg
        for c in self.connections.values():
            if c.state.name == "TRANSFER" and c.next_transfer_from_where >= 0 and c.slave_id > 0:
                if self.store.commitlog.get_data(c.next_transfer_from_where, cfg.mapped_file_size_commit_log) <= 0:
                    self.update_connection_last_caught_up_time(c.slave_id, self.host.now)

    def maybe_expand_in_sync_state_set(self, slave_id: int, slave_max_offset: int) -> None:
        current = self.get_local_sync_state_set()
        if slave_id in (self.get_sync_state_set() if B.EXPAND_CHECKS_UNION in self.bugs else current):
            return
        confirm = self.store.get_confirm_offset()
        if slave_max_offset >= confirm:
            leader_epoch = self.epoch_cache.last_entry()
            if leader_epoch is None:  # RocketMQ would throw (NPE) inside the reader
                return
            if slave_max_offset >= leader_epoch.start_offset:
                current.add(slave_id)
                self.mark_synchronizing_sync_state_set(current)
                self.host.observe_expand(slave_id, slave_max_offset, confirm, leader_epoch.start_offset,
                                         sorted(current))
                self.notify_sync_state_set_changed(current)

    def mark_synchronizing_sync_state_set(self, new_sss: set[int]) -> None:
        if B.FIX_UNION_KEEPS_ALL_PROPOSALS in self.bugs and self.is_synchronizing_sync_state_set:
            self.remote_sync_state_set |= set(new_sss)
        else:  # GAP-UNION: the latest proposal overwrites the one in flight
            self.remote_sync_state_set = set(new_sss)
        self.is_synchronizing_sync_state_set = True
        self._check_requests()

    def update_connection_last_caught_up_time(self, slave_id: int, t: int) -> None:
        prev = self.connection_caught_up_time_table.get(slave_id, 0)
        self.connection_caught_up_time_table[slave_id] = max(prev, t)

    def update_confirm_offset_when_slave_ack(self, slave_id: int) -> None:
        # the fix of F-CONFIRM-LOCAL-SHORTCUT: the ack set, on a master only. Every broker's HA server serves whoever
        # connects and maybeExpandInSyncStateSet has no role test, so a broker with no role yet (or a slave) that a
        # stale HA address reaches takes proposals too; the union must not let it confirm from them (it has no ack
        # set: its puts are refused). 5.3.3's local set is empty there, or its last master term's.
        union = B.FIX_CONFIRM_SHORTCUT_USES_UNION in self.bugs and self.store.role == BrokerRole.SYNC_MASTER
        members = self.get_sync_state_set() if union else self.sync_state_set
        if slave_id in members:
            self.store.set_confirm_offset(self.compute_confirm_offset())
            self.host.on_confirm_changed()

    def in_sync_replicas_nums(self) -> int:
        if self.is_synchronizing_sync_state_set:
            return max(len(self.sync_state_set), len(self.remote_sync_state_set))
        return len(self.sync_state_set)

    def compute_confirm_offset(self) -> int:
        current = self.get_sync_state_set()
        new_confirm = self.store.max_phy_offset
        if B.FIX_CONFIRM_WAITS_FIRST_ACK in self.bugs:
            ids = {c.slave_id for c in self.connections.values() if c.slave_ack_offset > 0}
        else:
            ids = {c.slave_id for c in self.connections.values()}
        if B.CONFIRM_IGNORES_DISCONNECTED not in self.bugs:
            for sync_id in sorted(current):
                if sync_id not in ids and self.local_broker_id is not None and sync_id != self.local_broker_id:
                    return self.store.get_confirm_offset_directly()
        counts_new = B.CONFIRM_COUNTS_NEW_CONNECTION in self.bugs
        narrow = B.CONFIRM_MIN_INT32 in self.bugs
        for c in self.connections.values():
            if c.slave_id in current and (c.slave_ack_offset > 0 or counts_new):
                if narrow:  # the deviation: offsets compared as Java ints
                    new_confirm = min(new_confirm, c.slave_ack_offset, key=to_int32)
                else:
                    new_confirm = min(new_confirm, c.slave_ack_offset)
        return new_confirm

    def set_sync_state_set(self, sss: set[int]) -> None:
        self.is_synchronizing_sync_state_set = False
        self.sync_state_set = set(sss)
        self.store.set_confirm_offset(self.compute_confirm_offset())
        self.host.on_confirm_changed()
        self._check_requests()

    def get_sync_state_set(self) -> set[int]:
        if self.is_synchronizing_sync_state_set:
            return self.sync_state_set | self.remote_sync_state_set
        return set(self.sync_state_set)

    def get_local_sync_state_set(self) -> set[int]:
        return set(self.sync_state_set)

    def local_sync_state_set_size(self) -> int:
        if B.FIX_CONFIRM_SHORTCUT_USES_UNION in self.bugs:
            return len(self.get_sync_state_set())
        return len(self.sync_state_set)

    # ------------------------------------------------------------------------------ truncation

    def truncate_invalid_msg(self) -> int:
        """Cut an incomplete or invalid tail, scanning from the reput offset (#6665 fixed)."""
        behind = self.store.dispatch_behind_bytes()
        if behind <= 0:
            return -1
        if B.TRUNCATE_INVALID_WRONG_START in self.bugs:
            pos = self.store.max_phy_offset - behind  # the pre-#6666 start
        else:
            pos = self.store.reput_from_offset
        buf = self.store.commitlog.data
        end = len(buf)
        while pos < end:
            size, _ = check(buf, pos, end)
            if size <= 0:
                break
            pos += size
        before = self.store.max_phy_offset
        self.store.truncate_dirty_files(pos)
        if pos < before:
            self.host.emit({"k": "store.truncate-invalid", "at": pos, "before": before})
        return pos

    # --------------------------------------------------------------------------- group transfer

    def put_request(self, req: GroupCommitRequest) -> None:
        self.requests.append(req)
        self._evaluate(req)
        if not req.finished:
            req.timer = self.host.after(max(0, req.deadline - self.host.now), self._deadline, req)

    def notify_transfer_some(self) -> None:
        self._check_requests()

    def _deadline(self, req: GroupCommitRequest) -> None:
        if not req.finished:
            self._evaluate(req)
        if not req.finished:
            self._finish(req, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)

    def _check_requests(self) -> None:
        if self.requests:
            for req in list(self.requests):
                self._evaluate(req)

    def _evaluate(self, req: GroupCommitRequest) -> None:
        if req.finished:
            return
        conns = list(self.connections.values())
        if req.ack_nums == -1:  # ALL_ACK_IN_SYNC_STATE_SET
            sss = (self.get_local_sync_state_set() if B.ACK_LOCAL_SSS_ONLY in self.bugs
                   else self.get_sync_state_set())
            if len(sss) <= 1:
                self._finish(req, PutMessageStatus.PUT_OK)
                return
            acks = 1
            for c in conns:
                if c.slave_id in sss and c.slave_ack_offset >= req.next_offset:
                    acks += 1
                if acks >= len(sss):
                    self._finish(req, PutMessageStatus.PUT_OK)
                    return
        else:
            acks = 1
            for c in conns:
                if c.slave_ack_offset >= req.next_offset:
                    acks += 1
                if acks >= req.ack_nums:
                    self._finish(req, PutMessageStatus.PUT_OK)
                    return

    def _finish(self, req: GroupCommitRequest, status: PutMessageStatus) -> None:
        req.finished = True
        self.host.cancel(req.timer)
        self.requests.remove(req)
        req.info = {
            "local": sorted(self.sync_state_set), "remote": sorted(self.remote_sync_state_set),
            "inFlight": self.is_synchronizing_sync_state_set,
            "acks": sorted([c.slave_id, c.slave_ack_offset] for c in self.connections.values()),
        }
        req.done(status, req.info)
