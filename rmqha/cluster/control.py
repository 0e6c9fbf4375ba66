"""Start, inspect, fault and stop a local cluster's processes (what ``rmqha cluster ...`` does).

Processes: the proxy and one host per node, each in a process group and session of its own
(``rmqha.impl.sim.children.start_child``), so that a terminal's signal to the CLI does not reach them; their pids
are kept in ``<dir>/pids.json``. Every wait here is bounded in time.

Ownership: the run file names the kit process that owns the cluster. ``up`` owns it while it starts it (killed
then, by any signal, it leaves nothing running: SIGTERM / SIGINT / SIGHUP end the processes it started, and after
a SIGKILL every process of the cluster sees its owner gone within half a second and exits); a plain ``up`` then
lets go, and the cluster lives on until ``down`` or its lifetime. ``up(owned=True)`` (``rmqha cluster test``) keeps
it: the processes die with it, at once (``PR_SET_PDEATHSIG``: the owner starts them, restarts included), and exit by
themselves should it be killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..impl.sim.children import start_child
from ..impl.sim.config import Config, ConfigError
from . import rundir, wire
from .spec import HOST, RUN_FILE, SPEC_FILE, ClusterSpec, create, load, write_run_file

PIDS = "pids.json"
# What a cluster's folder holds (spec.py, this module, nemesis.py, run.py, report.py): ``--fresh`` removes these.
RUN_ENTRIES = frozenset({SPEC_FILE, SPEC_FILE + ".tmp", PIDS, PIDS + ".tmp", RUN_FILE, "nodes", "traces", "logs",
                         "faults.jsonl", "history.jsonl", "trace.jsonl", "result.json", "report.html"})
_children: dict[int, subprocess.Popen[bytes]] = {}  # processes this Python process started (reaped here)
_owned: set[Path] = set()  # the folders of the clusters this process owns for good (``up(owned=True)``)


class ClusterError(RuntimeError):
    """A user-facing failure of a cluster command; the message is one line."""


# ------------------------------------------------------------------------------------------- processes

def read_pids(spec: ClusterSpec) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in json.loads((spec.dir / PIDS).read_text()).items()}
    except (FileNotFoundError, ValueError):
        return {}


def _write_pids(spec: ClusterSpec, pids: dict[str, int]) -> None:
    tmp = spec.dir / (PIDS + ".tmp")
    tmp.write_text(json.dumps(pids, indent=1))
    tmp.replace(spec.dir / PIDS)


def alive(pid: int) -> bool:
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and b"rmqha.cluster" in cmd


def paused(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def _spawn(spec: ClusterSpec, module: str, name: str, *extra: str) -> int:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    path = spec.log_path(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = open(path, "ab")  # closed below, once the child holds it
    except OSError as exc:
        raise ClusterError(f"cannot write {name}'s log {path}: {exc.strerror}") from None
    with log:
        proc = start_child([sys.executable, "-m", module, "--dir", str(spec.dir), *extra],
                           die_with_me=spec.dir in _owned, stdin=subprocess.DEVNULL, stdout=log,
                           stderr=subprocess.STDOUT, env=env)
    _children[proc.pid] = proc
    return proc.pid


def start_node(spec: ClusterSpec, node: str) -> int:
    if node not in spec.nodes:
        raise ClusterError(f"no node {node!r} (nodes: {', '.join(spec.nodes)})")
    pids = read_pids(spec)
    if node in pids and alive(pids[node]):
        raise ClusterError(f"{node} is already running (pid {pids[node]})")
    pids[node] = _spawn(spec, "rmqha.cluster.host", node, "--node", node)
    _write_pids(spec, pids)
    return pids[node]


def up(folder: Path, cfg: Config, *, seed: int = 1, bugs: frozenset[str] = frozenset(), max_lifetime: int = 3600,
       ready_timeout: float = 20.0, fresh: bool = False, owned: bool = False) -> ClusterSpec:
    """Start a cluster in ``folder`` (a new or empty one, or with ``fresh`` an earlier run's, wiped first:
    ``rundir.py``; a running cluster is never touched) and wait until every process answers. A start that fails or
    is interrupted (``rmqha.impl.sim.children.Ended`` included) stops what it started. With ``owned`` the cluster
    stays this process's: its processes die with it."""
    if (folder / RUN_FILE).exists() and (folder / SPEC_FILE).is_file():
        old = load(folder)
        if any(alive(p) for p in read_pids(old).values()):
            raise ClusterError(f"a cluster is already running in {folder} (run `rmqha cluster down --dir {folder}`)")
    if cfg.cluster.mode != "controller":
        raise ConfigError("rmqha cluster runs controller mode only")
    try:
        rundir.wipe(rundir.earlier_run(folder, SPEC_FILE, RUN_ENTRIES, fresh=fresh, what="cluster"))
    except rundir.RunDirError as exc:
        raise ClusterError(str(exc)) from None
    spec = create(folder, cfg, seed=seed, bugs=bugs, max_lifetime=max_lifetime)
    write_run_file(spec.dir, os.getpid())
    (spec.dir / PIDS).unlink(missing_ok=True)
    if owned:
        _owned.add(spec.dir)
    try:
        pids = {"proxy": _spawn(spec, "rmqha.cluster.proxy", "proxy")}
        _write_pids(spec, pids)
        wait_port(spec.proxy_port, ready_timeout, "the proxy")
        for node in spec.nodes:
            start_node(spec, node)
        for node in spec.nodes:
            wait_status(spec, node, ready_timeout)
    except BaseException:
        with contextlib.suppress(ClusterError):
            down(spec)
        raise
    if not owned:
        write_run_file(spec.dir, None)  # the cluster lives on its own from now on
    return spec


def wait_port(port: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((HOST, port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise ClusterError(f"{what} did not open port {port} within {timeout:.0f} s")


def wait_status(spec: ClusterSpec, node: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = query(spec, node)
        if st is not None:
            return st
        time.sleep(0.05)
    raise ClusterError(f"{node} did not answer within {timeout:.0f} s (see {spec.log_path(node)})")


def signal_node(spec: ClusterSpec, node: str, sig: signal.Signals) -> int:
    pids = read_pids(spec)
    if node not in spec.nodes and node != "proxy":
        raise ClusterError(f"no node {node!r} (nodes: {', '.join(spec.nodes)})")
    pid = pids.get(node)
    if pid is None or not alive(pid):
        raise ClusterError(f"{node} is not running")
    os.kill(pid, sig)
    if sig == signal.SIGKILL:
        _reap(pid, 5.0)
    return pid


def _reap(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    child = _children.get(pid)
    while time.monotonic() < deadline:
        if child is not None:
            if child.poll() is not None:
                _children.pop(pid, None)
                return
        elif not alive(pid):
            return
        time.sleep(0.02)


def down(spec: ClusterSpec, timeout: float = 5.0) -> list[str]:
    """Stop every process of the cluster; the data, traces and logs stay. Returns what was still running."""
    (spec.dir / RUN_FILE).unlink(missing_ok=True)
    _owned.discard(spec.dir)
    pids = read_pids(spec)
    ran = [n for n, p in pids.items() if alive(p)]
    for n in ran:
        for sig in (signal.SIGCONT, signal.SIGKILL):  # SIGCONT: a paused process dies at once
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pids[n], sig)  # each process leads its own group
    for n in ran:
        _reap(pids[n], timeout)
    left = [n for n in ran if alive(pids[n])]
    if left:
        raise ClusterError(f"processes still running after {timeout:.0f} s: {', '.join(left)}")
    return ran


# ---------------------------------------------------------------------------------------------- sockets

def _request(port: int, frames: bytes, timeout: float) -> dict[str, Any] | None:
    try:
        with socket.create_connection((HOST, port), timeout) as s:
            s.settimeout(timeout)
            s.sendall(frames)
            n = wire.frame_length(_recv(s, 4))
            return wire.decode_payload(_recv(s, n))
    except (OSError, ValueError):  # wire.FrameError is a ValueError
        return None


def _recv(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def query(spec: ClusterSpec, node: str, timeout: float = 1.0) -> dict[str, Any] | None:
    """A node's status straight from its inner port (a partition does not hide it), or ``None``."""
    return _request(spec.ports[node]["rpc_in"], wire.hello("@status", "status"), timeout)


def proxy_call(spec: ClusterSpec, req: dict[str, Any]) -> dict[str, Any]:
    reply = _request(spec.proxy_port, wire.pack(req), 3.0)
    if reply is None:
        raise ClusterError("the proxy does not answer (is the cluster up?)")
    if not reply.get("ok"):
        raise ClusterError(f"proxy: {reply.get('error')}")
    return reply


def links(spec: ClusterSpec, a: list[str], b: list[str], one_way: bool) -> list[list[str]]:
    """The links that cut group ``a`` from group ``b`` (``a`` to ``b`` only with ``one_way``)."""
    for n in (*a, *b):
        if n not in spec.nodes:
            raise ClusterError(f"no node {n!r} (nodes: {', '.join(spec.nodes)})")
    out = [[x, y] for x in a for y in b if x != y]
    if not one_way:
        out += [[y, x] for x in a for y in b if x != y]
    return out
