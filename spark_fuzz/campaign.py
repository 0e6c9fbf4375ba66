"""The campaign driver: plans batches of runs, runs them and the shrinks on Spark, merges, shows progress.

A campaign is a deterministic state machine fed by Spark jobs. **Batch** ``b`` is planned right after batch
``b - 3`` is merged (three batches are in flight, so the cores do not wait for the driver or for a batch's slowest
run); planning reads only what was merged by then and ``DetRng(campaign seed).fork("batch:b")``. A batch is one
Spark job of ``tasks_per_batch`` tasks (a setting, not the core count: the plan is the same on any session), each a
few runs of one arm (``runs_per_task``), collected in partition order.
**Merging** (strictly in batch order) adds each run's abstract states and witnesses to its arm's coverage, puts
guided runs that reached new states into the corpus, buckets violations by invariant and explanation, and queues
each bucket's representatives for shrinking. A **shrink** is a Spark job of its own (one task), submitted as soon as
it is queued and running beside the batches; its result, a unique finding de-duplicated by invariant + signature of
the shrunk trace, does not feed back into planning. Plans, merges and shrinks are journaled (``journal.py``): the
same campaign seed gives the same runs in the same order whatever the timing, and a killed campaign resumes where
it stood.

Arms: ``guided`` (fresh seeds, and mutants of corpus entries: ``mutate.py``), ``unguided`` (fresh seeds only);
``compare`` runs both, half of each batch each, on the same seed sequence, for the coverage curves.

Stops: ``seeds`` runs per arm, or ``budget`` seconds of fuzzing in this invocation (the batches in flight then
finish), or the first violation of ``stop_on`` (the benchmark's time-to-detect; the batches planned after the one that
showed it are cancelled). Every queued shrink finishes before the campaign returns (``shrink=False`` queues none).

What depends on timing: with ``seeds`` (and ``stop_on``) nothing but the timings themselves (``elapsed``, ``wall``,
the wall-time curves, when a bucket was first seen, the journal's line order): the runs, buckets, shrinks and
findings are the same on one core or a hundred. Shrinks finish in any order; a unique finding's representative is
the first in queue order among the shrinks that gave its signature, whichever finished first. With ``budget``, how
many batches are planned depends on the speed of the session, and nothing else does.
"""

from __future__ import annotations

import base64
import concurrent.futures as cf
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.rng import DetRng

from .coverage import CampaignCoverage
from .findings import bucket, finding_id, shape
from .journal import Journal
from .mutate import Corpus, CorpusEntry, mutate
from .session import parallelism
from .settings import FuzzSettings, settings_from_dict
from .task import run_items

LAG = 3  # batches in flight
CANCEL_WAIT = 10.0  # seconds an interrupted campaign waits for its cancelled jobs to end
MAX_NEW_TIMES = 8


class CampaignError(ValueError):
    """A campaign that cannot start or go on (e.g. ``--out`` holds a different campaign): one line."""


@dataclass
class CampaignOptions:
    out: str
    config: dict[str, Any]
    profile: str = "safe"
    bugs: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    guided: bool = True
    compare: bool = False
    seed_start: int = 1
    settings: FuzzSettings = field(default_factory=FuzzSettings)
    budget: float | None = 60.0
    seeds: int | None = None
    stop_on: str | None = None
    triage: bool = True
    shrink: bool = True
    conform: bool = True  # validate each run the model covers against it (MODEL-CONFORM); --no-conform: off
    crash_once: str | None = None  # test hook: kill one Python worker once (Spark retries the task)
    rocketmq: str = B.DEFAULT_RELEASE  # the release whose rules the runs follow (its switches are in ``bugs``)

    @property
    def arms(self) -> list[str]:
        if self.compare:
            return ["guided", "unguided"]
        return ["guided"] if self.guided else ["unguided"]

    def identity(self) -> dict[str, Any]:
        return {"config": self.config, "profile": self.profile, "bugs": sorted(self.bugs),
                "disabled": sorted(self.disabled), "arms": self.arms, "seedStart": self.seed_start,
                "settings": self.settings.to_dict(), "triage": self.triage,
                **({} if self.conform else {"conform": False}),
                **({} if self.rocketmq == B.DEFAULT_RELEASE else {"rocketmq": self.rocketmq})}


@dataclass
class Arm:
    name: str
    coverage: CampaignCoverage = field(default_factory=CampaignCoverage)
    corpus: Corpus = field(default_factory=Corpus)
    issued: int = 0  # inputs planned
    fresh: int = 0  # fresh seeds planned
    children: dict[str, int] = field(default_factory=dict)  # corpus entry -> mutants planned from it


@dataclass
class Bucket:
    key: str
    invariant: str
    explained_by: str | None
    count: int = 0
    seeds: list[int] = field(default_factory=list)
    shapes: list[str] = field(default_factory=list)
    reps: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)  # unexplained: findings whose fix removes it (fix_hints)
    first_elapsed: float = 0.0


@dataclass
class Progress:
    """What the driver reports after each merged batch (and twice a second while it waits)."""

    runs: int
    steps: int
    elapsed: float
    violations: int
    unique: int
    unexplained: int
    states: dict[str, int]
    witnesses: dict[str, int]
    new_states: int
    shrinking: int


class Campaign:
    def __init__(self, spark: Any, opts: CampaignOptions, on_progress: Callable[[Progress], None] | None = None):
        self.spark = spark
        self.opts = opts
        self.on_progress = on_progress
        self.journal = Journal(opts.out)
        self.arms = {a: Arm(a) for a in opts.arms}
        self.buckets: dict[str, Bucket] = {}
        self.findings: dict[str, dict[str, Any]] = {}
        self.runs: list[dict[str, Any]] = []
        self.plans: dict[int, list[dict[str, Any]]] = {}
        self.merged = 0  # batches merged: 0 .. merged-1
        self.shrink_queue: list[dict[str, Any]] = []  # representatives to shrink, in queue order
        self.queued: dict[str, int] = {}  # representative -> its place in the queue (campaign order)
        self.shrunk: set[str] = set()  # representatives whose shrink is journaled
        self.shrink_errors: list[dict[str, Any]] = []  # shrinks that raised (reported, not retried)
        self.elapsed_before = 0.0
        self.detected: dict[str, float] = {}  # invariant -> elapsed at the batch that first showed it
        self.steps = 0
        self.sim_ms = 0
        self.violations = 0
        self.resumed_batches = 0
        self.fuzz_elapsed = 0.0  # elapsed when the last batch merged (shrinks may go on after it)
        self._parallelism = 1
        self._group = f"rmqha-fuzz-{os.getpid()}-{id(self):x}"  # Spark job groups of this campaign
        self._t0 = time.perf_counter()
        self._stop_batch: int | None = None  # the first batch that showed ``stop_on``
        self._stopping = False  # interrupted: no job starts any more
        self._ctx = {"config": opts.config, "settings": opts.settings.to_dict(), "steps": opts.settings.steps,
                     "bugs": sorted(opts.bugs), "profile": opts.profile, "disabled": sorted(opts.disabled),
                     "triage": opts.triage, "shrinkBudget": opts.settings.shrink_budget,
                     "crashOnce": opts.crash_once, "guided": "guided" in opts.arms, "conform": opts.conform,
                     "rocketmq": opts.rocketmq}

    # ------------------------------------------------------------------------------------------- state

    def elapsed(self) -> float:
        """Seconds of campaign so far, over every invocation (curves and time-to-detect use it)."""
        return self.elapsed_before + time.perf_counter() - self._t0

    def _resume(self) -> None:
        records = self.journal.read()
        if not records:
            self.journal.append({"type": "start", "identity": self.opts.identity()})
            return
        first = records[0]
        if first.get("type") != "start":
            raise CampaignError(f"{self.journal.path}: not a campaign journal")
        want = self.opts.identity()
        if first["identity"] != want:
            diff = sorted(k for k in set(first["identity"]) | set(want) if first["identity"].get(k) != want.get(k))
            raise CampaignError(f"{self.opts.out} holds a different campaign (it differs in: {', '.join(diff)}); "
                                "give another --out")
        for rec in records[1:]:
            if rec["type"] == "plan":
                self._apply_plan(rec["batch"], rec["items"])
            elif rec["type"] == "merged":
                self._apply_merge(rec)
                self.fuzz_elapsed = rec["elapsed"]
                self.elapsed_before = max(self.elapsed_before, rec["elapsed"])
                self.resumed_batches += 1
            elif rec["type"] == "shrunk":
                self._apply_shrunk(rec["row"], rec["elapsed"])
                self.elapsed_before = max(self.elapsed_before, rec["elapsed"])

    def _apply_plan(self, b: int, items: list[dict[str, Any]]) -> None:
        """Account for a planned batch (live, and when the journal is read back)."""
        self.plans[b] = items
        for item in items:
            for inp in item["inputs"]:
                arm = self.arms[inp["arm"]]
                arm.issued += 1
                if inp.get("parent") is None:
                    arm.fresh += 1
                else:
                    arm.children[inp["parent"]] = arm.children.get(inp["parent"], 0) + 1

    def _apply_merge(self, rec: dict[str, Any]) -> None:
        b = rec["batch"]
        for row in rec["rows"]:
            self._merge_run(row, b, rec["elapsed"])
        self.plans.pop(b, None)
        self.merged = b + 1

    def _merge_run(self, row: dict[str, Any], b: int, elapsed: float) -> None:
        arm = self.arms[row["arm"]]
        new = arm.coverage.merge(row["id"], row["newStates"], row["witnesses"])
        if len(new) != len(row["newStates"]):
            raise CampaignError(f"{self.journal.path}: batch {b} does not merge as recorded (edited journal?)")
        row["batch"] = b
        row["elapsedAt"] = elapsed
        row["ordinal"] = arm.coverage.runs
        self.runs.append(row)
        self.steps += row["steps"]
        self.sim_ms += row["simMs"]
        if row.get("corpus"):
            c = row["corpus"]
            arm.corpus.add(CorpusEntry(row["id"], row["seed"], row["header"]["config"], row["family"],
                                       c["actions"], c["roles"], c["newTimes"], row["simMs"], float(len(new)),
                                       batch=b))
        v = row["violation"]
        if v is None:
            return
        self.violations += 1
        self.detected.setdefault(v["invariant"], elapsed)
        key = bucket(v["invariant"], row["explainedBy"])
        bk = self.buckets.get(key)
        if bk is None:
            bk = self.buckets[key] = Bucket(key, v["invariant"], row["explainedBy"], first_elapsed=elapsed)
        bk.count += 1
        if len(bk.seeds) < 20:
            bk.seeds.append(row["seed"])
        s = shape(v["message"])
        for h in row.get("fixHints") or ():
            if h not in bk.hints:
                bk.hints.append(h)
        reps = self.opts.settings.shrinks_per_bucket if bk.explained_by is None else 1  # documented: one is enough
        if self.opts.shrink and v["step"] is not None and len(bk.reps) < reps and s not in bk.shapes:
            bk.shapes.append(s)
            bk.reps.append(row["id"])
            self.queued[row["id"]] = len(self.shrink_queue)
            self.shrink_queue.append({"bucket": key, "rep": row["id"], "header": row["header"], "violation": v,
                                      "explainedBy": row["explainedBy"],
                                      "budget": self.opts.settings.shrink_budget // (1 if bk.explained_by is None
                                                                                     else 2)})
        if self.opts.stop_on is not None and v["invariant"] == self.opts.stop_on and self._stop_batch is None:
            self._stop_batch = b

    def _holds(self, fid: str, rep: str) -> bool:
        """Whether the shrink of ``rep`` is (or becomes) finding ``fid``'s: the first in queue order, not the first
        to finish (shrinks finish in any order; the finding must not depend on it)."""
        have = self.findings.get(fid)
        return have is None or self.queued[rep] < self.queued[have["rep"]]

    def _apply_shrunk(self, row: dict[str, Any], elapsed: float) -> None:
        self.shrunk.add(row["rep"])
        if "error" in row:
            self.shrink_errors.append(row)
            self.shrink_errors.sort(key=lambda e: self.queued[e["rep"]])
            return
        fid = finding_id(row["invariant"], row["signature"])
        have = self.findings.get(fid)
        reps = 1 + (have["representatives"] if have is not None else 0)
        if have is not None and not self._holds(fid, row["rep"]):
            have["representatives"] = reps
            return
        self.findings[fid] = dict(row, id=fid, representatives=reps, shrunkAt=elapsed,
                                  foundAt=self.buckets[row["bucket"]].first_elapsed,
                                  tracePath=f"traces/{fid}.jsonl.gz")
        self.findings = dict(sorted(self.findings.items(), key=lambda kv: self.queued[kv[1]["rep"]]))

    # ------------------------------------------------------------------------------------------ planning

    def _arm_done(self, arm: Arm, pending: list[dict[str, Any]] | None = None) -> bool:
        return self.opts.seeds is not None and arm.issued + len(pending or ()) >= self.opts.seeds

    def _plan(self, b: int) -> list[dict[str, Any]]:
        """Batch ``b``'s tasks, from merged state only (``_apply_plan`` accounts for them afterwards)."""
        rng = DetRng(self.opts.seed_start).fork(f"batch:{b}")
        items: list[dict[str, Any]] = []
        planned: dict[str, list[dict[str, Any]]] = {n: [] for n in self.arms}
        for k in range(self.opts.settings.tasks_per_batch):
            arms = [a for a in self.arms.values() if not self._arm_done(a, planned[a.name])]
            if not arms:
                break
            arm = arms[k % len(arms)]
            inputs: list[dict[str, Any]] = []
            for _ in range(self.opts.settings.runs_per_task):
                if self._arm_done(arm, planned[arm.name]):
                    break
                inp = self._input(arm, rng, b, planned[arm.name])
                planned[arm.name].append(inp)
                inputs.append(inp)
            items.append({"kind": "runs", "inputs": inputs})
        return items

    def _input(self, arm: Arm, rng: DetRng, b: int, pending: list[dict[str, Any]]) -> dict[str, Any]:
        run_id = f"{arm.name[0]}{b}.{len(pending)}"
        entries = arm.corpus.upto(b - LAG)  # exactly what was merged when b was first planned, even after a resume
        if arm.name == "unguided" or not entries or rng.chance(self.opts.settings.fresh):
            fresh = arm.fresh + sum(1 for p in pending if p.get("parent") is None)
            return {"id": run_id, "arm": arm.name, "seed": self.opts.seed_start + fresh}
        for e in entries:
            e.picked = arm.children.get(e.run_id, 0) + sum(1 for p in pending if p.get("parent") == e.run_id)
        parent = arm.corpus.pick(entries, rng)
        schedule, seed, ops = mutate(parent, rng, f"m{b}.{len(pending)}")
        return {"id": run_id, "arm": arm.name, "seed": seed, "parent": parent.run_id, "mutation": ops,
                "config": parent.config, "family": parent.family, "schedule": schedule}

    def _should_plan(self, b: int) -> bool:
        if self._stop_batch is not None and self._stop_batch <= b - LAG:
            return False
        if self.opts.seeds is not None:
            return not all(self._arm_done(a) for a in self.arms.values())
        return self.opts.budget is None or time.perf_counter() - self._t0 < self.opts.budget

    # --------------------------------------------------------------------------------------- execution

    def _job(self, group: str, items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
        if self._stopping:
            raise CampaignError("the campaign is stopping")
        sc = self.spark.sparkContext
        sc.setJobGroup(f"{self._group}-{group}", f"rmqha fuzz {group}", interruptOnCancel=True)
        payload = [dict(item, ctx=self._ctx) for item in items]
        rows = sc.parallelize(payload, len(payload)).mapPartitions(run_items).collect()
        return rows, self.elapsed()

    def _record_merge(self, b: int, rows: list[dict[str, Any]], at: float) -> None:
        out_rows = []
        batch_new: dict[str, set[str]] = {n: set() for n in self.arms}  # states first reached in this batch
        for row in rows:
            known, seen = self.arms[row["arm"]].coverage.states, batch_new[row["arm"]]
            new = sorted((t, h) for h, t in row["states"].items() if h not in known and h not in seen)
            seen.update(h for _, h in new)
            compact = {k: v for k, v in row.items() if k not in ("states", "actions", "roles")}
            compact["newStates"] = [h for _, h in new]
            compact["nStates"] = len(row["states"])
            if row["arm"] == "guided" and new:
                compact["corpus"] = {"actions": row.get("actions", []), "roles": row.get("roles", []),
                                     "newTimes": sorted({t for t, _ in new})[:MAX_NEW_TIMES]}
            out_rows.append(compact)
        at = max(at, self.fuzz_elapsed)  # merged by then (a later batch can finish before an earlier one)
        rec: dict[str, Any] = {"type": "merged", "batch": b, "elapsed": round(at, 3), "rows": out_rows}
        self.journal.append(rec)
        self._apply_merge(rec)
        self.fuzz_elapsed = rec["elapsed"]

    def _record_shrunk(self, row: dict[str, Any], at: float) -> None:
        fid = finding_id(row["invariant"], row["signature"]) if "error" not in row else None
        path = Path(self.opts.out) / "traces" / f"{fid}.jsonl.gz"
        if fid is not None and self._holds(fid, row["rep"]):  # the trace first, then the journal line pointing at it
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(base64.b64decode(row["trace"]))
            os.replace(tmp, path)
        rec: dict[str, Any] = {"type": "shrunk", "elapsed": round(at, 3),
                               "row": {k: v for k, v in row.items() if k != "trace"}}
        self.journal.append(rec)
        self._apply_shrunk(rec["row"], rec["elapsed"])

    def _progress(self, new_states: int, shrinking: int) -> None:
        if self.on_progress is None:
            return
        unexplained = sum(b.count for b in self.buckets.values() if b.explained_by is None)
        self.on_progress(Progress(len(self.runs), self.steps, self.elapsed(), self.violations, len(self.findings),
                                  unexplained, {n: len(a.coverage.states) for n, a in self.arms.items()},
                                  {n: len(a.coverage.witnesses) for n, a in self.arms.items()}, new_states,
                                  shrinking))

    def run(self) -> Campaign:
        """Run (or resume) to the stop condition and finish every queued shrink; returns itself."""
        self._parallelism = parallelism(self.spark)
        self._resume()
        self._t0 = time.perf_counter()
        batches: dict[int, cf.Future[Any]] = {}
        done: dict[int, tuple[list[dict[str, Any]], float]] = {}
        shrinks: dict[str, cf.Future[Any]] = {}
        pool = cf.ThreadPoolExecutor(max_workers=LAG + self._parallelism, thread_name_prefix="rmqha-fuzz")
        next_plan = max([self.merged - 1, *self.plans]) + 1

        def fill() -> None:  # batch b is planned once b - LAG is merged: planning sees the same state every time
            nonlocal next_plan
            while next_plan <= self.merged + LAG - 1 and self._should_plan(next_plan):
                items = self._plan(next_plan)
                if not items:
                    return
                self.journal.append({"type": "plan", "batch": next_plan, "items": items})
                self._apply_plan(next_plan, items)
                batches[next_plan] = pool.submit(self._job, f"batch-{next_plan}", items)
                next_plan += 1
            # shrinks share the cores with the batches (half of them), and take all of them once fuzzing is over
            max_shrinks = max(1, self._parallelism // 2) if batches else self._parallelism
            for q in self.shrink_queue:
                if len(shrinks) >= max_shrinks:
                    break
                if q["rep"] not in self.shrunk and q["rep"] not in shrinks:
                    shrinks[q["rep"]] = pool.submit(self._job, f"shrink-{q['rep']}", [{"kind": "shrink",
                                                                                       "finding": q}])

        def abandon_after_stop() -> None:  # ``stop_on`` was seen: the batches planned after it are not needed
            if self._stop_batch is None:
                return
            for b in [b for b in batches if b > self._stop_batch]:
                self.spark.sparkContext.cancelJobGroup(f"{self._group}-batch-{b}")
                batches.pop(b)
            for b in [b for b in done if b > self._stop_batch]:
                done.pop(b)

        try:
            for b in sorted(self.plans):  # planned before a kill, never merged: the same tasks again
                if self._stop_batch is None or b <= self._stop_batch:
                    batches[b] = pool.submit(self._job, f"batch-{b}", self.plans[b])
            fill()
            while batches or done or shrinks:
                futures = [*batches.values(), *shrinks.values()]
                finished, _ = cf.wait(futures, timeout=0.5, return_when=cf.FIRST_COMPLETED)
                for b in [b for b, f in batches.items() if f in finished]:
                    done[b] = batches.pop(b).result()
                for rep in [r for r, f in shrinks.items() if f in finished]:
                    rows, at = shrinks.pop(rep).result()
                    self._record_shrunk(rows[0], at)
                new = 0
                while self.merged in done:
                    before = sum(len(a.coverage.states) for a in self.arms.values())
                    rows, at = done.pop(self.merged)
                    self._record_merge(self.merged, rows, at)
                    new += sum(len(a.coverage.states) for a in self.arms.values()) - before
                    abandon_after_stop()
                    fill()
                fill()
                self._progress(new, len(shrinks))
        except BaseException:
            groups = [*(f"batch-{b}" for b in batches), *(f"shrink-{rep}" for rep in shrinks)]
            self._cancel(pool, groups, [*batches.values(), *shrinks.values()])
            raise
        pool.shutdown(wait=True)
        return self

    def _cancel(self, pool: cf.ThreadPoolExecutor, groups: list[str], futures: list[cf.Future[Any]]) -> None:
        """Cancel this campaign's jobs (only its own: the session may run others) and wait until none runs, so that
        the session stops with no task in flight (Spark logs errors for tasks launched while it shuts down). A job
        a thread submits just as the campaign stops is cancelled on the next round; ``CANCEL_WAIT`` bounds it."""
        self._stopping = True
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + CANCEL_WAIT
        while True:
            for g in groups:
                self.spark.sparkContext.cancelJobGroup(f"{self._group}-{g}")
            _, running = cf.wait(futures, timeout=0.2)
            if not running or time.monotonic() > deadline:
                return

    # ------------------------------------------------------------------------------------------ results

    def unexplained(self) -> list[Bucket]:
        return [b for b in self.buckets.values() if b.explained_by is None]

    def curve(self, arm: str) -> list[tuple[int, int, float]]:
        """(runs, abstract states, elapsed s) after each run of ``arm``, in merge order."""
        out, n = [], 0
        for r in self.runs:
            if r["arm"] == arm:
                n += len(r["newStates"])
                out.append((r["ordinal"], n, r["elapsedAt"]))
        return out

    def summary(self) -> dict[str, Any]:
        wall = self.elapsed()
        return {
            "out": self.opts.out, "arms": self.opts.arms, "bugs": sorted(self.opts.bugs), "profile": self.opts.profile,
            "runs": len(self.runs), "steps": self.steps, "simSeconds": round(self.sim_ms / 1000, 1),
            "elapsed": round(wall, 2), "fuzzElapsed": self.fuzz_elapsed,
            "stepsPerSecond": round(self.steps / max(self.fuzz_elapsed, 1e-9)),
            "runsPerSecond": round(len(self.runs) / max(self.fuzz_elapsed, 1e-9), 3),
            "violations": self.violations, "resumedBatches": self.resumed_batches,
            "buckets": [{"bucket": b.key, "invariant": b.invariant, "explainedBy": b.explained_by, "count": b.count,
                         "seeds": b.seeds, "firstAt": b.first_elapsed, "fixHints": b.hints}
                        for b in self.buckets.values()],
            "findings": [{k: f[k] for k in ("id", "invariant", "explainedBy", "bucket", "signature", "seed",
                                            "shrunkActions", "originalActions", "shrunkSteps", "originalSteps",
                                            "replays", "conforms", "tracePath", "representatives")}
                         for f in self.findings.values()],
            "unexplained": sum(b.count for b in self.unexplained()),
            "shrinkErrors": [{k: e[k] for k in ("bucket", "rep", "error")} for e in self.shrink_errors],
            "coverage": {n: {"states": len(a.coverage.states), "witnesses": dict(sorted(a.coverage.hits.items())),
                             "runs": a.coverage.runs} for n, a in self.arms.items()},
            "detected": self.detected,
        }


def options_from(out: str, config: dict[str, Any], fuzz: dict[str, Any] | None, **kw: Any) -> CampaignOptions:
    """``CampaignOptions`` with the ``[fuzz]`` table validated (``ValueError`` with one line)."""
    return CampaignOptions(out=out, config=config, settings=settings_from_dict(fuzz), **kw)


def journaled_runs(opts: CampaignOptions) -> int | None:
    """Runs the journal in ``opts.out`` has merged (``None``: no campaign there yet), read without Spark, so that a
    resumed campaign can say so and a journal of a different campaign is refused before a session starts (the same
    check ``Campaign.run`` makes when it resumes)."""
    journal = Journal(opts.out)
    records = journal.read()
    if not records:
        return None
    if records[0].get("type") != "start":
        raise CampaignError(f"{journal.path}: not a campaign journal")
    have, want = records[0].get("identity"), opts.identity()
    if have != want:
        have = have if isinstance(have, dict) else {}
        diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
        raise CampaignError(f"{opts.out} holds a different campaign (it differs in: {', '.join(diff)}); "
                            "give another --out")
    return sum(len(r.get("rows") or ()) for r in records if r.get("type") == "merged")
