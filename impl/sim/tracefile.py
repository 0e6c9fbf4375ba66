"""Trace files on disk: JSON Lines, gzip-compressed when the name ends in ``.gz`` (``docs/trace-format.md``).

``read_text`` takes plain or gzip bytes alike (it looks at the magic number, not the name); ``write_text`` writes
atomically (a temporary file renamed into place), compressing a ``.gz`` path with a zero mtime so that equal traces
give equal files. A missing, damaged or unwritable file is a ``TraceFileError`` with one line; the command line
turns it into a usage error, scripts and tests let it propagate.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path


class TraceFileError(Exception):
    """A trace file that cannot be read or written: one line."""


def read_text(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise TraceFileError(f"trace file not found: {path}")
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise TraceFileError(f"{path}: damaged gzip file ({exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceFileError(f"{path}: not a text file") from None


def write_text(path: str, text: str) -> None:
    """Write atomically (a temp file renamed into place); ``.gz`` paths are compressed."""
    p = Path(path)
    if p.parent and not p.parent.exists():
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TraceFileError(f"cannot create {p.parent}: {exc.strerror}") from None
    tmp = p.with_name(p.name + ".tmp")
    data = text.encode("utf-8")
    if p.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, p)
    except OSError as exc:
        raise TraceFileError(f"cannot write {path}: {exc.strerror}") from None
