"""The same mutants again: re-test the mutants of a committed mutation run against the kit as it is now.

``bench/mutation.py`` draws its sample from the four folders as they are, so a kit that grew draws new mutants and
its score is a new sample's (docs/mutation.md, "After"). To see what a change of the kit did, this script keeps the
sample: it takes the rows of a committed run (``bench/results/mutation-*.json``), finds each mutant's line in the
current sources (the same original line, the nearest to its old line number), applies the same edit to a copy of
the package (``bench/mutation.py``'s trees: the repository is never written) and runs the quick campaign
(``bench/mutation_campaign.py``, default stages, with the CPU limit of ``--timeout-factor`` x the unmutated
campaign's CPU time) on it. A mutant whose original line is no longer in its file is reported ``gone`` (the code
it mutated was rewritten), never counted either way.

By default it re-tests the run's non-equivalent survivors (``--which survivors``); ``--which all`` re-tests every
row. The paired score counts a row detected if it was detected before and not re-tested, or if its re-test killed
it; the denominator is the run's non-equivalent rows, by ``bench/mutation_classes.json`` as it is now (a survivor
re-examined since may have been classified equivalent, with its argument).

    python bench/mutation_retest.py --from bench/results/mutation-after-acc6eff.json --jobs 2 --out runs/retest
    python bench/mutation_retest.py --from ... --out runs/retest --report

``--out`` holds ``retest.json`` (one row per re-tested mutant, written as each ends: a killed run resumes) and
``summary.md``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutation as M  # bench/ is not a package

ROOT = M.ROOT


def locate(rel: str, original: str, old_line: int, root: Path = ROOT) -> int | None:
    """The 1-based number of the line of ``rel`` whose text (stripped) is ``original`` (stripped), the nearest to
    ``old_line``; None if there is none."""
    lines = (root / rel).read_text(encoding="utf-8").splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if ln.strip() == original.strip()]
    return min(hits, key=lambda n: (abs(n - old_line), n)) if hits else None


def apply(tree: Path, rel: str, line: int, original: str, mutated: str) -> None:
    """Write the mutated line into the copy's file (its indentation kept)."""
    path = M.tree_path(tree, rel)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    old = lines[line - 1]
    indent = old[: len(old) - len(old.lstrip())]
    end = "\n" if old.endswith("\n") else ""
    assert old.strip() == original.strip()
    lines[line - 1] = indent + mutated.strip() + end
    path.write_text("".join(lines), encoding="utf-8")


def restore(tree: Path, rel: str) -> None:
    shutil.copyfile(ROOT / rel, M.tree_path(tree, rel))


def baseline(out: Path, factor: float) -> dict[str, Any]:
    path = out / "baseline.json"
    if path.exists():
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    tree = M.build_tree(out / "trees" / "pristine")
    t0 = time.perf_counter()
    p = subprocess.run(M.campaign_command(tree), capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    res = M._last_json(p.stdout)
    if p.returncode != 0 or res is None or res.get("outcome") != "survived":
        raise SystemExit(f"mutation_retest: the unmutated campaign does not pass (exit {p.returncode}):\n"
                         f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    cpu_limit_s, timeout_s = M.limits(wall, float(res["cpu_s"]), factor)
    data = {"commit": M.git_commit(), "baseline_s": round(wall, 2), "cpu_s": res["cpu_s"], "cpu_limit_s": cpu_limit_s,
            "timeout_s": timeout_s}
    path.write_text(json.dumps(data, indent=1))
    return data


def run_one(tree: Path, row: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    line = locate(row["file"], row["original"], row["line"])
    out = {"id": row["id"], "file": row["file"], "before_line": row["line"], "line": line,
           "before": row["outcome"], "before_check": row.get("check"), "class": row.get("survivor_class")}
    if line is None:
        return {**out, "outcome": "gone"}
    apply(tree, row["file"], line, row["original"], row["mutated"])
    t0 = time.perf_counter()
    try:
        p = subprocess.run(M.campaign_command(tree, cpu_limit=base["cpu_limit_s"]), capture_output=True, text=True,
                           timeout=base["timeout_s"])
        res = M._last_json(p.stdout) or {}
        outcome = {0: "survived", 1: "killed", 3: "incompetent"}.get(p.returncode, "error")
        if res.get("outcome") == "timeout":
            outcome = "timeout"
    except subprocess.TimeoutExpired:
        res, outcome = {}, "timeout"
    finally:
        restore(tree, row["file"])
    return {**out, "outcome": outcome, "check": res.get("check"), "stage": res.get("stage"), "seed": res.get("seed"),
            "message": (res.get("message") or "")[:300], "detect_s": res.get("detect_s"),
            "detect_steps": res.get("detect_steps"), "wall_s": round(time.perf_counter() - t0, 1)}


def paired(before: list[dict[str, Any]], done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    gone_ids = {i for i, d in done.items() if d["outcome"] == "gone"}
    valid = [r for r in before if M._valid(r) and r["id"] not in gone_ids]  # a gone mutant is not counted either way
    detected = 0
    newly = []
    for r in valid:
        again = done.get(r["id"])
        if again is not None and again["outcome"] in M.DETECTED:
            detected += 1
            if r["outcome"] not in M.DETECTED:
                newly.append(r["id"])
        elif again is None and r["outcome"] in M.DETECTED:
            detected += 1
    gone = [i for i, d in done.items() if d["outcome"] == "gone"]
    lo, hi = M.wilson(detected, len(valid))
    times = [d["detect_s"] for d in done.values() if d["outcome"] == "killed" and d.get("detect_s") is not None]
    return {"valid": len(valid), "detected": detected, "score": detected / len(valid) if valid else None,
            "ci95": [lo, hi], "newly_killed": len(newly), "gone": gone,
            "median_detect_s_retested": statistics.median(times) if times else None}


def summary(out: Path, source: Path, base: dict[str, Any], before: list[dict[str, Any]],
            done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    s = paired(before, done)
    lines = [f"# Mutation re-test of {source.name} on commit {base['commit']}", "",
             f"Unmutated campaign {base['baseline_s']} s wall, {base['cpu_s']} s CPU; CPU limit "
             f"{base['cpu_limit_s']} s. Re-tested {len(done)} mutants.", "",
             f"**Paired score: {s['detected']} / {s['valid']} = {M.pct(s['score'])}** (95% Wilson interval "
             f"{M.pct(s['ci95'][0])}-{M.pct(s['ci95'][1])}); newly killed {s['newly_killed']}; gone "
             f"{len(s['gone'])}; median time to detect among the re-tested {s['median_detect_s_retested']} s.", "",
             "| id | where now | before | class | now | check | stage, seed | detect s |",
             "|---|---|---|---|---|---|---|---|"]
    for d in sorted(done.values(), key=lambda d: (d["file"], d["before_line"])):
        lines.append(f"| {d['id']} | {d['file']}:{d['line'] or '-'} | {d['before']} | {d.get('class') or ''} | "
                     f"{d['outcome']} | {d.get('check') or ''} | {d.get('stage') or ''} {d.get('seed') or ''} | "
                     f"{d.get('detect_s') if d.get('detect_s') is not None else ''} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--from", dest="source", type=Path, required=True, help="a committed run's rows (JSON)")
    ap.add_argument("--which", choices=("survivors", "all"), default="survivors")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "mutation-retest")
    ap.add_argument("--timeout-factor", type=float, default=3.0)
    ap.add_argument("--report", action="store_true", help="only rewrite summary.md")
    ap.add_argument("--only", help="comma-separated mutant ids (a subset of --which)")
    args = ap.parse_args(argv)
    try:
        before: list[dict[str, Any]] = json.loads(args.source.read_text())["mutants"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"mutation_retest: {args.source}: not a mutation run's rows ({exc})", file=sys.stderr)
        return 2
    classes = M.load_classes()  # the classification as it is now (a survivor re-examined may have become equivalent)
    for r in before:
        c = classes.get(M.class_key(r))
        if r["outcome"] == "survived" and c is not None:
            r.update(survivor_class=c["class"], reason=c["reason"])
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "retest.json"
    done: dict[str, dict[str, Any]] = json.loads(rows_path.read_text()) if rows_path.exists() else {}
    base = baseline(out, args.timeout_factor)
    if not args.report:
        todo = [r for r in before if args.which == "all" or (r["outcome"] == "survived" and M._valid(r))]
        if args.only:
            wanted = set(args.only.split(","))
            todo = [r for r in todo if r["id"] in wanted]
        todo = [r for r in todo if r["id"] not in done]
        print(f"mutation_retest: {len(todo)} to run on {args.jobs} worker(s); CPU limit {base['cpu_limit_s']} s",
              flush=True)
        trees = [M.build_tree(out / "trees" / f"w{i}") for i in range(max(1, args.jobs))]
        free = list(range(len(trees)))
        with cf.ThreadPoolExecutor(max_workers=len(trees)) as pool:
            running: dict[cf.Future[dict[str, Any]], int] = {}
            queue = list(todo)
            while queue or running:
                while queue and free:
                    slot = free.pop()
                    running[pool.submit(run_one, trees[slot], queue.pop(0), base)] = slot
                finished, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
                for f in finished:
                    free.append(running.pop(f))
                    d = f.result()
                    done[d["id"]] = d
                    rows_path.write_text(json.dumps(done, indent=1, sort_keys=True))
                    print(f"[{len(done)}] {d['id']} {d['file']}:{d['line']}: {d['before']} -> {d['outcome']}"
                          f"{' ' + str(d.get('check')) if d.get('check') else ''} ({d.get('wall_s', 0)} s)",
                          flush=True)
        shutil.rmtree(out / "trees", ignore_errors=True)
    s = summary(out, args.source, base, before, done)
    print(f"mutation_retest: paired score {s['detected']}/{s['valid']} ({M.pct(s['score'])}); newly killed "
          f"{s['newly_killed']}; {out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
