"""The supervisor of a real cluster: the one process that owns every JVM of the run and the proxy.

Started by ``rmqha real up`` (``python -m rmqha.real.supervisor --dir D``) inside the run's hub namespace, in a
session of its own, so it outlives the command that started it. It starts the proxy and the nodes, each node
in its own network namespace (``ip netns exec``), each child in its own process group and with
``PR_SET_PDEATHSIG = SIGKILL``: if the supervisor dies, however it dies, the kernel kills its children. Commands
arrive on a Unix socket (``D/supervisor.sock``; a path, so it works across namespaces), one JSON object per
line, one JSON answer per line: ``start``, ``signal`` (KILL, STOP, CONT, TERM), ``restart``, ``status``,
``down``.

It ends the cluster (every child's process group SIGKILLed and waited for, the run's namespaces deleted, the
socket removed) on ``down``, on SIGTERM / SIGINT / SIGHUP, once ``D/running`` is gone, once the optional owner
process is gone (``--owner PID``: ``rmqha real test`` and the tests pass their own pid, so a killed test leaves
nothing), and after the run's lifetime. Every wait is bounded.

Each process event is a line of ``D/events/supervisor.jsonl`` (``t`` in ms since the epoch): ``proc.start``,
``proc.ready`` (the node's main port accepts connections), ``proc.signal``, ``proc.exit`` (with the status).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from ..impl.sim.children import start_child
from . import netns
from .spec import RUN_FILE, RealSpec, load

READY_TIMEOUT_S = 120.0  # a JVM on a loaded 2-core machine can take a while to listen
SIGNALS = {"KILL": signal.SIGKILL, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT, "TERM": signal.SIGTERM}


def now_ms() -> int:
    return int(time.time() * 1000)


class Child:
    def __init__(self, node: str, argv: list[str], out: Path, env: dict[str, str] | None = None) -> None:
        self.node = node
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out: IO[bytes] = open(out, "ab")
        self.proc = start_child(argv, stdin=subprocess.DEVNULL, stdout=self.out, stderr=subprocess.STDOUT, env=env)
        self.started_ms = now_ms()
        self.ready_ms: int | None = None
        self.paused = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def reap(self) -> int | None:
        code = self.proc.poll()
        if code is not None and not self.out.closed:
            self.out.close()
        return code


class Supervisor:
    def __init__(self, spec: RealSpec, classpath: str, owner: int | None) -> None:
        self.spec = spec
        self.classpath = classpath
        self.owner = owner
        self.children: dict[str, Child] = {}
        self.exited: dict[str, int] = {}
        (spec.dir / "events").mkdir(exist_ok=True)
        self.events = open(spec.dir / "events" / "supervisor.jsonl", "a", encoding="utf-8")
        self.stopping = asyncio.Event()
        self.deadline = spec.created_ms / 1000 + spec.lifetime_s

    def event(self, kind: str, **data: Any) -> None:
        self.events.write(json.dumps({"t": now_ms(), "k": kind, **data}, sort_keys=True) + "\n")
        self.events.flush()

    # ------------------------------------------------------------------------------------------ children
    def _start(self, node: str) -> Child:
        old = self.children.get(node)
        if old is not None and old.reap() is None:
            raise ValueError(f"{node} is running (pid {old.pid})")
        if node == "proxy":
            argv = [sys.executable, "-m", "rmqha.real.proxy", "--config", str(self.spec.dir / "proxy.json")]
            child = Child(node, argv, self.spec.dir / "logs" / "proxy.out")
        else:
            argv = [*netns.exec_prefix(self.spec.run, node), *self.spec.java_argv(node, self.classpath)]
            child = Child(node, argv, self.spec.out_path(node))
        self.children[node] = child
        self.exited.pop(node, None)
        self.event("proc.start", node=node, pid=child.pid)
        return child

    async def _ready(self, node: str, timeout: float = READY_TIMEOUT_S) -> None:
        """Wait until ``node`` accepts connections on its own address, or say why not in one line."""
        child = self.children[node]
        if node == "proxy":
            sock = self.spec.proxy_sock
            end = time.monotonic() + timeout
            while not sock.exists():
                if child.reap() is not None:
                    raise ValueError(f"the proxy exited with status {child.proc.returncode}; see "
                                     f"{self.spec.dir / 'logs' / 'proxy.out'}")
                if time.monotonic() > end:
                    raise ValueError(f"the proxy did not start within {timeout:.0f} s")
                await asyncio.sleep(0.1)
            child.ready_ms = now_ms()
            return
        host, port = self.spec.host(node).addr, self.spec.main_port(node)
        end = time.monotonic() + timeout
        while True:
            code = child.reap()
            if code is not None:
                raise ValueError(f"{node} exited with status {code} before it listened on {host}:{port}; see "
                                 f"{self.spec.out_path(node)}")
            try:
                _, w = await asyncio.wait_for(asyncio.open_connection(host, port), 1.0)
                w.close()
                break
            except (OSError, TimeoutError):
                pass
            if time.monotonic() > end:
                raise ValueError(f"{node} did not listen on {host}:{port} within {timeout:.0f} s; see "
                                 f"{self.spec.out_path(node)}")
            await asyncio.sleep(0.2)
        child.ready_ms = now_ms()
        self.event("proc.ready", node=node, pid=child.pid, after_ms=child.ready_ms - child.started_ms)

    async def start(self, nodes: list[str], wait: bool = True) -> None:
        for n in nodes:
            self._start(n)
        if wait:
            await asyncio.gather(*(self._ready(n) for n in nodes))

    async def start_all(self) -> None:
        await self.start(["proxy"])
        await self.start([self.spec.nameserver, *self.spec.controllers])
        await self.start(self.spec.brokers)

    def signal(self, node: str, name: str) -> None:
        child = self.children.get(node)
        if child is None or child.reap() is not None:
            raise ValueError(f"{node} is not running")
        child.signal(SIGNALS[name])
        if name == "STOP":
            child.paused = True
        elif name == "CONT":
            child.paused = False
        self.event("proc.signal", node=node, pid=child.pid, signal=name)

    async def kill_and_wait(self, node: str, timeout: float = 10.0) -> None:
        child = self.children.get(node)
        if child is None:
            return
        child.signal(signal.SIGKILL)
        end = time.monotonic() + timeout
        while child.reap() is None and time.monotonic() < end:
            await asyncio.sleep(0.05)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for node in ["proxy", *self.spec.nodes]:
            child = self.children.get(node)
            if child is None:
                out[node] = {"state": "not started"}
                continue
            code = child.reap()
            state = "exited" if code is not None else ("paused" if child.paused else
                                                       ("running" if child.ready_ms else "starting"))
            out[node] = {"state": state, "pid": child.pid, "code": code, "startedMs": child.started_ms,
                         "readyMs": child.ready_ms}
        return {"ok": True, "nodes": out, "run": self.spec.run, "deadline": self.deadline}

    def _watch_exits(self) -> None:
        for node, child in self.children.items():
            code = child.reap()
            if code is not None and node not in self.exited:
                self.exited[node] = code
                self.event("proc.exit", node=node, pid=child.pid, code=code)

    # ------------------------------------------------------------------------------------------ control
    async def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        node = req.get("node")
        if node is not None and node not in [*self.spec.nodes, "proxy"]:
            return {"ok": False, "error": f"no node {node!r} (nodes: {', '.join(self.spec.nodes)})"}
        try:
            if op == "status":
                return self.status()
            if op == "start-all":
                await self.start_all()
            elif op == "start":
                await self.start([str(node)], wait=bool(req.get("wait", True)))
            elif op == "signal":
                name = str(req.get("signal", "KILL"))
                if name not in SIGNALS:
                    return {"ok": False, "error": f"signal {name!r}: one of {', '.join(SIGNALS)}"}
                self.signal(str(node), name)
                if name == "KILL":
                    await self.kill_and_wait(str(node))
                    self._watch_exits()
            elif op == "restart":
                await self.kill_and_wait(str(node))
                self._watch_exits()
                await self.start([str(node)], wait=bool(req.get("wait", True)))
            elif op == "down":
                self.stopping.set()
            else:
                return {"ok": False, "error": f"unknown op {op!r}"}
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True}

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 30)
            try:
                req = json.loads(line)
                if not isinstance(req, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                ans: dict[str, Any] = {"ok": False, "error": f"bad request: {exc}"}
            else:
                ans = await self.handle(req)
            writer.write(json.dumps(ans).encode() + b"\n")
            await writer.drain()
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()

    async def _watchdog(self) -> None:
        run_file = self.spec.dir / RUN_FILE
        while not self.stopping.is_set():
            self._watch_exits()
            why = None
            if not run_file.exists():
                why = "the run file is gone"
            elif time.time() > self.deadline:
                why = f"the run's lifetime ({self.spec.lifetime_s} s) is over"
            elif self.owner is not None and not _alive(self.owner):
                why = f"its owner (pid {self.owner}) is gone"
            if why:
                self.event("supervisor.stop", why=why)
                self.stopping.set()
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), 0.5)

    async def main(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stopping.set)
        sock = self.spec.control_sock
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()
        server = await asyncio.start_unix_server(self._client, path=str(sock))
        self.event("supervisor.start", pid=os.getpid(), run=self.spec.run)
        watchdog = asyncio.create_task(self._watchdog())
        try:
            await self.stopping.wait()
        finally:
            watchdog.cancel()
            server.close()
            await self.shutdown()

    async def shutdown(self) -> None:
        for child in self.children.values():
            child.signal(signal.SIGCONT)  # a paused JVM dies of SIGKILL too, but let it see it at once
            child.signal(signal.SIGKILL)
        end = time.monotonic() + 10
        while any(c.reap() is None for c in self.children.values()) and time.monotonic() < end:
            await asyncio.sleep(0.05)
        self._watch_exits()
        # anything else that entered the run's namespaces (a client started by hand) goes too
        for pid in netns.pids_inside(self.spec.run):
            if pid != os.getpid():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        netns.teardown(self.spec.run)
        for path in (self.spec.control_sock, self.spec.proxy_sock, self.spec.dir / RUN_FILE):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self.event("supervisor.end")
        self.events.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rmqha.real.supervisor")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--classpath-file", required=True)
    ap.add_argument("--owner", type=int)
    a = ap.parse_args(argv)
    spec = load(Path(a.dir))
    classpath = Path(a.classpath_file).read_text().strip()
    asyncio.run(Supervisor(spec, classpath, a.owner).main())
    return 0


if __name__ == "__main__":
    sys.exit(main())
