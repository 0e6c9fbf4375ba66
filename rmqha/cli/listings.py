"""``rmqha invariants``, ``rmqha bugs``, ``rmqha findings``: the catalogue (with the layers that check each invariant:
the simulator and the property suites every one, ``rmqha cluster test`` those of ``rmqha/cluster/check.CHECKED``, a
real RocketMQ run those of ``rmqha/real/check.REAL_CHECKS``, on what it observes), the switches and the findings, as
listings fitted to the terminal or JSON.

    rmqha invariants [ID] [--long] [--json]      rmqha bugs [--json]      rmqha findings [--json]
    rmqha findings --matrix [--json] [--traces DIR] [--real FILE]

Rules:

* No listing splits an id, a switch name or a finding id, at any width (``terminal.Listing``; the compact catalogue
  cuts a statement, never an id): they are what a reader pastes into ``--bug``, ``--fix`` and ``rmqha invariants
  ID``.
* ``rmqha invariants`` is compact: one line per invariant (its id, the other layers that check it, its statement cut
  to the width); ``--long`` lists every field; ``rmqha invariants ID`` prints one entry in full (``catalogue.py``).
  An unknown ID is one line naming the closest ids (exit 2).
* ``--matrix``: per finding and RocketMQ release, the simulator's verdict (its trace re-run with that release's
  profile, ``impl/sim/matrix.py``) beside the real build's (``docs/findings/real.json``); exit 1 when a disagreement
  has no reason written on its finding's page.
"""

from __future__ import annotations

import argparse
import difflib
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

import rmqha
from rmqha.cluster.check import CHECKED as CLUSTER_CHECKS
from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS, releases_with
from rmqha.impl.invariants import BY_ID, CATALOGUE, catalogue_rows
from rmqha.impl.sim import matrix as M
from rmqha.real.check import REAL_CHECKS

from .catalogue import entry, entry_lines
from .common import Handler, input_dir, input_file, refuse_unless
from .files import UserError
from .terminal import Listing, wrap_words


def register(sub: Any) -> dict[str, Handler]:
    q = sub.add_parser("invariants", help="print the invariant catalogue (ID: one entry in full)")
    q.add_argument("id", nargs="?", metavar="ID", help="one invariant's id, e.g. CTL-CLEAN-ELECTION")
    q.add_argument("--long", action="store_true", help="every field of every invariant")
    q.add_argument("--json", action="store_true")
    for name, text in (("bugs", "list bug and fix switches"), ("findings", "list documented findings")):
        q = sub.add_parser(name, help=text)
        q.add_argument("--json", action="store_true")
        if name == "findings":
            q.add_argument("--matrix", action="store_true",
                           help="per finding and RocketMQ release: the simulator's verdict beside the real build's")
            q.add_argument("--traces", type=input_dir, help="the finding traces (default: docs/findings/traces of "
                                                            "this clone)")
            q.add_argument("--real", type=input_file, help="the real verdicts (default: docs/findings/real.json)")
    return {"invariants": cmd_invariants, "bugs": cmd_bugs, "findings": cmd_findings}


def layers(inv_id: str) -> list[str]:
    """The layers that check ``inv_id``: the simulator (simulate, fuzz, scenarios, conformance) and the Hypothesis
    suites always (a progress invariant once a run settles), the cluster test and the real run where their
    observations support it."""
    progress = BY_ID[inv_id].kind == "progress"
    out = ["simulator (at the end of the settle tail)" if progress else "simulator (every step)",
           "property suites (at teardown, after a settle)" if progress else "property suites"]
    if inv_id in CLUSTER_CHECKS:
        out.append("cluster test (at the end)" if progress else "cluster test")
    if inv_id in REAL_CHECKS:
        out.append("real run")
    return out


def _print_lines(out: Console, lines: list[str]) -> None:
    for line in lines:
        out.print(Text(line), no_wrap=True, overflow="ignore", crop=False, soft_wrap=True)


def _one(args: argparse.Namespace, out: Console) -> int:
    if args.id not in BY_ID:
        close = difflib.get_close_matches(args.id.upper(), list(BY_ID), n=3, cutoff=0.5)
        raise UserError(f"invariants: no invariant {args.id!r}" + (f" (did you mean {', '.join(close)}?)" if close
                                                                   else " (rmqha invariants lists them)"))
    e = entry(args.id, layers(args.id))
    if args.json:
        print(json.dumps(e, indent=1))
        return 0
    width = out.width
    lines = [e["id"]]
    for label, value in entry_lines(e):
        if isinstance(value, list):
            lines.append(f"  {label}:")
            for v in value:
                lead = len(v) - len(v.lstrip(" "))
                lines += wrap_words(v.strip(), width, " " * (4 + lead), " " * (8 + lead))
        else:
            lines += wrap_words(value, width, f"  {label}: ", "    ")
    _print_lines(out, lines)
    return 0


def compact(rows: list[dict[str, Any]], width: int) -> list[str]:
    """One line per invariant, by area: its id (whole), C / R when the cluster test / a real run checks it too, and
    its statement cut to ``width`` (on a line of its own when the id leaves too little room)."""
    idw = max(len(r["id"]) for r in rows)
    n_c = sum(1 for r in rows if r["id"] in CLUSTER_CHECKS)
    n_r = sum(1 for r in rows if r["realRun"])
    head = (f"{len(rows)} invariants (docs/invariants.md), each checked by the simulator and the property suites; "
            f"C: the cluster test checks it too ({n_c}), R: a real run does ({n_r}). rmqha invariants ID: one in "
            "full; --long: every field; --json: for tools.")
    out = wrap_words(head, width)
    area = None
    for r in rows:
        where = BY_ID[r["id"]].where.split(".")[0]
        if where != area:
            area = where
            out += ["", area]
        marks = ("C" if r["id"] in CLUSTER_CHECKS else " ") + ("R" if r["realRun"] else " ")
        left = f"  {r['id']:<{idw}}  {marks}  "
        text = r["statement"]
        if width - len(left) >= 16:
            out.append(left + _cut(text, width - len(left)))
        else:
            out.append(f"  {r['id']}  {marks.strip()}".rstrip())
            out.append("    " + _cut(text, width - 4))
    return out


def _cut(text: str, room: int) -> str:
    """``text`` in at most ``room`` characters: whole, or cut at a space with an ellipsis."""
    if len(text) <= room:
        return text
    if room < 2:
        return ""
    cut = text[:room - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def cmd_invariants(args: argparse.Namespace, out: Console) -> int:
    if args.id is not None:
        refuse_unless(args, "no ID (the whole catalogue)", {"long": "--long"})
        return _one(args, out)
    rows: list[dict[str, Any]] = [{**r, "layers": layers(r["id"]), "realRun": REAL_CHECKS.get(r["id"], "")}
                                  for r in catalogue_rows()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    assert len(rows) == len(CATALOGUE)
    if not args.long:
        _print_lines(out, compact(rows, out.width))
        return 0
    out.print(Listing(f"{len(rows)} invariants (docs/invariants.md); the cluster test (rmqha cluster test) checks "
                      f"{sum(1 for r in rows if r['id'] in CLUSTER_CHECKS)} of them, a real run (rmqha real test, "
                      f"docs/real.md) {sum(1 for r in rows if r['realRun'])}",
                      ["id", "statement", "RocketMQ source", "checked by", "a real run checks it on"],
                      [[r["id"], r["statement"], r["source"], "; ".join(r["layers"]), r["realRun"] or "-"]
                       for r in rows]))
    return 0


def cmd_bugs(args: argparse.Namespace, out: Console) -> int:
    rows = [{"name": b.name, "kind": b.kind, "invariant": b.invariant, "where": b.where, "reference": b.reference,
             "description": b.description} for b in B.BUGS.values()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    out.print(Listing("bug, fidelity and upstream switches (--bug), expected-loss configurations (--bug), fixes "
                      "(--fix); docs/bugs.md",
                      ["name", "kind", "caught by", "reference"],
                      [[r["name"], r["kind"], r["invariant"], r["reference"]] for r in rows]))
    return 0


def _docs_findings() -> Path:
    return Path(rmqha.__file__).resolve().parent.parent / "docs" / "findings"


def cmd_matrix(args: argparse.Namespace, out: Console) -> int:
    traces = Path(args.traces) if args.traces else _docs_findings() / "traces"
    real_path = Path(args.real) if args.real else _docs_findings() / "real.json"
    if not traces.is_dir() or not real_path.is_file():
        raise UserError(f"no finding traces at {traces} or no real verdicts at {real_path} (run from a clone of the "
                        "kit, or give --traces and --real)")
    missing = [fid for fid in FINDINGS if not (traces / f"{fid}.jsonl.gz").is_file()]
    if missing:
        raise UserError(f"{traces}: no trace for {', '.join(missing)}")
    try:
        real = M.load_real(real_path)
        rows = M.matrix(M.sim_verdicts(traces), real)
    except (ValueError, KeyError, OSError) as exc:
        raise UserError(f"{real_path}: {exc}") from None
    bad = M.unexplained(rows)
    if args.json:
        print(json.dumps({"releases": list(B.RELEASES), "rows": {
            fid: {rel: {"sim": c.sim_detail, "real": c.real_detail, "agree": c.agree} for rel, c in cells.items()}
            for fid, cells in rows.items()}, "disagreements": [[f, r] for f, r, _ in M.disagreements(rows)],
            "unexplained": [list(x) for x in bad]}, indent=1, sort_keys=True))
        return 1 if bad else 0
    for line in M.text_table(rows):
        out.print(escape(line), highlight=False, soft_wrap=True)
    out.print(escape(M.LEGEND), highlight=False)
    diffs = M.disagreements(rows)
    out.print(f"{len(diffs)} disagreement(s), {len(bad)} without a written reason"
              + "".join(f"\n  {f} on {r}: " + (f"docs/findings/{f}.md#{M.REASONS[(f, r)]}" if (f, r) in M.REASONS
                                                 else "no reason written (a fidelity bug of the kit)")
                        for f, r, _ in diffs), highlight=False)
    return 1 if bad else 0


def cmd_findings(args: argparse.Namespace, out: Console) -> int:
    if args.matrix:
        return cmd_matrix(args, out)
    if args.traces or args.real:
        raise UserError("--traces and --real go with --matrix")
    rows: list[dict[str, Any]] = [
        {"id": f.id, "title": f.title, "invariants": list(f.invariants), "fix": f.fix, "where": f.where,
         "reference": f.reference, "needs": list(f.needs), "removedBy": list(f.removed_by),
         "releases": releases_with(f), "doc": f"docs/findings/{f.id}.md"}
        for f in FINDINGS.values()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    out.print(Listing("documented findings (real RocketMQ 5.3.3 behaviour; a later release's where it needs an "
                      "upstream switch)", ["id", "title", "invariants", "fix"],
                      [[r["id"], r["title"] + f" [RocketMQ {', '.join(r['releases'])}]", ", ".join(r["invariants"]),
                        r["fix"] + (f" (runs with {', '.join(r['needs'])})" if r["needs"] else "")] for r in rows]))
    return 0
