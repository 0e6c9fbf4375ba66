"""``rmqha simulate``: seeded runs of the simulator under random faults, every invariant checked after every step.

    rmqha simulate --seed N [--steps K] [--profile P] [--config FILE] [--bug B]... [--fix F|all]... [--trace FILE]
    rmqha simulate --seeds A-B [--jobs J] [--out DIR] ...      (a batch: progress, triage, traces of failures)

Each run the model covers is validated against it as it runs (``rmqha.models.campaign``: MODEL-CONFORM), unless
``--no-conform``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rmqha.impl.findings import classify
from rmqha.impl.sim.config import PROFILES, Config, config_from_dict
from rmqha.impl.sim.runner import RunResult, header_for
from rmqha.impl.trace import ViolationRecord
from rmqha.models.campaign import run, run_header, scope

from .common import DEFAULT_STEPS, Handler, apply_configs, bug_list, seed_range, violation_line
from .files import UserError, load_config, write_text


def register(sub: Any) -> dict[str, Handler]:
    s = sub.add_parser("simulate", help="run seeded simulations with random faults, checking every invariant")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--seed", type=int, help="one seed (default 1)")
    which.add_argument("--seeds", help="a range of seeds, e.g. 1-200")
    s.add_argument("--steps", type=int, default=DEFAULT_STEPS,
                   help=f"simulator steps per run (default {DEFAULT_STEPS})")
    s.add_argument("--max-time", type=float, help="stop a run at this simulated time (seconds)")
    s.add_argument("--profile", help=f"safe (default), {', '.join(p for p in PROFILES if p != 'safe')}")
    s.add_argument("--config", help="TOML file of settings (sections as in docs/configuration.md)")
    s.add_argument("--bug", action="append", default=[], help="switch on an injectable bug (see `rmqha bugs`)")
    s.add_argument("--fix", action="append", default=[], help="apply a finding's fix switch, or 'all'")
    s.add_argument("--trace", help="write the trace of a single run here (.jsonl, or .jsonl.gz)")
    s.add_argument("--out", help="batch: write traces of failing seeds and a summary.json here")
    s.add_argument("--jobs", type=int, default=0, help="batch: worker processes (default: CPU count)")
    s.add_argument("--no-triage", action="store_true", help="batch: do not attribute violations to findings")
    s.add_argument("--no-conform", action="store_true",
                   help="do not validate runs against the model (by default every run the model covers is, and a "
                        "step that leaves it is the violation MODEL-CONFORM: docs/conformance.md)")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    return {"simulate": cmd_simulate}


def cmd_simulate(args: argparse.Namespace, out: Console) -> int:
    if args.steps <= 0:
        raise UserError("--steps must be positive")
    cfg, profile = load_config(args.config, args.profile)
    names = bug_list(args.bug, args.fix)
    apply_configs(cfg, names)
    max_time = int(args.max_time * 1000) if args.max_time is not None else None
    if args.seeds:
        if args.trace:
            raise UserError("--trace is for one seed; use --out DIR with --seeds")
        return _batch(args, out, cfg, profile, names, seed_range(args.seeds), max_time)
    seed = 1 if args.seed is None else args.seed
    t0 = time.perf_counter()
    result = run(cfg, seed, args.steps, bugs=names, max_time=max_time, profile=profile, conform=not args.no_conform)
    wall = time.perf_counter() - t0
    why_not = scope(cfg, names) if not args.no_conform else "--no-conform"
    if args.trace:
        write_text(args.trace, result.text or "")
    v = result.violation.to_dict() if result.violation else None
    summary = {"seed": seed, "profile": profile, "bugs": names, "steps": result.steps,
               "simSeconds": result.sim_time / 1000,
               "wallSeconds": round(wall, 3), "violation": v, "hash": result.digest, "trace": args.trace,
               "coverage": result.coverage, "conform": "n/a: " + why_not if why_not else "checked"}
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        label = f"seed {seed} [{profile}{' ' + ','.join(names) if names else ''}]: "
        ratio = result.sim_time / 1000 / max(wall, 1e-9)
        out.print(escape(label) + f"{result.steps} steps, "
                  f"{result.sim_time / 1000:.1f} simulated s in {wall:.2f} s ({ratio:.0f}x); model conformance "
                  + escape("checked" if not why_not else f"not checked ({why_not})"), highlight=False)
        out.print(("[red]VIOLATION[/] " if v else "[green]ok[/] ") + violation_line(v), highlight=False)
        if args.trace:
            out.print(f"trace: {args.trace}  ({result.digest})")
    return 1 if v else 0


def _seed_job(payload: dict[str, Any]) -> dict[str, Any]:
    """One seed of a batch (runs in a worker process)."""
    cfg = config_from_dict(payload["config"])
    t0 = time.perf_counter()
    r: RunResult = run(cfg, payload["seed"], payload["steps"], bugs=payload["bugs"], max_time=payload["max_time"],
                       profile=payload["profile"], record=False, conform=payload["conform"])
    out: dict[str, Any] = {"seed": payload["seed"], "steps": r.steps, "simMs": r.sim_time,
                           "wall": time.perf_counter() - t0, "violation": None, "finding": None, "trace": None}
    if r.violation is not None:
        v = r.violation.to_dict()
        out["violation"] = {k: v[k] for k in ("invariant", "step", "t", "message")}
        header = header_for(cfg, payload["seed"], payload["steps"], payload["bugs"], None, payload["max_time"],
                            payload["profile"], conform=payload["conform"] and scope(cfg, payload["bugs"]) is None)
        if payload["triage"]:
            def rerun(h: dict[str, Any]) -> ViolationRecord | None:
                again = run_header(h, keep=False)
                return again.violation.to_dict() if again.violation else None

            out["finding"] = classify(header, v, rerun)
        if payload["write_traces"]:
            out["trace"] = run_header(header).text
    return out


def _batch(args: argparse.Namespace, out: Console, cfg: Config, profile: str, names: list[str], seeds: list[int],
           max_time: int | None) -> int:
    jobs = args.jobs or os.cpu_count() or 1
    payloads = [{"config": cfg.to_dict(), "seed": s, "steps": args.steps, "bugs": names, "max_time": max_time,
                 "profile": profile, "triage": not args.no_triage, "write_traces": bool(args.out),
                 "conform": not args.no_conform} for s in seeds]
    results: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    progress = Progress(TextColumn("[bold]simulate[/]"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[stat]}"),
                        TimeElapsedColumn(), console=Console(stderr=True), disable=args.json or not sys.stderr.isatty())
    with progress:
        task = progress.add_task("seeds", total=len(seeds), stat="")
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for fut in as_completed([pool.submit(_seed_job, p) for p in payloads]):
                res = fut.result()
                results.append(res)
                if res["trace"] and args.out:
                    write_text(os.path.join(args.out, f"seed-{res['seed']}.jsonl.gz"), res.pop("trace"))
                    res["trace"] = f"seed-{res['seed']}.jsonl.gz"
                bad = sum(1 for x in results if x["violation"])
                progress.update(task, advance=1, stat=f"{bad} violation(s)")
    wall = time.perf_counter() - t0
    results.sort(key=lambda x: x["seed"])
    sim_s = sum(x["simMs"] for x in results) / 1000
    unexplained = [x for x in results if x["violation"] and not x["finding"]]
    why_not = scope(cfg, names) if not args.no_conform else "--no-conform"
    summary = {"profile": profile, "bugs": names, "seeds": [seeds[0], seeds[-1]], "runs": len(results),
               "conform": "n/a: " + why_not if why_not else "checked",
               "violations": sum(1 for x in results if x["violation"]), "unexplained": len(unexplained),
               "simSeconds": round(sim_s, 1), "wallSeconds": round(wall, 2), "results": results}
    if args.out:
        write_text(os.path.join(args.out, "summary.json"), json.dumps(summary, indent=1, sort_keys=True))
    if args.json:
        print(json.dumps(summary, sort_keys=True))
        return 1 if unexplained else 0
    by: dict[tuple[str, str], list[int]] = {}
    for x in results:
        if x["violation"]:
            by.setdefault((x["violation"]["invariant"], x["finding"] or "unexplained"), []).append(x["seed"])
    table = Table(title=escape(f"{len(results)} seeds [{profile}{' ' + ','.join(names) if names else ''}]: "
                               f"{sim_s:.0f} simulated s in {wall:.1f} s ({sim_s / max(wall, 1e-9):.0f}x); model "
                               f"conformance {'checked' if not why_not else f'not checked ({why_not})'}"))
    table.add_column("invariant")
    table.add_column("explained by")
    table.add_column("seeds", justify="right")
    table.add_column("examples")
    for (inv, fid), ss in sorted(by.items()):
        table.add_row(inv, fid, str(len(ss)), " ".join(map(str, ss[:8])) + (" ..." if len(ss) > 8 else ""))
    table.add_row("(none)", "", str(sum(1 for x in results if not x["violation"])), "")
    out.print(table)
    if args.out:
        out.print(f"traces and summary.json in {args.out}")
    return 1 if unexplained else 0
