"""The kit's child processes and temporary folders: nothing it starts outlives it, nothing it writes to the temporary
folder outlives the run that wrote it (``docs/architecture.md``, "Child processes").

Here, not in ``rmqha.spec`` (TLC), ``rmqha.cluster`` (the nodes) or ``rmqha.real`` (the JVMs), because those layers do
not import each other and every one of them imports ``rmqha.impl.sim``. Linux only, as the kit is.

* :func:`start_child` starts a child in a process group (and session) of its own, so a terminal's Ctrl-C reaches only
  the kit, which then ends the group; with ``die_with_me`` the child also gets ``PR_SET_PDEATHSIG = SIGKILL``: when
  the thread that started it ends, however it ends (SIGKILL included), the kernel kills the child. The death signal
  follows the starting *thread*: start such a child from a thread that lives as long as the child should (the main
  thread, or a worker that waits for the child). :func:`end_child` kills the whole group and waits, bounded.
* :func:`ending_on_signals` turns the first SIGTERM, SIGINT or SIGHUP into :class:`Ended` in the main thread, so every
  ``finally`` of the run (end the children, remove the temporary folders) runs before the kit exits with
  ``128 + signal`` (143, 130, 129); later signals are ignored while the run cleans up. Should an ``Ended`` cut a
  cleanup short, the block's exit ends every child :func:`start_child` started in it that still runs. A signal that
  lands while the main thread runs a finaliser (``__del__``, a weakref callback: Python prints such an exception
  as "ignored" and goes on) is not lost: :func:`_redeliver`, the block's ``sys.unraisablehook``, raises it again
  as soon as the finaliser returns.
* :func:`run_dir` makes a run's private temporary folder under the kit's own folder (``$TMPDIR/rmqha-<uid>/``), named
  after the process that owns it (pid and start time): ``<kind>.<pid>.<start>.<random>``. A run removes its folder on
  every ending it sees; a folder whose owner is gone (a SIGKILLed run) is removed by :func:`sweep_run_dirs`, which
  every run of the same kind calls before it starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ENDING_SIGNALS",
    "Ended",
    "end_child",
    "ending_on_signals",
    "kit_temp_root",
    "process_start",
    "run_dir",
    "same_process",
    "start_child",
    "sweep_run_dirs",
]

PR_SET_PDEATHSIG = 1
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""The signals that end a run cleanly (its children ended, its temporary folders removed)."""

_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl  # resolved here: the child between fork and exec only calls it


class Ended(BaseException):
    """The kit was asked to end by a signal (SIGTERM, SIGINT or SIGHUP). A ``BaseException``, as
    ``KeyboardInterrupt``: no ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        """``128 + signal``, as a shell reports a process a signal ended: 143 (TERM), 130 (INT), 129 (HUP)."""
        return 128 + self.signum


class _Guard:
    """The state of :func:`ending_on_signals` (one per process: signal handlers are)."""

    def __init__(self) -> None:
        self.depth = 0  # nested ending_on_signals blocks
        self.fired: int | None = None  # the signal that ended the run
        self.hold = 0  # start_child calls in progress on the main thread: Ended waits until the child is known
        self.pending: int | None = None
        self.started: dict[int, subprocess.Popen[Any]] = {}  # children started inside the block, by pid
        self.hook: Any = None  # the sys.unraisablehook the block replaced


_GUARD = _Guard()


def _on_signal(signum: int, _frame: object) -> None:
    if _GUARD.fired is not None:
        return  # the run is already ending: let its cleanup finish
    _GUARD.fired = signum
    if _GUARD.hold:
        _GUARD.pending = signum
        return
    raise Ended(signum)


@contextlib.contextmanager
def ending_on_signals() -> Iterator[None]:
    """Within the block, the first SIGTERM / SIGINT / SIGHUP raises :class:`Ended` in the main thread. On the way out
    by ``Ended``, every child :func:`start_child` started in the block and still running is ended. The previous
    handlers come back when the block ends. Outside the main thread this does nothing (Python runs signal handlers
    in the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in ENDING_SIGNALS} if _GUARD.depth == 0 else {}
    if _GUARD.depth == 0:
        _GUARD.fired = _GUARD.pending = None
        _GUARD.started.clear()
        _GUARD.hook, sys.unraisablehook = sys.unraisablehook, _redeliver
        for s in ENDING_SIGNALS:
            signal.signal(s, _on_signal)
    _GUARD.depth += 1
    try:
        yield
    except Ended:
        for proc in list(_GUARD.started.values()):
            end_child(proc)
        raise
    finally:
        _GUARD.depth -= 1
        if _GUARD.depth == 0:
            for s, handler in previous.items():
                signal.signal(s, handler)
            if sys.unraisablehook is _redeliver:
                sys.unraisablehook = _GUARD.hook
            _GUARD.started.clear()


def _redeliver(unraisable: Any) -> None:
    """``sys.unraisablehook`` inside :func:`ending_on_signals`: an :class:`Ended` raised while a finaliser ran was
    swallowed by the interpreter (nothing propagates out of ``__del__``). Raising it again here would be swallowed
    too, so a profile function raises it at the first call or return event outside the finaliser: in the code the
    finaliser interrupted. Anything else goes to the hook the block replaced."""
    exc = unraisable.exc_value
    if isinstance(exc, Ended) and _GUARD.depth and _GUARD.fired == exc.signum:
        sys.setprofile(_raise_outside_finalisers(exc.signum))
        return
    (_GUARD.hook or sys.__unraisablehook__)(unraisable)


def _raise_outside_finalisers(signum: int) -> Any:
    def profile(frame: Any, _event: str, _arg: object) -> None:
        f = frame
        while f is not None:
            if f.f_code.co_name == "__del__" or f.f_code is _redeliver.__code__:
                return  # still inside the finaliser (or the hook)
            f = f.f_back
        sys.setprofile(None)
        raise Ended(signum)

    return profile


def _child_setup(parent: int, die_with_me: bool) -> None:  # runs in the child, between fork and exec
    if die_with_me:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the death signal was armed
            os._exit(1)


def start_child(argv: Sequence[str], *, die_with_me: bool = True, **popen: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(argv, **popen)`` in a new session (its own process group, no controlling terminal), with
    ``PR_SET_PDEATHSIG = SIGKILL`` when ``die_with_me``. Inside :func:`ending_on_signals`, a signal that arrives while
    the child starts ends the run only once the child is known (so the run's cleanup can end it)."""
    if "start_new_session" in popen or "preexec_fn" in popen or "process_group" in popen:
        raise ValueError("start_child sets the session and the child's setup itself")
    parent = os.getpid()
    on_main = threading.current_thread() is threading.main_thread()
    if on_main:
        _GUARD.hold += 1
    try:
        proc: subprocess.Popen[Any] = subprocess.Popen(
            list(argv), start_new_session=True, preexec_fn=lambda: _child_setup(parent, die_with_me), **popen)
        if _GUARD.depth:
            _GUARD.started[proc.pid] = proc
    finally:
        if on_main:
            _GUARD.hold -= 1
    if on_main and not _GUARD.hold and _GUARD.pending is not None:
        signum, _GUARD.pending = _GUARD.pending, None
        raise Ended(signum)
    return proc


def end_child(proc: subprocess.Popen[Any], timeout: float = 10.0) -> int | None:
    """SIGKILL ``proc``'s process group (SIGCONT first: a stopped process dies at once) and wait at most ``timeout``
    seconds for ``proc``. Returns its exit status, or None if it did not end in time."""
    if proc.poll() is None:  # not reaped: its pid (the group's id) cannot have been reused
        for sig in (signal.SIGCONT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None
    _GUARD.started.pop(proc.pid, None)
    return code


# ----------------------------------------------------------------------------------------- process identity


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, ``/proc/PID/stat`` field 22), or None if there is no
    such process (a zombie counts as gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = text.rsplit(")", 1)[-1].split()
    if len(fields) < 20 or fields[0] == "Z":
        return None
    try:
        return int(fields[19])
    except ValueError:
        return None


def same_process(pid: int, start: int) -> bool:
    """Whether process ``pid`` still runs and is the one that started at ``start`` (not a reuse of its pid)."""
    return pid > 0 and process_start(pid) == start


# ----------------------------------------------------------------------------------------- temporary folders


def kit_temp_root() -> Path:
    """``$TMPDIR/rmqha-<uid>``, created with mode 0700; refused (RuntimeError) unless it is a folder of this user
    that nobody else may write."""
    root = Path(tempfile.gettempdir()) / f"rmqha-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise RuntimeError(f"{root} is not a private folder of this user: remove it")
    return root


def run_dir(kind: str) -> Path:
    """A new private folder ``<kit_temp_root>/<kind>.<pid>.<start>.<random>`` for one run of this process."""
    if not kind or "." in kind or "/" in kind:
        raise ValueError(f"bad run folder kind {kind!r}")
    start = process_start(os.getpid())
    return Path(tempfile.mkdtemp(prefix=f"{kind}.{os.getpid()}.{start}.", dir=kit_temp_root()))


def _owner(name: str, kind: str) -> tuple[int, int] | None:
    parts = name.split(".")
    if len(parts) != 4 or parts[0] != kind or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return int(parts[1]), int(parts[2])


def sweep_run_dirs(kind: str, root: Path | None = None) -> list[Path]:
    """Remove the run folders of ``kind`` whose owner process is gone (a run killed by SIGKILL, or one whose cleanup
    was cut short). Returns what was removed."""
    root = kit_temp_root() if root is None else root
    removed: list[Path] = []
    with contextlib.suppress(FileNotFoundError):
        for entry in sorted(root.iterdir()):
            owner = _owner(entry.name, kind)
            if owner is None or same_process(*owner) or not entry.is_dir() or entry.is_symlink():
                continue
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed
