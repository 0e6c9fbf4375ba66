"""``rmqha check`` and ``rmqha model-check``: the TLA+ spec's configs under TLC, and the executable model on the same
configs, each against ``spec/manifest.json`` (``rmqha.spec``).

    rmqha check [CONFIG ...] [--ci] [--workers N] [--record] [--json]
    rmqha model-check --config NAME [--no-symmetry] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TextColumn, TimeElapsedColumn

from rmqha.spec import SPEC_DIR, speccheck

from . import junit
from .common import MAX_JOBS, Handler, claim_dir, claim_file, int_in, output_dir, output_file
from .doctor import java_status
from .files import UserError
from .signals import ends_on_signals


def register(sub: Any) -> dict[str, Handler]:
    c = sub.add_parser("check", help="run the TLA+ configs (spec/) with TLC against spec/manifest.json")
    c.add_argument("configs", nargs="*", help="config names or .cfg paths (default: every config of the manifest)")
    c.add_argument("--ci", action="store_true", help="only the configs the manifest marks for CI")
    c.add_argument("--workers", type=int_in(1, MAX_JOBS), help="TLC workers (default: CPU count)")
    c.add_argument("--junit", type=output_file, metavar="FILE",
                   help="also write the results as JUnit XML: one test case per config (docs/ci.md)")
    c.add_argument("--out", type=output_dir, default="runs/spec",
                   help="where counterexample traces go (default runs/spec)")
    c.add_argument("--record", action="store_true", help="write the measured counts into spec/manifest.json")
    c.add_argument("--json", action="store_true")

    m = sub.add_parser("model-check", help="breadth-first search of the executable model on a spec config")
    m.add_argument("--config", required=True, help="a config name of spec/manifest.json, e.g. small")
    m.add_argument("--no-symmetry", action="store_true", help="count states, not orbits")
    m.add_argument("--json", action="store_true")
    return {"check": ends_on_signals(_spec_errors(cmd_check)), "model-check": _spec_errors(cmd_model_check)}


def _spec_errors(handler: Handler) -> Handler:
    """The handler, with the spec layer's one-line errors (a missing manifest, an unknown config) as usage errors."""

    def run(args: argparse.Namespace, out: Console) -> int:
        try:
            return handler(args, out)
        except speccheck.SpecError as exc:
            raise UserError(str(exc)) from None

    return run


def cmd_check(args: argparse.Namespace, out: Console) -> int:
    if args.ci and args.configs:
        raise UserError("--ci chooses the configs: give config names or --ci, not both")
    manifest = speccheck.load_manifest()
    names = speccheck.resolve(args.configs, manifest, ci_only=args.ci)
    if args.junit:
        claim_file(args.junit, "--junit")
    claim_dir(args.out)
    ok_java, line = java_status()
    if not ok_java:
        raise UserError(line)
    workers = args.workers or os.cpu_count() or 1
    results = []
    with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), console=Console(stderr=True),
                  disable=args.json, transient=True) as prog:
        for name in names:
            task = prog.add_task(f"{name}: starting TLC")

            def progress(d: dict[str, Any], task: Any = task, name: str = name) -> None:
                prog.update(task, description=f"{name}: {d.get('distinct', 0):,} distinct, "
                                              f"{d.get('queue', 0):,} queued")

            r = speccheck.run_one_tlc(name, manifest, workers=workers, on_progress=progress,
                                      trace_dir=Path(args.out))
            prog.remove_task(task)
            results.append(r)
            if not args.json:
                mark = "[green]ok[/]" if r["ok"] else "[red]FAIL[/]"
                got = r["violated"] or r["status"]
                extra = f" model replay: {'ok' if r.get('modelReplay', {}).get('ok') else r.get('modelReplay')}" \
                    if "modelReplay" in r else ""
                out.print(f"{mark} {name}: {got} (expected {r['expect']}), {r['distinct'] or 0:,} distinct, "
                          f"{r['generated'] or 0:,} generated, depth {r['depth']}, {r['seconds']} s{extra}"
                          + (f" — {escape(r['message'])}" if r["message"] and not r["ok"] else ""))
    if args.record:
        for r in results:
            if r["status"] != "error":
                manifest["configs"][r["config"]]["measured"] = {
                    k: r[k] for k in ("distinct", "generated", "depth", "seconds")} | {"workers": workers}
        (SPEC_DIR / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    if args.junit:
        junit.write(args.junit, junit.check_suite(results, workers))
    if args.json:
        print(json.dumps(results, indent=2))
    return 0 if all(r["ok"] for r in results) else 1


def cmd_model_check(args: argparse.Namespace, out: Console) -> int:
    manifest = speccheck.load_manifest()
    name = speccheck.resolve([args.config], manifest)[0]
    err = Console(stderr=True)
    with err.status(f"{name}: exploring") as status:
        r = speccheck.model_check(name, symmetry=False if args.no_symmetry else None,
                                  on_progress=lambda d: status.update(
                                      f"{name}: {d['distinct']:,} distinct, {d['queue']:,} queued, depth {d['depth']}"))
    expect = manifest["configs"][name]["expect"]
    r["expect"] = expect
    r["ok"] = (r["violated"] or "pass") == expect
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        mark = "[green]ok[/]" if r["ok"] else "[red]FAIL[/]"
        size = (f"{r['generated']:,} generated, depth {r['depth']}" if "generated" in r
                else f"{r['edges']:,} edges, fair-lasso search")
        out.print(f"{mark} {name}: {r['violated'] or r['status']} (expected {expect}), {r['distinct']:,} distinct "
                  f"({'orbits' if r['symmetry'] else 'states'}), {size}, {r['seconds']} s")
        if r.get("trace"):
            loop = r.get("loop")
            out.print("  trace: " + " → ".join(" ".join(map(str, x)) for x in r["trace"][1:])
                      + ("" if loop is None else " (then stutters for ever)" if loop == "stutter"
                         else f" (then back to step {loop}, for ever)"))
    return 0 if r["ok"] else 1
