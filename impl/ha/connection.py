"""AutoSwitchHAConnection: the master's end of one slave's HA stream (``S/ha/autoswitch/AutoSwitchHAConnection.java``:
``HAServerReader``, ``transferToSlave``, ``changeTransferEpochToNext``).

Rules:

* Starts in HANDSHAKE; the master *follows the slave*: its state becomes the state of the last slave frame.
* Read side: a slave HANDSHAKE records the slave id and flags and asks the write side for a handshake; a
  TRANSFER frame is an ack: ``slaveAckOffset`` := reported offset (the first one also sets
  ``slaveRequestOffset``), then ``maybeExpandInSyncStateSet``, ``updateConfirmOffsetWhenSlaveAck`` and a
  wake-up of the group-transfer checks. No read for ``haHousekeepingInterval`` (20 s) closes it.
* Write side in TRANSFER waits for ``slaveRequestOffset``; the first transfer starts at the reported
  offset (0 means ``minOffset``, or the last file with ``syncFromLastFile``) and picks the epoch entry that
  holds it. Each batch is at most ``haTransferBatchSize`` bytes and never crosses the current epoch's end
  (the batch is cut there and the next entry becomes current) nor a mapped-file end. The header is built
  after that switch, so it names the batch's epoch, or for an epoch's last batch the next epoch, whose
  start is exactly the batch's end. Idle for ``haSendHeartbeatInterval`` (5 s): an empty TRANSFER frame.
  Nothing to send: the slave is recorded as caught up now.
* Expansion (``maybeExpandInSyncStateSet``): not an async learner and ack >= the master's max at the last
  transfer; caught-up time := now if the ack equals the master's max, else the last transfer time.
* QUIRK (#9689): a header for a batch whose epoch entry is gone is not built, yet the body is still
  written, so the slave reads body bytes as a header and drops the connection.
* Fix switches: ``fix-transfer-epoch-refresh`` (upstream #9690) re-reads the end of a "last" epoch before each
  batch and takes it once it is not ``Long.MAX_VALUE``; its holes when the serving broker truncated its log under
  the connection (F-TRANSFER-NEGATIVE-BATCH: a batch of negative size; a last entry's stale end, taken as the
  epoch's end, stalls the connection) are closed by ``fix-transfer-checks-log-end``: the connection closes
  instead, and the re-read ignores the end of an entry that is still the last.

The invariants it keeps are HA-EPOCH-BOUNDARY, HA-TRANSFER-START (where the first transfer starts: the
observation ``ha.transfer-start``) and SYNC-EXPAND-SAFE (``impl/invariants/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import bugs as B
from ..codes import LONG_MAX, BrokerRole, HAConnectionState
from ..store.epoch_cache import EpochEntry
from . import frames as F

if TYPE_CHECKING:
    from .service import AutoSwitchHAService


class AutoSwitchHAConnection:
    def __init__(self, service: AutoSwitchHAService, conn: int, peer: str) -> None:
        self.service = service
        self.host = service.host
        self.conn = conn
        self.peer = peer
        now = self.host.now
        self.state = HAConnectionState.HANDSHAKE
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.is_slave_send_handshake = False
        self.current_transfer_epoch = -1
        self.current_transfer_epoch_end_offset = 0
        self.sync_from_last_file = False
        self.async_learner = False
        self.slave_id = -1
        self.last_master_max_offset = -1
        self.last_transfer_time_ms = 0
        self.next_transfer_from_where = -1
        self.last_write_timestamp = now
        self.last_read_timestamp = now
        self.decoder = F.SlaveFrameDecoder()
        self.closed = False
        self._pumping = False
        self._heartbeat_timer: int | None = None
        self.host.after(self.service.store_cfg.ha_housekeeping_interval + 1, self._housekeeping)

    # ------------------------------------------------------------------------------------ reading

    def on_data(self, data: bytes) -> None:
        if self.closed:
            return
        if B.HA_READ_TIME_ON_HANDSHAKE_ONLY not in self.service.bugs:
            self.last_read_timestamp = self.host.now
        try:
            frames = self.decoder.feed(data)
        except F.FrameError as exc:
            self.host.emit({"k": "ha.frame-error", "side": "master", "conn": self.conn, "peer": self.peer,
                            "error": str(exc)})
            self.close("processReadEvent error")
            return
        for frame in frames:
            if isinstance(frame, F.SlaveHandshake):
                if B.FIX_SLAVE_FOLLOWS_CURRENT_MASTER in self.service.bugs \
                        and self.service.store.role != BrokerRole.SYNC_MASTER:
                    # the fix of F-SLAVE-FOLLOWS-DEPOSED-MASTER: only a master serves its log to a slave
                    self.close("not the master: refuses the slave's handshake")
                    return
                if B.HA_READ_TIME_ON_HANDSHAKE_ONLY in self.service.bugs:  # the deviation: handshakes only
                    self.last_read_timestamp = self.host.now
                self.slave_id = frame.slave_broker_id
                self.sync_from_last_file = self.sync_from_last_file or frame.sync_from_last_file
                self.async_learner = self.async_learner or frame.async_learner
                self.is_slave_send_handshake = True
                new_state = HAConnectionState.HANDSHAKE
            else:
                self.slave_ack_offset = frame.max_offset
                if self.slave_request_offset < 0:
                    self.slave_request_offset = frame.max_offset
                self.maybe_expand_in_sync_state_set(frame.max_offset)
                self.service.update_confirm_offset_when_slave_ack(self.slave_id)
                self.service.notify_transfer_some()
                new_state = HAConnectionState.TRANSFER
            if new_state != self.state:
                self.state = new_state
        self.kick()

    def maybe_expand_in_sync_state_set(self, slave_max_offset: int) -> None:
        if not self.async_learner and slave_max_offset >= self.last_master_max_offset:
            now = self.host.now
            caught_up = now if self.service.store.max_phy_offset == slave_max_offset else self.last_transfer_time_ms
            self.service.update_connection_last_caught_up_time(self.slave_id, caught_up)
            self.service.maybe_expand_in_sync_state_set(self.slave_id, slave_max_offset)

    def _housekeeping(self) -> None:
        if self.closed:
            return
        interval = self.service.store_cfg.ha_housekeeping_interval
        idle = self.host.now - self.last_read_timestamp
        if idle > interval:
            self.close(f"ha housekeeping: no read for {idle} ms")
            return
        self.host.after(interval - idle + 1, self._housekeeping)

    # ------------------------------------------------------------------------------------ writing

    def kick(self) -> None:
        """Wake the write side (``waitForRunning`` returns): it runs now, within the waking step."""
        if not self.closed and not self._pumping:
            self._pumping = True
            try:
                self._pump()
            finally:
                self._pumping = False

    def _pump(self) -> None:
        if self.closed:
            return
        if self.state == HAConnectionState.HANDSHAKE:
            if self.is_slave_send_handshake:
                self._write(F.encode_master_handshake(self._build_handshake()))
                self.is_slave_send_handshake = False
            return
        if self.state != HAConnectionState.TRANSFER or self.slave_request_offset == -1:
            return
        store = self.service.store
        if self.next_transfer_from_where == -1:
            if self.slave_request_offset == 0:
                if self.sync_from_last_file and B.LAST_FILE_FLAG_IGNORED not in self.service.bugs:
                    size = self.service.store_cfg.mapped_file_size_commit_log
                    master_max = store.max_phy_offset
                    self.next_transfer_from_where = max(store.commitlog.min_offset, master_max - master_max % size)
                else:
                    self.next_transfer_from_where = store.commitlog.min_offset
            else:
                self.next_transfer_from_where = self.slave_request_offset
            self.host.emit({"k": "ha.transfer-start", "conn": self.conn, "slave": self.slave_id,
                            "request": self.slave_request_offset, "lastFile": self.sync_from_last_file,
                            "min": store.commitlog.min_offset, "max": store.max_phy_offset,
                            "fileSize": self.service.store_cfg.mapped_file_size_commit_log,
                            "position": self.next_transfer_from_where})
            entry = self.service.epoch_cache.find_epoch_entry_by_offset(self.next_transfer_from_where)
            if entry is None:  # "Failed to find an epochEntry to match nextTransferFromWhere"
                self.host.emit({"k": "ha.no-epoch-for-offset", "conn": self.conn,
                                "offset": self.next_transfer_from_where})
                self._send_heartbeat_if_needed()
                self.next_transfer_from_where = -1
                self.host.after(500, self.kick)
                return
            self._change_transfer_epoch_to_next(entry)
        self._transfer_to_slave()

    def _build_handshake(self) -> F.MasterHandshake:
        cache = self.service.epoch_cache
        entries = tuple((e.epoch, e.start_offset) for e in cache.all_entries())
        return F.MasterHandshake(self.service.store.max_phy_offset, cache.last_epoch(), entries)

    def _change_transfer_epoch_to_next(self, entry: EpochEntry) -> None:
        self.current_transfer_epoch = entry.epoch
        self.current_transfer_epoch_end_offset = entry.end_offset
        if entry.epoch == self.service.epoch_cache.last_epoch():
            self.current_transfer_epoch_end_offset = -1

    def _header(self, offset: int, body_size: int) -> bytes | None:
        """``buildTransferHeaderBuffer``; ``None`` when the header cannot be built (the #9689 path)."""
        cache = self.service.epoch_cache
        entry = cache.get_entry(self.current_transfer_epoch)
        if entry is None:
            self.host.emit({"k": "ha.no-epoch-entry", "conn": self.conn, "epoch": self.current_transfer_epoch,
                            "bodySize": body_size})
            if body_size > 0:
                return None
            entry = cache.first_entry()
            if entry is None:
                return None
        confirm = self.service.store.get_confirm_offset()
        return F.encode_master_transfer_header(offset, entry.epoch, entry.start_offset, confirm, body_size)

    def _send_heartbeat_if_needed(self) -> None:
        interval = self.service.store_cfg.ha_send_heartbeat_interval
        if self.host.now - self.last_write_timestamp > interval:
            header = self._header(self.next_transfer_from_where, 0)
            if header is not None:
                self._write(header)

    def _transfer_to_slave(self) -> None:
        """``transferToSlave``, repeated while there is data (the write thread loops without waiting)."""
        while not self.closed and self._transfer_once():
            pass

    def _transfer_once(self) -> bool:
        """``WriteSocketService.transferToSlave``: one batch (or nothing); False when there is nothing to send."""
        store = self.service.store
        cfg = self.service.store_cfg
        bugs = self.service.bugs
        if B.FIX_TRANSFER_CHECKS_LOG_END in bugs and self.next_transfer_from_where > store.max_phy_offset:
            # F-TRANSFER-NEGATIVE-BATCH: the serving broker's log was truncated under this connection (its own
            # AutoSwitchHAClient.doTruncate); in Java, an exception out of transferToSlave stops WriteSocketService
            self.close(f"transfer position {self.next_transfer_from_where} is past the log end {store.max_phy_offset}")
            return False
        if B.FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH in bugs:
            self._follow_replaced_epoch()
        self._send_heartbeat_if_needed()
        size = store.commitlog.get_data(self.next_transfer_from_where, cfg.mapped_file_size_commit_log)
        if size <= 0:
            self.service.update_connection_last_caught_up_time(self.slave_id, self.host.now)
            self._arm_heartbeat()
            return False
        size = min(size, cfg.ha_transfer_batch_size)
        if B.FIX_TRANSFER_EPOCH_REFRESH in bugs and self.current_transfer_epoch_end_offset == -1:
            # PR #9690, "Check and update currentTransferEpochEndOffset": the entry's end, once it is no longer
            # EpochEntry.LAST_EPOCH_END_OFFSET (Long.MAX_VALUE). Not "once it is no longer the last epoch": a last
            # entry can carry the stale end truncateSuffixByOffset leaves on it (EpochFileCache QUIRK), and #9690
            # takes that end too (the connection then waits for a next entry: ha.no-next-epoch)
            cache = self.service.epoch_cache
            entry = cache.get_entry(self.current_transfer_epoch)
            stale = B.FIX_TRANSFER_CHECKS_LOG_END in bugs and entry is not None and entry.epoch == cache.last_epoch()
            if entry is not None and entry.end_offset != LONG_MAX and not stale:  # the fix: a last entry stays open
                self.current_transfer_epoch_end_offset = entry.end_offset
        end = self.current_transfer_epoch_end_offset
        if B.FIX_TRANSFER_CHECKS_LOG_END in bugs and end != -1 and self.next_transfer_from_where > end:
            # F-TRANSFER-NEGATIVE-BATCH: the epoch now ends before the position (the log under it was truncated
            # and rewritten); the batch would have size end - position < 0
            self.close(f"transfer position {self.next_transfer_from_where} is past the end {end} of epoch "
                       f"{self.current_transfer_epoch}")
            return False
        crosses = end != -1 and self.next_transfer_from_where + size > end
        if crosses and B.TRANSFER_CROSSES_EPOCH not in bugs:
            nxt = self.service.epoch_cache.next_entry(self.current_transfer_epoch)
            if nxt is None:  # "Can't find a bigger epochEntry than epoch"
                self.host.emit({"k": "ha.no-next-epoch", "conn": self.conn, "epoch": self.current_transfer_epoch})
                self.host.after(100, self.kick)
                return False
            size = end - self.next_transfer_from_where
            self._change_transfer_epoch_to_next(nxt)
        transfer_offset = self.next_transfer_from_where
        self.next_transfer_from_where += size
        self.last_master_max_offset = store.max_phy_offset
        self.last_transfer_time_ms = self.host.now
        # built after a switch above: the last batch of an epoch is labelled with the next epoch, whose
        # start is that batch's end, so the slave still records the right boundary
        header = self._header(transfer_offset, size)
        self.host.observe_transfer(self, transfer_offset, size, header)
        body = store.commitlog.read(transfer_offset, size)
        self._write(body if header is None else header + body)
        return True

    def _follow_replaced_epoch(self) -> None:
        """fix-epoch-eq-replaces-empty-epoch (F-EPOCH-EQ-SPLICE): the entry of the current transfer epoch was
        replaced by a later epoch starting at the same offset (it held no bytes); follow the entry that now covers
        the position, as the first transfer does (``findEpochEntryByOffset``)."""
        cache = self.service.epoch_cache
        if self.current_transfer_epoch < 0 or cache.get_entry(self.current_transfer_epoch) is not None:
            return
        entry = cache.find_epoch_entry_by_offset(self.next_transfer_from_where)
        if entry is not None and entry.epoch > self.current_transfer_epoch:
            self._change_transfer_epoch_to_next(entry)

    def _arm_heartbeat(self) -> None:
        """One pending wake-up for the idle heartbeat (the write loop's 100 ms polls change nothing else)."""
        if self._heartbeat_timer is not None:
            return
        interval = self.service.store_cfg.ha_send_heartbeat_interval
        if B.HA_HEARTBEAT_DEADLINE_STALE in self.service.bugs:  # the deviation: the interval left out
            interval = 0
        self._heartbeat_timer = self.host.after(max(1, self.last_write_timestamp + interval + 1 - self.host.now),
                                                self._heartbeat_due)

    def _heartbeat_due(self) -> None:
        self._heartbeat_timer = None
        self.kick()

    def _write(self, data: bytes) -> None:
        self.last_write_timestamp = self.host.now
        self.host.ha_write(self.conn, data)

    # ------------------------------------------------------------------------------------ closing

    def close(self, reason: str) -> None:
        """Both socket services stop; each one calls ``removeConnection`` (QUIRK: twice)."""
        if self.closed:
            return
        self.closed = True
        self.state = HAConnectionState.SHUTDOWN
        self.host.emit({"k": "ha.conn-closed", "conn": self.conn, "peer": self.peer, "slaveId": self.slave_id,
                        "reason": reason})
        self.host.ha_close(self.conn)
        self.service.remove_connection(self)
        self.service.remove_connection(self)

    def on_peer_closed(self) -> None:
        self.close("peer closed the connection")
