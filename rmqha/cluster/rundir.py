"""One run per folder: a run takes a new or empty folder, or, with ``--fresh``, the folder of an earlier run of its
kind, whose files it removes first. Reused without ``--fresh``, an earlier run's node files and history would mix
into the new run's (a second ``rmqha cluster test`` in the same folder read both runs' messages as one history: a
loss could hide behind the first run's acknowledgements).

A folder is an earlier run's when it holds the run's description (its ``marker``, e.g. ``cluster.json``) and nothing
but entries such a run writes (``known``); ``--fresh`` removes exactly those. A folder holding anything else is never
wiped: the run refuses it and names what is in the way. ``rmqha cluster`` and ``rmqha real`` share this check.
"""

from __future__ import annotations

import shutil
from collections.abc import Collection
from pathlib import Path


class RunDirError(RuntimeError):
    """A folder a run may not take; the message is one line, naming ``--dir`` and what to do."""


def _names(entries: list[Path], limit: int = 4) -> str:
    shown = [e.name + ("/" if e.is_dir() else "") for e in entries[:limit]]
    return ", ".join(shown) + (f" and {len(entries) - limit} more" if len(entries) > limit else "")


def earlier_run(folder: Path, marker: str, known: Collection[str], *, fresh: bool, what: str) -> list[Path]:
    """The entries of an earlier run that must go before a new run takes ``folder`` (empty for a new or empty
    folder). Without ``fresh`` an earlier run is refused; so is a folder that is not a ``what`` run's, with or
    without ``fresh``. Looks only: removes nothing (``wipe`` does)."""
    if not folder.exists():
        return []
    if not folder.is_dir():
        raise RunDirError(f"--dir {folder}: a file, not a folder")
    entries = sorted(folder.iterdir())
    if not entries:
        return []
    foreign = [e for e in entries if e.name not in known]
    if not (folder / marker).is_file():
        raise RunDirError(f"--dir {folder} is not empty and holds no {what} run ({_names(foreign or entries)}): "
                          "give a new or empty folder")
    if foreign:
        raise RunDirError(f"--dir {folder} holds an earlier {what} run and files it did not write "
                          f"({_names(foreign)}): not wiping it; move them, or give another --dir")
    if not fresh:
        raise RunDirError(f"--dir {folder} holds an earlier {what} run: give another --dir, or --fresh to wipe it")
    return entries


def wipe(entries: list[Path]) -> None:
    """Remove an earlier run's entries (``earlier_run``)."""
    for e in entries:
        if e.is_dir() and not e.is_symlink():
            shutil.rmtree(e)
        else:
            e.unlink(missing_ok=True)
