"""Fuzz campaigns on Spark: scaling against one process, time to detect each bug switch, and shrinking.

Three measurements, one Spark session (its ~5-15 s start-up is not counted anywhere):

* **Scaling**: the same fresh seeds (safe profile, default swarm mix, every fix on, checked and probed exactly as a
  campaign runs them) once in this process, one after the other, and once as an unguided campaign on ``local[2]``
  (journal, merges and all), after a small warm-up campaign (the JVM spends its first ~20 s compiling). Seeds/s,
  simulated events (steps)/s, and the efficiency: the campaign's throughput over ``2 x`` the single process's.
* **Time to detect**: for each bug switch and expected-loss configuration, a guided campaign with the default
  settings and every fix on (but a fix that closes the switch's own filter: ``confirm-counts-new-connection``
  without ``fix-confirm-waits-first-ack``) that stops at the first violation of the switch's invariant; the time
  from the campaign's start to the merge of the batch that showed it. Median over ``--campaigns`` campaign seeds.
* **Shrink ratio**: the first campaign of each switch also shrinks what it found (default ``shrink_budget``): the
  shrunk trace's length over the original's, in steps (trace lines) and in fault actions.

    python bench/bench_fuzz.py [--seeds 16] [--campaigns 3] [--budget 60] [--only NAME ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.scenarios import precursors_off
from rmqha.spark_fuzz.campaign import Campaign, options_from
from rmqha.spark_fuzz.settings import FuzzSettings
from rmqha.spark_fuzz.task import run_input


def _opts(out: str, bugs: list[str], **kw: Any):
    cfg = config_from_dict(B.config_overlay(bugs), default_config("safe"))
    return options_from(out, cfg.to_dict(), kw.pop("fuzz", None), bugs=sorted(bugs), disabled=precursors_off(bugs),
                        **kw)


def scaling(spark: Any, seeds: int, steps: int, tmp: str) -> dict[str, Any]:
    bugs = sorted(B.FIXES_ALL)
    opts = _opts(f"{tmp}/scale", bugs, fuzz={"steps": steps}, guided=False, seeds=seeds, shrink=False)
    ctx = Campaign(spark, opts)._ctx
    t0 = time.perf_counter()
    single = [run_input(ctx, {"id": f"u{s}", "arm": "unguided", "seed": s}) for s in range(1, seeds + 1)]
    one = time.perf_counter() - t0
    warm = _opts(f"{tmp}/warm", bugs, fuzz={"steps": 2000}, guided=False, seeds=8, shrink=False)
    Campaign(spark, warm).run()  # the JVM's start-up (JIT, class loading) settles; Python workers are up
    t0 = time.perf_counter()
    camp = Campaign(spark, opts).run()
    par = time.perf_counter() - t0
    n_steps = sum(r["steps"] for r in single)
    assert sum(r["steps"] for r in camp.runs) == n_steps, "the campaign ran other runs than the single process"
    p = spark.sparkContext.defaultParallelism
    busy = sum(r["wall"] for r in camp.runs)  # seconds the workers spent inside runs
    return {"seeds": seeds, "steps": n_steps, "single_s": one, "spark_s": par, "parallelism": p,
            "single_seeds_per_s": seeds / one, "spark_seeds_per_s": seeds / par,
            "single_steps_per_s": n_steps / one, "spark_steps_per_s": n_steps / par, "efficiency": one / par / p,
            # efficiency = (one / busy) x (busy / (p x par)): how much slower a run is with p of them side by side
            # (cores sharing caches, clocks and the driver's JVM) times how full Spark kept the workers
            "run_speed": one / busy, "occupancy": busy / (p * par)}


def detect(spark: Any, name: str, campaigns: int, budget: float, tmp: str) -> dict[str, Any]:
    inv = B.BUGS[name].invariant
    fixes = list(B.fixes_beside(name))
    times: list[float | None] = []
    shrink: dict[str, Any] = {}
    for k in range(campaigns):
        out = f"{tmp}/{name}-{k}"
        shutil.rmtree(out, ignore_errors=True)
        opts = _opts(out, [name, *fixes], seed_start=1 + 1000 * k, budget=budget, stop_on=inv, shrink=k == 0,
                     fuzz={"shrinks_per_bucket": 1})
        c = Campaign(spark, opts).run()
        times.append(c.detected.get(inv))
        for f in c.findings.values():
            if f["invariant"] == inv:
                shrink = {"steps": (f["shrunkSteps"], f["originalSteps"]), "faults": (f["shrunkActions"],
                                                                                       f["originalActions"]),
                          "runs": f["runs"], "replays": f["replays"]}
    found = [t for t in times if t is not None]
    median = statistics.median([t if t is not None else float("inf") for t in times])
    return {"invariant": inv, "times": times, "median": median, "found": len(found), "shrink": shrink}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=16, help="seeds for the scaling measurement")
    ap.add_argument("--steps", type=int, default=FuzzSettings().steps)
    ap.add_argument("--campaigns", type=int, default=3, help="campaign seeds per bug (median)")
    ap.add_argument("--budget", type=float, default=60.0, help="give up on a bug after this many seconds")
    ap.add_argument("--only", nargs="*", help="only these bugs (and no scaling run)")
    ap.add_argument("--no-scaling", action="store_true", help="skip the scaling measurement")
    ap.add_argument("--no-detect", action="store_true", help="only the scaling measurement")
    ap.add_argument("--json")
    args = ap.parse_args()
    from rmqha.spark_fuzz.session import spark_session

    spark = spark_session("local[2]")
    spark.sparkContext.parallelize([0, 1], 2).map(lambda x: x).collect()  # Python workers up before any timing
    tmp = tempfile.mkdtemp(prefix="bench-fuzz-")
    result: dict[str, Any] = {"python": platform.python_version()}
    if not args.only and not args.no_scaling:
        s = scaling(spark, args.seeds, args.steps, tmp)
        result["scaling"] = s
        print(f"scaling: {s['seeds']} seeds x {args.steps} steps, safe profile, default swarm, every fix on")
        print(f"{'mode':<18}{'seeds / s':>11}{'steps / s':>12}{'wall s':>9}")
        print(f"{'single process':<18}{s['single_seeds_per_s']:>11.2f}{s['single_steps_per_s']:>12.0f}"
              f"{s['single_s']:>9.1f}")
        print(f"{'local[' + str(s['parallelism']) + '] campaign':<18}{s['spark_seeds_per_s']:>11.2f}"
              f"{s['spark_steps_per_s']:>12.0f}{s['spark_s']:>9.1f}")
        print(f"scaling efficiency: {s['efficiency']:.2f} = run speed side by side {s['run_speed']:.2f} x worker "
              f"occupancy {s['occupancy']:.2f}\n")
        sys.stdout.flush()
    names = [] if args.no_detect else args.only or sorted(n for n, b in B.BUGS.items()
                                                          if b.kind in ("switch", "config"))
    rows = {}
    if names:
        print(f"time to detect (guided, default swarm, stop at the invariant; median of {args.campaigns}, "
              f"give up at {args.budget:g} s)")
        print(f"{'bug':<32}{'invariant':<22}{'median s':>9}{'found':>7}  {'each s':<22}{'shrunk steps':>16}"
              f"{'shrunk faults':>15}")
    for name in names:
        r = detect(spark, name, args.campaigns, args.budget, tmp)
        rows[name] = r
        each = " ".join("-" if t is None else f"{t:.1f}" for t in r["times"])
        sh = r["shrink"]
        steps = f"{sh['steps'][0]}/{sh['steps'][1]}" if sh else "-"
        faults = f"{sh['faults'][0]}/{sh['faults'][1]}" if sh else "-"
        med = f"{r['median']:.1f}" if r["median"] != float("inf") else f">{args.budget:g}"
        print(f"{name:<32}{r['invariant']:<22}{med:>9}{r['found']:>4}/{args.campaigns:<2}  {each:<22}{steps:>16}"
              f"{faults:>15}")
        sys.stdout.flush()
    shrinks = [r["shrink"] for r in rows.values() if r["shrink"]]
    if shrinks:
        step_ratio = statistics.median(a / b for (a, b) in (s["steps"] for s in shrinks))
        fault_ratio = statistics.median(a / max(b, 1) for (a, b) in (s["faults"] for s in shrinks))
        print(f"shrink ratio (median over {len(shrinks)} bugs): trace length {step_ratio:.2f}, "
              f"fault actions {fault_ratio:.2f}")
        result["shrink_ratio"] = {"steps": step_ratio, "faults": fault_ratio}
    result["detect"] = rows
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, sort_keys=True, default=str)
    shutil.rmtree(tmp, ignore_errors=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
