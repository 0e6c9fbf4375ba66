"""Simulator speed: simulated seconds per wall second and steps per second, single process.

A 3-broker set (controller, nameserver, producer, consumer) of the safe profile under the default random
faults, every finding's fix on so that runs last their full length. Four modes over the same seeds, in one
process, so that the figures compare like with like:

* ``bare``      -- no invariant checking, no trace: the cost of the core and the simulator alone (the baseline);
* ``checked``   -- every invariant after every step (what a fuzz campaign runs);
* ``traced``    -- checked, and the trace hashed but not kept (what ``--seeds`` triage re-runs do);
* ``recorded``  -- checked, and the trace kept in memory (what ``rmqha simulate --trace`` does).

Each mode is reported as simulated s / wall s, steps / s, and its cost relative to ``bare``.

    python bench/bench_sim.py [--seeds 1-5] [--steps 20000] [--repeat 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.catalogue import Coverage
from rmqha.impl.config import default_config
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.world import Simulation


class _NoChecks:
    """Stands in for the checker: sees every step, checks nothing."""

    def __init__(self, world: Simulation) -> None:
        self.coverage = Coverage()

    def after_step(self, observations: list[dict[str, Any]]) -> None:
        return None


def _one(mode: str, seed: int, steps: int) -> tuple[float, int, int]:
    cfg = default_config("safe")
    bugs = sorted(B.FIXES_ALL)
    t0 = time.perf_counter()
    if mode == "bare":
        sim = Simulation(cfg, seed, bugs=B.check_names(bugs), max_steps=steps, checker_factory=_NoChecks)
        sim.run()
        sim_ms, n = sim.now, sim.step
    else:
        r = run(cfg, seed, steps, bugs=bugs, record=mode != "checked", keep=mode == "recorded")
        if r.violation is not None:
            raise SystemExit(f"seed {seed}: {r.violation.invariant} at step {r.steps}; pick other seeds")
        sim_ms, n = r.sim_time, r.steps
    return time.perf_counter() - t0, sim_ms, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=2, help="rounds over all modes; the best round counts")
    ap.add_argument("--json")
    args = ap.parse_args()
    a, _, b = args.seeds.partition("-")
    seeds = list(range(int(a), int(b or a) + 1))
    modes = ("bare", "checked", "traced", "recorded")
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeat):
        for mode in modes:  # interleaved, so that drift in machine load hits every mode alike
            wall = sim_ms = n = 0
            for s in seeds:
                w, ms, k = _one(mode, s, args.steps)
                wall, sim_ms, n = wall + w, sim_ms + ms, n + k
            row = {"wall_s": wall, "sim_s": sim_ms / 1000, "steps": n, "x_real_time": sim_ms / 1000 / wall,
                   "steps_per_s": n / wall}
            if mode not in best or row["wall_s"] < best[mode]["wall_s"]:
                best[mode] = row
    base = best["bare"]["wall_s"]
    print(f"{len(seeds)} seeds x {args.steps} steps, safe profile, random faults, python {platform.python_version()}")
    print(f"{'mode':<10}{'sim s / wall s':>16}{'steps / s':>12}{'wall vs bare':>14}")
    for mode in modes:
        r = best[mode]
        r["vs_bare"] = r["wall_s"] / base
        print(f"{mode:<10}{r['x_real_time']:>15.0f}x{r['steps_per_s']:>12.0f}{r['vs_bare']:>13.2f}x")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"seeds": seeds, "steps": args.steps, "python": platform.python_version(), "modes": best},
                      fh, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
