"""Who recorded a trace: the kit's version and a fingerprint of the core that ran it (``docs/trace-format.md``,
"Provenance").

Rules:

* A new trace's header carries ``kit`` (the installed kit's version, ``importlib.metadata``; ``unknown`` where the
  kit runs without its distribution's metadata, as a Spark executor of a remote cluster may) and ``core``
  (``sha256:`` and the first 16 hex digits of ``fingerprint()``). ``runner.header_for`` adds both, so every header
  the kit writes for a new run has them; a re-run of a recorded header (replay, triage, shrinking, recheck) keeps the
  header's own, so that a trace recorded by one core replays byte for byte on another that runs it the same way.
* What counts as the core: every ``.py`` file of ``rmqha.impl`` (RocketMQ's rules, the invariants, the simulator
  that drives them) and of ``rmqha.models`` (the model a run with ``"conform": true`` is validated against), except
  ``rmqha.impl.sim.report`` (it renders runs and takes no part in one). The fingerprint is the SHA-256 over, for
  each file in the order of its path (``rmqha.impl/sim/world.py``), the path, a NUL, the byte length, a NUL and the
  bytes. Any edit to one of those files changes it, including one that changes no run (a comment): the fingerprint
  says "another core", never "a different run"; ``rmqha replay`` decides that by re-running.
* The files are read where the package is: a folder (a clone, an install) or a zip on ``sys.path`` (the kit as
  ``rmqha.spark_fuzz.session.kit_zip`` ships it to Spark executors); both give the same fingerprint for the same
  files. Read once per process.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import zipfile
from pathlib import Path
from typing import Any

CORE_PACKAGES = ("rmqha.impl", "rmqha.models")
"""The packages whose sources make up the core."""

EXCLUDED = ("rmqha.impl/sim/report/",)
"""Paths (``package/relative``) left out of the fingerprint: they take no part in a run."""

KEYS = ("kit", "core")
"""The header's provenance keys."""


def _package_files(pkg: str) -> list[tuple[str, bytes]]:
    """``(pkg/relative/path.py, bytes)`` for every ``.py`` file of ``pkg``, from its folder or its zip."""
    spec = importlib.util.find_spec(pkg)  # the parent package is imported, ``pkg`` itself is not
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{pkg}: not a package of files")
    location = next(iter(spec.submodule_search_locations))
    out: list[tuple[str, bytes]] = []
    base = Path(location)
    if base.is_dir():
        for f in base.rglob("*.py"):
            rel = f.relative_to(base)
            if "__pycache__" in rel.parts:
                continue
            out.append((f"{pkg}/{rel.as_posix()}", f.read_bytes()))
        return out
    archive = getattr(spec.loader, "archive", None)  # zipimport.zipimporter
    if not isinstance(archive, str):
        raise RuntimeError(f"{pkg}: its files are neither in a folder nor in a zip ({location})")
    inner = location[len(archive):].lstrip("/\\").replace("\\", "/") + "/"
    with zipfile.ZipFile(archive) as zf:
        for name in zf.namelist():
            if name.startswith(inner) and name.endswith(".py") and "/__pycache__/" not in name:
                out.append((f"{pkg}/{name[len(inner):]}", zf.read(name)))
    return out


def core_files() -> list[tuple[str, bytes]]:
    """The core's source files, sorted by path, with their bytes (``EXCLUDED`` left out)."""
    files = [f for pkg in CORE_PACKAGES for f in _package_files(pkg)
             if not any(f[0].startswith(x) for x in EXCLUDED)]
    return sorted(files)


def digest(files: list[tuple[str, bytes]]) -> str:
    """The full SHA-256 hex digest over ``files`` (path, NUL, length, NUL, bytes; in the given order)."""
    h = hashlib.sha256()
    for path, data in files:
        h.update(path.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0")
        h.update(data)
    return h.hexdigest()


@functools.cache
def fingerprint() -> str:
    """The core's fingerprint as a header holds it: ``sha256:`` and 16 hex digits."""
    return "sha256:" + digest(core_files())[:16]


@functools.cache
def kit_version() -> str:
    try:
        return importlib.metadata.version("rmqha")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def provenance() -> dict[str, str]:
    """The header keys of a new trace: ``{"kit": ..., "core": ...}``."""
    return {"kit": kit_version(), "core": fingerprint()}


def recorded_by(header: dict[str, Any]) -> str:
    """Who recorded ``header``, in words: ``kit 0.1.0, core sha256:...``, or that it predates provenance."""
    core = header.get("core")
    if not isinstance(core, str):
        return "a kit that did not record its core (traces before provenance)"
    return f"kit {header.get('kit', 'unknown')}, core {core}"


def same_core(header: dict[str, Any]) -> bool:
    """Whether ``header`` was recorded by this process's core."""
    return header.get("core") == fingerprint()
