"""Conformance overhead: validation time over simulation time, on the same runs, in one process.

Three modes over the same seeds (safe profile, every finding's fix on, default random faults):

* ``checked``   -- the simulator with every invariant checked after every step (a campaign run with ``--no-conform``);
* ``conform``   -- the same, plus the conformance validator after every step, as ``rmqha conform`` re-runs a trace;
* ``campaign``  -- the same run validated as it goes, as ``rmqha simulate`` and ``rmqha fuzz`` now run it by default
  (``models.campaign.run``: the validator beside the checker, MODEL-CONFORM on a divergence).

The overhead is (conform - checked) / checked: the validator's own time per unit of simulation time; the campaign
ratio is campaign / checked: what conformance on by default costs a campaign of fixed seeds (a time-budgeted fuzz
campaign runs that many times fewer runs).

    python bench/bench_conform.py [--seeds 1-10] [--steps 5000] [--repeat 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.runner import header_for, run
from rmqha.models import campaign
from rmqha.models.conform import validate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.seeds.split("-"))
    cfg = default_config("safe")
    fixes = list(B.FIXES_ALL)
    best = {"checked": float("inf"), "conform": float("inf"), "campaign": float("inf")}
    steps = 0
    diverged = 0
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        steps = 0
        for seed in range(lo, hi + 1):
            steps += run(cfg, seed, a.steps, bugs=fixes, record=False).steps
        best["checked"] = min(best["checked"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        diverged = 0
        for seed in range(lo, hi + 1):
            diverged += not validate(header_for(cfg, seed, a.steps, fixes, None)).conforms
        best["conform"] = min(best["conform"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        for seed in range(lo, hi + 1):
            r = campaign.run(cfg, seed, a.steps, bugs=fixes, record=False)
            diverged += r.violation is not None and r.violation.invariant == campaign.MODEL_CONFORM
        best["campaign"] = min(best["campaign"], time.perf_counter() - t0)
    overhead = (best["conform"] - best["checked"]) / best["checked"]
    out = {"seeds": a.seeds, "steps": steps, "checkedSeconds": round(best["checked"], 3),
           "conformSeconds": round(best["conform"], 3), "overhead": round(overhead, 3),
           "campaignSeconds": round(best["campaign"], 3), "campaignRatio": round(best["campaign"] / best["checked"], 3),
           "stepsPerSecondConform": round(steps / best["conform"]), "diverged": diverged,
           "python": platform.python_version()}
    print(f"{steps} steps over seeds {a.seeds}: simulation+checks {out['checkedSeconds']} s, with conformance "
          f"{out['conformSeconds']} s; validation / simulation = {out['overhead']:.2f} "
          f"({out['stepsPerSecondConform']} steps/s validated; {diverged} diverged); validated as it runs (campaigns) "
          f"{out['campaignSeconds']} s: campaign / checked = {out['campaignRatio']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
