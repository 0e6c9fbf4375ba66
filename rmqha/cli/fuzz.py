"""``rmqha fuzz``: a fuzz campaign on Spark (``rmqha.spark_fuzz``).

    rmqha fuzz [--budget SECONDS | --seeds N|A-B] [--master URL] [--config FILE] [--profile P] [--bug NAME]...
               [--fix NAME|all]... [--guided | --unguided | --compare] [--seed-start N] [--steps K] [--out DIR]
               [--no-shrink] [--json]

Exit status: 0 when every violation is explained by a documented finding or a set of them (or by the expected-loss
configuration the campaign was asked to run), 1 when one is not, 2 for a usage or input error, 128 + the signal
when stopped by SIGINT, SIGTERM or SIGHUP (130, 143, 129: the campaign resumes from its journal with the same
command).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import PROFILES, config_from_dict, default_config
from rmqha.impl.sim.scenarios import precursors_off
from rmqha.spark_fuzz.campaign import LAG, Campaign, CampaignError, CampaignOptions, journaled_runs, options_from
from rmqha.spark_fuzz.outputs import write_tables
from rmqha.spark_fuzz.report import write_report
from rmqha.spark_fuzz.session import parallelism, spark_session, stop_session
from rmqha.spark_fuzz.stopping import exit_status, hold_signals, signal_name, stop_signals

from . import junit
from .common import (
    MAX_SECONDS,
    MAX_SEED,
    MAX_STEPS,
    Handler,
    add_release_option,
    bug_list,
    choice,
    claim_dir,
    claim_file,
    input_file,
    int_in,
    master_url,
    output_dir,
    output_file,
    seconds,
    seed_count_or_range,
    with_release,
)
from .doctor import java_status
from .files import UserError, load_config_aside
from .terminal import FuzzProgress, fuzz_summary

DEFAULT_OUT = "runs/fuzz"
DEFAULT_BUDGET = 60.0
SEED_START = 1
FUZZ_PROFILES = tuple(p for p in PROFILES if default_config(p).cluster.mode == "controller")


def register(sub: Any) -> dict[str, Handler]:
    f = sub.add_parser("fuzz", help="a fuzz campaign on Spark: swarm faults, coverage guidance, shrunk findings, "
                                    "Parquet tables and an HTML report")
    stop = f.add_mutually_exclusive_group()
    stop.add_argument("--budget", type=seconds(), metavar="SECONDS",
                      help=f"seconds of fuzzing (default {DEFAULT_BUDGET:g}; at most {MAX_SECONDS:g}); how many runs "
                           "that is depends on the machine and its load")
    stop.add_argument("--seeds", type=seed_count_or_range, metavar="N|A-B",
                      help="a deterministic campaign (the same runs, findings and tables on any machine and core "
                           "count; only timings differ): N runs per arm from --seed-start, or A-B: the runs per arm "
                           "seeded A..B (--seed-start A, B-A+1 runs)")
    f.add_argument("--master", type=master_url, help="Spark master URL: local[N], local[*] (the default, embedded), "
                                                     "spark://HOST:PORT, yarn, k8s://..., mesos://...")
    f.add_argument("--config", type=input_file,
                   help="TOML file: kit settings (docs/configuration.md) and a [fuzz] table (docs/fuzz.md)")
    f.add_argument("--profile", type=choice(FUZZ_PROFILES, "profile of controller mode"),
                   help=f"safe (default), {', '.join(p for p in FUZZ_PROFILES if p != 'safe')}")
    f.add_argument("--bug", action="append", default=[], help="switch on an injectable bug or an expected-loss "
                                                              "configuration (see `rmqha bugs`)")
    f.add_argument("--fix", action="append", default=[], help="apply a finding's fix switch, or 'all'")
    add_release_option(f)
    mode = f.add_mutually_exclusive_group()
    mode.add_argument("--guided", dest="mode", action="store_const", const="guided",
                      help="mutate runs that reached new abstract states (default)")
    mode.add_argument("--unguided", dest="mode", action="store_const", const="unguided", help="fresh seeds only")
    mode.add_argument("--compare", dest="mode", action="store_const", const="compare",
                      help="both arms side by side (half the runs each), for the coverage curves")
    f.add_argument("--seed-start", type=int_in(0, MAX_SEED),
                   help=f"first seed, and the seed of the campaign (default {SEED_START})")
    f.add_argument("--steps", type=int_in(1, MAX_STEPS),
                   help="simulator steps per run (default 20000, or [fuzz] steps)")
    f.add_argument("--out", type=output_dir, default=DEFAULT_OUT,
                   help=f"campaign directory (default {DEFAULT_OUT}); an existing one is resumed")
    f.add_argument("--no-shrink", action="store_true", help="record violations without shrinking them")
    f.add_argument("--no-progress", action="store_true",
                   help="no settle tail and no progress checks (LIVE-*) at the end of each run")
    f.add_argument("--no-conform", action="store_true",
                   help="do not validate runs against the model (by default every run the model covers is, and a "
                        "step that leaves it is the violation MODEL-CONFORM: docs/conformance.md)")
    f.add_argument("--json", action="store_true", help="print the summary as JSON")
    f.add_argument("--junit", type=output_file, metavar="FILE",
                   help="also write the findings as JUnit XML: one test case per finding (docs/ci.md)")
    return {"fuzz": cmd_fuzz}


def _config(path: str | None, profile: str | None, names: list[str],
            progress: bool = True) -> tuple[dict[str, Any], str, dict[str, Any] | None]:
    """The run config (profile, progress checks, file, expected-loss settings) as a dict, its profile, and the [fuzz]
    table."""
    cfg, profile, tables = load_config_aside(path, profile, ("fuzz",), progress)
    cfg = config_from_dict(B.config_overlay(names), cfg)
    if cfg.cluster.mode != "controller":
        raise UserError("fuzz campaigns need controller mode (the 4.x legacy profiles have no controller)")
    return cfg.to_dict(), profile, tables.get("fuzz")


def campaign_options(args: argparse.Namespace) -> CampaignOptions:
    """The campaign the arguments ask for, every option and file validated (nothing started, nothing written)."""
    seed_start, runs = (None, None) if args.seeds is None else args.seeds
    if seed_start is not None and args.seed_start is not None:
        raise UserError("--seeds A-B names the first seed: give --seeds A-B, or --seeds N with --seed-start")
    seed_start = seed_start if seed_start is not None else SEED_START if args.seed_start is None else args.seed_start
    budget = DEFAULT_BUDGET if runs is None and args.budget is None else args.budget
    names = with_release(bug_list(args.bug, args.fix), args.rocketmq)
    config, profile, fuzz = _config(args.config, args.profile, names, not args.no_progress)
    if args.steps is not None:
        fuzz = dict(fuzz or {}, steps=args.steps)
    try:
        return options_from(args.out, config, fuzz, profile=profile, bugs=names, disabled=precursors_off(names),
                            guided=args.mode != "unguided", compare=args.mode == "compare",
                            seed_start=seed_start, budget=budget, seeds=runs, shrink=not args.no_shrink,
                            conform=not args.no_conform, rocketmq=args.rocketmq)
    except ValueError as exc:
        raise UserError(f"{args.config or 'config'}: {exc}") from None


def cmd_fuzz(args: argparse.Namespace, out: Console) -> int:
    opts = campaign_options(args)
    try:
        done = journaled_runs(opts)
    except CampaignError as exc:
        raise UserError(str(exc)) from None
    if args.junit:
        claim_file(args.junit, "--junit")
    claim_dir(args.out)
    ok, line = java_status()
    if not ok:
        raise UserError(f"Spark needs Java 17: {line}")
    err = Console(stderr=True)
    if done is not None and not args.json:
        err.print(f"resuming campaign in {escape(args.out)}: {done} runs done", highlight=False, soft_wrap=True)

    from pyspark.sql import SparkSession  # lazy: pyspark (490 MB, a JVM) loads only for a campaign

    if not args.json:
        err.print(f"starting Spark ({escape(args.master or 'embedded local[*]')}) ...", highlight=False)
    ours = SparkSession.getActiveSession() is None  # a session we start, we stop (an embedding caller keeps its own)
    with stop_signals():  # SIGTERM and SIGHUP stop the campaign as SIGINT does
        spark = None
        try:
            spark = spark_session(args.master)
            _note_idle_cores(err, spark, opts, args.json)
            return _campaign(args, out, spark, opts)
        except KeyboardInterrupt as exc:  # while Spark starts or the tables are written (the campaign's own: below)
            return _interrupted(opts, exc)
        finally:
            if ours and spark is not None:
                stop_session(spark)  # the JVM, its Python workers, the scratch directory: nothing is left


def _note_idle_cores(err: Console, spark: Any, opts: CampaignOptions, quiet: bool) -> None:
    """A batch is ``tasks_per_batch`` tasks whatever the cores (the plan depends on the seed only): say so when a
    session has more cores than the batches in flight can use."""
    cores, busy = parallelism(spark), LAG * opts.settings.tasks_per_batch
    if cores > busy and not quiet:
        err.print(f"note: {cores} cores, at most {busy} runs at a time: raise [fuzz] tasks_per_batch to use them "
                  "all (a different campaign)", highlight=False)


def _interrupted(opts: CampaignOptions, exc: KeyboardInterrupt) -> int:
    """Stopped by a signal: one line with the resume hint; 128 + the signal."""
    hold_signals()
    try:
        print(f"rmqha: interrupted ({signal_name(exc)}); the same command (same --out) resumes the campaign from "
              f"{opts.out} (and writes the tables)", file=sys.stderr, flush=True)
    except OSError:  # SIGHUP: the terminal may be gone
        pass
    return exit_status(exc)


def _campaign(args: argparse.Namespace, out: Console, spark: Any, opts: CampaignOptions) -> int:
    bar = FuzzProgress(opts.seeds * len(opts.arms) if opts.seeds else opts.budget or 0.0, quiet=args.json)

    def show(p: Any) -> None:
        bar.show(p, p.runs if opts.seeds else min(p.elapsed - camp.elapsed_before, opts.budget or 0))

    camp = Campaign(spark, opts, on_progress=show)
    try:
        with bar:
            camp.run()
    except CampaignError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt as exc:  # SIGINT (Spark's handler has cancelled the jobs), SIGTERM, SIGHUP: the
        hold_signals()  # campaign has cancelled its own; keep clear of the JVM now
        write_report(camp)
        return _interrupted(opts, exc)
    tables = write_tables(spark, camp)
    report = write_report(camp)
    summary = camp.summary() | {"tables": tables, "report": report}
    code = 1 if summary["unexplained"] else 0
    if args.junit:
        junit.write(args.junit, junit.fuzz_suite(summary, opts.profile, sorted(opts.bugs)))
    if args.json:
        print(json.dumps(summary, sort_keys=True))
        return code
    _print_summary(out, summary)
    return code


def _print_summary(out: Console, s: dict[str, Any]) -> None:
    out.print(fuzz_summary(s), highlight=False)  # fitted to the width (rmqha/cli/terminal.py)
