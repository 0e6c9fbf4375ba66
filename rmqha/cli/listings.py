"""``rmqha invariants``, ``rmqha bugs``, ``rmqha findings``: the catalogue (with the layers that check each invariant:
the simulator and the property suites every one, ``rmqha cluster test`` those of ``rmqha/cluster/check.CHECKED``, a
real RocketMQ run those of ``rmqha/real/check.REAL_CHECKS``, on what it observes), the switches and the findings, as
listings fitted to the terminal or JSON.

    rmqha invariants [ID] [--long] [--json]      rmqha bugs [--json]      rmqha findings [--json]

Rules:

* No listing splits an id, a switch name or a finding id, at any width (``terminal.Listing``; the compact catalogue
  cuts a statement, never an id): they are what a reader pastes into ``--bug``, ``--fix`` and ``rmqha invariants
  ID``.
* ``rmqha invariants`` is compact: one line per invariant (its id, the other layers that check it, its statement cut
  to the width); ``--long`` lists every field; ``rmqha invariants ID`` prints one entry in full (``catalogue.py``).
  An unknown ID is one line naming the closest ids (exit 2).
"""

from __future__ import annotations

import argparse
import difflib
import json
from typing import Any

from rich.console import Console
from rich.text import Text

from rmqha.cluster.check import CHECKED as CLUSTER_CHECKS
from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS
from rmqha.impl.invariants import BY_ID, CATALOGUE, catalogue_rows
from rmqha.real.check import REAL_CHECKS

from .catalogue import entry, entry_lines
from .common import Handler, refuse_unless
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


def cmd_findings(args: argparse.Namespace, out: Console) -> int:
    rows: list[dict[str, Any]] = [
        {"id": f.id, "title": f.title, "invariants": list(f.invariants), "fix": f.fix, "where": f.where,
         "reference": f.reference, "needs": list(f.needs), "doc": f"docs/findings/{f.id}.md"}
        for f in FINDINGS.values()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    out.print(Listing("documented findings (real RocketMQ 5.3.3 behaviour; a later release's where it needs an "
                      "upstream switch)", ["id", "title", "invariants", "fix"],
                      [[r["id"], r["title"], ", ".join(r["invariants"]),
                        r["fix"] + (f" (runs with {', '.join(r['needs'])})" if r["needs"] else "")] for r in rows]))
    return 0
