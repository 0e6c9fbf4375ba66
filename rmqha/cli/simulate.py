"""``rmqha simulate``: seeded runs of the simulator under random faults, every invariant checked after every step.

    rmqha simulate --seed N [--steps K] [--profile P] [--config FILE] [--bug B]... [--fix F|all]... [--trace FILE]
    rmqha simulate --seeds A-B [--jobs J] [--out DIR] ...      (a batch: progress, triage, traces of failures)

Each run ends with a settle tail and the progress invariants (``[sim] progress``; ``--no-progress``: not). Each run
the model covers is validated against it as it runs (``rmqha.models.campaign``: MODEL-CONFORM), unless
``--no-conform``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from rich.console import Console
from rich.markup import escape

from rmqha.impl import bugs as B
from rmqha.impl.findings import triage
from rmqha.impl.sim.config import PROFILES, Config, config_from_dict
from rmqha.impl.sim.runner import RunResult, header_for
from rmqha.impl.trace import ViolationRecord
from rmqha.models.campaign import run, run_header, scope

from . import junit
from .common import (
    DEFAULT_STEPS,
    MAX_JOBS,
    MAX_SEED,
    MAX_STEPS,
    Handler,
    add_release_option,
    apply_configs,
    bug_list,
    choice,
    claim_dir,
    claim_file,
    input_file,
    int_in,
    number_in,
    output_dir,
    output_file,
    refuse_unless,
    seed_range,
    violation_line,
    with_release,
)
from .files import UserError, load_config, write_text
from .terminal import batch_progress, batch_summary

MAX_SIM_SECONDS = 1e9  # simulated seconds (about 31 years)


def register(sub: Any) -> dict[str, Handler]:
    s = sub.add_parser("simulate", help="run seeded simulations with random faults, checking every invariant")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--seed", type=int_in(0, MAX_SEED), help="one seed (default 1)")
    which.add_argument("--seeds", type=seed_range, metavar="A-B", help="a range of seeds, e.g. 1-200 (a batch)")
    s.add_argument("--steps", type=int_in(1, MAX_STEPS), default=DEFAULT_STEPS,
                   help=f"simulator steps per run (default {DEFAULT_STEPS})")
    s.add_argument("--max-time", type=number_in(0.0, MAX_SIM_SECONDS), metavar="SECONDS",
                   help="stop a run at this simulated time (seconds, above 0)")
    s.add_argument("--profile", type=choice(list(PROFILES), "profile"),
                   help=f"safe (default), {', '.join(p for p in PROFILES if p != 'safe')}")
    s.add_argument("--config", type=input_file, help="TOML file of settings (sections as in docs/configuration.md)")
    s.add_argument("--bug", action="append", default=[], help="switch on an injectable bug (see `rmqha bugs`)")
    s.add_argument("--fix", action="append", default=[], help="apply a finding's fix switch, or 'all'")
    add_release_option(s)
    s.add_argument("--trace", type=output_file, help="one seed: write its trace here (.jsonl, or .jsonl.gz)")
    s.add_argument("--out", type=output_dir, help="batch: write traces of failing seeds and a summary.json here")
    s.add_argument("--jobs", type=int_in(1, MAX_JOBS), help="batch: worker processes (default: CPU count)")
    s.add_argument("--no-triage", action="store_true", help="batch: do not attribute violations to findings")
    s.add_argument("--no-progress", action="store_true",
                   help="no settle tail and no progress checks (LIVE-*) at the end of each run")
    s.add_argument("--no-conform", action="store_true",
                   help="do not validate runs against the model (by default every run the model covers is, and a "
                        "step that leaves it is the violation MODEL-CONFORM: docs/conformance.md)")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.add_argument("--junit", type=output_file, metavar="FILE",
                   help="also write the results as JUnit XML: one test case per seed (docs/ci.md)")
    return {"simulate": cmd_simulate}


def cmd_simulate(args: argparse.Namespace, out: Console) -> int:
    if args.seeds is not None and args.trace:
        raise UserError("--trace is for one seed; use --out DIR with --seeds A-B")
    if args.seeds is None:
        refuse_unless(args, "a batch (--seeds A-B; one seed writes its trace with --trace FILE)",
                      {"out": "--out", "jobs": "--jobs", "no_triage": "--no-triage"})
    cfg, profile = load_config(args.config, args.profile, progress=not args.no_progress)
    names = with_release(bug_list(args.bug, args.fix), args.rocketmq)
    apply_configs(cfg, names)
    max_time = round(args.max_time * 1000) if args.max_time is not None else None
    if max_time is not None and max_time < 1:
        raise UserError(f"--max-time must be at least 0.001 s, got {args.max_time:g}")
    if args.junit:
        claim_file(args.junit, "--junit")
    if args.seeds is not None:
        if args.out:
            claim_dir(args.out)
        return _batch(args, out, cfg, profile, names, args.seeds, max_time)
    if args.trace:
        claim_file(args.trace, "--trace")
    seed = 1 if args.seed is None else args.seed
    t0 = time.perf_counter()
    result = run(cfg, seed, args.steps, bugs=names, max_time=max_time, profile=profile, conform=not args.no_conform,
                 rocketmq=args.rocketmq)
    wall = time.perf_counter() - t0
    why_not = scope(cfg, names) if not args.no_conform else "--no-conform"
    if args.trace:
        write_text(args.trace, result.text or "")
    v = result.violation.to_dict() if result.violation else None
    summary = {"seed": seed, "profile": profile, "rocketmq": args.rocketmq, "bugs": names, "steps": result.steps,
               "simSeconds": result.sim_time / 1000,
               "wallSeconds": round(wall, 3), "violation": v, "hash": result.digest, "trace": args.trace,
               "coverage": result.coverage, "conform": "n/a: " + why_not if why_not else "checked"}
    if args.junit:
        again = " ".join(["rmqha simulate --seed {seed}", f"--steps {args.steps}", f"--profile {profile}",
                          *(f"--bug {b}" for b in args.bug), *(f"--fix {f}" for f in args.fix)])
        junit.write(args.junit, junit.simulate_suite(profile, names, [{"seed": seed, "wall": wall, "violation": v}],
                                                     wall, None, args.trace, again + " --trace t.jsonl"))
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        label = f"seed {seed} [{_release_label(args.rocketmq)}{profile}{' ' + ','.join(names) if names else ''}]: "
        ratio = result.sim_time / 1000 / max(wall, 1e-9)
        out.print(escape(label) + f"{result.steps} steps, "
                  f"{result.sim_time / 1000:.1f} simulated s in {wall:.2f} s ({ratio:.0f}x); model conformance "
                  + escape("checked" if not why_not else f"not checked ({why_not})"), highlight=False)
        out.print(("[red]VIOLATION[/] " if v else "[green]ok[/] ") + violation_line(v), highlight=False)
        if args.trace:
            out.print(f"trace: {args.trace}  ({result.digest})")
    return 1 if v else 0


def _release_label(release: str) -> str:
    """``RocketMQ 5.5.0 `` before the profile in a summary line (nothing for the default release)."""
    return "" if release == B.DEFAULT_RELEASE else f"RocketMQ {release} "


def _seed_job(payload: dict[str, Any]) -> dict[str, Any]:
    """One seed of a batch (runs in a worker process)."""
    cfg = config_from_dict(payload["config"])
    t0 = time.perf_counter()
    r: RunResult = run(cfg, payload["seed"], payload["steps"], bugs=payload["bugs"], max_time=payload["max_time"],
                       profile=payload["profile"], record=False, conform=payload["conform"],
                       rocketmq=payload["rocketmq"])
    out: dict[str, Any] = {"seed": payload["seed"], "steps": r.steps, "simMs": r.sim_time,
                           "wall": time.perf_counter() - t0, "violation": None, "finding": None, "trace": None}
    if r.violation is not None:
        v = r.violation.to_dict()
        out["violation"] = {k: v[k] for k in ("invariant", "step", "t", "message")}
        header = header_for(cfg, payload["seed"], payload["steps"], payload["bugs"], None, payload["max_time"],
                            payload["profile"], conform=payload["conform"] and scope(cfg, payload["bugs"]) is None,
                            rocketmq=payload["rocketmq"])
        if payload["triage"]:
            def rerun(h: dict[str, Any]) -> ViolationRecord | None:
                again = run_header(h, keep=False)
                return again.violation.to_dict() if again.violation else None

            out["finding"] = triage(header, v, rerun).explained_by  # one finding, or a set: F-A+F-B
        if payload["write_traces"]:
            out["trace"] = run_header(header).text
    return out


def _batch(args: argparse.Namespace, out: Console, cfg: Config, profile: str, names: list[str], seeds: list[int],
           max_time: int | None) -> int:
    jobs = args.jobs or os.cpu_count() or 1
    payloads = [{"config": cfg.to_dict(), "seed": s, "steps": args.steps, "bugs": names, "max_time": max_time,
                 "profile": profile, "triage": not args.no_triage, "write_traces": bool(args.out),
                 "conform": not args.no_conform, "rocketmq": args.rocketmq} for s in seeds]
    results: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    progress = batch_progress(args.json)
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
    summary = {"profile": profile, "rocketmq": args.rocketmq, "bugs": names, "seeds": [seeds[0], seeds[-1]],
               "runs": len(results),
               "conform": "n/a: " + why_not if why_not else "checked",
               "violations": sum(1 for x in results if x["violation"]), "unexplained": len(unexplained),
               "simSeconds": round(sim_s, 1), "wallSeconds": round(wall, 2), "results": results}
    if args.out:
        write_text(os.path.join(args.out, "summary.json"), json.dumps(summary, indent=1, sort_keys=True))
    if args.junit:
        again = " ".join(["rmqha simulate --seed {seed}", f"--steps {args.steps}", f"--profile {profile}",
                          *(f"--bug {b}" for b in args.bug), *(f"--fix {f}" for f in args.fix)])
        junit.write(args.junit, junit.simulate_suite(profile, names, results, wall, args.out, None,
                                                     again + " --trace t.jsonl"))
    if args.json:
        print(json.dumps(summary, sort_keys=True))
        return 1 if unexplained else 0
    conformance = "checked" if not why_not else f"not checked ({why_not})"
    out.print(batch_summary(results, _release_label(args.rocketmq) + profile, names, sim_s, wall, conformance),
              highlight=False)  # cli/terminal.py
    if args.out:
        out.print(f"traces and summary.json in {args.out}")
    return 1 if unexplained else 0
