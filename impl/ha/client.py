"""AutoSwitchHAClient: the slave's end of the HA stream (``S/ha/autoswitch/AutoSwitchHAClient.java``: its
``HAClientReader`` and ``doTruncate``; the frames are ``frames.py``).

Rules (one loop, states READY -> HANDSHAKE -> TRANSFER):

* READY: cut a broken tail (``truncateInvalidMsg``; on a cut, drop epoch entries from there), then connect
  to the master's HA address if one is known (``currentReportedOffset`` := max); no address or a failed
  connect waits 5 s (a new address wakes it at once).
* HANDSHAKE: send the 16-byte handshake, wait up to 5 s for the master's, resend while none arrives.
  The master's handshake runs ``doTruncate``: an empty epoch cache truncates nothing and reports 0;
  otherwise both caches are rebuilt with their last end set to each side's max offset, the consistent
  point p is found (-1 fails the handshake), the log is truncated to p (fails unless p starts a message),
  epoch entries from p are dropped (5.4.0+, PR #9942, upstream switch truncate-keeps-epoch-entries: only when the
  log still ends past p once truncated, and a truncation leaves it at p: the entries stay), and p becomes
  ``currentReportedOffset``.
* TRANSFER: a frame's offset must equal the slave's max offset unless the slave is empty (strict
  contiguity); a new epoch in the header is appended to the epoch cache (failure ignored; a heartbeat, with
  no body, counts too: with QUIRK-EPOCH-EQ this is how F-EPOCH-EQ-SPLICE starts). "New" is against
  ``currentReceivedEpoch``, which only ``init`` resets, not a new connection: an entry the handshake dropped because
  it started at the consistent point is not recorded again (F-EPOCH-ENTRY-LOST-ON-RECONNECT); the body is appended;
  confirmOffset := min(header confirm, own max); then the max offset is reported if it grew.
  Idle writes for 5 s send a keep-alive; 20 s without reads closes the connection (READY, no wait).
* A frame whose state differs from the client's, a failed truncation or a broken stream closes the
  connection, goes to READY and waits 5 s.
* No master epoch is ever checked: a slave follows whatever master its HA address names (L-6). A new HA address (a
  nameserver registration's answer) only wakes the loop: a connection to the broker the old address names stays
  (finding F-SLAVE-FOLLOWS-DEPOSED-MASTER; its fix switch reconnects).

The invariants it keeps are HA-CONTIGUOUS, HA-TRUNCATE-PREFIX and HA-LOG-MATCHING (``impl/invariants/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import bugs as B
from ..codes import HAConnectionState
from ..store.epoch_cache import EpochEntry, EpochFileCache
from . import frames as F

if TYPE_CHECKING:
    from .service import AutoSwitchHAService

READY, HANDSHAKE, TRANSFER, SHUTDOWN = (HAConnectionState.READY, HAConnectionState.HANDSHAKE,
                                        HAConnectionState.TRANSFER, HAConnectionState.SHUTDOWN)
RETRY_WAIT = 5000  # waitForRunning(1000 * 5)
SELECT_WAIT = 1000  # selector.select(1000) in TRANSFER


class AutoSwitchHAClient:
    def __init__(self, service: AutoSwitchHAService, broker_id: int) -> None:
        self.service = service
        self.host = service.host
        self.broker_id = broker_id
        self.master_address: str | None = None
        self.master_ha_address: str | None = None
        self.conn: int | None = None
        self._connect_token: int | None = None
        self._loop_timer: int | None = None
        self.generation = 0
        self._init()

    def _init(self) -> None:
        self.state = READY
        self.current_received_epoch = -1
        self.current_reported_offset = 0
        self.last_read_timestamp = self.host.now
        self.last_write_timestamp = self.host.now
        self.decoder = F.MasterFrameDecoder()

    # --------------------------------------------------------------------------------- lifecycle

    def start(self) -> None:
        self._schedule(0)

    def re_open(self) -> None:
        """``reOpen``: shutdown then init (a fresh READY client)."""
        self.shutdown()
        self._init()

    def shutdown(self) -> None:
        self.state = SHUTDOWN
        self.generation += 1
        self.host.cancel(self._loop_timer)
        self._loop_timer = None
        self._connect_token = None
        self.close_master()

    def update_master_address(self, addr: str | None) -> None:
        self.master_address = addr

    def update_ha_master_address(self, addr: str | None) -> None:
        if addr != self.master_ha_address:
            self.master_ha_address = addr
            if addr and B.FIX_SLAVE_FOLLOWS_CURRENT_MASTER in self.service.bugs and self.state != SHUTDOWN \
                    and (self.conn is not None or self._connect_token is not None):
                # the fix of F-SLAVE-FOLLOWS-DEPOSED-MASTER: leave the broker the old address names, reconnect now
                self.host.emit({"k": "ha.client-close", "reason": f"HA master address changed to {addr}"})
                self._connect_token = None
                self.close_master()
                self.state = READY
                self._schedule(0)
            elif addr and self.state == READY and self.conn is None and self._connect_token is None:
                self._schedule(0)  # wakeup()

    # ------------------------------------------------------------------------------------ the loop

    def _schedule(self, delay: int) -> None:
        self.host.cancel(self._loop_timer)
        gen = self.generation
        self._loop_timer = self.host.after(delay, self._run, gen)

    def _run(self, gen: int) -> None:
        self._loop_timer = None
        if gen != self.generation or self.state == SHUTDOWN:
            return
        if self.state == READY:
            cut = self.service.truncate_invalid_msg()
            if cut >= 0:
                self.service.epoch_cache.truncate_suffix_by_offset(cut)
            if self.conn is None and self._connect_token is None:
                if self.master_ha_address:
                    self._connect_token = self.host.ha_connect(self.master_ha_address)
                    return  # continues in on_connect_result
                self._schedule(RETRY_WAIT)
            return
        if self.state == HANDSHAKE:
            self._send_handshake()
            self._schedule(RETRY_WAIT)  # select(5000), then the loop sends the handshake again
            return
        if self.state == TRANSFER:
            cfg = self.service.store_cfg
            now = self.host.now
            if now - self.last_write_timestamp > cfg.ha_send_heartbeat_interval:
                self._report(self.current_reported_offset)
            if now - self.last_read_timestamp > cfg.ha_housekeeping_interval:
                self.host.emit({"k": "ha.client-housekeeping", "idle": now - self.last_read_timestamp})
                self.close_master()
                self._schedule(0)
                return
            # the loop wakes every second; nothing it checks can change before the next deadline
            due = min(self.last_write_timestamp + cfg.ha_send_heartbeat_interval,
                      self.last_read_timestamp + cfg.ha_housekeeping_interval) + 1
            ticks = max(1, -(-(due - now) // SELECT_WAIT))
            self._schedule(0 if B.HA_CLIENT_SPINS in self.service.bugs else ticks * SELECT_WAIT)

    def on_connect_result(self, token: int, conn: int | None) -> None:
        if token != self._connect_token:
            if conn is not None:
                self.host.ha_close(conn)
            return
        self._connect_token = None
        if conn is None:
            self._schedule(RETRY_WAIT)
            return
        self.conn = conn
        self.state = HANDSHAKE
        self.current_reported_offset = self.service.store.max_phy_offset
        self.last_read_timestamp = self.host.now
        self.decoder = F.MasterFrameDecoder()
        self._schedule(0)

    def close_master(self) -> None:
        """``closeMaster``: close the socket, back to READY."""
        if self.conn is not None:
            self.host.ha_close(self.conn)
            self.conn = None
            self._forget_received_epoch()
            if self.state != SHUTDOWN:
                self.state = READY
            self.last_read_timestamp = 0
            self.decoder = F.MasterFrameDecoder()

    def close_master_and_wait(self, reason: str) -> None:
        self.host.emit({"k": "ha.client-close", "reason": reason})
        self.close_master()
        self._schedule(RETRY_WAIT)

    def on_closed(self) -> None:
        """The stream broke under us: the next read or write fails."""
        if self.conn is not None:
            self.conn = None
            self._forget_received_epoch()
            self.state = READY if self.state != SHUTDOWN else SHUTDOWN
            self.host.emit({"k": "ha.client-close", "reason": "connection closed"})
            self._schedule(RETRY_WAIT)

    def _forget_received_epoch(self) -> None:
        """fix-new-connection-records-epoch (F-EPOCH-ENTRY-LOST-ON-RECONNECT): RocketMQ keeps currentReceivedEpoch
        across connections (only ``init`` resets it), so an entry the next handshake drops is never recorded again."""
        if B.FIX_NEW_CONNECTION_RECORDS_EPOCH in self.service.bugs:
            self.current_received_epoch = -1

    # ------------------------------------------------------------------------------------ writing

    def _send_handshake(self) -> None:
        cfg = self.service.store_cfg
        self._write(F.encode_slave_handshake(F.SlaveHandshake(cfg.sync_from_last_file, cfg.async_learner,
                                                              self.broker_id)))

    def _report(self, offset: int) -> None:
        self._write(F.encode_slave_transfer(F.SlaveTransfer(offset)))

    def _report_slave_max_offset(self) -> None:
        max_offset = self.service.store.max_phy_offset
        if max_offset > self.current_reported_offset:
            self.current_reported_offset = max_offset
            self._report(max_offset)

    def _write(self, data: bytes) -> None:
        if self.conn is not None:
            self.last_write_timestamp = self.host.now
            self.host.ha_write(self.conn, data)

    # ------------------------------------------------------------------------------------ reading

    def on_data(self, data: bytes) -> None:
        if self.conn is None:
            return
        self.last_read_timestamp = self.host.now
        try:
            frames = self.decoder.feed(data)
        except F.FrameError as exc:
            self.host.emit({"k": "ha.frame-error", "side": "slave", "error": str(exc)})
            self.close_master_and_wait("bad frame: " + str(exc))
            return
        for frame in frames:
            if self.conn is None:
                return
            frame_state = HANDSHAKE if isinstance(frame, F.MasterHandshake) else TRANSFER
            if frame_state != self.state:
                self.close_master_and_wait(f"State not matched, masterState:{frame_state.name}, "
                                           f"slaveState:{self.state.name}")
                return
            if isinstance(frame, F.MasterHandshake):
                if not self._do_truncate(frame):
                    self.close_master_and_wait("truncate failed in handshake state")
                    return
            elif not self._on_transfer(frame):
                return
        if self.state == TRANSFER:
            self._report_slave_max_offset()
            if B.CLIENT_ACKS_ANNOUNCED_BODY in self.service.bugs and self.conn is not None:
                end = self.decoder.pending_transfer_end()  # the deviation: ack what a header announces
                if end is not None and end > self.current_reported_offset:
                    self.current_reported_offset = end
                    self._report(end)

    def _do_truncate(self, frame: F.MasterHandshake) -> bool:
        cache = self.service.epoch_cache
        store = self.service.store
        if cache.entry_size() == 0:
            self.state = TRANSFER
            self.current_reported_offset = 0
            point = 0
        else:
            master_cache = EpochFileCache()
            master_cache.init_cache_from_entries([EpochEntry(e, s) for e, s in frame.entries])
            master_cache.set_last_epoch_entry_end_offset(frame.max_offset)
            local_cache = EpochFileCache()
            local_cache.init_cache_from_entries(cache.all_entries())
            local_cache.set_last_epoch_entry_end_offset(store.max_phy_offset)
            point = local_cache.find_consistent_point(
                master_cache, larger_end=B.CONSISTENT_POINT_USES_MAX in self.service.bugs,
                replaced=B.FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH in self.service.bugs)
            if point < 0:
                self.host.emit({"k": "ha.no-consistent-point", "master": [list(e) for e in frame.entries],
                                "local": [e.to_list() for e in cache.all_entries()]})
                return False
            before = store.max_phy_offset
            ok = store.truncate_files(point)
            if ok and point < before and B.TRUNCATE_FILES_MISREPORTS in self.service.bugs:
                ok = False  # the switch: a truncation that went through answered false
            if not ok:
                self.host.emit({"k": "ha.truncate-unaligned", "point": point})
                return False
            if B.TRUNCATE_KEEPS_EPOCH_ENTRIES not in self.service.bugs or point < store.max_phy_offset:
                # 5.4.0+ (PR #9942): only when the log still ends past the point, read after the truncation (which
                # leaves it at the point): the slave keeps its epoch entries, one starting at the point included
                cache.truncate_suffix_by_offset(point)
            self.state = TRANSFER
            self.current_reported_offset = point
            self.host.emit({"k": "ha.truncate", "point": point, "before": before, "masterMax": frame.max_offset,
                            "master": [list(e) for e in frame.entries]})
        self.host.observe_handshake_done(self, frame, point)
        if B.SLAVE_REPORTS_AT_HANDSHAKE in self.service.bugs:  # the deviation: report now, grown or not
            self.current_reported_offset = self.service.store.max_phy_offset
            self._report(self.current_reported_offset)
        self._report_slave_max_offset()
        self._schedule(SELECT_WAIT)
        return True

    def _on_transfer(self, frame: F.MasterTransfer) -> bool:
        store = self.service.store
        slave_max = store.max_phy_offset
        if slave_max != 0 and slave_max != frame.offset and B.SLAVE_SKIPS_OFFSET_CHECK not in self.service.bugs:
            self.close_master_and_wait(f"master pushed offset not equal the max phy offset in slave, "
                                       f"SLAVE: {slave_max} MASTER: {frame.offset}")
            return False
        if frame.epoch != self.current_received_epoch:  # HAClientReader.processReadResult: heartbeats count too
            self.current_received_epoch = frame.epoch
            entry = EpochEntry(frame.epoch, frame.epoch_start_offset)
            replaced = self.service.empty_last_epoch(entry)
            appended = self.service.epoch_cache.append_entry(entry, replace_empty=replaced is not None)
            if appended and replaced is not None:
                self.host.emit({"k": "ha.epoch-append", "epoch": entry.epoch, "start": entry.start_offset, "ok": True,
                                "path": "AutoSwitchHAClient", "replaced": replaced})
        if frame.body:
            self.host.observe_slave_append(frame.offset, len(frame.body))
            store.commitlog.append_data(frame.body, frame.offset)
            self.host.on_slave_appended()
        if B.SLAVE_CONFIRMS_OWN_MAX in self.service.bugs:  # the deviation: its own max, what it reports next
            store.set_confirm_offset(store.max_phy_offset)
        else:
            store.set_confirm_offset(min(frame.confirm_offset, store.max_phy_offset))
        self.host.on_confirm_changed()
        self._report_slave_max_offset()
        return True

    @property
    def connecting(self) -> bool:
        """A connect to the master is in flight (``connectMaster`` has not returned yet)."""
        return self._connect_token is not None
