"""One node of a local cluster: the sans-IO actor of ``impl/`` driven by asyncio over TCP on loopback.

Run as ``python -m rmqha.cluster.host --dir D --node NAME``. Theory of operation: every input (a timer, an RPC
frame, HA bytes, an accepted or refused connection, a closed channel) sets the actor's clock (ms since the
cluster's shared origin) and calls the actor's handler; ``_drain`` then saves the durable files (``persist.py``)
before any effect leaves the process, and carries out the effects: ``SetTimer`` as ``loop.call_later``, ``Send``
as a frame on a connection to the peer's outer (proxied) port, ``HAConnect``/``HAWrite``/``HAClose`` on real
sockets, ``Observe`` as a line of this node's trace (``traces/NAME.jsonl``).

Safety: listeners bind 127.0.0.1; a malformed frame of any kind (a bad length, JSON the core refuses, an unknown
command code, a header field of the wrong type, HA bytes the HA decoder refuses), or a handler that raises on a
peer's input, gets exactly one log line naming the peer and what was wrong (and a ``host.bad-frame`` line in the
trace), its connection is closed and the process goes on; write buffers are bounded (a connection whose peer
stops reading is closed past ``MAX_BUFFER``); the process exits by itself after the cluster's ``max_lifetime``,
once the run file is gone (``rmqha cluster down``) or once the kit process that owns the cluster is gone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from ..impl.broker.broker import BrokerNode
from ..impl.controller.node import ControllerNode
from ..impl.rng import DetRng
from ..impl.runtime import Actor, Command, HAClose, HAConnect, HAWrite, Observe, Send, SetTimer
from ..impl.sim.world import build_node
from . import wire
from .persist import BrokerFiles, ControllerFiles
from .spec import HOST, ClusterSpec, load, why_stop

CONNECT_TIMEOUT = 3.0
MAX_BUFFER = 64 * 1024 * 1024
MAX_PENDING = 10_000  # RPC frames queued for a peer while its connection opens

log = logging.getLogger("rmqha.cluster.host")


class Host:
    def __init__(self, spec: ClusterSpec, name: str) -> None:
        self.spec = spec
        self.name = name
        cfg = spec.cfg
        self.broker_files = BrokerFiles(spec.node_dir(name)) if name in spec.brokers else None
        self.ctl_files = ControllerFiles(spec.node_dir(name)) if name in spec.controllers else None
        self.disk = self.broker_files.load() if self.broker_files else None
        self.ctl_disk = self.ctl_files.load() if self.ctl_files else None
        restarts = self._count_start()
        rng = DetRng(spec.seed).fork(f"node:{name}:{restarts}")
        self.node: Actor = build_node(cfg, name, rng, controllers=spec.controllers, brokers=spec.brokers,
                                      nameserver=spec.nameserver, disk=self.disk, ctl_disk=self.ctl_disk,
                                      bugs=frozenset(spec.bugs))
        self.loop = asyncio.get_event_loop()
        self.trace = open(spec.trace_path(name), "a", encoding="utf-8")
        self.out: dict[str, _Peer] = {}
        self.inbound: dict[str, int] = {}  # peer -> open inbound RPC connections
        self._next_channel = 0  # inbound RPC connections accepted: each is a channel of its own (``src#n``)
        self.ha: dict[int, asyncio.StreamWriter] = {}
        self._next_conn = 0
        self._ha_error: str | None = None  # what the HA decoder refused in the input being handled
        self.incarnation = restarts

    def _count_start(self) -> int:
        marker = self.spec.node_dir(self.name) / "starts"
        marker.parent.mkdir(parents=True, exist_ok=True)
        n = int(marker.read_text()) + 1 if marker.exists() else 0
        marker.write_text(str(n))
        return n

    def now(self) -> int:
        return int((time.monotonic() - self.spec.clock_base) * 1000)

    # ------------------------------------------------------------------------------------------- inputs

    def _run(self, what: str, fn: Any, *args: Any) -> bool:
        """Call one handler of the actor at the current time, then carry out its effects. A handler that raises on
        a peer's input is logged; the caller closes that connection."""
        node = self.node
        node.now = self.now()
        try:
            fn(*args)
        except Exception as exc:
            log.error("%s: handler raised %s: %s", what, type(exc).__name__, exc)
            self._note("host.handler-error", what=what, error=f"{type(exc).__name__}: {exc}")
            self._drain()
            return False
        self._drain()
        return True

    def _timer(self, token: int) -> None:
        self._run("timer", self.node.on_timer, token)

    # ------------------------------------------------------------------------------------------ effects

    def _drain(self) -> None:
        node = self.node
        if not node.out:
            return
        out, node.out = node.out, []
        if self.broker_files is not None and self.disk is not None:
            self.broker_files.save(self.disk)
        if self.ctl_files is not None and self.ctl_disk is not None:
            self.ctl_files.save(self.ctl_disk)
        for eff in out:
            if isinstance(eff, SetTimer):
                self.loop.call_later(max(0, eff.at - node.now) / 1000, self._timer, eff.token)
            elif isinstance(eff, Send):
                self._send(eff.dst, eff.cmd)
            elif isinstance(eff, Observe):
                self._note(eff.kind, **eff.data)
            elif isinstance(eff, HAWrite):
                w = self.ha.get(eff.conn)
                if w is not None and not w.is_closing():
                    if w.transport.get_write_buffer_size() > MAX_BUFFER:
                        self._note("host.ha-overflow", conn=eff.conn)
                        self._close_ha(eff.conn)
                    else:
                        w.write(eff.data)
            elif isinstance(eff, HAClose):
                self._close_ha(eff.conn)
            elif isinstance(eff, HAConnect):
                self.loop.create_task(self._ha_connect(eff.token, eff.addr))
        if node.out:
            self._drain()

    def _note(self, kind: str, **data: Any) -> None:
        if kind == "ha.frame-error":
            self._ha_error = str(data.get("error"))
        line = {"t": self.now(), "n": self.name, "inc": self.incarnation, "k": kind, **data}
        self.trace.write(json.dumps(line, separators=(",", ":"), default=str) + "\n")
        self.trace.flush()

    # ---------------------------------------------------------------------------------------------- RPC

    def _send(self, dst: str, cmd: Command) -> None:
        if dst not in self.spec.ports:
            self._note("net.unknown-destination", dst=dst)
            return
        peer = self.out.get(dst)
        if peer is None:
            peer = self.out[dst] = _Peer(self, dst)
        peer.send(wire.command_frame(cmd))

    def _bad_frame(self, what: str, peer: str, error: str) -> None:
        """The one log line (and trace line) of a malformed frame."""
        log.warning("closing %s %s: %s", what, peer, error)
        self._note("host.bad-frame", peer=peer, error=error)

    async def serve_rpc(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        src = peer = _address(writer)
        counted = False
        channel = None
        try:
            src, kind = wire.parse_hello(await wire.read_frame(reader))
            peer = f"{src}@{peer}"
            if kind == "status":
                writer.write(wire.pack(self.status()))
                await writer.drain()
                return
            if kind != "rpc":
                raise wire.FrameError(f"{kind} connection on the RPC port")
            self.inbound[src] = self.inbound.get(src, 0) + 1
            counted = True
            self._next_channel += 1
            channel = f"{src}#{self._next_channel}"
            while True:
                frame = await wire.read_frame(reader)
                if frame is None:
                    break
                cmd = wire.parse_command(frame)
                if not self._run(f"message from {peer}", self.node.on_message, src, cmd, channel):
                    break
        except wire.FrameError as exc:
            self._bad_frame("RPC connection from", peer, str(exc))
        except (ConnectionError, OSError):
            pass
        except Exception as exc:  # never a traceback, never a dead node: one line, the connection closed
            self._bad_frame("RPC connection from", peer, f"{type(exc).__name__}: {exc}")
        finally:
            writer.close()
            if counted:
                self.inbound[src] -= 1
                # the controller's heartbeat table hears of each connection's close (onBrokerChannelClose(channel));
                # the nameserver forgets a process once its last connection is gone
                if self.inbound[src] == 0 or isinstance(self.node, ControllerNode):
                    self._run("channel closed", self.node.on_channel_closed, src, channel)

    # ----------------------------------------------------------------------------------------------- HA

    def _new_conn(self, writer: asyncio.StreamWriter) -> int:
        self._next_conn += 1
        self.ha[self._next_conn] = writer
        return self._next_conn

    def _close_ha(self, conn: int) -> None:
        w = self.ha.pop(conn, None)
        if w is not None:
            w.close()

    async def _ha_connect(self, token: int, addr: str) -> None:
        dst = addr.split(":")[0]
        port = self.spec.ports.get(dst, {}).get("ha")
        conn = None
        if port is not None:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), CONNECT_TIMEOUT)
                writer.write(wire.hello(self.name, "ha"))
                conn = self._new_conn(writer)
            except (TimeoutError, OSError):
                conn = None
        self._run("ha connect result", self.node.on_ha_connect_result, token, conn)
        if conn is not None:
            await self._pump_ha(conn, reader, "HA connection to", dst)

    async def serve_ha(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = _address(writer)
        try:
            src, kind = wire.parse_hello(await wire.read_frame(reader))
            peer = f"{src}@{peer}"
            if kind != "ha":
                raise wire.FrameError(f"{kind} connection on the HA port")
        except wire.FrameError as exc:
            self._bad_frame("HA connection from", peer, str(exc))
            writer.close()
            return
        except (ConnectionError, OSError):
            writer.close()
            return
        conn = self._new_conn(writer)
        self._run("ha accept", self.node.on_ha_accept, conn, src)
        await self._pump_ha(conn, reader, "HA connection from", peer)

    async def _pump_ha(self, conn: int, reader: asyncio.StreamReader, what: str, peer: str) -> None:
        """Feed the actor what arrives on HA connection ``conn`` (``what``: its direction, ``peer``: the other side)
        until either side closes it."""
        try:
            while conn in self.ha:
                data = await reader.read(65536)
                if not data:
                    break
                if conn not in self.ha:
                    return
                self._ha_error = None
                handled = self._run(f"{what} {peer}", self.node.on_ha_data, conn, data)
                if self._ha_error is not None:  # the decoder refused the bytes; the actor closed the connection
                    self._bad_frame(what, peer, self._ha_error)
                    self._ha_error = None
                    self._close_ha(conn)
                    return
                if not handled:  # logged by _run; the actor hears of the close below
                    break
        except (ConnectionError, OSError):
            pass
        if conn in self.ha:
            self.ha.pop(conn).close()
            self._run(f"{what} {peer} closed", self.node.on_ha_closed, conn)

    # ------------------------------------------------------------------------------------------- status

    def status(self) -> dict[str, Any]:
        node = self.node
        d: dict[str, Any] = {"node": self.name, "pid": os.getpid(), "t": self.now(), "incarnation": self.incarnation}
        d["tasks"] = [{"name": p.name, "period": p.period, "initial": p.initial, "created": p.created,
                       "lastStart": p.last_start, "cancelled": p.cancelled, "suppressed": p.suppressed}
                      for p in node.periodics]  # what LIVE-TASKS reads (the node's own clock: ``t``)
        if isinstance(node, BrokerNode):
            d.update(node.status())
            client = node.ha.client
            d["haClient"] = None if client is None else {"state": client.state.name, "conn": client.conn,
                                                         "address": client.master_ha_address}
            d["haConnections"] = [{"slave": c.slave_id, "state": c.state.name} for c in node.ha.connections.values()]
        elif isinstance(node, ControllerNode):
            d["leader"] = node.leader
            d["sets"] = {name: {"master": info.master_broker_id, "masterEpoch": info.master_epoch,
                                "sss": sorted(info.sync_state_set), "sssEpoch": info.sync_state_set_epoch}
                         for name, info in node.rim.sync_state_set_info_table.items()}
        return d

    # --------------------------------------------------------------------------------------------- main

    async def main(self) -> None:
        ports = self.spec.ports[self.name]
        servers = [await asyncio.start_server(self.serve_rpc, HOST, ports["rpc_in"])]
        if "ha_in" in ports:
            servers.append(await asyncio.start_server(self.serve_ha, HOST, ports["ha_in"]))
        self._note("host.start", pid=os.getpid())
        self._run("start", self.node.start)
        deadline = time.monotonic() + self.spec.max_lifetime
        why = why_stop(self.spec.dir)
        while time.monotonic() < deadline and why is None:  # bounded: the lifetime, `down`, or the owner's end
            await asyncio.sleep(0.5)
            why = why_stop(self.spec.dir)
        self._note("host.exit", reason=why or "max lifetime")
        for s in servers:
            s.close()


def _address(writer: asyncio.StreamWriter) -> str:
    """The connection's remote ``host:port``."""
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "?"


class _Peer:
    """The outbound RPC connection to one peer (through its proxy): opened on demand, frames queued meanwhile,
    dropped when the peer cannot be reached (a lost message, as the simulator's network may lose one)."""

    def __init__(self, host: Host, dst: str) -> None:
        self.host = host
        self.dst = dst
        self.writer: asyncio.StreamWriter | None = None
        self.pending: list[bytes] | None = None

    def send(self, frame: bytes) -> None:
        w = self.writer
        if w is not None and not w.is_closing():
            if w.transport.get_write_buffer_size() > MAX_BUFFER:
                self.host._note("net.drop", dst=self.dst, why="buffer full")
                return
            w.write(frame)
            return
        if self.pending is None:
            self.pending = [frame]
            self.host.loop.create_task(self._open())
        elif len(self.pending) < MAX_PENDING:
            self.pending.append(frame)

    async def _open(self) -> None:
        port = self.host.spec.ports[self.dst]["rpc"]
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), CONNECT_TIMEOUT)
        except (TimeoutError, OSError):
            self.host._note("net.drop", dst=self.dst, why="unreachable", n=len(self.pending or ()))
            self.pending = None
            return
        writer.write(wire.hello(self.host.name, "rpc"))
        for f in self.pending or ():
            writer.write(f)
        self.pending = None
        self.writer = writer
        try:
            while await reader.read(65536):  # nothing comes back on this connection; wait for its end
                pass
        except (ConnectionError, OSError):
            pass
        if self.writer is writer:
            self.writer = None
        writer.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rmqha.cluster.host")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--node", required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args.node} %(levelname)s %(message)s",
                        stream=sys.stderr)
    spec = load(Path(args.dir))
    if args.node not in spec.nodes:
        print(f"error: no node {args.node!r} in this cluster ({', '.join(spec.nodes)})", file=sys.stderr)
        return 2
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    host = Host(spec, args.node)
    try:
        loop.run_until_complete(host.main())
    except RuntimeError:  # the loop stopped on SIGTERM
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
