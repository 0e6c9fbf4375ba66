"""File I/O for the command line: config files (TOML) and trace files (JSON Lines, optionally gzip:
``rmqha.impl.sim.tracefile``). A missing or malformed file is a ``UserError`` (one line, exit status 2)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from rmqha.impl.sim import tracefile
from rmqha.impl.sim.config import PROFILES, Config, ConfigError, config_from_dict, default_config


class UserError(Exception):
    """A mistake in the user's input: printed as one line, exit status 2."""


def read_toml(path: str) -> dict[str, Any]:
    """A TOML file's table; a missing or malformed file is a ``UserError``."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"config file not found: {path}")
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def file_profile(path: str | None, data: dict[str, Any]) -> str | None:
    """The ``profile`` a config file names (taken out of its settings), ``None`` if it names none."""
    profile = data.pop("profile", None)
    if profile is not None and not isinstance(profile, str):
        raise UserError(f"{path}: 'profile' must be a string")
    return profile


PROGRESS_ON = {"sim": {"progress": True}}
"""What new runs of ``rmqha simulate`` and ``rmqha fuzz`` start from, under the profile and the config file: a settle
tail and the progress checks (``--no-progress``, or ``progress = false`` in the file's ``[sim]``, turns them off).
A trace records the setting in its header only when it is on, so a trace written without it replays as before."""


def load_config(path: str | None, profile: str | None, progress: bool = False) -> tuple[Config, str]:
    """The profile (default ``safe``) overlaid with the file's settings; the file may name its profile. With
    ``progress``, ``PROGRESS_ON`` goes between the two."""
    cfg, profile, _ = load_config_aside(path, profile, (), progress)
    return cfg, profile


def load_config_aside(path: str | None, profile: str | None, aside: tuple[str, ...],
                      progress: bool = False) -> tuple[Config, str, dict[str, Any]]:
    """``load_config``, with the file's top-level tables named in ``aside`` (e.g. ``[fuzz]``) taken out of the
    kit settings and returned by name."""
    data: dict[str, Any] = {}
    if path is not None:
        data = read_toml(path)
        named = file_profile(path, data)
        profile = profile or named
    tables = {name: data.pop(name) for name in aside if name in data}
    profile = profile or "safe"
    if profile not in PROFILES:
        raise UserError(f"unknown profile {profile!r} (known: {', '.join(sorted(PROFILES))})")
    try:
        base = default_config(profile)
        if progress:
            base = config_from_dict(PROGRESS_ON, base)
        return config_from_dict(data, base), profile, tables
    except ConfigError as exc:
        raise UserError(f"{path or 'config'}: {exc}") from None


def read_trace_text(path: str) -> str:
    """A trace file's text (``rmqha.impl.sim.tracefile.read_text``); a bad file is a ``UserError``."""
    try:
        return tracefile.read_text(path)
    except tracefile.TraceFileError as exc:
        raise UserError(str(exc)) from None


def write_text(path: str, text: str) -> None:
    """Write atomically; ``.gz`` paths are compressed (``rmqha.impl.sim.tracefile.write_text``); a failure is a
    ``UserError``."""
    try:
        tracefile.write_text(path, text)
    except tracefile.TraceFileError as exc:
        raise UserError(str(exc)) from None
