"""Mutation score of the kit, measured by the kit itself (issue 21 item 6).

Cosmic Ray (``pip install -c constraints.txt -e '.[mutation]'``) enumerates every mutation of the core's four
folders (``impl/controller``, ``impl/ha``, ``impl/store``, ``impl/broker``) into its session database; this script
draws a fixed-seed sample stratified by folder and by mutation operator, and has Cosmic Ray apply each sampled
mutant and run the kit's quick campaign on it (``bench/mutation_campaign.py``: simulate safe, conform, the safe
Hypothesis suite, simulate fidelity, jraft and the two legacy profiles; it stops at the first failing check).

The mutants are never written into the repository: the package is copied, laid out as installed
(``OUT/trees/wN/rmqha/impl/...``, one copy per worker, pre-compiled with hash-checked ``.pyc`` files so that only
the mutated module is compiled again), Cosmic Ray mutates the copy in place and restores it, and the campaign
imports the kit from the copy (and checks that it did).

    python bench/mutation.py --sample 120 --seed 21 --jobs 1 --out runs/mutation     # run (or resume) a session
    python bench/mutation.py --out runs/mutation --report                            # only rewrite the report

Re-running the same command continues where a killed run stopped (Cosmic Ray's session database keeps every
result; the copies are laid anew). ``--out`` holds ``session.sqlite`` (Cosmic Ray's), ``meta.json`` (commit,
digest of the sources, seed, sizes, baseline and timeout), ``mutants.json`` (one row per sampled mutant: id,
file:line, operator, original and mutated line, outcome, the check that killed it, time and steps to detect) and
``summary.md``. A session belongs to the sources it was drawn from: if the four folders changed, start a new
``--out`` (or pass ``--fresh``).

Outcomes: ``killed`` (a check failed: an invariant id, ``conform:<model action>``, or ``crash:<exception>`` when
the kit's code raised), ``timeout`` (the campaign ran past ``--timeout-factor`` x the unmutated campaign's CPU
time, or 10 x its wall time: counted as detected), ``survived``, ``incompetent`` (the mutated package does not
import: left out of the score), ``error`` (the harness failed: left out, re-run with ``--retry-errors``).
Mutations inside annotations are left out of the population: every module of the four folders has ``from
__future__ import annotations``, so an annotation is a string never evaluated (nothing in the kit calls
``get_type_hints`` on them).

``bench/mutation_classes.json`` classifies survivors (missing check, missing fault, equivalent, with the reason);
the score is detected / (sampled - equivalent - incompetent - error). See docs/mutation.md.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import concurrent.futures as cf
import difflib
import hashlib
import importlib.metadata as metadata
import json
import math
import py_compile
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import tomllib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGN = ROOT / "bench" / "mutation_campaign.py"
CLASSES = ROOT / "bench" / "mutation_classes.json"
FOLDERS = ("impl/controller", "impl/ha", "impl/store", "impl/broker")
DETECTED = ("killed", "timeout")


# ---------------------------------------------------------------------------------------------- the package copy
def package_dirs(root: Path = ROOT) -> dict[str, str]:
    """``[tool.setuptools] package-dir``: package name -> folder (``rmqha.impl`` -> ``impl``)."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    dirs: dict[str, str] = data["tool"]["setuptools"]["package-dir"]
    return dirs


def build_tree(dest: Path, root: Path = ROOT) -> Path:
    """Lay the package out as installed under ``dest`` (``dest/rmqha``, ``dest/rmqha/impl``, ...) and copy
    ``property_tests``; compile it with hash-checked ``.pyc`` files (a mutated module no longer matches its hash, so
    Python compiles it again whatever its mtime). Returns ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    dirs = package_dirs(root)
    shutil.copytree(root / dirs["rmqha"], dest / "rmqha", ignore=ignore)
    for name, folder in dirs.items():
        if name != "rmqha":
            target = dest / Path(*name.split("."))
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(root / folder, target, ignore=ignore)
    shutil.copytree(root / "property_tests", dest / "property_tests", ignore=ignore)
    compileall.compile_dir(str(dest), quiet=2, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    return dest


def tree_path(tree: Path, rel: str) -> Path:
    """A repository path (``impl/ha/service.py``) inside a copy (``TREE/rmqha/impl/ha/service.py``)."""
    for name, folder in sorted(package_dirs().items(), key=lambda kv: -len(kv[1])):
        if rel == folder or rel.startswith(folder + "/"):
            return tree / Path(*name.split(".")) / rel[len(folder) + 1:]
    raise ValueError(f"{rel} is not in the package")


def campaign_command(tree: Path | None, stages: list[str] | None = None, cpu_limit: int | None = None) -> list[str]:
    cmd = [sys.executable, str(CAMPAIGN)]
    if cpu_limit:
        cmd += ["--cpu-limit", str(cpu_limit)]
    if tree is not None:
        cmd += ["--tree", str(tree)]
    for s in stages or []:
        cmd += ["--stage", s]
    return cmd


def source_files(root: Path = ROOT) -> list[str]:
    return sorted(str(p.relative_to(root)) for f in FOLDERS for p in (root / f).glob("*.py")
                  if p.name != "__init__.py")


def digest(root: Path = ROOT) -> str:
    h = hashlib.sha256()
    for rel in source_files(root):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes())
    return h.hexdigest()[:16]


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *FOLDERS], cwd=ROOT, capture_output=True,
                               text=True, check=True)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---------------------------------------------------------------------------------------- population and sample
def family(operator: str) -> str:
    """``core/ReplaceComparisonOperator_Lt_LtE`` -> ``ReplaceComparisonOperator`` (the stratum's operator)."""
    return operator.split("/", 1)[1].split("_", 1)[0]


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    spans = []
    for n in ast.walk(ast.parse(source)):
        anns: list[ast.expr] = []
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            a = n.args
            anns += [x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                     if x is not None and x.annotation is not None]
            if n.returns is not None:
                anns.append(n.returns)
        elif isinstance(n, ast.AnnAssign):
            anns.append(n.annotation)
        spans += [((x.lineno, x.col_offset), (x.end_lineno or x.lineno, x.end_col_offset or 0)) for x in anns]
    return spans


def mutant_key(rel: str, operator: str, occurrence: int) -> str:
    return f"{rel}:{operator.split('/', 1)[1]}:{occurrence}"


def mutant_id(key: str) -> str:
    return "m" + hashlib.sha1(key.encode()).hexdigest()[:7]


def allocate(sizes: dict[tuple[str, str], int], n: int) -> dict[tuple[str, str], int]:
    """Proportional allocation of ``n`` over strata (largest remainder), at least one per stratum."""
    total = sum(sizes.values())
    n = min(n, total)
    raw = {k: n * v / total for k, v in sizes.items()}
    alloc = {k: min(sizes[k], max(1, math.floor(r))) for k, r in raw.items()}
    order = sorted(sizes, key=lambda k: (-(raw[k] - math.floor(raw[k])), k))
    i = 0
    while sum(alloc.values()) < n and i < 10 * len(order):
        k = order[i % len(order)]
        if alloc[k] < sizes[k]:
            alloc[k] += 1
        i += 1
    while sum(alloc.values()) > n:  # the minimum of one overshot: take from the largest
        k = max(alloc, key=lambda s: (alloc[s], s))
        alloc[k] -= 1
    return alloc


def diff_lines(original: str, mutated: str) -> tuple[int, str, str]:
    """The first changed line (1-based), its original text and its mutated text."""
    a, b = original.splitlines(), mutated.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            return i1 + 1, "\n".join(a[i1:i2]).strip(), "\n".join(b[j1:j2]).strip()
    return 0, "", ""


# -------------------------------------------------------------------------------------------------- the session
class Session:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.meta_path = out / "meta.json"
        self.db_path = out / "session.sqlite"
        self.pristine = out / "trees" / "pristine"

    def meta(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.meta_path.read_text())
        return data

    def create(self, sample: int, seed: int) -> dict[str, Any]:
        """Enumerate the population with Cosmic Ray, draw the sample, mark the rest skipped."""
        from cosmic_ray.commands.init import init  # lazy: the `mutation` extra, only to run sessions
        from cosmic_ray.mutating import mutate_code
        from cosmic_ray.plugins import get_operator
        from cosmic_ray.work_db import WorkDB, use_db
        from cosmic_ray.work_item import WorkerOutcome, WorkResult

        self.out.mkdir(parents=True, exist_ok=True)
        for p in (self.db_path, self.meta_path, self.out / "mutants.json"):
            p.unlink(missing_ok=True)
        build_tree(self.pristine)
        files = source_files()
        sources = {rel: tree_path(self.pristine, rel).read_text(encoding="utf-8") for rel in files}
        spans = {rel: annotation_spans(src) for rel, src in sources.items()}
        rel_of = {str(tree_path(self.pristine, rel)): rel for rel in files}
        with use_db(str(self.db_path), WorkDB.Mode.create) as db:
            init([tree_path(self.pristine, rel) for rel in files], db, {})
            items = list(db.work_items)
            population: list[dict[str, Any]] = []
            annotations: list[str] = []
            for it in items:
                m = it.mutations[0]
                rel = rel_of[str(m.module_path)]
                row = {"job": it.job_id, "file": rel, "operator": m.operator_name.split("/", 1)[1],
                       "family": family(m.operator_name), "folder": rel.split("/")[1], "occurrence": m.occurrence,
                       "pos": list(m.start_pos), "key": mutant_key(rel, m.operator_name, m.occurrence),
                       "definition": m.definition_name}
                if any(a <= tuple(m.start_pos) < b for a, b in spans[rel]):
                    annotations.append(it.job_id)
                else:
                    population.append(row)
            strata: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
            for row in population:
                strata[(row["folder"], row["family"])].append(row)
            alloc = allocate({k: len(v) for k, v in strata.items()}, sample)
            chosen: list[dict[str, Any]] = []
            for k in sorted(strata):
                rows = sorted(strata[k], key=lambda r: r["key"])
                chosen += random.Random(f"{seed}:{k[0]}:{k[1]}").sample(rows, alloc[k])
            chosen.sort(key=lambda r: r["key"])
            for row in chosen:
                op = get_operator("core/" + row["operator"])()
                mutated = mutate_code(sources[row["file"]], op, row["occurrence"])
                row["line"], row["original"], row["mutated"] = diff_lines(sources[row["file"]], mutated or "")
                row["id"] = mutant_id(row["key"])
            keep = {r["job"] for r in chosen}
            skipped = [it.job_id for it in items if it.job_id not in keep]
            db.set_multiple_results(skipped, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
        meta = {"commit": git_commit(), "digest": digest(), "seed": seed, "sample": len(chosen),
                "requested": sample, "population": len(population), "enumerated": len(items),
                "annotations": len(annotations), "tool": f"cosmic-ray {metadata.version('cosmic-ray')}",
                "strata": {f"{k[0]}/{k[1]}": [len(v), alloc[k]] for k, v in sorted(strata.items())},
                "campaign": "bench/mutation_campaign.py (default stages)", "mutants": chosen}
        self.meta_path.write_text(json.dumps(meta, indent=1))
        return meta

    def baseline(self, meta: dict[str, Any], factor: float) -> dict[str, Any]:
        """Run the campaign once on the unmutated copy: it must pass; its wall time sets the timeout."""
        if "baseline_s" in meta:
            return meta if "cpu_limit_s" in meta else self.timeouts(meta)
        t0 = time.perf_counter()
        p = subprocess.run(campaign_command(self.pristine), capture_output=True, text=True, timeout=3600)
        wall = time.perf_counter() - t0
        res = _last_json(p.stdout)
        if p.returncode != 0 or res is None or res.get("outcome") != "survived":
            raise SystemExit(f"mutation: the unmutated campaign does not pass (exit {p.returncode}):\n"
                             f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        out = str(self.out.resolve())
        if str(res.get("kit", "")).startswith(out):  # no machine path in a result meant to be committed
            res["kit"] = "OUT" + str(res["kit"])[len(out):]
        meta.update(baseline_s=round(wall, 2), baseline=res, timeout_factor=factor)
        return self.timeouts(meta)

    def timeouts(self, meta: dict[str, Any]) -> dict[str, Any]:
        """The campaign's CPU limit (factor x the unmutated campaign's CPU time: the load of a shared machine does
        not turn a slow survivor into a timeout) and Cosmic Ray's wall-clock backstop (10 x its wall time)."""
        cpu_limit_s, timeout_s = limits(meta["baseline_s"], meta["baseline"]["cpu_s"], meta["timeout_factor"])
        meta.update(cpu_limit_s=cpu_limit_s, timeout_s=timeout_s)
        self.meta_path.write_text(json.dumps(meta, indent=1))
        return meta

    def execute(self, meta: dict[str, Any], jobs: int, retry_errors: bool) -> None:
        from cosmic_ray.mutating import mutate_and_test  # lazy: the `mutation` extra
        from cosmic_ray.work_db import WorkDB, use_db

        by_job = {m["job"]: m for m in meta["mutants"]}
        trees = [build_tree(self.out / "trees" / f"w{i}") for i in range(jobs)]
        with use_db(str(self.db_path), WorkDB.Mode.open) as db:
            outcome_of = {item.job_id: _outcome(res)[0] for item, res in db.completed_work_items}
            again = ("pending", "error") if retry_errors else ("pending",)
            pending = sorted((it for it in db.work_items
                              if it.job_id in by_job and outcome_of.get(it.job_id, "pending") in again),
                             key=lambda it: by_job[it.job_id]["key"])
            done = len(meta["mutants"]) - len(pending)
            print(f"mutation: {len(meta['mutants'])} sampled mutants, {done} done, {len(pending)} to run on "
                  f"{jobs} worker(s); timeout {meta['timeout_s']} s", flush=True)
            free = list(range(jobs))

            def work(slot: int, item: Any) -> tuple[int, Any, Any, float]:
                m = item.mutations[0]
                spec = type(m)(module_path=tree_path(trees[slot], by_job[item.job_id]["file"]),
                               operator_name=m.operator_name, occurrence=m.occurrence, start_pos=m.start_pos,
                               end_pos=m.end_pos, operator_args=m.operator_args, definition_name=m.definition_name)
                t0 = time.perf_counter()
                cmd = " ".join(shlex.quote(c) for c in campaign_command(trees[slot], cpu_limit=meta["cpu_limit_s"]))
                res = mutate_and_test([spec], cmd, meta["timeout_s"])
                return slot, item, res, time.perf_counter() - t0

            with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
                queue = list(pending)
                running: set[cf.Future[tuple[int, Any, Any, float]]] = set()
                n = done
                while queue or running:
                    while queue and free:
                        running.add(pool.submit(work, free.pop(), queue.pop(0)))
                    finished, running = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                    for f in finished:
                        slot, item, res, wall = f.result()
                        free.append(slot)
                        res = _with_wall(res, wall)
                        db.set_result(item.job_id, res)
                        n += 1
                        row = by_job[item.job_id]
                        outcome, check, _ = _outcome(res)
                        print(f"[{n}/{len(meta['mutants'])}] {row['id']} {row['file']}:{row['line']} "
                              f"{row['operator']}: {outcome}{' ' + check if check else ''} ({wall:.1f} s)",
                              flush=True)

    def rows(self, meta: dict[str, Any]) -> list[dict[str, Any]]:
        from cosmic_ray.work_db import WorkDB, use_db  # lazy: the `mutation` extra

        by_job = {m["job"]: m for m in meta["mutants"]}
        results: dict[str, Any] = {}
        with use_db(str(self.db_path), WorkDB.Mode.open) as db:
            for item, res in db.completed_work_items:
                if item.job_id in by_job:
                    results[item.job_id] = res
        classes = load_classes()
        rows = []
        for m in meta["mutants"]:
            res = results.get(m["job"])
            outcome, check, info = _outcome(res) if res is not None else ("pending", None, {})
            row = {k: m[k] for k in ("id", "file", "line", "operator", "family", "folder", "original", "mutated",
                                     "definition", "key")}
            row.update(where=f"{m['file']}:{m['line']}", outcome=outcome, check=check, stage=info.get("stage"),
                       seed=info.get("seed"), message=info.get("message"), detect_s=info.get("detect_s"),
                       detect_steps=info.get("detect_steps"), wall_s=info.get("wall_s"))
            if outcome == "survived":
                c = classes.get(class_key(row))
                row.update(survivor_class=c["class"] if c else None, reason=c["reason"] if c else None)
            rows.append(row)
        return rows


def limits(wall_s: float, cpu_s: float, factor: float) -> tuple[int, float]:
    """A mutant's CPU limit (``factor`` x the unmutated campaign's CPU time) and its wall-clock backstop (10 x its
    wall time, or twice the CPU limit if longer)."""
    return math.ceil(factor * cpu_s), round(max(10 * wall_s, 2 * factor * cpu_s), 1)


def class_key(row: dict[str, Any]) -> str:
    return f"{row['file']}|{row['operator']}|{row['original']}|{row['mutated']}"


def load_classes(path: Path = CLASSES) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {class_key(c): c for c in data["survivors"]}


def _with_wall(res: Any, wall: float) -> Any:
    """Cosmic Ray's result, its output prefixed with the driver's wall time (kept in the session database)."""
    return type(res)(worker_outcome=res.worker_outcome, output=f"#wall {wall:.3f}\n{res.output or ''}",
                     test_outcome=res.test_outcome, diff=res.diff)


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data: dict[str, Any] = json.loads(line)
                return data
            except json.JSONDecodeError:
                continue
    return None


def _outcome(res: Any) -> tuple[str, str | None, dict[str, Any]]:
    """(outcome, check, details) of one Cosmic Ray result."""
    out = res.output or ""
    info: dict[str, Any] = {}
    if out.startswith("#wall "):
        first, _, out = out.partition("\n")
        info["wall_s"] = float(first.split()[1])
    if res.worker_outcome.value == "skipped":
        return "skipped", None, info
    if res.worker_outcome.value != "normal":
        info["message"] = out[-400:]
        return "error", None, info
    if out == "timeout":
        return "timeout", "timeout", info
    data = _last_json(out)
    if data is None:
        info["message"] = out[-400:]
        return "error", None, info
    info.update({k: data.get(k) for k in ("stage", "seed", "message", "detect_s", "detect_steps")})
    return str(data["outcome"]), data.get("check"), info


# ------------------------------------------------------------------------------------------------------ report
def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 0.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def weighted(rows: list[dict[str, Any]], strata: dict[str, list[int]]) -> float | None:
    """The population's score estimated from the sample: each stratum's detected and valid mutants weighted by its
    population over its sample size (the allocation gives small strata at least one mutant, so the sample
    over-represents rare operators; this undoes that)."""
    det = val = 0.0
    for r in rows:
        size, drawn = strata[f"{r['folder']}/{r['family']}"]
        w = size / drawn
        if _valid(r):
            val += w
            det += w * (r["outcome"] in DETECTED)
    return det / val if val else None


def _valid(r: dict[str, Any]) -> bool:
    return r["outcome"] in (*DETECTED, "survived") and not (
        r["outcome"] == "survived" and r.get("survivor_class") == "equivalent")


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    c = Counter(r["outcome"] for r in rows)
    eq = sum(1 for r in rows if r["outcome"] == "survived" and r.get("survivor_class") == "equivalent")
    detected = c["killed"] + c["timeout"]
    by_check = sum(1 for r in rows if r["outcome"] == "killed" and not str(r["check"]).startswith("crash:"))
    valid = len(rows) - eq - c["incompetent"] - c["error"] - c["pending"]
    lo, hi = wilson(detected, valid)
    times = [r["detect_s"] for r in rows if r["outcome"] == "killed" and r["detect_s"] is not None]
    steps = [r["detect_steps"] for r in rows if r["outcome"] == "killed" and r["detect_steps"] is not None]
    return {"sampled": len(rows), "outcomes": dict(c), "equivalent": eq, "detected": detected,
            "killed_by_check": by_check, "valid": valid, "score": detected / valid if valid else None,
            "score_by_check": by_check / valid if valid else None, "ci95": [lo, hi],
            "median_detect_s": statistics.median(times) if times else None,
            "median_detect_steps": statistics.median(steps) if steps else None}


def report(session: Session, meta: dict[str, Any]) -> dict[str, Any]:
    rows = session.rows(meta)
    s = score(rows)
    s["weighted"] = weighted(rows, meta["strata"])
    (session.out / "mutants.json").write_text(json.dumps({"meta": {k: v for k, v in meta.items() if k != "mutants"},
                                                          "score": s, "mutants": rows}, indent=1))
    lines = [f"# Mutation score: {meta['tool']}, commit {meta['commit']}", "",
             f"Population {meta['population']} mutants over {', '.join(FOLDERS)} ({meta['enumerated']} enumerated, "
             f"{meta['annotations']} inside annotations left out); sample {meta['sample']} (seed {meta['seed']}, "
             f"stratified by folder and operator). Unmutated campaign: {meta.get('baseline_s')} s wall, "
             f"{meta.get('baseline', {}).get('cpu_s')} s CPU; timeout: {meta.get('cpu_limit_s')} CPU s "
             f"(wall backstop {meta.get('timeout_s')} s).", "",
             f"Outcomes: {', '.join(f'{k} {v}' for k, v in sorted(s['outcomes'].items()))}; survivors classified "
             f"equivalent: {s['equivalent']}.", "",
             f"**Score: {s['detected']} / {s['valid']} = {pct(s['score'])}** (95% Wilson interval "
             f"{pct(s['ci95'][0])}-{pct(s['ci95'][1])}); by a check (not a crash): {s['killed_by_check']} / "
             f"{s['valid']} = {pct(s['score_by_check'])}; weighted by the strata's populations: "
             f"{pct(s['weighted'])}. Median time to detect {s['median_detect_s']} s, "
             f"{s['median_detect_steps']} simulator steps.", "",
             "| id | where | operator | original | mutated | outcome | check / class | stage, seed | detect s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        what = r["check"] if r["outcome"] != "survived" else (r.get("survivor_class") or "UNCLASSIFIED")
        lines.append(f"| {r['id']} | {r['where']} | {r['operator']} | `{_md(r['original'])}` | "
                     f"`{_md(r['mutated'])}` | {r['outcome']} | {what} | {r['stage'] or ''} {r['seed'] or ''} | "
                     f"{r['detect_s'] if r['detect_s'] is not None else ''} |")
    (session.out / "summary.md").write_text("\n".join(lines) + "\n")
    return s


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _md(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("`", "'").replace("\n", " ")[:90]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--sample", type=int, default=120, help="mutants to draw (default 120)")
    ap.add_argument("--seed", type=int, default=21, help="seed of the stratified draw (default 21)")
    ap.add_argument("--jobs", type=int, default=1, help="mutants tested at once (default 1)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "mutation")
    ap.add_argument("--timeout-factor", type=float, default=3.0,
                    help="timeout per mutant = this x the unmutated campaign's wall time (default 3)")
    ap.add_argument("--fresh", action="store_true", help="start the session again (drops its results)")
    ap.add_argument("--retry-errors", action="store_true", help="run the mutants whose harness failed again")
    ap.add_argument("--report", action="store_true", help="only (re)write mutants.json and summary.md")
    args = ap.parse_args(argv)
    session = Session(args.out.resolve())
    if args.report:
        meta = session.meta()
    elif session.meta_path.exists() and not args.fresh:
        meta = session.meta()
        if meta["digest"] != digest():
            raise SystemExit(f"mutation: the sources changed since {args.out} was drawn (commit {meta['commit']}): "
                             "use another --out, or --fresh")
        if (meta["seed"], meta["requested"]) != (args.seed, args.sample):
            raise SystemExit(f"mutation: {args.out} holds --seed {meta['seed']} --sample {meta['requested']}; "
                             "use another --out, or --fresh")
    else:
        meta = session.create(args.sample, args.seed)
        print(f"mutation: population {meta['population']} ({meta['annotations']} annotation mutants left out of "
              f"{meta['enumerated']}), sample {meta['sample']}", flush=True)
    if not args.report:
        meta = session.baseline(meta, args.timeout_factor)
        print(f"mutation: unmutated campaign {meta['baseline_s']} s wall, {meta['baseline']['cpu_s']} s CPU; "
              f"CPU limit {meta['cpu_limit_s']} s", flush=True)
        session.execute(meta, max(1, args.jobs), args.retry_errors)
        shutil.rmtree(args.out / "trees", ignore_errors=True)
    s = report(session, meta)
    print(f"mutation: score {s['detected']}/{s['valid']} "
          f"({pct(s['score'])}); outcomes {s['outcomes']}; "
          f"median time to detect {s['median_detect_s']} s; {args.out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
