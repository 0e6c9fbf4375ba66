"""What every subcommand module shares: the one-line usage error, the argument parser that raises it, the typed
``type=`` helpers that validate every option at the edge (numbers finite and in range, seed ranges, paths usable,
Spark master URLs), and the helpers that turn arguments into the kit's inputs (switch names, expected-loss
settings).

A ``type=`` helper raises ``argparse.ArgumentTypeError``; ``Parser.error`` turns it into one line naming the option
and what it allows (``rmqha: simulate: argument --jobs: must be a whole number from 1 to 1,024, got '-1'``). It
only looks: it writes nothing and starts nothing, so a mistake is found before any run, Spark, TLC or process."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import tempfile
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
MAX_SEED = 2**62  # seeds go to the Parquet tables as 64-bit integers, with room for a range after them
MAX_SEEDS = 1_000_000  # seeds in one range
MAX_STEPS = 1_000_000_000
MAX_JOBS = 1024  # worker processes, TLC workers, Spark local threads
MAX_SECONDS = 1_000_000.0  # about 11 days: the longest budget, duration or watch
MAX_LIFETIME = 30 * 24 * 3600


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


def add_release_option(parser: Any) -> None:
    """``--rocketmq V``: the release whose rules the runs follow (its release profile, ``bugs.release_switches``)."""
    parser.add_argument("--rocketmq", type=choice(B.RELEASES, "RocketMQ release"), default=B.DEFAULT_RELEASE,
                        metavar="VERSION",
                        help=f"the RocketMQ release whose rules the runs follow: {', '.join(B.RELEASES)} (default "
                             f"{B.DEFAULT_RELEASE}, the release every finding is derived on; docs/fidelity.md)")


def with_release(names: list[str], release: str) -> list[str]:
    """``names`` with the switches of ``release`` added (sorted, unique)."""
    return sorted({*names, *B.release_switches(release)})


def apply_configs(cfg: Config, names: list[str]) -> None:
    """Expected-loss configurations (bugs of kind "config") are settings, and so is turning on the part a fidelity
    switch lives in."""
    overlay = B.config_overlay(names)
    if overlay:
        fresh = config_from_dict(overlay, cfg)
        for sec in overlay:
            setattr(cfg, sec, getattr(fresh, sec))


# ------------------------------------------------------------------------------------ option types (type=)


def _refuse(allowed: str, text: str) -> NoReturn:
    raise argparse.ArgumentTypeError(f"{allowed}, got {text!r}")


def _shown(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n > 10**12 and n & (n - 1) == 0 else f"{n:,}"


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """``type=``: a whole number in ``lo..hi``."""
    allowed = f"must be a whole number from {lo} to {_shown(hi)}"

    def whole(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            _refuse(allowed, text)
        if not lo <= n <= hi:
            _refuse(allowed, text)
        return n

    return whole


def number_in(lo: float, hi: float) -> Callable[[str], float]:
    """``type=``: a finite number above ``lo`` and at most ``hi``; nan and inf never."""
    allowed = f"must be a number above {lo:g} and at most {hi:g}"

    def number(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            _refuse(allowed, text)
        if not (math.isfinite(x) and lo < x <= hi):
            _refuse(allowed, text)
        return x

    return number


def seconds(hi: float = MAX_SECONDS) -> Callable[[str], float]:
    """``type=``: a positive finite number of seconds, at most ``hi``."""
    return number_in(0.0, hi)


def _seed_bounds(text: str) -> tuple[int, int]:
    lo_s, sep, hi_s = text.strip().partition("-")
    try:
        lo = int(lo_s)
        hi = int(hi_s) if sep else lo
    except ValueError:
        _refuse("must be a seed range like 1-200 (or one seed, e.g. 7)", text)
    if not 0 <= lo <= hi <= MAX_SEED or hi - lo >= MAX_SEEDS:
        _refuse(f"must be a range A-B with 0 <= A <= B <= {_shown(MAX_SEED)}, at most {MAX_SEEDS:,} seeds", text)
    return lo, hi


def seed_range(text: str) -> list[int]:
    """``type=``: a seed range ``A-B`` (or one seed ``N``): the seeds A..B."""
    lo, hi = _seed_bounds(text)
    return list(range(lo, hi + 1))


def seed_count_or_range(text: str) -> tuple[int | None, int]:
    """``type=``: ``N`` (a count: ``(None, N)``) or ``A-B`` (the seeds A..B: ``(A, B - A + 1)``)."""
    if "-" in text.strip():
        lo, hi = _seed_bounds(text)
        return lo, hi - lo + 1
    return None, int_in(1, MAX_SEEDS)(text)


def _stat(path: str) -> os.stat_result | None:
    """The path's status, ``None`` when it does not exist; a path that cannot be looked at is refused."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except ValueError:
        _refuse("must be a path without NUL bytes", path)
    except OSError as exc:
        _refuse(f"must be a usable path ({exc.strerror or exc})", path)


def _creatable(path: str, what: str) -> None:
    """A path that does not exist yet: its nearest existing ancestor must be a folder this process can write."""
    anc = os.path.dirname(os.path.abspath(path))
    while _stat(anc) is None:
        anc = os.path.dirname(anc)
    if not os.path.isdir(anc):
        _refuse(f"must be a {what} path ({anc} is a file, not a folder)", path)
    if not os.access(anc, os.W_OK | os.X_OK):
        _refuse(f"must be a {what} path in a folder you can write ({anc} is not writable)", path)


def input_dir(text: str) -> str:
    """``type=``: an existing, readable folder."""
    if not text or not os.path.isdir(text):
        _refuse("must be an existing folder", text)
    if not os.access(text, os.R_OK | os.X_OK):
        _refuse("must be a folder you can read (permission denied)", text)
    return text


def input_file(text: str) -> str:
    """``type=``: an existing, readable regular file."""
    if not text:
        _refuse("must name a file", text)
    st = _stat(text)
    if st is None:
        _refuse("must be an existing file (no such file)", text)
    if os.path.isdir(text):
        _refuse("must be a file (this is a folder)", text)
    if not os.path.isfile(text):
        _refuse("must be a regular file", text)
    if not os.access(text, os.R_OK):
        _refuse("must be a file you can read (permission denied)", text)
    return text


def input_path(text: str) -> str:
    """``type=``: an existing readable file or folder (``rmqha conform``: a trace, or a real run's folder)."""
    if text and os.path.isdir(text):
        if not os.access(text, os.R_OK | os.X_OK):
            _refuse("must be a folder you can read (permission denied)", text)
        return text
    return input_file(text)


def folder_path(text: str) -> str:
    """``type=``: a folder a command reads (a cluster's, a run's): not a file; a missing one is for the command to
    name (``no cluster in D``)."""
    if not text:
        _refuse("must name a folder", text)
    if _stat(text) is not None and not os.path.isdir(text):
        _refuse("must be a folder (this is a file)", text)
    return text


def output_file(text: str) -> str:
    """``type=``: a file to write: an existing writable file, or a new one whose folder can be made."""
    if not text or text.endswith(os.sep):
        _refuse("must name a file", text)
    if _stat(text) is None:
        _creatable(text, "file")
    elif os.path.isdir(text):
        _refuse("must be a file (this is a folder)", text)
    elif not os.access(text, os.W_OK):
        _refuse("must be a file you can write (permission denied)", text)
    return text


def output_dir(text: str) -> str:
    """``type=``: a folder to write in: an existing writable folder, or a new one that can be made."""
    if not text:
        _refuse("must name a folder", text)
    if _stat(text) is None:
        _creatable(text, "folder")
    elif not os.path.isdir(text):
        _refuse("must be a folder (this is a file)", text)
    elif not os.access(text, os.W_OK | os.X_OK):
        _refuse("must be a folder you can write (permission denied)", text)
    return text


_LOCAL = re.compile(r"local(?:\[(\*|\d+)(?:,(\d+))?\])?")
_HOST_PORT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?:(\d{1,5})")
MASTERS = "local, local[N], local[*], local[N,F], local[*,F], spark://HOST:PORT[,HOST:PORT], yarn, k8s://..., mesos://..."


def master_url(text: str) -> str:
    """``type=``: a Spark master URL of a form Spark accepts (checked before Spark starts: a bad one is a line, not
    a Java stack)."""
    allowed = f"must be a Spark master URL ({MASTERS}; N threads and F retries from 1 to {MAX_JOBS})"
    if (m := _LOCAL.fullmatch(text)) is not None:
        if any(g is not None and g != "*" and not 1 <= int(g) <= MAX_JOBS for g in m.groups()):
            _refuse(allowed, text)
        return text
    if text.startswith("spark://"):
        hosts = text.removeprefix("spark://").split(",")
        if all((h := _HOST_PORT.fullmatch(x)) is not None and 1 <= int(h.group(1)) <= 65535 for x in hosts):
            return text
        _refuse(allowed, text)
    if text == "yarn" or re.fullmatch(r"(k8s|mesos)://\S+", text):
        return text
    _refuse(allowed, text)


def choice(names: tuple[str, ...] | list[str], what: str) -> Callable[[str], str]:
    """``type=``: one of ``names`` (``argparse``'s ``choices`` would print them all as the metavar too)."""

    def named(text: str) -> str:
        if text not in names:
            _refuse(f"must be a known {what} ({', '.join(names)})", text)
        return text

    return named


def recipe_list(known: tuple[str, ...]) -> Callable[[str], tuple[str, ...]]:
    """``type=``: comma-separated fault recipes of ``known``, or ``none`` (no fault)."""

    def recipes(text: str) -> tuple[str, ...]:
        names = tuple(f.strip() for f in text.split(","))
        if names == ("none",):
            return ()
        if not all(n in known for n in names):
            raise argparse.ArgumentTypeError(f"must be comma-separated recipes ({', '.join(known)}) or none, "
                                             f"got {text!r}")
        return names

    return recipes


def not_empty(what: str) -> Callable[[str], str]:
    """``type=``: any text but an empty (or blank) one."""

    def text_of(text: str) -> str:
        if not text.strip():
            _refuse(f"must name {what}", text)
        return text

    return text_of


# ------------------------------------------------------------------------------------------ output paths


def claim_dir(path: str, flag: str = "--out") -> None:
    """Make the output folder now, before any work starts, and write a probe file in it (removed at once): a path
    the ``type=`` check could only look at (as root every path looks writable; ``/proc`` refuses even root) is a
    ``UserError`` here, not a traceback after the run. Called once every other option has been checked."""
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".rmqha-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot write there ({exc.strerror or exc})") from None


def claim_file(path: str, flag: str) -> None:
    """``claim_dir`` for a file: its folder made, the file opened for writing (a new one removed again)."""
    parent = os.path.dirname(os.path.abspath(path))
    existed = os.path.lexists(path)
    try:
        os.makedirs(parent, exist_ok=True)
        with open(path, "ab"):
            pass
        if not existed:
            os.unlink(path)
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot write it ({exc.strerror or exc})") from None


# ------------------------------------------------------------------------------------------ combinations


def refuse_unless(args: argparse.Namespace, needs: str, options: Mapping[str, str]) -> None:
    """Options (dest -> flag) that only apply with ``needs``: one given without it is a ``UserError``, not an
    option silently ignored."""
    for dest, flag in options.items():
        value = getattr(args, dest)
        if value not in (None, False, []):
            raise UserError(f"{flag} applies only with {needs}")


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
