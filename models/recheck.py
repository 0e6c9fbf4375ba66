"""Recheck: does the violation a trace holds still happen on today's kit? (``rmqha recheck``; a regression corpus, as
Hypothesis replays its example database against today's code.)

Rules:

* A trace is an implementation trace (``docs/trace-format.md``) whose header can be run: ``faults.mode``
  ``generated`` or ``explicit``. A model trace or a real run's record is not one (``ValueError``, one line).
* First the header itself runs on today's kit (``campaign.run_header``: the model's validation too when it says
  ``"conform": true``): the same seed, so a generated run draws its faults again from today's generator, and an
  explicit run plays its schedule. Its trace is compared with the recorded one byte for byte (``identical``).
* A generated run whose recorded violation does not come back that way runs once more with the fault actions it
  recorded (its ``act`` lines, ``faults.explicit_from_trace``) as an explicit schedule, at the times it took them:
  today's generator may draw other faults from the same seed (a fault aimed at "the master" follows the run), and
  the faults are what the counterexample is made of. ``by`` says which run answered: ``seed`` (a generated header),
  ``schedule`` (an explicit header), ``recorded faults`` (the second run).
* The verdict compares invariants, not steps: ``still-fails`` (the recorded invariant fails again; where: step and
  time), ``fails-differently`` (another invariant fails first), ``no-longer-fails`` (nothing fails), and for a
  trace that recorded no violation ``still-clean`` or ``now-fails``. ``as_recorded`` is true for ``still-fails``
  and ``still-clean``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rmqha.impl.sim.faults import explicit_from_trace
from rmqha.impl.sim.provenance import recorded_by, same_core

from .campaign import run_header

VERDICTS = ("still-fails", "fails-differently", "no-longer-fails", "still-clean", "now-fails")


@dataclass
class Recheck:
    """One trace's recheck (see the module's rules)."""

    verdict: str
    by: str
    recorded: dict[str, Any] | None  # the footer's violation
    now: dict[str, Any] | None  # the violation of the run that answered (None: none)
    identical: bool  # the header's run gave the recorded trace byte for byte
    same_core: bool
    recorded_by: str

    @property
    def as_recorded(self) -> bool:
        return self.verdict in ("still-fails", "still-clean")

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "asRecorded": self.as_recorded, "by": self.by, "recorded": self.recorded,
                "now": self.now, "identical": self.identical, "sameCore": self.same_core,
                "recordedBy": self.recorded_by}


def runnable(header: dict[str, Any]) -> None:
    """``ValueError`` (one line) unless ``header`` is a run the kit can re-run."""
    if header.get("layer") == "model":
        raise ValueError("a model trace (rmqha replay re-runs it on the model)")
    faults = header.get("faults")
    mode = faults.get("mode") if isinstance(faults, dict) else None
    if mode == "real":
        raise ValueError("a record of a real run (faults mode 'real'): there is no schedule to re-run")
    if mode not in ("generated", "explicit"):
        raise ValueError("its header's faults.mode is neither 'generated' nor 'explicit'")


def _same(a: dict[str, Any] | None, recorded: dict[str, Any]) -> bool:
    return a is not None and a["invariant"] == recorded["invariant"]


def recheck(header: dict[str, Any], lines: list[dict[str, Any]], footer: dict[str, Any], text: str) -> Recheck:
    """Re-run a parsed trace (its ``text`` for the byte comparison) on today's kit; ``ValueError`` for a header
    that cannot run."""
    runnable(header)
    generated = header["faults"]["mode"] == "generated"
    first = run_header(header)
    now = first.violation.to_dict() if first.violation else None
    identical = first.text == text
    recorded = footer.get("violation")
    core = same_core(header)
    who = recorded_by(header)
    by = "seed" if generated else "schedule"
    if recorded is None:
        return Recheck("still-clean" if now is None else "now-fails", by, None, dict(now) if now else None,
                       identical, core, who)
    if _same(dict(now) if now else None, recorded):
        return Recheck("still-fails", by, recorded, dict(now) if now else None, identical, core, who)
    if generated:
        schedule = explicit_from_trace(lines)
        again = run_header(dict(header, faults={"mode": "explicit", "events": schedule}), keep=False)
        v = again.violation.to_dict() if again.violation else None
        if _same(dict(v) if v else None, recorded):
            return Recheck("still-fails", "recorded faults", recorded, dict(v) if v else None, identical, core, who)
    return Recheck("no-longer-fails" if now is None else "fails-differently", by, recorded,
                   dict(now) if now else None, identical, core, who)
