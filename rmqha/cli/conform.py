"""``rmqha conform``: implementation traces (or fresh runs) checked step by step against the executable model
(``rmqha.models.conform``); a real run's folder (``rmqha real test``): its controller's committed event log against
the model's controller actions (``rmqha.real.conform``).

    rmqha conform TRACE|RUN-DIR... [--seeds A-B] [--steps K] [--profile P] [--bug B]... [--fix F|all]... [--jobs J]
                  [--json]
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import PROFILES, default_config
from rmqha.impl.sim.runner import header_args, header_for
from rmqha.models.conform import validate
from rmqha.real.conform import conform_run, run_dir_of

from .common import (
    MAX_JOBS,
    MAX_STEPS,
    Handler,
    apply_configs,
    bug_list,
    choice,
    input_path,
    int_in,
    model_trace_objs,
    read_trace,
    refuse_unless,
    seed_range,
)
from .files import UserError, read_trace_text

STEPS = 5000  # --seeds: simulator steps per run
CONFORM_PROFILES = tuple(p for p in PROFILES if default_config(p).cluster.mode == "controller")


def register(sub: Any) -> dict[str, Handler]:
    cf = sub.add_parser("conform", help="validate implementation traces against the model, step by step")
    cf.add_argument("traces", nargs="*", type=input_path, help="implementation trace files (rmqha simulate / "
                    "Hypothesis / fuzz), or a real run's folder (rmqha real test)")
    cf.add_argument("--seeds", type=seed_range, metavar="A-B",
                    help="also validate fresh random runs of these seeds, e.g. 1-500")
    cf.add_argument("--steps", type=int_in(1, MAX_STEPS),
                    help=f"--seeds: simulator steps per run (default {STEPS})")
    cf.add_argument("--profile", type=choice(CONFORM_PROFILES, "profile of controller mode"),
                    help=f"--seeds: {', '.join(CONFORM_PROFILES)} (default safe)")
    cf.add_argument("--bug", action="append", default=[], help="--seeds: switch on an injectable bug")
    cf.add_argument("--fix", action="append", default=[], help="--seeds: a finding's fix switch, or 'all'")
    cf.add_argument("--jobs", type=int_in(1, MAX_JOBS), help="worker processes (default: CPU count)")
    cf.add_argument("--json", action="store_true", help="print one JSON report per trace")
    return {"conform": cmd_conform}


def _conform_job(item: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    name, header = item
    try:
        return {"trace": name, **validate(header).to_dict()}
    except (ValueError, KeyError, TypeError) as exc:
        return {"trace": name, "error": str(exc)}


def _conform_results(items: list[tuple[str, dict[str, Any]]], jobs: int) -> Iterator[dict[str, Any]]:
    """Each item's report as it finishes: in this process, or on ``jobs`` workers."""
    if jobs == 1 or len(items) == 1:
        yield from map(_conform_job, items)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for f in as_completed([pool.submit(_conform_job, it) for it in items]):
            yield f.result()


def _conform_real(d: Path, out: Console, as_json: bool) -> bool:
    """The controller's committed event log of a real run, against the model (models/controller_log.py)."""
    try:
        log, rep = conform_run(d)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if as_json:
        print(json.dumps({"trace": str(log), "conforms": rep.ok, **rep.to_json()}, sort_keys=True))
    elif rep.ok:
        out.print(f"{escape(str(log))}: the controller's {rep.events} committed events conform to the model "
                  f"(actions: {', '.join(f'{k} {v}' for k, v in sorted(rep.actions.items())) or 'none'}; "
                  f"extensions: {', '.join(f'{k} {v}' for k, v in sorted(rep.extensions.items())) or 'none'})")
    else:
        dv = rep.divergence
        assert dv is not None
        out.print(f"[red]diverges[/] {escape(str(log))} at log index {dv.index}: "
                  f"{escape(json.dumps(dv.event, sort_keys=True))}")
        out.print(f"  {escape(dv.why)}")
    return rep.ok


def cmd_conform(args: argparse.Namespace, out: Console) -> int:
    if args.seeds is None:
        refuse_unless(args, "--seeds A-B (fresh runs)", {"steps": "--steps", "profile": "--profile", "bug": "--bug",
                                                         "fix": "--fix"})
    items: list[tuple[str, dict[str, Any]]] = []
    real_ok = True
    real_dirs = [d for d in (run_dir_of(p) for p in args.traces) if d is not None]
    for d in dict.fromkeys(real_dirs):
        real_ok = _conform_real(d, out, args.json) and real_ok
    for path in args.traces:
        if run_dir_of(path) is not None:
            continue
        if os.path.isdir(path):
            raise UserError(f"{path}: a folder that holds no real run (rmqha real test): give trace files, or a real "
                            "run's folder")
        text = read_trace_text(path)
        if model_trace_objs(path, text) is not None:
            raise UserError(f"{path}: a model trace; conform validates implementation traces (rmqha replay "
                            "--impl OUT turns a model trace into one)")
        header = read_trace(path, text)[1]
        try:  # what replay refuses in one line, before any run
            header_args(header)
            B.check_names(list(header.get("bugs") or []))
        except KeyError as exc:
            raise UserError(f"{path}: cannot run this header (no field {exc})") from None
        except (ValueError, TypeError) as exc:
            raise UserError(f"{path}: cannot run this header ({exc})") from None
        items.append((path, header))
    if args.seeds is not None:
        profile = args.profile or "safe"
        cfg = default_config(profile)
        names = bug_list(args.bug, args.fix)
        apply_configs(cfg, names)
        steps = STEPS if args.steps is None else args.steps
        items += [(f"seed {n}", header_for(cfg, n, steps, names, None, None, profile)) for n in args.seeds]
    if not items:
        if real_dirs:
            return 0 if real_ok else 1
        raise UserError("nothing to validate: give trace files and/or --seeds A-B")
    jobs = args.jobs or os.cpu_count() or 1
    reports: list[dict[str, Any]] = []
    with Progress(TextColumn("conform"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[bad]} diverge"),
                  TimeElapsedColumn(), console=Console(stderr=True), disable=args.json or len(items) < 2) as bar:
        task = bar.add_task("conform", total=len(items), bad=0)
        bad = 0
        for r in _conform_results(items, jobs):
            reports.append(r)
            bad += not r.get("conforms")
            bar.update(task, advance=1, bad=bad)
    order = {name: i for i, (name, _) in enumerate(items)}
    reports.sort(key=lambda r: order[r["trace"]])
    if args.json:
        for r in reports:
            print(json.dumps(r, sort_keys=True))
    else:
        ext: dict[str, int] = {}
        for r in reports:
            for k, v in (r.get("extensions") or {}).items():
                ext[k] = ext.get(k, 0) + v
            if "error" in r:
                out.print(f"[red]error[/] {escape(r['trace'])}: {escape(r['error'])}")
            elif not r["conforms"]:
                d = r["divergence"]
                out.print(f"[red]diverges[/] {escape(r['trace'])} at step {d['step']} (t={d['t'] / 1000:.1f}s, "
                          f"event {escape(json.dumps(d['event'], sort_keys=True))})")
                out.print(f"  model action {d['action']}: guard failed: {escape(d['guard'])}")
                out.print(f"  {escape(d['detail'])}")
                out.print(f"  enabled before the step: {escape(', '.join(d['enabled']) or 'none')}")
        good = sum(1 for r in reports if r.get("conforms"))
        steps = sum(r.get("steps", 0) for r in reports)
        out.print(f"{good} of {len(reports)} traces conform ({steps} steps validated)"
                  + (f"; extensions used: {', '.join(f'{k} {v}' for k, v in sorted(ext.items()))}" if ext else ""))
    return 0 if all(r.get("conforms") for r in reports) and real_ok else 1
