"""The kit's quick campaign, as the test of one mutant: stops at the first failing check and says which.

``bench/mutation.py`` runs it once per mutant, in a fresh process, against a copy of the package whose one file
holds the mutation (``--tree``: a folder laid out as the installed package, ``TREE/rmqha/impl/...``, plus
``TREE/property_tests``). It imports the kit from that copy, never from the editable install, and checks that it
did. Run on its own (no ``--tree``) it tests the kit as installed: the unmutated baseline.

The campaign is what a user runs, cut short, in this order (each stage in seed order; the first failure ends it):

===================  ===========================================================================================
stage                the same as
===================  ===========================================================================================
``safe:1-10``        ``rmqha simulate --seeds 1-10 --fix all`` (20 000 steps each, every invariant after every step,
                     each run validated against the model as it runs and ended by its settle tail and the progress
                     checks, as ``simulate`` does by default)
``guards:1-4``       ``rmqha simulate --profile guards --seeds 1-4 --fix all`` (the TCP-faithful faults at the guards,
                     the broker's long steps interleaved)
``hypothesis:150``   the safe Hypothesis suite (``property_tests``, every fix): 150 derandomized examples of up to
                     30 rules, generate and target phases (Hypothesis' guided search on the suite's coverage
                     labels), no shrinking
``fidelity:1-4``     ``rmqha simulate --profile fidelity --seeds 1-4 --fix all``
``storage:1-2``      ``rmqha simulate --profile storage --seeds 1-2 --fix all`` (small mapped files, large messages,
                     torn commit-log writes: recovery over a torn record, catch-up batches cut inside fillers)
``jraft:1``          ``rmqha simulate --profile jraft --seed 1 --fix all``
``jraft-ops:1``      ``rmqha simulate --profile jraft-ops --seed 1 --fix all`` (JRaft snapshots every 5 s, a
                     controller follower down past two of them, cleanBrokerData of a running and of a dead broker, a
                     broker restarted on another port)
``ctl:1-8``          ``rmqha simulate --profile ctl --seeds 1-8 --fix all`` (a 3-node DLedger group under the
                     controller faults, reads logged: how it elects, keeps its leader and applies, LIVE-CTL-*)
``legacy-sync:1``    ``rmqha simulate --profile legacy-sync --seed 1 --fix all`` (the 4.x master/slave broker)
``legacy-async:1``   ``rmqha simulate --profile legacy-async --seed 1 --fix all``
``adversarial:1-2``  ``rmqha simulate --profile adversarial --seeds 1-2 --fix all`` (the guards profile with the faults
                     beyond TCP: HA writes duplicated, reordered, replayed and with a corrupted frame state, controller
                     requests replayed)
``fresh:6``          ``rmqha simulate --profile fresh --seed 6 --fix all`` (a quiet first 30 s: the swarm's first
                     failover finds every log empty, F-EPOCH-EQ-SPLICE's shape; seed 6 is the first seed of the
                     profile whose failover also leaves a slave on the replaced epoch when it next connects)
``new-replica:1``    ``rmqha simulate --profile new-replica --seed 1 --fix all`` (logs past 2^32, and a replica added
                     20 s in on a new store at offset 0: its first transfer starts at its master's min offset)
``last-file:1``      ``rmqha simulate --profile last-file --seed 1 --fix all`` (a replica added 20 s in on a new
                     store with syncFromLastFile, 8 KiB mapped files: its first transfer starts at the start of its
                     master's last file, past the master's first offset)
``topic-sync:1``     the fidelity profile with every fix but ``fix-sync-deletes-only-missing`` (``WITHOUT_FIX``), as
                     RocketMQ 5.3.3 runs ``SlaveSynchronize.syncTopicConfig``: the delete loop over ``[workload]
                     other_topics`` runs at every slave's topic sync. That finding's known violation
                     (QUEUE-ACKED-READABLE, the invariant its fix names in ``impl/bugs.py``) is not checked there;
                     every other check is, and none of them fails on the unfixed loop (a slave's sync loop of 2 000
                     topics runs about 6 s, within LIVE-TASKS' allowance; 40 seeds clean)
===================  ===========================================================================================

``topic-failover:1-5`` (``rmqha simulate --profile topic-failover --seeds 1-5 --fix all``: fidelity, with topic growth
racing a failover, the fault expand-then-crash-master) is a stage too, left out by default for its cost (about 6 CPU
seconds): the fidelity stage reaches a promotion that meets a wider topic than its log already.

``conform:1-5`` (``rmqha conform --seeds 1-5 --fix all``, 5 000 steps each, every step against the model) is a stage
too; the default campaign leaves it out since the simulate stages validate their runs as they go (issue 21 item 5).
``--no-progress`` and ``--no-conform`` run the simulate stages as the kit did before those defaults (the campaign
of the score before).

``--cpu-limit S`` ends the campaign after S CPU seconds with outcome ``timeout`` (a mutant that loops).

It prints one JSON line and exits 0 (every stage clean: the mutant survived), 1 (killed: ``check`` is the
invariant id, ``conform:<model action>`` for a divergence from the model, or ``crash:<exception>`` when the
kit's code raised), or 3 (incompetent: the mutated package does not import). ``detect_s`` is the wall time from
the campaign's start (after the imports) to the failing check, ``detect_steps`` the simulator steps run until
then (Hypothesis examples count their steps too).

    python bench/mutation_campaign.py [--tree DIR] [--stage safe:1-10 --stage conform:1-5 ...] [--steps 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_STAGES = (
    "safe:1-10",
    "guards:1-4",
    "hypothesis:150",
    "fidelity:1-4",
    "storage:1-2",
    "jraft:1",
    "jraft-ops:1",
    "ctl:1-8",
    "legacy-sync:1",
    "legacy-async:1",
    "topic-sync:1",
    "adversarial:1-2",
    "fresh:6",
    "new-replica:1",
    "last-file:1",
)
SIM_PROFILES = ("safe", "guards", "adversarial", "fidelity", "storage", "jraft", "jraft-ops", "ctl", "legacy-sync",
                "legacy-async", "defaults", "power-loss", "large-logs", "fresh", "new-replica",
                "last-file", "topic-failover")
WITHOUT_FIX: dict[str, tuple[str, str]] = {"topic-sync": ("fidelity", "fix-sync-deletes-only-missing")}
"""Stages that run a profile with one finding's fix off (RocketMQ's own behaviour there), so that the code only the
unfixed path runs is tested too; the invariant the fix names (its finding's known violation) is disabled in them."""
SIM_STEPS = 20_000
CONFORM_STEPS = 5_000
HYPOTHESIS_STEPS = 30
EXIT_CLEAN, EXIT_KILLED, EXIT_INCOMPETENT = 0, 1, 3


def parse_stage(text: str) -> tuple[str, list[int]]:
    """``safe:1-10`` -> ("safe", [1..10]); ``hypothesis:150`` -> ("hypothesis", [150])."""
    name, _, arg = text.partition(":")
    if name not in (*SIM_PROFILES, *WITHOUT_FIX, "conform", "hypothesis") or not arg:
        raise SystemExit(f"mutation_campaign: bad stage {text!r} (e.g. safe:1-10, conform:1-5, hypothesis:150)")
    lo, _, hi = arg.partition("-")
    if name == "hypothesis":
        return name, [int(arg)]
    return name, list(range(int(lo), int(hi or lo) + 1))


def _where(exc: BaseException, tree: Path | None) -> str:
    """The innermost frame of the kit's own code in ``exc``'s traceback, as repository path:line."""
    frames = traceback.extract_tb(exc.__traceback__)
    for fr in reversed(frames):
        p = Path(fr.filename)
        if "rmqha" in p.parts or "property_tests" in p.parts:
            parts = p.parts
            i = max(i for i, x in enumerate(parts) if x in ("rmqha", "property_tests"))
            rel = "/".join(parts[i:])
            rel = rel.removeprefix("rmqha/")  # rmqha/impl/... is the repository's impl/...
            return f"{rel}:{fr.lineno}"
    return "?"


def _repo_path(filename: str) -> str:
    """``.../rmqha/impl/ha/service.py`` or ``.../impl/ha/service.py`` -> ``impl/ha/service.py``."""
    parts = Path(filename).parts
    i = max(i for i, x in enumerate(parts) if x == "impl")
    return "/".join(parts[i:])


class Campaign:
    def __init__(self, tree: Path | None, progress: bool = True, conform_runs: bool = True) -> None:
        self.tree = tree
        self.progress, self.conform_runs = progress, conform_runs  # as rmqha simulate: on unless --no-*
        self.t0 = 0.0
        self.steps = 0  # simulator steps run so far, over every stage
        self.stage_s: dict[str, float] = {}  # wall seconds per stage run

    def result(self, stage: str, seed: int | None, check: str, message: str, step: int | None) -> dict[str, Any]:
        return {"outcome": "killed", "stage": stage, "seed": seed, "check": check, "message": message[:400],
                "detect_s": round(time.perf_counter() - self.t0, 3), "detect_steps": self.steps + (step or 0)}

    def crash(self, stage: str, seed: int | None, exc: BaseException) -> dict[str, Any]:
        return self.result(stage, seed, f"crash:{type(exc).__name__}",
                           f"{type(exc).__name__} at {_where(exc, self.tree)}: {exc}", None)

    # ----------------------------------------------------------------------------------------------- stages
    def simulate(self, stage: str, seeds: list[int], steps: int) -> dict[str, Any] | None:
        from rmqha.impl.bugs import BUGS
        from rmqha.models.campaign import run

        from rmqha.cli.common import apply_configs, bug_list
        from rmqha.cli.files import load_config

        names = bug_list([], ["all"])
        profile, disabled = stage, []
        if stage in WITHOUT_FIX:
            profile, fix = WITHOUT_FIX[stage]
            names = [n for n in names if n != fix]
            disabled = [BUGS[fix].invariant]
        for seed in seeds:
            cfg, prof = load_config(None, profile, progress=self.progress)
            apply_configs(cfg, names)
            try:
                r = run(cfg, seed, steps, bugs=names, profile=prof, record=False, conform=self.conform_runs,
                        disabled=disabled)
            except Exception as exc:
                return self.crash(stage, seed, exc)
            if r.violation is not None:
                v = r.violation
                return self.result(stage, seed, v.invariant, v.message, r.steps)
            self.steps += r.steps
        return None

    def conform(self, seeds: list[int]) -> dict[str, Any] | None:
        from rmqha.impl.sim.config import default_config
        from rmqha.impl.sim.runner import header_for
        from rmqha.models.conform import validate

        from rmqha.cli.common import apply_configs, bug_list

        names = bug_list([], ["all"])
        for seed in seeds:
            cfg = default_config("safe")
            apply_configs(cfg, names)
            try:
                rep = validate(header_for(cfg, seed, CONFORM_STEPS, names, None, None, "safe"))
            except Exception as exc:
                return self.crash("conform", seed, exc)
            if rep.divergence is not None:
                d = rep.divergence
                return self.result("conform", seed, f"conform:{d.action}", f"guard {d.guard}: {d.detail}", d.step)
            if rep.violation is not None:
                return self.result("conform", seed, rep.violation, "violation during conformance", rep.steps)
            self.steps += rep.steps
        return None

    def hypothesis(self, examples: int) -> dict[str, Any] | None:
        from hypothesis import Phase, settings
        from hypothesis.stateful import run_state_machine_as_test

        from property_tests import profiles
        from property_tests.cluster_machine import InvariantViolated, machine_for
        from property_tests.suites import SAFE

        profiles.pin_constant_pool()
        machine = machine_for(SAFE)
        machine.reset_counters()
        cfg = settings(max_examples=examples, stateful_step_count=HYPOTHESIS_STEPS, derandomize=True,
                       database=None, deadline=None, print_blob=False, report_multiple_bugs=False,
                       suppress_health_check=profiles.SUPPRESS, phases=(Phase.explicit, Phase.generate, Phase.target))
        steps: list[int] = []
        original_teardown = machine.teardown

        def teardown(self: Any) -> None:  # count each example's simulator steps
            if self.sim is not None:
                steps.append(self.sim.step)
            original_teardown(self)

        machine.teardown = teardown
        try:
            run_state_machine_as_test(machine, settings=cfg)
        except InvariantViolated as exc:
            self.steps += sum(steps)
            return self.result("hypothesis", machine.examples, exc.invariant, str(exc), None)
        except Exception as exc:
            self.steps += sum(steps)
            return self.crash("hypothesis", machine.examples, exc)
        finally:
            machine.teardown = original_teardown
        self.steps += sum(steps)
        return None

    def run(self, stages: list[str], steps: int) -> dict[str, Any]:
        self.t0 = time.perf_counter()
        for text in stages:
            name, arg = parse_stage(text)
            found: Callable[[], dict[str, Any] | None]
            if name == "conform":
                found = lambda a=arg: self.conform(a)  # noqa: E731
            elif name == "hypothesis":
                found = lambda a=arg: self.hypothesis(a[0])  # noqa: E731
            else:
                found = lambda n=name, a=arg: self.simulate(n, a, steps)  # noqa: E731
            t = time.perf_counter()
            res = found()
            self.stage_s[text] = round(time.perf_counter() - t, 3)
            if res is not None:
                return res
        return {"outcome": "survived", "stage": None, "seed": None, "check": None, "message": "",
                "detect_s": None, "detect_steps": self.steps}


def trace_lines(root: Path) -> dict[str, set[int]]:
    """Record the lines executed in the core's four folders under ``root`` (``root/impl/...`` or
    ``root/rmqha/impl/...``) from now on, by ``sys.settrace``; returns the (filled as it runs) table."""
    wanted = tuple(str(p) + os.sep for base in (root / "impl", root / "rmqha" / "impl")
                   for p in (base / "controller", base / "ha", base / "store", base / "broker"))
    hits: dict[str, set[int]] = {}
    seen: dict[str, bool] = {}

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            hits[frame.f_code.co_filename].add(frame.f_lineno)
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        fn = frame.f_code.co_filename
        ok = seen.get(fn)
        if ok is None:
            ok = seen[fn] = str(Path(fn).resolve()).startswith(wanted)
            if ok:
                hits.setdefault(fn, set())
        if not ok:
            return None
        hits[fn].add(frame.f_lineno)
        return local

    sys.settrace(tracer)
    return hits


def _import_kit(tree: Path | None) -> str:
    """Import the kit (from ``tree`` when given, checked); the folder ``rmqha.impl`` was imported from."""
    sys.path.insert(0, str(tree if tree is not None else Path(__file__).resolve().parent.parent))
    import rmqha.impl.sim.runner  # the whole core, the simulator and the checker
    import rmqha.models.conform

    import property_tests.cluster_machine  # noqa: F401

    where = str(Path(rmqha.impl.__file__).resolve().parent)
    if tree is not None and not where.startswith(str(tree.resolve())):
        raise SystemExit(f"mutation_campaign: rmqha.impl came from {where}, not from the tree {tree}")
    return where


def _limit_cpu(seconds: int, scratch: str) -> None:
    """Past ``seconds`` of CPU time the kernel sends SIGXCPU: report a timeout and leave at once."""

    def expired(signum: int, frame: Any) -> None:
        shutil.rmtree(scratch, ignore_errors=True)
        os.write(1, (json.dumps({"outcome": "timeout", "check": "timeout", "stage": None, "seed": None,
                                 "message": f"more than {seconds} CPU seconds", "detect_s": None,
                                 "detect_steps": None}) + "\n").encode())
        os._exit(EXIT_KILLED)

    signal.signal(signal.SIGXCPU, expired)
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 30))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--tree", type=Path, help="import the kit from this copy (TREE/rmqha, TREE/property_tests)")
    ap.add_argument("--stage", action="append", default=[], help=f"default: {' '.join(DEFAULT_STAGES)}")
    ap.add_argument("--steps", type=int, default=SIM_STEPS, help="simulator steps per simulate run")
    ap.add_argument("--cpu-limit", type=int, help="stop with outcome 'timeout' after this many CPU seconds "
                    "(RLIMIT_CPU: the machine's load does not count, a mutant that loops does)")
    ap.add_argument("--no-progress", action="store_true", help="simulate stages without the settle tail and LIVE-*")
    ap.add_argument("--no-conform", action="store_true", help="simulate stages without the model's validation")
    ap.add_argument("--lines", type=Path, help="also write the lines of impl/{controller,ha,store,broker} the "
                    "campaign executed to this JSON file (slow: sys.settrace)")
    args = ap.parse_args(argv)
    stages = args.stage or list(DEFAULT_STAGES)
    if args.tree is not None:
        args.tree = args.tree.resolve()  # before the chdir below
    if args.lines is not None:
        args.lines = args.lines.resolve()
    for s in stages:
        parse_stage(s)
    # A failing Hypothesis example writes its trace; keep that (and Hypothesis' own folder) out of the tree.
    scratch = tempfile.mkdtemp(prefix="rmqha-mutant-")
    if args.cpu_limit:
        _limit_cpu(args.cpu_limit, scratch)
    os.environ.setdefault("RMQHA_TRACE_DIR", scratch)
    os.chdir(scratch)
    try:
        return _main(args, stages)
    finally:
        os.chdir(Path(__file__).resolve().parent)
        shutil.rmtree(scratch, ignore_errors=True)


def _main(args: argparse.Namespace, stages: list[str]) -> int:
    t0 = time.perf_counter()
    try:
        where = _import_kit(args.tree)
    except SystemExit:
        raise
    except BaseException as exc:  # a mutant that breaks the import (SyntaxError, TypeError in a decorator...)
        print(json.dumps({"outcome": "incompetent", "check": f"import:{type(exc).__name__}",
                          "message": f"{type(exc).__name__} at {_where(exc, args.tree)}: {exc}"[:400],
                          "stage": None, "seed": None, "detect_s": None, "detect_steps": 0}), flush=True)
        return EXIT_INCOMPETENT
    import_s = time.perf_counter() - t0
    camp = Campaign(args.tree, progress=not args.no_progress, conform_runs=not args.no_conform)
    root = args.tree or Path(__file__).resolve().parent.parent
    hits = trace_lines(root.resolve()) if args.lines is not None else None
    try:
        res = camp.run(stages, args.steps)
    finally:
        sys.settrace(None)
    if hits is not None:
        args.lines.write_text(json.dumps({_repo_path(fn): sorted(v) for fn, v in sorted(hits.items())}))
    res.update(import_s=round(import_s, 3), total_s=round(time.perf_counter() - t0, 3), kit=where,
               cpu_s=round(time.process_time(), 3), stages=camp.stage_s)
    print(json.dumps(res, sort_keys=True), flush=True)
    return EXIT_KILLED if res["outcome"] == "killed" else EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
