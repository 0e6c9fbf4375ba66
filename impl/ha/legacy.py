"""RocketMQ 4.x master/slave replication (``DefaultHAService``, ``HAConnection``, ``HAClient``; seeds 002, 004).

Everything that decides 4.x replication and its put acknowledgement lives here.

Rules:

* Fixed roles: the slave connects to the master's HA address and reports its max offset in an 8-byte frame,
  after every batch it appends and at least every ``haSendHeartbeatInterval`` (5 s). A closed connection is
  connected again at once (``HAClient.run``: ``closeMaster``, then the loop's next ``connectMaster``); only a failed
  connect (or a push it cannot parse: the loop's catch) waits 5 s.
* The master's connection starts at the slave's first report (0 means the start of the master's last
  file) and pushes ``<phyOffset:i64><bodySize:i32><body>`` batches of at most 32 KiB; idle for 5 s, an empty
  batch. No epochs, no truncation: a slave whose max differs from a batch's offset drops the connection.
* ``push2SlaveMaxOffset`` is the largest offset any slave acked. ``isSlaveOK``: a slave is connected and
  ``masterMax - push2SlaveMaxOffset < haMaxGapNotInSync``.
* SYNC_MASTER put (4.x ``handleHA``): if ``isSlaveOK``, wait until ``push2SlaveMaxOffset >= message end``
  for up to ``syncFlushTimeout`` (5 s), else FLUSH_SLAVE_TIMEOUT; if not, SLAVE_NOT_AVAILABLE. The message
  stays written either way. ASYNC_MASTER: PUT_OK after the local write.

5.x difference (``CommitLog.handleHA`` and ``GroupTransferService`` in 5.x): today ``handleHA`` acks at once
unless ``inSyncReplicas >= 2`` and never
returns SLAVE_NOT_AVAILABLE; the kit's legacy mode follows the 4.x behaviour the seeds describe.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from .. import bugs as B

if TYPE_CHECKING:
    from ..broker.legacy import LegacyBrokerNode

_REPORT = struct.Struct(">q")
_HEADER = struct.Struct(">qi")
REPORT_SIZE = _REPORT.size  # 8
HEADER_SIZE = _HEADER.size  # 12
MAX_BODY = 4 * 1024 * 1024


class LegacyFrameError(ValueError):
    pass


def encode_report(offset: int) -> bytes:
    return _REPORT.pack(offset)


def encode_push(offset: int, body: bytes) -> bytes:
    return _HEADER.pack(offset, len(body)) + body


class ReportDecoder:
    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes) -> list[int]:
        self.buf += data
        out = []
        while len(self.buf) >= REPORT_SIZE:
            (off,) = _REPORT.unpack_from(self.buf, 0)
            if off < 0:
                raise LegacyFrameError(f"slave reports offset {off}")
            out.append(off)
            del self.buf[:REPORT_SIZE]
        return out


class PushDecoder:
    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self.buf += data
        out = []
        while len(self.buf) >= HEADER_SIZE:
            off, size = _HEADER.unpack_from(self.buf, 0)
            if size < 0 or size > MAX_BODY or off < 0:
                raise LegacyFrameError(f"push header offset={off} bodySize={size}")
            if len(self.buf) < HEADER_SIZE + size:
                break
            out.append((off, bytes(self.buf[HEADER_SIZE:HEADER_SIZE + size])))
            del self.buf[:HEADER_SIZE + size]
        return out


class LegacyConnection:
    """``HAConnection``: the master's end of one slave."""

    def __init__(self, host: LegacyBrokerNode, conn: int, peer: str) -> None:
        self.host = host
        self.conn = conn
        self.peer = peer
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.next_transfer_from_where = -1
        self.last_write = host.now
        self.last_read = host.now
        self.decoder = ReportDecoder()
        self.closed = False
        self._scheduled = False
        self.opened = host.now  # when the master accepted it (LIVE-HA-TRANSFER's stability window reads it)
        host.after(host.store_cfg.ha_housekeeping_interval + 1, self._housekeeping)

    def on_data(self, data: bytes) -> None:
        self.last_read = self.host.now
        try:
            reports = self.decoder.feed(data)
        except LegacyFrameError as exc:
            self.host.emit({"k": "ha.frame-error", "side": "master", "error": str(exc)})
            self.close("bad report")
            return
        for off in reports:
            self.slave_ack_offset = off
            if self.slave_request_offset < 0:
                self.slave_request_offset = off
            self.host.notify_transfer_some(off)
        self.kick()

    def _housekeeping(self) -> None:
        if self.closed:
            return
        interval = self.host.store_cfg.ha_housekeeping_interval
        idle = self.host.now - self.last_read
        if idle > interval:
            self.close("housekeeping")
            return
        self.host.after(interval - idle + 1, self._housekeeping)

    def kick(self) -> None:
        if not self.closed and not self._scheduled:
            self._scheduled = True
            self.host.after(0, self._pump)

    def _pump(self) -> None:
        self._scheduled = False
        if self.closed or self.slave_request_offset < 0:
            return
        store, cfg = self.host.store, self.host.store_cfg
        if self.next_transfer_from_where < 0:
            if self.slave_request_offset == 0:
                m = store.max_phy_offset
                self.next_transfer_from_where = max(0, m - m % cfg.mapped_file_size_commit_log)
            else:
                self.next_transfer_from_where = self.slave_request_offset
        size = min(store.commitlog.get_data(self.next_transfer_from_where, cfg.mapped_file_size_commit_log),
                   cfg.ha_transfer_batch_size)
        if size > 0:
            body = store.commitlog.read(self.next_transfer_from_where, size)
            self._write(encode_push(self.next_transfer_from_where, body))
            self.next_transfer_from_where += size
            self.kick()
            return
        if self.host.now - self.last_write > cfg.ha_send_heartbeat_interval:
            self._write(encode_push(self.next_transfer_from_where, b""))
        self.host.after(max(1, self.last_write + cfg.ha_send_heartbeat_interval + 1 - self.host.now), self.kick)

    def _write(self, data: bytes) -> None:
        self.last_write = self.host.now
        self.host.ha_write(self.conn, data)

    def close(self, reason: str) -> None:
        if not self.closed:
            self.closed = True
            self.host.emit({"k": "ha.conn-closed", "conn": self.conn, "peer": self.peer, "reason": reason})
            self.host.ha_close(self.conn)
            self.host.remove_connection(self)


class LegacyClient:
    """``HAClient``: the slave's end."""

    def __init__(self, host: LegacyBrokerNode, master_ha_addr: str) -> None:
        self.host = host
        self.addr = master_ha_addr
        self.conn: int | None = None
        self.token: int | None = None
        self.reported = -1
        self.last_write = 0
        self.last_read = 0
        self.decoder = PushDecoder()
        self.timer: int | None = None

    def start(self) -> None:
        self._loop()

    def _schedule(self, delay: int) -> None:
        self.host.cancel(self.timer)
        self.timer = self.host.after(delay, self._loop)

    def _loop(self) -> None:
        """``HAClient.run``, one round: ``connectMaster`` when it has no connection (a failed connect waits 5 s:
        ``on_connect_result``), else the report and housekeeping of its loop."""
        self.timer = None
        now = self.host.now
        cfg = self.host.store_cfg
        if self.conn is None:
            if self.token is None:
                self.host.emit({"k": "ha.client-connect", "addr": self.addr})
                self.token = self.host.ha_connect(self.addr)
            return
        if now - self.last_write > cfg.ha_send_heartbeat_interval:
            self._report()
        if now - self.last_read > cfg.ha_housekeeping_interval:
            self._close("housekeeping")
            return
        due = min(self.last_write + cfg.ha_send_heartbeat_interval, self.last_read + cfg.ha_housekeeping_interval)
        self._schedule(max(1, due + 1 - now))

    def on_connect_result(self, token: int, conn: int | None) -> None:
        if token != self.token:
            return
        self.token = None
        if conn is None:
            self.host.emit({"k": "ha.client-connect", "addr": self.addr, "failed": True})
            self._schedule(5000)
            return
        self.conn = conn
        self.last_read = self.host.now
        self.decoder = PushDecoder()
        self.reported = -1
        self._report()
        self._schedule(1)

    def _report(self) -> None:
        if self.conn is not None:
            self.reported = self.host.store.max_phy_offset
            self.last_write = self.host.now
            self.host.ha_write(self.conn, encode_report(self.reported))

    def on_data(self, data: bytes) -> None:
        if self.conn is None:
            return
        self.last_read = self.host.now
        try:
            pushes = self.decoder.feed(data)
        except LegacyFrameError as exc:
            self._close(f"bad frame: {exc}", 5000)  # the loop's catch (Exception): waitForRunning(1000 * 5)
            return
        store = self.host.store
        for off, body in pushes:
            if store.max_phy_offset != 0 and off != store.max_phy_offset:
                self._close(f"master pushed offset {off} but slave max is {store.max_phy_offset}")
                return
            if body:
                self.host.emit({"k": "ha.slave-append", "offset": off, "size": len(body), "max": store.max_phy_offset})
                store.commitlog.append_data(body)
                self.host.on_slave_appended()
        if store.max_phy_offset > self.reported:
            self._report()

    def _close(self, reason: str, wait: int = 0) -> None:
        """``closeMaster``; the loop goes on to ``connectMaster`` at once (``continue``), or after ``wait``."""
        if self.conn is not None:
            self.host.emit({"k": "ha.client-close", "reason": reason})
            self.host.ha_close(self.conn)
            self.conn = None
        self._schedule(wait)

    def on_closed(self) -> None:
        """The master closed the stream: the read returns -1, ``processReadEvent`` false, ``closeMaster`` and the
        loop's ``continue`` to ``connectMaster``."""
        if self.conn is not None:
            self.conn = None
            self.host.emit({"k": "ha.client-close", "reason": "connection closed"})
            self._schedule(5000 if B.LEGACY_RECONNECT_WAITS in self.host.bugs else 0)

    def status(self) -> dict[str, Any]:
        return {"connected": self.conn is not None, "reported": self.reported}
