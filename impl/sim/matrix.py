"""The verdict matrix: per finding and RocketMQ release, the simulator's verdict beside the real build's.

Rules:

* The simulator's verdict of a finding on release V (``sim_verdict``): its trace's header
  (``docs/findings/traces/<id>.jsonl.gz``) re-run on V (``release_bugs``): the header's upstream switches dropped
  and V's release profile added (``impl/bugs.py``, ``release_switches``); a release rule the finding ``needs`` kept
  only where V has it; every other fix of the header (the other findings' fixes the trace was derived with) kept, so
  no other finding causes or masks it, and the fixes of the findings of a later release that V has (documented
  after most traces were derived). Same seed, same schedule, same time limit. "reached" when the run ends in a
  violation that triage on that release attributes to the finding (``impl/findings.py``, ``classify``: the first
  finding in play there whose fix removes it); "not reached" otherwise (with the violation's invariant and the
  finding that explains it, if the run stopped at one). When another finding's violation of an invariant that is
  not this finding's comes first (a finding of that release the trace predates: F-LOCAL-SHRINK-BEFORE-ACCEPT's
  set-wide checks on 5.4.0+, whose fix undoes #9897 and so is not added), that invariant is set aside
  (``disabledInvariants``) and the run goes on, at most ``SET_ASIDE`` times; the cell says what was set aside.
* The model findings (M-*) have model traces, not simulator schedules: their simulator verdict is "n/a".
* The real build's verdict is ``docs/findings/real.json`` (``rmqha real repro``, per version: verdict, runs that
  reached the window, reproduced, inconclusive, an optional fix run).
* A disagreement: both verdicts known (the simulator's not "n/a", the real one neither "not run" nor
  "inconclusive") and different ("reached" against "not reproduced", or "not reached" against "reproduced").
  Each one has its reason on the finding's page (``REASONS``: the page's anchor); a disagreement without one is a
  fidelity bug of the kit (``rmqha findings --matrix`` exits 1).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import bugs as B
from ..findings import FINDINGS, Finding, classify
from ..trace import ViolationRecord
from .runner import run_header

MODEL_FINDINGS = ("M-PROPOSAL-OUTLIVES-RESTART", "M-NO-COMMON-EPOCH")
REACHED, NOT_REACHED, NA = "reached", "not reached", "n/a"
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN = "reproduced", "not reproduced", "inconclusive", "not run"

# (finding, release) -> the anchor of the section of the finding's page that says why the two verdicts differ
REASONS: dict[tuple[str, str], str] = {}
SET_ASIDE = 6  # re-runs with another finding's invariant set aside, at most


def release_bugs(f: Finding, bugs: list[str], release: str) -> list[str]:
    """A finding trace's switches moved to ``release`` (see the module doc)."""
    profile = B.release_switches(release)
    kept = [b for b in bugs if b not in f.needs and not (b in B.BUGS and B.BUGS[b].kind == "upstream")]
    # the fixes of the findings of a later release that ``release`` has: documented after most traces were
    # derived, they are among "the other findings' fixes" on that release
    masking = {m for n in profile for m in B.MASKED_BY.get(n, ())}  # a fix that undoes one of the release's rules
    later = [g.fix for g in FINDINGS.values() if g is not f and g.needs and all(n in profile for n in g.needs)
             and g.fix not in masking]
    return sorted({*kept, *later, *profile})


def read_header(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt") as fh:
        header: dict[str, Any] = json.loads(fh.readline())
    return header


@dataclass(frozen=True)
class SimVerdict:
    verdict: str  # reached / not reached / n/a
    invariant: str | None = None  # the invariant that stopped the run, if one did
    t: int | None = None  # its simulated time (ms)
    explained_by: str | None = None  # the finding triage gives that violation on the release (None: none)
    set_aside: tuple[str, ...] = ()  # other findings' violations of other invariants set aside before it

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "invariant": self.invariant, "t": self.t, "explainedBy": self.explained_by,
                "setAside": list(self.set_aside)}


def sim_verdict(f: Finding, header: dict[str, Any], release: str) -> SimVerdict:
    """The finding's trace re-run on ``release``."""
    bugs = release_bugs(f, list(header.get("bugs", [])), release)
    moved = {k: v for k, v in header.items() if k not in ("rocketmq", "format", "version", "conform")}
    moved["bugs"] = bugs
    if release != B.DEFAULT_RELEASE:
        moved["rocketmq"] = release

    def rerun(h: dict[str, Any]) -> ViolationRecord | None:
        again = run_header(h, record=False).violation
        return again.to_dict() if again is not None else None

    set_aside: list[str] = []
    for _ in range(SET_ASIDE):
        v = run_header(moved, record=False).violation
        if v is None:
            return SimVerdict(NOT_REACHED, set_aside=tuple(set_aside))
        # the explanation, as a campaign's triage gives it on this release: the first finding in play there whose
        # fix removes the violation (impl/findings.py, classify)
        by = classify(dict(moved, maxSteps=v.step), v.to_dict(), rerun)
        if by == f.id:
            return SimVerdict(REACHED, v.invariant, v.time, by, tuple(set_aside))
        if by is None or v.invariant in f.invariants:
            return SimVerdict(NOT_REACHED, v.invariant, v.time, by, tuple(set_aside))
        # another finding's violation of another invariant came first: set that invariant aside and go on
        set_aside.append(f"{v.invariant} ({by})")
        moved["disabledInvariants"] = sorted({*moved.get("disabledInvariants", []), v.invariant})
    return SimVerdict(NOT_REACHED, set_aside=tuple(set_aside))


def faces(traces: Path, fid: str) -> list[Path]:
    """A finding's traces: ``<id>.jsonl.gz``, then its other faces (``<id>-<name>.jsonl.gz``, another schedule of
    the same mechanism: F-EPOCH-REBASE-ON-RESTART-restart is its real reproduction's schedule)."""
    others = sorted(p for p in traces.glob(f"{fid}-*.jsonl.gz") if p.name[:-len(".jsonl.gz")] not in FINDINGS)
    return [traces / f"{fid}.jsonl.gz", *others]


def sim_verdicts(traces: Path, ids: list[str] | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """Every finding's (or ``ids``') simulator verdict on every release: reached when one of its faces reaches it
    (``face``: which), else the main trace's verdict."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for fid in ids or list(FINDINGS):
        headers = [(p.name, read_header(p)) for p in faces(traces, fid)]
        out[fid] = {}
        for rel in B.RELEASES:
            verdicts = [(name, sim_verdict(FINDINGS[fid], h, rel)) for name, h in headers]
            name, v = next(((n, x) for n, x in verdicts if x.verdict == REACHED), verdicts[0])
            out[fid][rel] = dict(v.to_dict(), face=name)
    return out


@dataclass
class Cell:
    sim: str
    real: str
    sim_detail: dict[str, Any] = field(default_factory=dict)
    real_detail: dict[str, Any] = field(default_factory=dict)

    @property
    def known(self) -> bool:
        return self.sim != NA and self.real not in (NOT_RUN, INCONCLUSIVE)

    @property
    def agree(self) -> bool | None:
        """None when one side has no verdict; else whether they say the same."""
        if not self.known:
            return None
        return (self.sim == REACHED) == (self.real == REPRODUCED)


def matrix(sim: dict[str, dict[str, dict[str, Any]]], real: dict[str, Any]) -> dict[str, dict[str, Cell]]:
    """Rows (findings, then the model findings) of cells per release."""
    rows: dict[str, dict[str, Cell]] = {}
    for fid in [*FINDINGS, *MODEL_FINDINGS]:
        per_real = real["findings"].get(fid, {})
        rows[fid] = {}
        for rel in B.RELEASES:
            s = sim.get(fid, {}).get(rel, {"verdict": NA})
            r = per_real.get(rel, {"verdict": NOT_RUN})
            rows[fid][rel] = Cell(s["verdict"], r["verdict"], dict(s), dict(r))
    return rows


def disagreements(rows: dict[str, dict[str, Cell]]) -> list[tuple[str, str, Cell]]:
    return [(fid, rel, c) for fid, cells in rows.items() for rel, c in cells.items() if c.agree is False]


def unexplained(rows: dict[str, dict[str, Cell]]) -> list[tuple[str, str]]:
    """The disagreements without a written reason: fidelity bugs of the kit."""
    return [(fid, rel) for fid, rel, _ in disagreements(rows) if (fid, rel) not in REASONS]


SIM_MARK = {REACHED: "R", NOT_REACHED: "-", NA: "x"}
REAL_MARK = {REPRODUCED: "R", NOT_REPRODUCED: "-", INCONCLUSIVE: "?", NOT_RUN: "."}
LEGEND = ("each cell: the simulator's verdict, then the real build's. R reached / reproduced, - not, ? inconclusive, "
          ". not run, x no simulator schedule (a model finding); ! they disagree (a reason on the finding's page)")


def text_table(rows: dict[str, dict[str, Cell]], width: int = 80) -> list[str]:
    """The matrix at ``width`` columns: an id column as wide as the longest id (never split), a cell per release."""
    idw = max(len(fid) for fid in rows) + 1
    cellw = max(len(r) for r in B.RELEASES) + 2
    assert idw + cellw * len(B.RELEASES) <= width, "the matrix does not fit"  # 32 + 5 x 7
    lines = [("finding".ljust(idw) + "".join(r.ljust(cellw) for r in B.RELEASES)).rstrip(),
             ("".ljust(idw) + "".join("sim rl".ljust(cellw) for _ in B.RELEASES)).rstrip()]
    for fid, cells in rows.items():
        line = fid.ljust(idw)
        for rel in B.RELEASES:
            c = cells[rel]
            mark = f"{SIM_MARK[c.sim]}   {REAL_MARK[c.real]}{'!' if c.agree is False else ''}"
            line += mark.ljust(cellw)
        lines.append(line.rstrip())
    return lines


def _real_text(r: dict[str, Any]) -> str:
    verdict = str(r.get("verdict", NOT_RUN))
    text = verdict
    if verdict in (REPRODUCED, NOT_REPRODUCED):
        text = f"{verdict}, {r.get('reproduced', 0)} of {r.get('runs', 0)}"
        if r.get("inconclusive") and "inconclusive" not in str(r.get("note") or ""):
            text += f" (+{r['inconclusive']} inconclusive)"
    note = str(r.get("note") or "").strip()
    if note and not note.startswith("("):
        note = f"({note})"
    fix = r.get("fix")
    if isinstance(fix, dict):
        text += f"; with the fix: {fix.get('verdict')}, {fix.get('runs', 0)} run(s)"
    return f"{text} {note}".strip()


def _sim_text(s: dict[str, Any], fid: str) -> str:
    verdict = str(s.get("verdict", NA))
    aside = f"; {', '.join(s['setAside'])} set aside" if s.get("setAside") else ""
    if s.get("face") and s["face"] != f"{fid}.jsonl.gz":
        aside += f"; trace {s['face']}"
    if verdict == REACHED:
        return f"reached ({s['invariant']}, {s['t'] / 1000:.1f} s{aside})"
    if verdict == NOT_REACHED and s.get("invariant"):
        return f"not reached ({s['invariant']}: {s.get('explainedBy') or 'unexplained'}{aside})"
    return verdict


def markdown(rows: dict[str, dict[str, Cell]]) -> str:
    """The section of docs/findings/README.md."""
    out = ["| id | " + " | ".join(B.RELEASES) + " |", "|---|" + "---|" * len(B.RELEASES)]
    for fid, cells in rows.items():
        page = f"{fid}.md" if fid in FINDINGS else "../model-findings.md"
        parts = []
        for rel in B.RELEASES:
            c = cells[rel]
            flag = " **differ**" if c.agree is False else ""
            parts.append(f"sim: {_sim_text(c.sim_detail, fid)}; real: {_real_text(c.real_detail)}{flag}")
        out.append(f"| [{fid}]({page}) | " + " | ".join(parts) + " |")
    diffs = disagreements(rows)
    out.append("")
    if diffs:
        out.append("Where the two differ, the finding's page says why:\n")
        for fid, rel, c in diffs:
            anchor = REASONS.get((fid, rel))
            where = f"[{fid}, {rel}]({fid}.md#{anchor})" if anchor else f"{fid}, {rel}: **no reason written**"
            out.append(f"* {where}: the simulator {c.sim}, the real build {c.real}.")
    else:
        out.append("The simulator and the real build agree wherever both have a verdict.")
    return "\n".join(out) + "\n"


def load_real(path: Path) -> dict[str, Any]:
    """``docs/findings/real.json``; ``ValueError`` with one line when it is not of that form."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("findings"), dict):
        raise ValueError("not a table of real verdicts ({\"findings\": {id: {release: {...}}}})")
    for fid, per in data["findings"].items():
        for rel, r in per.items():
            if rel not in B.RELEASES or r.get("verdict") not in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN):
                raise ValueError(f"{fid} {rel}: unknown release or verdict")
    return dict(data)


def load_sim(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The committed simulator verdicts (``docs/findings/sim.json``, written by ``scripts/derive_matrix.py``)."""
    data: dict[str, dict[str, dict[str, Any]]] = json.loads(path.read_text())["findings"]
    return data
