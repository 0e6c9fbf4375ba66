"""The run's client processes: the Java tool as producer, consumer and observer, in the hub namespace.

Each is started with ``PR_SET_PDEATHSIG`` (it dies with the harness, however the harness ends), in a process
group of its own, with its JSON Lines on ``D/clients/NAME.jsonl`` and its diagnostics on ``NAME.err``. It stops
when its stdin closes (``stop``), at its own deadline, or by SIGKILL after a bounded wait.

``Tail`` reads a growing JSON Lines file incrementally (a line cut by a kill is skipped), which is how the
harness follows the observer while the run goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ..impl.sim.children import start_child
from .observe import Snapshot, rounds, tool_argv
from .spec import RealSpec


class Client:
    def __init__(self, spec: RealSpec, name: str, args: list[str]) -> None:
        self.name = name
        d = spec.dir / "clients"
        d.mkdir(exist_ok=True)
        self.path = d / f"{name}.jsonl"
        self._out: IO[bytes] = open(self.path, "ab")
        self._err: IO[bytes] = open(d / f"{name}.err", "ab")
        self.proc = start_child(tool_argv(spec, *args), stdin=subprocess.PIPE, stdout=self._out, stderr=self._err)

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 8.0) -> int | None:
        """Close its stdin (it ends its loop and prints its end line), then SIGKILL after ``timeout``."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
        self._out.close()
        self._err.close()
        return self.proc.returncode


class Tail:
    """The complete lines appended to a file since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos = 0
        self.rest = b""

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return []
        self.pos += len(data)
        data = self.rest + data
        lines = data.split(b"\n")
        self.rest = lines.pop()
        out = []
        for ln in lines:
            with contextlib.suppress(ValueError):
                d = json.loads(ln)
                if isinstance(d, dict):
                    out.append(d)
        return out


class Observer:
    """The long-running observer, followed round by round."""

    def __init__(self, spec: RealSpec, client: Client) -> None:
        self.spec = spec
        self.client = client
        self.tail = Tail(client.path)
        self.pending: list[dict[str, Any]] = []
        self.snaps: list[Snapshot] = []

    def poll(self) -> Snapshot | None:
        """Read what arrived; the latest complete snapshot (a round is complete once the next one starts)."""
        self.pending.extend(self.tail.read())
        rs = [d.get("round") for d in self.pending if d.get("k") in ("ctl", "brk")]
        if len(set(rs)) >= 2:
            last = max(r for r in rs if r is not None)
            done = [d for d in self.pending if d.get("round") != last]
            self.pending = [d for d in self.pending if d.get("round") == last]
            self.snaps.extend(rounds(self.spec, done))
        return self.snaps[-1] if self.snaps else None

    def wait(self, pred: Callable[[Snapshot], bool], timeout: float, step: float = 0.25) -> Snapshot | None:
        """Poll until ``pred(snapshot)`` holds; that snapshot, or None after ``timeout``."""
        end = time.monotonic() + timeout
        seen = len(self.snaps)
        while time.monotonic() < end:
            self.poll()
            for s in self.snaps[seen:]:
                if pred(s):
                    return s
            seen = len(self.snaps)
            time.sleep(step)
        return None
