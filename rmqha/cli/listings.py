"""``rmqha invariants``, ``rmqha bugs``, ``rmqha findings``: the catalogue (with the layers that check each invariant:
the simulator and the property suites every one, ``rmqha cluster test`` those of ``rmqha/cluster/check.CHECKED``, a
real RocketMQ run those of ``rmqha/real/check.REAL_CHECKS``, on what it observes), the switches and the findings, as
tables or JSON.

    rmqha invariants [--json]      rmqha bugs [--json]      rmqha findings [--json]
    rmqha findings --matrix [--json] [--traces DIR] [--real FILE]

``--matrix``: per finding and RocketMQ release, the simulator's verdict (its trace re-run with that release's
profile, ``impl/sim/matrix.py``) beside the real build's (``docs/findings/real.json``); exit 1 when a disagreement has
no reason written on its finding's page.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import rmqha
from rmqha.cluster.check import CHECKED as CLUSTER_CHECKS
from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS, releases_with
from rmqha.impl.invariants import BY_ID, catalogue_rows
from rmqha.impl.sim import matrix as M
from rmqha.real.check import REAL_CHECKS

from .common import Handler, input_dir, input_file
from .files import UserError


def register(sub: Any) -> dict[str, Handler]:
    for name, text in (("invariants", "print the invariant catalogue"), ("bugs", "list bug and fix switches"),
                       ("findings", "list documented findings")):
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


def cmd_invariants(args: argparse.Namespace, out: Console) -> int:
    rows: list[dict[str, Any]] = [{**r, "layers": layers(r["id"]), "realRun": REAL_CHECKS.get(r["id"], "")}
                                  for r in catalogue_rows()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = Table(title=f"{len(rows)} invariants (docs/invariants.md); the cluster test (rmqha cluster test) checks "
                        f"{sum(1 for r in rows if r['id'] in CLUSTER_CHECKS)} of them, a real run (rmqha real test, "
                        f"docs/real.md) {sum(1 for r in rows if r['realRun'])}", show_lines=True)
    for col in ("id", "statement", "RocketMQ source", "checked by", "a real run checks it on"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["id"], r["statement"], r["source"], "; ".join(r["layers"]), r["realRun"] or "-")
    out.print(table)
    return 0


def cmd_bugs(args: argparse.Namespace, out: Console) -> int:
    rows = [{"name": b.name, "kind": b.kind, "invariant": b.invariant, "where": b.where, "reference": b.reference,
             "description": b.description} for b in B.BUGS.values()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = Table(title="bug, fidelity and upstream switches (--bug), expected-loss configurations (--bug), "
                        "fixes (--fix)", show_lines=True)
    for col in ("name", "kind", "caught by", "reference"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["kind"], r["invariant"], r["reference"])
    out.print(table)
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
    table = Table(title="documented findings (real RocketMQ 5.3.3 behaviour; a later release's where it needs an "
                        "upstream switch)", show_lines=True)
    for col in ("id", "title", "invariants", "fix"):
        table.add_column(col, overflow="fold")
    for r in rows:
        needs = f" (runs with {', '.join(r['needs'])})" if r["needs"] else ""
        table.add_row(r["id"], r["title"] + f" [RocketMQ {', '.join(r['releases'])}]", ", ".join(r["invariants"]),
                      r["fix"] + needs)
    out.print(table)
    return 0
