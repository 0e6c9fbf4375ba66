"""The loopback proxy in front of every listener, which makes partitions real.

Run as ``python -m rmqha.cluster.proxy --dir D``. For each node's RPC (and HA) listener it binds the outer port,
reads the connecting peer's hello frame to learn who it is, opens the inner port and pumps bytes both ways. A
*link* ``(a, b)`` cut stops the bytes that flow from ``a`` to ``b`` on every connection between them (reads stop,
so TCP holds the bytes back, as a partition does; they flow again when it heals, as in the simulator's HA
streams). A new connection across a cut link waits like a dropped SYN and is closed after ``CONNECT_TIMEOUT``.

Control: a JSON frame on the control port, ``{"op": "partition", "id": ..., "links": [[a, b], ...]}``,
``{"op": "heal", "id": ... | null}`` or ``{"op": "status"}``; the reply lists the partitions in force.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any

from . import wire
from .spec import HOST, ClusterSpec, load, why_stop

CONNECT_TIMEOUT = 3.0
log = logging.getLogger("rmqha.cluster.proxy")


class Proxy:
    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.partitions: dict[str, list[tuple[str, str]]] = {}
        self.changed = asyncio.Condition()

    def blocked(self, src: str, dst: str) -> bool:
        return any((src, dst) in links for links in self.partitions.values())

    async def _wait_open(self, src: str, dst: str) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: not self.blocked(src, dst))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, src: str, dst: str) -> None:
        try:
            while True:
                if self.blocked(src, dst):
                    await self._wait_open(src, dst)
                data = await reader.read(65536)
                if not data:
                    break
                if self.blocked(src, dst):  # cut while this read was pending: hold the bytes until the heal
                    await self._wait_open(src, dst)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def handler(self, node: str, kind: str) -> Any:
        inner = self.spec.ports[node]["rpc_in" if kind == "rpc" else "ha_in"]

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                first = await asyncio.wait_for(wire.read_frame(reader), 10)
                src, _ = wire.parse_hello(first)
            except (TimeoutError, wire.FrameError, ConnectionError, OSError) as exc:
                peer = writer.get_extra_info("peername")
                who = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "?"
                log.warning("%s %s: dropping a connection from %s: %s", node, kind, who,
                            str(exc) or type(exc).__name__)
                writer.close()
                return
            if self.blocked(src, node) or self.blocked(node, src):
                await asyncio.sleep(CONNECT_TIMEOUT)  # the SYN is lost; the dialler gives up
                writer.close()
                return
            try:
                up_r, up_w = await asyncio.wait_for(asyncio.open_connection(HOST, inner), CONNECT_TIMEOUT)
            except (TimeoutError, OSError):
                writer.close()  # the node is down: the dialler sees the connection end
                return
            assert first is not None  # parse_hello refused a connection closed before its hello
            up_w.write(wire.pack(first))
            await asyncio.gather(self._pump(reader, up_w, src, node), self._pump(up_r, writer, node, src))

        return handle

    async def control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            req = await asyncio.wait_for(wire.read_frame(reader), 10) or {}
            op = req.get("op")
            if op == "partition":
                links = [(str(a), str(b)) for a, b in req["links"]]
                async with self.changed:
                    self.partitions[str(req["id"])] = links
                    self.changed.notify_all()
            elif op == "heal":
                async with self.changed:
                    if req.get("id") is None:
                        self.partitions.clear()
                    else:
                        self.partitions.pop(str(req["id"]), None)
                    self.changed.notify_all()
            elif op != "status":
                raise wire.FrameError(f"unknown op {op!r}")
            writer.write(wire.pack({"ok": True, "partitions": {k: [list(x) for x in v]
                                                              for k, v in self.partitions.items()}}))
            await writer.drain()
        except (TimeoutError, wire.FrameError, KeyError, TypeError, ValueError, OSError) as exc:
            writer.write(wire.pack({"ok": False, "error": str(exc)}))
        finally:
            writer.close()

    async def main(self) -> None:
        servers = []
        for node, ports in self.spec.ports.items():
            servers.append(await asyncio.start_server(self.handler(node, "rpc"), HOST, ports["rpc"]))
            if "ha" in ports:
                servers.append(await asyncio.start_server(self.handler(node, "ha"), HOST, ports["ha"]))
        servers.append(await asyncio.start_server(self.control, HOST, self.spec.proxy_port))
        deadline = time.monotonic() + self.spec.max_lifetime
        while time.monotonic() < deadline and why_stop(self.spec.dir) is None:  # the lifetime, `down`, the owner
            await asyncio.sleep(0.5)
        for s in servers:
            s.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rmqha.cluster.proxy")
    ap.add_argument("--dir", required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s proxy %(levelname)s %(message)s", stream=sys.stderr)
    spec = load(Path(args.dir))
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    try:
        loop.run_until_complete(Proxy(spec).main())
    except RuntimeError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
