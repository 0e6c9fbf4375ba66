"""The kit's trace format: one run as JSON Lines, with a hash over its canonical form.

Format ``rmqha-trace``, version 1 (documented in ``docs/trace-format.md``):

* Line 1, the header: ``format``, ``version``, ``seed``, ``maxSteps``, ``maxTime``, ``bugs``, ``profile``,
  ``config`` (every setting, RocketMQ names) and ``faults`` (``{"mode": "generated"}`` or
  ``{"mode": "explicit", "events": [...]}``). The header alone determines the run.
* One line per simulator step: ``i`` (step), ``t`` (simulated ms), ``ev`` (what the step delivered:
  ``msg``, ``timer``, ``ha``, ``ha-accept``, ``ha-connect``, ``channel-closed``, ``act``, ``fault-gen``,
  ``resumed``, ``boot``) with its fields, and ``obs``: what the core observed during the step
  (controller events applied, role changes, transfers, put results, client history...).
* The last line, the footer: ``end``, ``steps``, ``t``, ``violation`` (null or id, step, time, message,
  state) and ``hash``: ``sha256:`` over the bytes of every line before it, each ending in ``\\n``.

Canonical form: ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=True)``. Two runs with the
same header produce byte-identical files; ``rmqha replay`` checks exactly that.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, Protocol, TypedDict

FORMAT = "rmqha-trace"
VERSION = 1


class ViolationRecord(TypedDict):
    """The first violation of a run: the invariant's id, the step and simulated time, a message and state."""

    invariant: str
    step: int
    t: int
    message: str
    state: dict[str, Any]


class Faults(TypedDict):
    """How a run's faults come about: ``generated`` (the generator, from the seed), ``explicit`` (``events``, a list
    of fault actions: ``impl/sim/actions.py``), or ``real`` (what a real cluster's nemesis did)."""

    mode: str
    events: NotRequired[list[Any]]


class TraceHeader(TypedDict):
    """Line 1: everything that determines the run (a model trace's header has its own fields, ``layer: "model"``)."""

    format: str
    version: int
    seed: int
    maxSteps: int
    maxTime: int | None
    bugs: list[str]
    profile: str | None
    config: dict[str, Any]
    disabledInvariants: NotRequired[list[str]]
    faults: Faults
    conform: NotRequired[bool]  # validated against the model as it ran (rmqha.models.campaign); absent: not
    kit: NotRequired[str]  # the kit's version that recorded it (impl/sim/provenance.py); absent: recorded before it
    core: NotRequired[str]  # the fingerprint of the core that recorded it; absent: recorded before provenance
    rocketmq: NotRequired[str]  # the RocketMQ release whose rules the run follows (impl/bugs.py); absent: 5.3.3


class Footer(TypedDict):
    end: bool
    steps: int
    t: int
    violation: ViolationRecord | None
    hash: str


class StepLine(TypedDict):
    """A step line as read back: ``i``, ``t``, what the step delivered (``ev`` and its fields:
    ``impl/sim/events.py``) and the step's observations (``impl/observations.py``)."""

    i: int
    t: int
    ev: str
    obs: NotRequired[list[dict[str, Any]]]
    act: NotRequired[dict[str, Any]]


class _Violation(Protocol):
    def to_dict(self) -> ViolationRecord: ...


class RunEnd(Protocol):
    """What the footer reads of a finished run (``impl/sim/world.Simulation``)."""

    @property
    def step(self) -> int: ...

    @property
    def now(self) -> int: ...

    @property
    def violation(self) -> _Violation | None: ...


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def canonical(obj: Any) -> str:
    """``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)``, with one shared encoder."""
    return _ENCODER.encode(obj)


class TraceRecorder:
    """Collects the lines of one run (or only their hash, with ``keep=False``)."""

    def __init__(self, header: Mapping[str, Any], keep: bool = True) -> None:
        self.keep = keep
        self.lines: list[str] = []
        self._hash = hashlib.sha256()
        self.footer: Footer | None = None
        self._add(dict(header, format=FORMAT, version=VERSION))

    def _add(self, obj: Mapping[str, Any]) -> None:
        line = canonical(obj)
        self._hash.update(line.encode())
        self._hash.update(b"\n")
        if self.keep:
            self.lines.append(line)

    def step(self, i: int, t: int, event: Mapping[str, Any], obs: Sequence[Mapping[str, Any]]) -> None:
        line = {"i": i, "t": t, **event}
        if obs:
            line["obs"] = obs
        self._add(line)

    def finish(self, sim: RunEnd) -> None:
        v = sim.violation
        self.footer = {"end": True, "steps": sim.step, "t": sim.now,
                       "violation": None if v is None else v.to_dict(), "hash": self.digest()}
        if self.keep:
            self.lines.append(canonical(self.footer))

    def digest(self) -> str:
        return "sha256:" + self._hash.hexdigest()

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


class TraceFormatError(ValueError):
    """A file that is not a readable rmqha trace; the message is one line."""


def parse(text: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Split a trace into header, step lines and footer, checking the envelope."""
    raw = text.splitlines()
    if not raw:
        raise TraceFormatError("empty file")
    lines = []
    for n, r in enumerate(raw, 1):
        try:
            lines.append(json.loads(r))
        except json.JSONDecodeError as exc:
            raise TraceFormatError(f"line {n}: not JSON ({exc.msg})") from None
    header = lines[0]
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TraceFormatError(f"not an {FORMAT} file (first line has no \"format\": \"{FORMAT}\")")
    if header.get("version") != VERSION:
        raise TraceFormatError(f"trace version {header.get('version')!r} is not supported (this kit reads {VERSION})")
    for key in ("seed", "config", "faults", "maxSteps"):
        if key not in header:
            raise TraceFormatError(f"header lacks {key!r}")
    footer = lines[-1]
    if len(lines) < 2 or not isinstance(footer, dict) or not footer.get("end"):
        raise TraceFormatError("no footer line (the run was cut short?)")
    return header, lines[1:-1], footer
