"""``rmqha fuzz``: a fuzz campaign on Spark (``rmqha.spark_fuzz``).

    rmqha fuzz [--budget SECONDS | --seeds N] [--master URL] [--config FILE] [--profile P] [--bug NAME]...
               [--fix NAME|all]... [--guided | --unguided | --compare] [--seed-start N] [--steps K] [--out DIR]
               [--no-shrink] [--json]

Exit status: 0 when every violation is explained by a documented finding (or by the expected-loss configuration
the campaign was asked to run), 1 when one is not, 2 for a usage or input error, 130 when interrupted (the
campaign resumes from its journal with the same command).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import PROFILES, config_from_dict
from rmqha.impl.sim.scenarios import precursors_off
from rmqha.spark_fuzz.campaign import Campaign, CampaignError, CampaignOptions, options_from
from rmqha.spark_fuzz.outputs import write_tables
from rmqha.spark_fuzz.report import write_report
from rmqha.spark_fuzz.session import spark_session

from .common import Handler
from .doctor import java_status
from .files import UserError, load_config_aside

DEFAULT_OUT = "runs/fuzz"
DEFAULT_BUDGET = 60.0
PLAIN_EVERY = 10.0  # seconds between progress lines when stderr is not a terminal


def register(sub: Any) -> dict[str, Handler]:
    f = sub.add_parser("fuzz", help="a fuzz campaign on Spark: swarm faults, coverage guidance, shrunk findings, "
                                    "Parquet tables and an HTML report")
    stop = f.add_mutually_exclusive_group()
    stop.add_argument("--budget", type=float, help=f"seconds of fuzzing (default {DEFAULT_BUDGET:g})")
    stop.add_argument("--seeds", type=int, help="runs per arm, then stop (a deterministic campaign)")
    f.add_argument("--master", help="Spark master URL (default: embedded local[*])")
    f.add_argument("--config", help="TOML file: kit settings (docs/configuration.md) and a [fuzz] table (docs/fuzz.md)")
    profiles = ", ".join(p for p in PROFILES if p != "safe" and "legacy" not in p)
    f.add_argument("--profile", help=f"safe (default), {profiles}")
    f.add_argument("--bug", action="append", default=[], help="switch on an injectable bug or an expected-loss "
                                                              "configuration (see `rmqha bugs`)")
    f.add_argument("--fix", action="append", default=[], help="apply a finding's fix switch, or 'all'")
    mode = f.add_mutually_exclusive_group()
    mode.add_argument("--guided", dest="mode", action="store_const", const="guided",
                      help="mutate runs that reached new abstract states (default)")
    mode.add_argument("--unguided", dest="mode", action="store_const", const="unguided", help="fresh seeds only")
    mode.add_argument("--compare", dest="mode", action="store_const", const="compare",
                      help="both arms side by side (half the runs each), for the coverage curves")
    f.add_argument("--seed-start", type=int, default=1, help="first seed, and the seed of the campaign (default 1)")
    f.add_argument("--steps", type=int, help="simulator steps per run (default 20000, or [fuzz] steps)")
    f.add_argument("--out", default=DEFAULT_OUT, help=f"campaign directory (default {DEFAULT_OUT}); an existing one "
                                                      "is resumed")
    f.add_argument("--no-shrink", action="store_true", help="record violations without shrinking them")
    f.add_argument("--no-conform", action="store_true",
                   help="do not validate runs against the model (by default every run the model covers is, and a "
                        "step that leaves it is the violation MODEL-CONFORM: docs/conformance.md)")
    f.add_argument("--json", action="store_true", help="print the summary as JSON")
    return {"fuzz": cmd_fuzz}


def _config(path: str | None, profile: str | None,
            names: list[str]) -> tuple[dict[str, Any], str, dict[str, Any] | None]:
    """The run config (profile, file, expected-loss settings) as a dict, its profile, and the [fuzz] table."""
    cfg, profile, tables = load_config_aside(path, profile, ("fuzz",))
    cfg = config_from_dict(B.config_overlay(names), cfg)
    if cfg.cluster.mode != "controller":
        raise UserError("fuzz campaigns need controller mode (the 4.x legacy profiles have no controller)")
    return cfg.to_dict(), profile, tables.get("fuzz")


def _progress_bar(quiet: bool) -> Progress:
    return Progress(TextColumn("[bold]fuzz[/]"), BarColumn(), TextColumn("{task.fields[stat]}"), TimeElapsedColumn(),
                    console=Console(stderr=True), disable=quiet or not sys.stderr.isatty())


def cmd_fuzz(args: argparse.Namespace, out: Console) -> int:
    if args.seeds is not None and args.seeds <= 0:
        raise UserError("--seeds must be positive")
    if args.budget is not None and args.budget <= 0:
        raise UserError("--budget must be positive")
    if args.steps is not None and args.steps <= 0:
        raise UserError("--steps must be positive")
    if args.seeds is None and args.budget is None:
        args.budget = DEFAULT_BUDGET
    try:
        names = B.names_from(args.bug, args.fix)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    config, profile, fuzz = _config(args.config, args.profile, names)
    if args.steps is not None:
        fuzz = dict(fuzz or {}, steps=args.steps)
    try:
        opts = options_from(args.out, config, fuzz, profile=profile, bugs=names, disabled=precursors_off(names),
                            guided=args.mode != "unguided", compare=args.mode == "compare",
                            seed_start=args.seed_start, budget=args.budget, seeds=args.seeds,
                            shrink=not args.no_shrink, conform=not args.no_conform)
    except ValueError as exc:
        raise UserError(f"{args.config or 'config'}: {exc}") from None
    ok, line = java_status()
    if not ok:
        raise UserError(f"Spark needs Java 17: {line}")
    try:
        Path(args.out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create {args.out}: {exc.strerror}") from None

    from pyspark.sql import SparkSession  # lazy: pyspark (490 MB, a JVM) loads only for a campaign

    err = Console(stderr=True)
    if not args.json:
        err.print(f"starting Spark ({escape(args.master or 'embedded local[*]')}) ...", highlight=False)
    ours = SparkSession.getActiveSession() is None  # a session we start, we stop (an embedding caller keeps its own)
    spark = spark_session(args.master)
    try:
        return _campaign(args, out, spark, opts)
    finally:
        if ours:
            spark.stop()


def _campaign(args: argparse.Namespace, out: Console, spark: Any, opts: CampaignOptions) -> int:
    bar = _progress_bar(args.json)
    plain = not args.json and not sys.stderr.isatty()
    last = [0.0]
    task = bar.add_task("fuzz", total=args.seeds * len(opts.arms) if args.seeds else args.budget, stat="")

    def show(p: Any) -> None:
        states = " ".join(f"{k} {v:,}" for k, v in p.states.items())
        stat = (f"{p.runs} runs, {p.steps / max(p.elapsed, 1e-9):,.0f} steps/s, {p.violations} violation(s), "
                f"{p.unique} unique, {p.unexplained} unexplained | states {states} (+{p.new_states}), "
                f"witnesses {max(p.witnesses.values(), default=0)}" + (f" | shrinking {p.shrinking}" if p.shrinking
                                                                        else ""))
        bar.update(task, completed=p.runs if args.seeds else min(p.elapsed - camp.elapsed_before, args.budget),
                   stat=stat)
        if plain and p.elapsed - last[0] >= PLAIN_EVERY:  # not a terminal (a log, a pipe): a line now and then
            last[0] = p.elapsed
            print(f"fuzz {p.elapsed:6.0f} s: {stat.replace(f' (+{p.new_states})', '')}", file=sys.stderr, flush=True)

    camp = Campaign(spark, opts, on_progress=show)
    try:
        with bar:
            camp.run()
    except CampaignError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:  # Spark's own SIGINT handler has cancelled the jobs: keep clear of the JVM now
        write_report(camp)
        print(f"rmqha: interrupted; the same command (same --out) resumes the campaign from {opts.out} (and "
              "writes the tables)", file=sys.stderr)
        return 130
    tables = write_tables(spark, camp)
    report = write_report(camp)
    summary = camp.summary() | {"tables": tables, "report": report}
    code = 1 if summary["unexplained"] else 0
    if args.json:
        print(json.dumps(summary, sort_keys=True))
        return code
    _print_summary(out, summary)
    return code


def _print_summary(out: Console, s: dict[str, Any]) -> None:
    if not out.is_terminal:  # a log or a pipe: no terminal width to fit, so keep the ids whole
        out = Console(width=max(out.width, 150), highlight=False)
    title = (f"{s['runs']} runs [{', '.join(s['arms'])}{'; ' + ', '.join(s['bugs']) if s['bugs'] else ''}]: "
             f"{s['steps']:,} steps in {s['fuzzElapsed']:.1f} s of fuzzing ({s['stepsPerSecond']:,} steps/s), "
             f"{s['violations']} violation(s); {s['elapsed']:.1f} s with shrinking")
    table = Table(title=escape(title))
    for col in ("invariant", "explained by", "runs", "unique finding", "faults", "steps", "replays", "conforms"):
        table.add_column(col)
    for b in s["buckets"]:
        fs = [f for f in s["findings"] if f["bucket"] == b["bucket"]]
        if not fs:
            table.add_row(b["invariant"], b["explainedBy"] or "[red]unexplained[/]", str(b["count"]), "-", "", "", "",
                          "")
        for i, f in enumerate(fs):
            table.add_row(b["invariant"] if i == 0 else "", (b["explainedBy"] or "[red]unexplained[/]") if i == 0
                          else "", str(b["count"]) if i == 0 else "", f["id"],
                          f"{f['shrunkActions']}/{f['originalActions']}", f"{f['shrunkSteps']}/{f['originalSteps']}",
                          "yes" if f["replays"] else "[red]NO[/]", f["conforms"])
    out.print(table)
    cov = "; ".join(f"{arm}: {c['states']:,} abstract states, {len(c['witnesses'])} witnesses over {c['runs']} runs"
                    for arm, c in s["coverage"].items())
    out.print(escape(cov), highlight=False)
    for b in s["buckets"]:
        if b["fixHints"]:
            out.print(f"hint: {escape(b['invariant'])} (unexplained) goes away with the fix of "
                      f"{escape(', '.join(b['fixHints']))}, whose write-up does not list it", highlight=False)
    for e in s["shrinkErrors"]:
        out.print(f"[red]shrink of {escape(e['rep'])} ({escape(e['bucket'])}) failed:[/] {escape(e['error'])}")
    out.print(f"traces in {escape(s['out'])}/traces, tables {', '.join(sorted(s['tables']))} (Parquet), "
              f"report {escape(s['report'])}", highlight=False)
