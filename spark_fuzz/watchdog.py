"""The campaign's watchdog: when the kit dies, however it dies, nothing it started on Spark's side survives it.

``rmqha fuzz`` starts Spark's driver JVM in a session of its own (so a terminal's or a supervisor's signal to the
kit's process group reaches the kit alone, which then stops Spark in order), and this watchdog beside it, also in a
session of its own. The kit holds the write end of a pipe whose read end is the watchdog's stdin, and tells it the
JVM's pid (a line ``pid N``). When that pipe closes (the kit stopped Spark and exited, or was killed, even with
SIGKILL, and the kernel closed its end), the watchdog:

1. waits up to ``GRACE`` seconds for the JVM to exit (it does by itself: Spark's gateway server exits when its
   stdin, a pipe from the kit, closes), then kills what is left of its process group;
2. waits up to ``GRACE`` seconds for the processes marked with this campaign's scratch directory (the environment
   variable ``MARK``: Spark's Python daemon and workers, in process groups of their own) to exit (the daemon exits
   when the JVM's pipe closes, and hangs up its workers), then kills those left;
3. removes the scratch directory (Spark's ``spark-*``, ``blockmgr-*`` and ``pyspark-*`` directories, the kit zip,
   the log configuration): the campaign leaves no temporary directory behind.

Run as ``python -m rmqha.spark_fuzz.watchdog SCRATCH``. It uses the standard library only and reads ``/proc``
(Linux); elsewhere it still waits for the pids it was given and removes the directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

MARK = "RMQHA_SPARK_SCRATCH"  # in the environment of every process of a campaign's Spark: its scratch directory
GRACE = 5.0  # seconds a process gets to exit by itself once the kit is gone
POLL = 0.1


def _start_time(pid: int) -> str | None:
    """The process's start time (``/proc/<pid>/stat`` field 22), to tell it from a later process with its pid;
    None when it is gone (or on a system without ``/proc``, where only ``kill(pid, 0)`` says)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        if Path("/proc/self/stat").exists():
            return None
        try:
            os.kill(pid, 0)
        except OSError:
            return None
        return "?"
    fields = stat[stat.rindex(")") + 2:].split()
    return None if fields[0] == "Z" else fields[19]


def marked(scratch: str) -> dict[int, str]:
    """The live processes whose environment holds ``MARK=scratch``, with their start times."""
    want = f"{MARK}={scratch}".encode()
    out: dict[int, str] = {}
    for entry in Path("/proc").glob("[0-9]*") if Path("/proc/self").exists() else ():
        try:
            env = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours
            continue
        if want in env.split(b"\0"):
            started = _start_time(int(entry.name))
            if started is not None:
                out[int(entry.name)] = started
    return out


def children(parent: int, procs: dict[int, str]) -> dict[int, str]:
    """Those of ``procs`` whose parent is ``parent``."""
    out = {}
    for pid, started in procs.items():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == parent:
            out[pid] = started
    return out


def _alive(procs: dict[int, str]) -> dict[int, str]:
    return {p: t for p, t in procs.items() if _start_time(p) == t}


def wait_gone(procs: dict[int, str], limit: float = GRACE) -> None:
    """Wait up to ``limit`` seconds for ``procs`` to exit."""
    deadline = time.monotonic() + limit
    while _alive(procs) and time.monotonic() < deadline:
        time.sleep(POLL)


def _end(procs: dict[int, str], groups: bool) -> None:
    """Wait ``GRACE`` for ``procs`` to exit, then SIGKILL the rest (their process groups with ``groups``)."""
    wait_gone(procs)
    for pid in _alive(procs):
        try:
            if groups:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def note(line: str, pids: dict[int, str]) -> None:
    """A ``pid N`` line: remember the process with its start time now (a pid is reused once its process is gone)."""
    word, _, arg = line.strip().partition(" ")
    if word == "pid" and arg.isdigit():
        started = _start_time(int(arg))
        if started is not None:
            pids[int(arg)] = started


def finish(scratch: str, pids: dict[int, str]) -> None:
    """The kit is gone: end ``pids`` (their process groups) and the marked processes, and remove ``scratch``."""
    _end(pids, groups=True)  # the JVM leads its own session: its group is its pid
    _end(marked(scratch), groups=False)
    shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m rmqha.spark_fuzz.watchdog SCRATCH", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    pids: dict[int, str] = {}
    for line in sys.stdin:  # until EOF: the kit closed its end, or died
        note(line, pids)
    finish(argv[0], pids)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
