"""Simulator speed: simulated seconds per wall second and steps per second, single process.

A 3-broker set (controller, nameserver, producer, consumer) of the safe profile under the default random
faults, every finding's fix on so that runs last their full length. Four modes over the same seeds, in one
process, so that the figures compare like with like:

* ``bare``      -- no invariant checking, no trace: the cost of the core and the simulator alone (the baseline);
* ``checked``   -- every invariant after every step, no settle tail (``[sim] progress`` off);
* ``settled``   -- checked, then the settle tail and the progress invariants (``[sim] progress``: what new runs of
  ``rmqha simulate`` and ``rmqha fuzz`` do); it simulates more seconds per run, the tail's;
* ``traced``    -- checked, and the trace hashed but not kept (what ``--seeds`` triage re-runs do);
* ``recorded``  -- checked, and the trace kept in memory (what ``rmqha simulate --trace`` does).

Each mode is reported as simulated s / wall s, steps / s, and its cost relative to ``bare``.

``--profile`` adds another profile, run over the same seeds and modes in the same rounds, reported against the
safe profile's ``bare``: ``--profile fidelity`` prices the fidelity parts (docs/fidelity.md).

``--against REV`` adds a *before*: the same seeds, modes and profiles run on the kit as it was at the git revision
REV (exported to a temporary folder, imported from there in a child process), in the same rounds, reported
against this tree's safe ``bare`` (rows ``REV:mode``). A profile REV does not know is left out of its rows.

    python bench/bench_sim.py [--seeds 1-5] [--steps 20000] [--repeat 2] [--profile fidelity] [--against REV]
                              [--clock wall|cpu] [--json FILE]

``--clock cpu`` times each row by the CPU time of the process that runs it instead of the wall clock: on a machine
other work loads, wall times swing with that load, CPU times far less.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.world import Simulation

try:  # --against REV imports this file against an older kit, whose run config lived in impl/config.py
    from rmqha.impl.sim.config import default_config
except ImportError:  # pragma: no cover - revisions before issue 17
    from rmqha.impl.config import default_config  # type: ignore[attr-defined,no-redef]  # the old home


class _Coverage:
    counts: dict[str, int] = {}  # noqa: RUF012 - never written: nothing is checked

    def hit(self, label: str, n: int = 1) -> None:
        return None


class _NoChecks:
    """Stands in for the checker: sees every step, checks nothing."""

    def __init__(self, world: Simulation) -> None:
        self.coverage = _Coverage()

    def after_step(self, observations: list[Any]) -> None:
        return None


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = CLOCKS["wall"]


def _one(mode: str, seed: int, steps: int, profile: str = "safe") -> tuple[float, int, int]:
    cfg = default_config(profile)
    if mode == "settled":  # a kit before [sim] progress has no such setting: the row is then ``checked`` again
        cfg.sim.progress = True
    bugs = sorted(B.FIXES_ALL)
    t0 = _clock()
    if mode == "bare":
        sim = Simulation(cfg, seed, bugs=B.check_names(bugs), max_steps=steps, checker_factory=_NoChecks)
        sim.run()
        sim_ms, n = sim.now, sim.step
    else:
        r = run(cfg, seed, steps, bugs=bugs, record=mode not in ("checked", "settled"), keep=mode == "recorded")
        if r.violation is not None:
            raise SystemExit(f"seed {seed}: {r.violation.invariant} at step {r.steps}; pick other seeds")
        sim_ms, n = r.sim_time, r.steps
    return _clock() - t0, sim_ms, n


def _sum(mode: str, seeds: list[int], steps: int, profile: str) -> tuple[float, int, int]:
    wall = sim_ms = n = 0
    for s in seeds:
        w, ms, k = _one(mode, s, steps, profile)
        wall, sim_ms, n = wall + w, sim_ms + ms, n + k
    return wall, sim_ms, n


def _export(rev: str, into: Path) -> Path:
    """The kit at ``rev`` laid out as an importable ``rmqha`` package under ``into`` (its pyproject's package-dir)."""
    root = Path(__file__).resolve().parent.parent
    try:
        blob = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", rev], capture_output=True,
                              check=True).stdout
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"--against {rev}: {e.stderr.decode().strip() or 'git archive failed'}") from None
    src = into / "src"
    src.mkdir()
    tar_path = into / "rev.tar"
    tar_path.write_bytes(blob)
    with tarfile.open(tar_path) as tar:
        tar.extractall(src, filter="data")
    dirs = tomllib.loads((src / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    lib = into / "lib"
    for pkg, folder in sorted(dirs.items(), key=lambda kv: kv[0].count(".")):
        dest = lib.joinpath(*pkg.split("."))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(src / folder), dest)
    return lib


def _clock_name() -> str:
    return next(name for name, fn in CLOCKS.items() if fn is _clock)


def _against(lib: Path, mode: str, seeds: list[int], steps: int, profile: str) -> tuple[float, int, int] | None:
    """One row run on the exported revision, in a child process that imports only it."""
    env = {**os.environ, "PYTHONPATH": str(lib)}
    arg = f"{mode},{profile},{steps},{_clock_name()},{','.join(map(str, seeds))}"
    p = subprocess.run([sys.executable, "-S", __file__, "--worker", arg], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        if "unknown profile" in p.stderr:
            return None
        raise SystemExit(f"--against: the worker failed: {p.stderr.strip().splitlines()[-1:]}")
    wall, sim_ms, n = json.loads(p.stdout)
    return wall, sim_ms, n


def _worker(arg: str) -> int:
    global _clock
    mode, profile, steps, clock, *seeds = arg.split(",")
    _clock = CLOCKS[clock]
    import rmqha.impl  # the revision under test (PYTHONPATH)

    assert str(Path(rmqha.impl.__file__).resolve()).startswith(os.environ["PYTHONPATH"]), rmqha.impl.__file__
    try:
        print(json.dumps(_sum(mode, [int(s) for s in seeds], int(steps), profile)))
    except Exception as e:  # reported to the parent in one line
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        return _worker(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=2, help="rounds over all modes; the best round counts")
    ap.add_argument("--profile", action="append", default=[], help="another profile beside safe (repeatable)")
    ap.add_argument("--against", metavar="REV", help="also run the kit as it was at this git revision (before/after)")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="wall time (default), or this process's CPU time: steadier on a machine others load")
    ap.add_argument("--json")
    args = ap.parse_args()
    global _clock
    _clock = CLOCKS[args.clock]
    a, _, b = args.seeds.partition("-")
    seeds = list(range(int(a), int(b or a) + 1))
    modes = ("bare", "checked", "settled", "traced", "recorded")
    profiles = ["safe", *(p for p in args.profile if p != "safe")]
    rows = [(None, p, m) for p in profiles for m in modes]
    tmp = tempfile.TemporaryDirectory(prefix="bench-against-") if args.against else None
    lib = _export(args.against, Path(tmp.name)) if tmp is not None else None
    if lib is not None:
        rows += [(args.against, p, m) for p in profiles for m in modes]
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeat):
        for rev, profile, mode in rows:  # interleaved, so that drift in machine load hits every mode alike
            got = _sum(mode, seeds, args.steps, profile) if rev is None else \
                _against(lib, mode, seeds, args.steps, profile)  # type: ignore[arg-type]  # lib is set with a rev
            if got is None:
                continue
            wall, sim_ms, n = got
            row = {"wall_s": wall, "sim_s": sim_ms / 1000, "steps": n, "x_real_time": sim_ms / 1000 / wall,
                   "steps_per_s": n / wall}
            label = mode if profile == "safe" else f"{profile}/{mode}"
            label = label if rev is None else f"{rev}:{label}"
            if label not in best or row["wall_s"] < best[label]["wall_s"]:
                best[label] = row
    if tmp is not None:
        tmp.cleanup()
    base = best["bare"]
    print(f"{len(seeds)} seeds x {args.steps} steps, random faults, python {platform.python_version()}; "
          f"safe profile unless named; {args.clock} clock")
    width = max(20, *(len(k) + 2 for k in best))
    print(f"{'mode':<{width}}{'sim s / wall s':>16}{'steps / s':>12}{'wall vs bare':>14}{'wall/sim s vs bare':>20}")
    for label, r in best.items():
        r["vs_bare"] = r["wall_s"] / base["wall_s"]
        # per simulated second: profiles simulate different spans in the same steps
        r["per_sim_s_vs_bare"] = base["x_real_time"] / r["x_real_time"]
        print(f"{label:<{width}}{r['x_real_time']:>15.0f}x{r['steps_per_s']:>12.0f}{r['vs_bare']:>13.2f}x"
              f"{r['per_sim_s_vs_bare']:>19.2f}x")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"seeds": seeds, "steps": args.steps, "python": platform.python_version(), "modes": best,
                       "against": args.against, "clock": args.clock},
                      fh, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
