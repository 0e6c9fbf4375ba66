"""A RocketMQ 4.x broker (no controller): fixed master or slave over the same store (seeds 002, 004).

The master takes puts and answers per ``brokerRole`` (``ha/legacy.py``); a slave refuses puts and
replicates. Both register with the nameserver every 30 s (the master as brokerId 0). There is no
automatic failover: a dead master stops writes until it restarts.
"""

from __future__ import annotations

from typing import Any

from .. import bugs as B
from ..codes import BrokerRole, PutMessageStatus, RequestCode, ResponseCode
from ..config import BrokerConfig, MessageStoreConfig
from ..ha.legacy import LegacyClient, LegacyConnection
from ..rng import DetRng
from ..runtime import Actor, Call, Command, HAClose, HAConnect, HAWrite, Job, Periodic, response_to
from ..store.commitlog import MessageStore
from ..store.disk import BrokerDisk


class _Pending:
    __slots__ = ("cmd", "deadline", "done", "end", "offset", "size", "src")

    def __init__(self, end: int, deadline: int, src: str, cmd: Command, offset: int, size: int) -> None:
        self.end, self.deadline, self.src, self.cmd, self.offset, self.size = end, deadline, src, cmd, offset, size
        self.done = False


class LegacyBrokerNode(Actor):
    def __init__(self, name: str, broker_cfg: BrokerConfig, store_cfg: MessageStoreConfig, disk: BrokerDisk,
                 rng: DetRng, nameserver: str, master: bool, master_name: str,
                 bugs: frozenset[str] = frozenset()) -> None:
        super().__init__(name, rng)
        self.broker_cfg = broker_cfg
        self.store_cfg = store_cfg
        self.disk = disk
        self.address = f"{name}:10911"
        self.ha_address = f"{name}:10912"
        self.nameserver = nameserver
        self.is_master = master
        self.store = MessageStore(disk, store_cfg, controller_mode=False)
        self.store.role = BrokerRole(store_cfg.broker_role) if master else BrokerRole.SLAVE
        self.store.fenced = False
        self.broker_id = 0 if master else int(name[1:]) - 1
        self.connections: dict[int, LegacyConnection] = {}
        self.client = None if master else LegacyClient(self, f"{master_name}:10912")
        self.push2slave = 0
        self.pending: list[_Pending] = []
        self.bugs = bugs

    def start(self) -> None:
        Periodic(self, "registerNameServer", 10, max(10_000, min(self.broker_cfg.register_name_server_period, 60_000)),
                 self._register)
        if self.client is not None:
            self.client.start()

    def _register(self) -> Job:
        header = {"clusterName": self.broker_cfg.cluster_name, "brokerAddr": self.address,
                  "brokerName": self.broker_cfg.broker_name, "brokerId": self.broker_id,
                  "haServerAddr": self.ha_address, "stateVersion": 0}
        yield Call(self.nameserver, Command(RequestCode.REGISTER_BROKER, 0, header), 3000)

    # ------------------------------------------------------------------------------------- puts

    def on_request(self, src: str, cmd: Command) -> None:
        if cmd.code == RequestCode.SEND_MESSAGE:
            self._put(src, cmd)
        elif cmd.code == RequestCode.PULL_MESSAGE:
            start = cmd.header.get("queueOffset", 0)
            msgs = [[d.key, d.offset, d.size] for d in self.store.dispatched[start:start + 32]]
            header = {"confirmOffset": self.store.get_confirm_offset(), "nextQueueOffset": start + len(msgs)}
            if B.PULL_NEXT_OFFSET_STALE in self.bugs and len(msgs) == 32:
                header["nextQueueOffset"] = start
            self.send(src, response_to(cmd, ResponseCode.SUCCESS, header, msgs))
        elif not cmd.oneway:
            self.send(src, response_to(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED))

    def _put(self, src: str, cmd: Command) -> None:
        store = self.store
        if store.role == BrokerRole.SLAVE:
            self._reply(src, cmd, PutMessageStatus.SERVICE_NOT_AVAILABLE, None, None)
            return
        offset, size = store.commitlog.append_message(cmd.header["key"], cmd.header["bodySize"], self.now)
        self.emit({"k": "brk.append", "key": cmd.header["key"], "offset": offset, "size": size,
                   "role": store.role.value, "fenced": False, "masterEpoch": 0, "lastEpoch": -1})
        if self.store_cfg.flush_disk_type == "SYNC_FLUSH":
            store.commitlog.flush()
        elif store.max_phy_offset // 4096 - self.disk.flushed // 4096 >= self.store_cfg.flush_commit_log_least_pages:
            store.commitlog.flush()
        self._dispatch()
        if B.LEGACY_PUSH_WAITS_HEARTBEAT not in self.bugs:
            for c in self.connections.values():
                c.kick()
        if store.role != BrokerRole.SYNC_MASTER:
            self._reply(src, cmd, PutMessageStatus.PUT_OK, offset, size)
            return
        end = offset + size
        if not self._is_slave_ok(end):
            self._reply(src, cmd, PutMessageStatus.SLAVE_NOT_AVAILABLE, offset, size)
            return
        req = _Pending(end, self.now + self.store_cfg.sync_flush_timeout, src, cmd, offset, size)
        self.pending.append(req)
        self._check(req)
        if not req.done:
            self.after(self.store_cfg.sync_flush_timeout, self._deadline, req)

    def _is_slave_ok(self, master_put_where: int) -> bool:
        """``DefaultHAService.isSlaveOK``."""
        return bool(self.connections) and master_put_where - self.push2slave < self.store_cfg.ha_max_gap_not_in_sync

    def notify_transfer_some(self, offset: int) -> None:
        self.push2slave = max(self.push2slave, offset)
        for req in list(self.pending):
            self._check(req)

    def _check(self, req: _Pending) -> None:
        if not req.done and self.push2slave >= req.end:
            self._finish(req, PutMessageStatus.PUT_OK)

    def _deadline(self, req: _Pending) -> None:
        if not req.done:
            self._finish(req, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)

    def _finish(self, req: _Pending, status: PutMessageStatus) -> None:
        req.done = True
        self.pending.remove(req)
        self._reply(req.src, req.cmd, status, req.offset, req.size)

    def _reply(self, src: str, cmd: Command, status: PutMessageStatus, offset: int | None, size: int | None) -> None:
        code = {PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
                PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
                PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
                PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE}[status]
        header: dict[str, Any] = {"status": status.value, "key": cmd.header["key"]}
        if offset is not None:
            header.update(offset=offset, size=size)
        self.emit({"k": "brk.put-result", "key": cmd.header["key"], "status": status.value, "masterEpoch": 0})
        self.send(src, response_to(cmd, code, header))

    def _dispatch(self) -> None:
        self.store.do_reput(self.is_master)

    def on_slave_appended(self) -> None:
        self._dispatch()

    # ------------------------------------------------------------------------------------- HA

    def ha_connect(self, addr: str) -> int:
        token = self.new_opaque()
        self.out.append(HAConnect(token, addr))
        return token

    def ha_write(self, conn: int, data: bytes) -> None:
        self.out.append(HAWrite(conn, data))

    def ha_close(self, conn: int) -> None:
        self.out.append(HAClose(conn))

    def remove_connection(self, c: LegacyConnection) -> None:
        self.connections.pop(c.conn, None)

    def on_ha_connect_result(self, token: int, conn: int | None) -> None:
        if self.client is not None:
            self.client.on_connect_result(token, conn)

    def on_ha_accept(self, conn: int, peer: str) -> None:
        if self.is_master:
            self.connections[conn] = LegacyConnection(self, conn, peer)
        else:
            self.out.append(HAClose(conn))

    def on_ha_data(self, conn: int, data: bytes) -> None:
        c = self.connections.get(conn)
        if c is not None:
            c.on_data(data)
        elif self.client is not None and self.client.conn == conn:
            self.client.on_data(data)

    def on_ha_closed(self, conn: int) -> None:
        c = self.connections.pop(conn, None)
        if c is not None:
            c.closed = True
        elif self.client is not None and self.client.conn == conn:
            self.client.on_closed()

    def status(self) -> dict[str, Any]:
        return {"role": self.store.role.value, "max": self.store.max_phy_offset, "flushed": self.disk.flushed,
                "push2slave": self.push2slave, "connections": len(self.connections)}
