"""Conformance overhead: validation time over simulation time, on the same runs, in one process.

Three modes over the same seeds (safe profile, every finding's fix on, default random faults):

* ``checked``   -- the simulator with every invariant checked after every step (the baseline: what a campaign runs);
* ``conform``   -- the same, plus the conformance validator after every step (``rmqha conform``);

The overhead is (conform - checked) / checked: the validator's own time per unit of simulation time.

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
    best = {"checked": float("inf"), "conform": float("inf")}
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
    overhead = (best["conform"] - best["checked"]) / best["checked"]
    out = {"seeds": a.seeds, "steps": steps, "checkedSeconds": round(best["checked"], 3),
           "conformSeconds": round(best["conform"], 3), "overhead": round(overhead, 3),
           "stepsPerSecondConform": round(steps / best["conform"]), "diverged": diverged,
           "python": platform.python_version()}
    print(f"{steps} steps over seeds {a.seeds}: simulation+checks {out['checkedSeconds']} s, with conformance "
          f"{out['conformSeconds']} s; validation / simulation = {out['overhead']:.2f} "
          f"({out['stepsPerSecondConform']} steps/s validated; {diverged} diverged)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
