"""No orphans: ``rmqha check`` and ``rmqha cluster test`` killed mid-run by SIGTERM, SIGINT, SIGHUP or SIGKILL leave
no process and no temporary folder, and nothing they start listens outside 127.0.0.1.

Each case starts the kit as a child of the test (in a session of its own, with ``TMPDIR`` a folder of the test),
waits until the run really runs (TLC's java listening; every node of the cluster answering), reads every listening
socket of the run's processes from ``/proc/net/tcp{,6}``, sends the signal, then checks:

* the exit status: 143 (SIGTERM), 130 (SIGINT), 129 (SIGHUP), or death by SIGKILL;
* no process of the run is left: none of the pids the run started (TLC's java; the proxy and the nodes of
  ``pids.json``), no process whose command line names the run's temporary folder or cluster folder;
* no temporary folder is left: on SIGTERM / SIGINT / SIGHUP none at once; on SIGKILL the run's TLC folder is still
  there (nothing can remove it as the kit dies) and the next ``rmqha check`` removes it (the rule of
  ``rmqha.impl.sim.children``: a run folder whose owner process is gone is swept by the next run of its kind).

Linux only (``/proc``), as the kit's process handling is.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl.sim.config import ConfigError

from rmqha.cluster import control as C
from rmqha.cluster.spec import load

EXIT = {signal.SIGTERM: 143, signal.SIGINT: 130, signal.SIGHUP: 129, signal.SIGKILL: -signal.SIGKILL}
SIGNALS = list(EXIT)

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")


# ------------------------------------------------------------------------------------------------ /proc


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _pids_naming(text: str) -> list[int]:
    """The running processes (other than this one) whose command line contains ``text``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid() and text in _cmdline(int(entry.name)) \
                and _running(int(entry.name)):
            out.append(int(entry.name))
    return sorted(out)


def _address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))  # four little-endian 32-bit words
    return str(ipaddress.IPv6Address(words))


def _listening_inodes() -> dict[str, str]:
    """Socket inode -> ``address:port`` of every listening TCP socket (``/proc/net/tcp`` and ``tcp6``)."""
    out: dict[str, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if len(f) > 9 and f[3] == "0A":  # TCP_LISTEN
                host, port = f[1].split(":")
                out[f[9]] = f"{_address(host)}:{int(port, 16)}"
    return out


def _listeners(pids: list[int]) -> dict[int, list[str]]:
    """The listening TCP sockets each of ``pids`` holds."""
    inodes = _listening_inodes()
    out: dict[int, list[str]] = {}
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                out.setdefault(pid, []).append(inodes[target[8:-1]])
    return out


def _loopback(addr: str) -> bool:
    ip = ipaddress.ip_address(addr.rsplit(":", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _wait(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout:.0f} s for {what}")


def _gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """Wait (bounded) until none of ``pids`` runs; the ones still running."""
    deadline = time.monotonic() + timeout
    left = [p for p in pids if _running(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if _running(p)]
    return left


# ------------------------------------------------------------------------------------------------- runs


def _kit(args: list[str], tmp: Path, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONUNBUFFERED="1")
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "rmqha", *args], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _end(kit: subprocess.Popen[bytes], sig: signal.Signals) -> int:
    kit.send_signal(sig)
    try:
        return kit.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(kit.pid, signal.SIGKILL)
        kit.wait(10)
        raise AssertionError(f"the kit did not end within 60 s of {sig.name}") from None


def _run_folders(tmp: Path) -> list[str]:
    root = tmp / f"rmqha-{os.getuid()}"
    return sorted(p.name for p in root.iterdir() if not p.name.startswith("tlc-launcher-")) if root.exists() else []


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    (tmp_path / "tmp").mkdir()
    return tmp_path


@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_check_leaves_nothing(tmp: Path, sig: signal.Signals) -> None:
    temp = tmp / "tmp"
    kit = _kit(["check", "tiny", "--workers", "1", "--out", str(tmp / "out")], temp, tmp / "check.log")
    try:
        marker = f"{temp}/rmqha-{os.getuid()}/tlc.{kit.pid}."
        heard = _wait(lambda: _listeners([p for p in _pids_naming(marker) if "-metadir" in _cmdline(p)]), 120,
                      "TLC's java and its RMI listener")
        java = sorted(heard)
        folders = _run_folders(temp)
        assert len(folders) == 1 and folders[0].startswith(f"tlc.{kit.pid}."), folders
        assert kit.poll() is None, (tmp / "check.log").read_text()  # still running: the signal ends it mid-run
        code = _end(kit, sig)
    finally:
        if kit.poll() is None:
            os.killpg(kit.pid, signal.SIGKILL)
            kit.wait(10)
    log = (tmp / "check.log").read_text()
    assert all(_loopback(a) for addrs in heard.values() for a in addrs), heard
    assert code == EXIT[sig], log
    if sig != signal.SIGKILL:
        assert f"ended by {sig.name}" in log and "Traceback" not in log, log
    assert _gone(java) == [] and _pids_naming(f"{temp}/") == []
    if sig == signal.SIGKILL:
        assert _run_folders(temp) == folders  # the SIGKILLed run's folder: removed by the next run
        nxt = _kit(["check", "unclean_bug", "--workers", "1", "--out", str(tmp / "out")], temp, tmp / "next.log")
        assert nxt.wait(120) == 0, (tmp / "next.log").read_text()
    assert _run_folders(temp) == []


@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_cluster_test_leaves_nothing(tmp: Path, sig: signal.Signals) -> None:
    temp, folder = tmp / "tmp", tmp / "cluster"
    kit = _kit(["cluster", "test", "--duration", "60", "--dir", str(folder)], temp, tmp / "cluster.log")

    def every_node_answers() -> dict[str, int] | None:
        try:
            spec = load(folder)
        except ConfigError:  # not written yet
            return None
        pids = C.read_pids(spec)
        if set(pids) != {"proxy", *spec.nodes} or any(C.query(spec, n, 0.5) is None for n in spec.nodes):
            return None
        return pids

    started: list[int] = []
    try:
        pids = _wait(every_node_answers, 120, "every node of the cluster to answer")
        started = sorted(pids.values())
        heard = _listeners([kit.pid, *started])
        assert kit.poll() is None, (tmp / "cluster.log").read_text()
        code = _end(kit, sig)
    finally:
        if kit.poll() is None:
            os.killpg(kit.pid, signal.SIGKILL)
            kit.wait(10)
        # a process being killed loses its command line (its memory goes first) before it stops running, so the
        # started pids are waited for too, not only the processes still naming the folder
        leftover = _gone(sorted({*_pids_naming(str(folder)), *started}))
        for pid in leftover:  # never leave a process behind, even when the test fails
            os.killpg(pid, signal.SIGKILL)
    log = (tmp / "cluster.log").read_text()
    assert len(heard) == len(started) and all(_loopback(a) for addrs in heard.values() for a in addrs), heard
    assert code == EXIT[sig], log
    if sig != signal.SIGKILL:
        assert f"ended by {sig.name}" in log and "Traceback" not in log, log
    assert leftover == []
    assert _run_folders(temp) == []
    if sig != signal.SIGKILL:  # the run stopped its cluster itself: the run file is gone
        assert not (folder / "running").exists()
    else:  # nobody could: the processes saw their owner gone (or died with it) and exited
        assert json.loads((folder / "running").read_text())["owner"] == kit.pid


# ------------------------------------------------------------------------------- a signal inside a finaliser


class _SignalsFromItsFinaliser:
    """An object whose finaliser sends this process SIGTERM and goes on running Python code, so the signal's handler
    runs inside ``__del__``, where the interpreter swallows what it raises ("Exception ignored in ...")."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        total = 0
        for i in range(10_000):  # the handler runs at one of these steps, still inside the finaliser
            total += i


def test_a_signal_that_lands_in_a_finaliser_still_ends_the_run() -> None:
    """``ending_on_signals``: an ``Ended`` raised inside a finaliser cannot propagate and would be lost, the run going
    on to its end (as a real test once did for two minutes after SIGTERM); it is raised again once the finaliser
    returns, before the code after it runs."""
    from rmqha.impl.sim.children import Ended, ending_on_signals

    reached = []
    hook, handler = sys.unraisablehook, signal.getsignal(signal.SIGTERM)
    with pytest.raises(Ended) as caught:
        with ending_on_signals():
            _SignalsFromItsFinaliser()  # dropped at once: its finaliser runs here
            for _ in range(1000):
                time.sleep(0.001)
            reached.append("the code after the finaliser")
    assert caught.value.signum == signal.SIGTERM
    assert not reached
    assert (sys.unraisablehook, signal.getsignal(signal.SIGTERM), sys.getprofile()) == (hook, handler, None)
