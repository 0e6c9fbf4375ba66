"""Bringing a real cluster up and down, and talking to its supervisor and proxy (the CLI's side).

``up`` checks what it needs (root and network namespaces, Maven and the jars), writes the run's layout
(``spec.py``) and the proxy's routes, creates the namespaces, starts the supervisor in the hub namespace and asks
it to start the proxy, the nameserver, the controllers and the brokers, in that order, each group once the one
before listens. Any failure ends what was started and is one line (``RealError``) naming the log to read.

``down`` asks the supervisor to end the cluster and waits for it; if the supervisor is gone (killed), it ends
whatever is left in the run's namespaces itself and deletes them. Either way nothing of the run is left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cluster import rundir
from ..impl.sim.config import Config, ConfigError
from . import agent as A
from . import maven, netns
from .spec import RUN_FILE, SPEC_FILE, RealSpec, create, load

UP_TIMEOUT_S = 300.0
# The controller protocol's requests the proxy records with their responses (``events/proxy.jsonl``, ``frame``
# lines): the run's timeline of elections, role notifications, SyncStateSet changes, registrations, to the ms.
WATCH = ("CONTROLLER_ELECT_MASTER", "CONTROLLER_ALTER_SYNC_STATE_SET", "NOTIFY_BROKER_ROLE_CHANGED",
         "CONTROLLER_REGISTER_BROKER", "CONTROLLER_GET_NEXT_BROKER_ID", "CONTROLLER_APPLY_BROKER_ID",
         "CLEAN_BROKER_DATA", "CONTROLLER_GET_REPLICA_INFO", "REGISTER_BROKER")


ROCKETMQ_FILE = "rocketmq.json"  # which release each RocketMQ jar of the run came from (``up``)

# What a real run's folder holds (spec.py, this module, supervisor.py, clients.py, report.py, repro.py): ``--fresh``
# removes these, and a folder holding anything else is never wiped (``rundir.py``).
RUN_ENTRIES = frozenset({SPEC_FILE, SPEC_FILE + ".tmp", RUN_FILE, "nodes", "logs", "events", "clients", "proxy.json",
                         "classpath.txt", ROCKETMQ_FILE, "supervisor.sock", "proxy.sock", "history.jsonl",
                         "controller-log.jsonl", "trace.jsonl", "result.json", "report.html", "repro.json", "agent"})


class RealError(RuntimeError):
    """The real cluster could not do what was asked; one line, fit for a user."""


def request(sock: Path, req: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    """One JSON request on a Unix socket, one JSON answer."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(sock))
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    except (FileNotFoundError, ConnectionRefusedError):
        raise RealError(f"no cluster answers at {sock} (is it up?)") from None
    except TimeoutError:
        raise RealError(f"{sock}: no answer to {req.get('op')} within {timeout:.0f} s") from None
    finally:
        s.close()
    try:
        ans = json.loads(buf)
    except ValueError:
        raise RealError(f"{sock}: a garbled answer to {req.get('op')}") from None
    if not isinstance(ans, dict):
        raise RealError(f"{sock}: a garbled answer to {req.get('op')}")
    return ans


def supervise(spec: RealSpec, req: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    ans = request(spec.control_sock, req, timeout)
    if not ans.get("ok"):
        raise RealError(str(ans.get("error", "failed")))
    return ans


def is_up(spec: RealSpec) -> bool:
    try:
        request(spec.control_sock, {"op": "status"}, timeout=5)
    except RealError:
        return False
    return True


def proxy_config(spec: RealSpec) -> dict[str, Any]:
    routes = []
    for node in spec.nodes:
        h = spec.host(node)
        for kind, port in spec.ports(node).items():
            framing = {"remoting": "remoting", "fast": "remoting", "ha": "ha"}.get(kind, "raw")
            routes.append({"name": f"{node}.{kind}", "node": node, "kind": framing, "listen": [h.front, port],
                           "target": [h.addr, port]})
    return {"routes": routes, "peers": {spec.host(n).addr: n for n in spec.nodes}, "watch": list(WATCH),
            "control": str(spec.proxy_sock), "events": str(spec.dir / "events" / "proxy.jsonl"),
            "lifetime_s": spec.lifetime_s}


def preflight() -> None:
    ok, why = netns.available()
    if not ok:
        raise RealError(why)
    for exe in ("java", "tc"):
        if not shutil.which(exe):
            raise RealError(f"no `{exe}` on PATH (rmqha doctor says how to install it)")


def rocketmq_of(folder: Path) -> dict[str, Any]:
    """What a run's RocketMQ was made of (``maven.Install.summary``), as ``up`` recorded it; {} before that."""
    try:
        got = json.loads((folder / ROCKETMQ_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def up(folder: Path, cfg: Config, *, version: str, profile: str, lifetime_s: int, fresh: bool = False,
       owner: int | None = None, say: Callable[[str], None] = lambda _m: None,
       agent: A.AgentOptions | None = None) -> RealSpec:
    folder = folder.resolve()
    if folder.exists() and not folder.is_dir():
        raise RealError(f"--dir {folder}: exists and is not a folder")
    if (folder / SPEC_FILE).is_file():
        try:
            old: RealSpec | None = load(folder)
        except ConfigError:  # a torn description: an earlier run all the same, and nothing of it answers
            old = None
        if old is not None and is_up(old):
            raise RealError(f"a cluster is already up in {folder} (rmqha real down --dir {folder})")
    try:
        stale = rundir.earlier_run(folder, SPEC_FILE, RUN_ENTRIES, fresh=fresh, what="real cluster")
    except rundir.RunDirError as exc:
        raise RealError(str(exc)) from None
    if stale:
        down(folder, quiet=True)
        rundir.wipe(stale)
    preflight()
    say(f"resolving RocketMQ {version} (Maven) ...")
    try:
        inst = maven.fetch(version)
    except maven.FetchError as exc:
        raise RealError(str(exc)) from None
    agent_spec = None
    if inst.compat:  # a hybrid whose jars need the agent's bridges: every JVM runs with the agent
        agent = dataclasses.replace(agent or A.AgentOptions(), compat=True)
    if agent is not None:
        say("the kit's agent (Byte Buddy) ...")
        try:
            agent_spec = A.run_spec(A.build(inst), agent)
        except A.AgentError as exc:
            raise RealError(str(exc)) from None
    folder.mkdir(parents=True, exist_ok=True)
    try:
        spec = create(folder, cfg, version=version, profile=profile, lifetime_s=lifetime_s, agent=agent_spec)
    except ConfigError as exc:
        raise RealError(str(exc)) from None
    (folder / "events").mkdir(exist_ok=True)
    (folder / "proxy.json").write_text(json.dumps(proxy_config(spec), indent=1), encoding="utf-8")
    cp_file = folder / "classpath.txt"
    cp_file.write_text(inst.classpath + "\n", encoding="utf-8")
    # which release each RocketMQ jar came from (a hybrid release or a user's build says so in every result)
    (folder / ROCKETMQ_FILE).write_text(json.dumps(inst.summary(), indent=1, sort_keys=True), encoding="utf-8")
    say(f"network namespaces rmqha-{spec.run}-* ...")
    try:
        netns.setup(spec.run, spec.hosts())
    except netns.NetnsError as exc:
        raise RealError(str(exc)) from None
    (folder / RUN_FILE).write_text(str(os.getpid()), encoding="utf-8")
    argv = [*netns.exec_prefix(spec.run, "hub"), sys.executable, "-m", "rmqha.real.supervisor",
            "--dir", str(folder), "--classpath-file", str(cp_file)]
    if owner is not None:
        argv += ["--owner", str(owner)]
    with open(folder / "logs" / "supervisor.out", "ab") as out:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True, cwd=str(folder))
    end = time.monotonic() + 20
    while not is_up(spec):
        if time.monotonic() > end:
            down(folder, quiet=True)
            raise RealError(f"the supervisor did not start; see {folder / 'logs' / 'supervisor.out'}")
        time.sleep(0.1)
    say(f"starting {', '.join(spec.nodes)} (RocketMQ {version}, {spec.controller_type}) ...")
    try:
        supervise(spec, {"op": "start-all"}, timeout=UP_TIMEOUT_S)
    except RealError:
        down(folder, quiet=True)
        raise
    return spec


def processes_of(folder: Path) -> list[int]:
    """The run's processes by their command lines: its supervisor (``rmqha.real.supervisor --dir FOLDER``), its
    proxy (``FOLDER/proxy.json``), its JVMs (``FOLDER/nodes/...``) and clients (``FOLDER/clients``); not a wrapper
    that merely names the folder (``timeout ... --dir FOLDER``), nor this process."""
    me = os.getpid()
    key = str(folder.resolve()).encode()
    marks = (key + b"/nodes/", key + b"/clients", key + b"/proxy.json")
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if any(m in cmd for m in marks) or (b"rmqha.real.supervisor" in cmd and key in cmd):
            out.append(int(d.name))
    return out


def down(folder: Path, *, quiet: bool = False, timeout: float = 20.0) -> list[str]:
    """End the cluster in ``folder``; returns what was ended. Safe to call on a cluster that is down."""
    folder = folder.resolve()
    try:
        spec = load(folder)
    except ConfigError:
        if quiet:
            return []
        raise
    ended: list[str] = []
    if is_up(spec):
        with contextlib.suppress(RealError):
            st = request(spec.control_sock, {"op": "status"}, timeout=5)
            ended = [n for n, s in st.get("nodes", {}).items() if s.get("state") not in ("exited", "not started")]
            request(spec.control_sock, {"op": "down"}, timeout=5)
        end = time.monotonic() + timeout
        while spec.control_sock.exists() and time.monotonic() < end:
            time.sleep(0.1)
    # whatever is left (a killed supervisor's children die with it; a process started by hand may not)
    for pid in netns.pids_inside(spec.run):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    netns.teardown(spec.run)
    # and the run's own processes outside the namespaces (the supervisor, still exiting; a client) end too
    end = time.monotonic() + timeout
    while (left := processes_of(folder)) and time.monotonic() < end:
        if time.monotonic() > end - timeout / 2:
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    for path in (folder / RUN_FILE, spec.control_sock, spec.proxy_sock):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return ended
