"""Stopping a campaign on a signal: SIGTERM and SIGHUP behave as SIGINT does.

On SIGINT Python raises ``KeyboardInterrupt`` in the main thread (Spark's own handler cancels the jobs first); the
campaign's driver then cancels its jobs, the command writes what it has and says how to resume, and the session
ends. ``stop_signals`` makes SIGTERM (a supervisor, ``kill``, ``timeout``) and SIGHUP (a closed terminal) raise
``Stop``, a ``KeyboardInterrupt``, at the same place, so that they take the same path; ``exit_status`` is the
shell's convention, 128 + the signal's number (130, 143, 129). Once stopping, ``hold_signals`` ignores further
ones, so that a second signal cannot cut the clean-up short (SIGKILL still can: the watchdog then cleans up).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stop(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as SIGINT's ``KeyboardInterrupt`` is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_of(exc: KeyboardInterrupt) -> int:
    return exc.signum if isinstance(exc, Stop) else int(signal.SIGINT)


def exit_status(exc: KeyboardInterrupt) -> int:
    """128 + the signal's number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + signal_of(exc)


def signal_name(exc: KeyboardInterrupt) -> str:
    return signal.Signals(signal_of(exc)).name


def _raise_stop(signum: int, _frame: FrameType | None) -> None:
    hold_signals()
    raise Stop(signum)


def hold_signals() -> None:
    """Ignore SIGINT, SIGTERM and SIGHUP from now on (the campaign is stopping)."""
    for sig in (signal.SIGINT, *SIGNALS):
        signal.signal(sig, signal.SIG_IGN)


@contextmanager
def stop_signals() -> Iterator[None]:
    """Within: SIGTERM and SIGHUP raise ``Stop`` in the main thread; the previous handlers (SIGINT's too) come back
    after."""
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, *SIGNALS)}
    for sig in SIGNALS:
        signal.signal(sig, _raise_stop)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
