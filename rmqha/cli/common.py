"""What every subcommand module shares: the one-line usage error, the argument parser that raises it, and the
helpers that turn arguments into the kit's inputs (switch names, seed ranges, expected-loss settings)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from rich.console import Console

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import Config, config_from_dict
from rmqha.impl.trace import TraceFormatError, parse

from .files import UserError, read_trace_text

Handler = Callable[[argparse.Namespace, Console], int]
"""A subcommand: its parsed arguments and the console to print on; returns the exit status."""

DEFAULT_STEPS = 20_000


class Parser(argparse.ArgumentParser):
    """``argparse`` with one-line errors: a usage mistake is a ``UserError`` (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        sub = self.prog.split(" ", 1)[1] + ": " if " " in self.prog else ""
        raise UserError(f"{sub}{message} (see --help)")


def bug_list(bugs: list[str], fixes: list[str]) -> list[str]:
    try:
        return B.names_from(bugs, fixes)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def apply_configs(cfg: Config, names: list[str]) -> None:
    """Expected-loss configurations (bugs of kind "config") are settings, and so is turning on the part a fidelity
    switch lives in."""
    overlay = B.config_overlay(names)
    if overlay:
        fresh = config_from_dict(overlay, cfg)
        for sec in overlay:
            setattr(cfg, sec, getattr(fresh, sec))


def seed_range(text: str) -> list[int]:
    try:
        if "-" in text:
            a, b = text.split("-", 1)
            lo, hi = int(a), int(b)
        else:
            lo = hi = int(text)
    except ValueError:
        raise UserError(f"--seeds must look like 1-200, got {text!r}") from None
    if lo < 0 or hi < lo or hi - lo > 1_000_000:
        raise UserError(f"--seeds range {text!r} is empty or too large")
    return list(range(lo, hi + 1))


def violation_line(v: Mapping[str, Any] | None) -> str:
    if v is None:
        return "no violation"
    return f"{v['invariant']} at step {v['step']} (t={v['t'] / 1000:.1f}s): {v['message']}"


def read_trace(path: str, text: str | None = None) -> tuple[str, dict[str, Any], list[dict[str, Any]],
                                                           dict[str, Any]]:
    """A trace file's text (read unless given) and its parsed header, step lines and footer; a bad file is a
    one-line UserError."""
    text = read_trace_text(path) if text is None else text
    try:
        header, lines, footer = parse(text)
    except TraceFormatError as exc:
        raise UserError(f"{path}: {exc}") from None
    return text, header, lines, footer


def model_trace_objs(path: str, text: str) -> list[dict[str, Any]] | None:
    """The objects of a model trace (header layer "model"), None for an implementation trace."""
    try:
        first = json.loads(text.split("\n", 1)[0])
    except json.JSONDecodeError:
        return None
    if not isinstance(first, dict) or first.get("layer") != "model":
        return None
    try:
        return [json.loads(x) for x in text.splitlines() if x.strip()]
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not a model trace ({exc})") from None
