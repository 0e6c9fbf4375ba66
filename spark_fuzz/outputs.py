"""The campaign's Parquet tables, written by Spark from the driver's state (rebuilt from the journal).

``OUT/runs.parquet`` (one row per run), ``OUT/findings.parquet`` (one row per unique finding) and
``OUT/coverage.parquet`` (one row per abstract state or witness an arm reached: when, and by which run) are
rewritten whole at the end of every invocation; any Spark user reads them with ``spark.read.parquet``. The
schemas are below (and in ``docs/fuzz.md``). With a cluster master, ``--out`` must be a path every executor and
the driver can write (a shared filesystem): Spark writes the tables from the executors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .findings import bucket

if TYPE_CHECKING:
    from .campaign import Campaign

RUNS = [("run_id", "string"), ("arm", "string"), ("batch", "int"), ("ordinal", "int"), ("seed", "long"),
        ("parent", "string"), ("mutation", "string"), ("family", "string"), ("brokers", "int"), ("steps", "int"),
        ("sim_ms", "long"), ("wall_s", "double"), ("elapsed_s", "double"), ("new_states", "int"),
        ("states", "int"), ("witnesses", "map<string,long>"), ("invariant", "string"), ("violation_step", "int"),
        ("violation_t", "long"), ("message", "string"), ("explained_by", "string"), ("fix_hints", "string"),
        ("bucket", "string"), ("header", "string")]
FINDINGS = [("finding_id", "string"), ("invariant", "string"), ("explained_by", "string"), ("signature", "string"),
            ("bucket", "string"), ("occurrences", "int"), ("representatives", "int"), ("rep_run", "string"),
            ("seed", "long"), ("original_steps", "int"), ("shrunk_steps", "int"), ("original_actions", "int"),
            ("shrunk_actions", "int"), ("shrink_runs", "int"), ("step_ratio", "double"),
            ("action_ratio", "double"), ("shrunk", "boolean"), ("replays", "boolean"), ("conforms", "string"),
            ("divergence", "string"), ("trace", "string"), ("trace_hash", "string"), ("message", "string"),
            ("found_at_s", "double"), ("header", "string")]
COVERAGE = [("arm", "string"), ("kind", "string"), ("key", "string"), ("first_run", "string"),
            ("first_batch", "int"), ("first_ordinal", "int"), ("first_elapsed_s", "double"), ("hits", "long")]


def schema_ddl(cols: list[tuple[str, str]]) -> str:
    return ", ".join(f"{n} {t}" for n, t in cols)


def run_rows(c: Campaign) -> list[tuple[Any, ...]]:
    out = []
    for r in c.runs:
        v = r["violation"] or {}
        out.append((r["id"], r["arm"], r["batch"], r["ordinal"], r["seed"], r.get("parent"), r.get("mutation"),
                    r["family"], r["brokers"], r["steps"], r["simMs"], float(r["wall"]), float(r["elapsedAt"]),
                    len(r["newStates"]), r["nStates"], {k: int(n) for k, n in r["witnesses"].items()},
                    v.get("invariant"), v.get("step"), v.get("t"), v.get("message"), r.get("explainedBy"),
                    ",".join(r.get("fixHints") or ()) or None,
                    bucket(v["invariant"], r.get("explainedBy")) if v else None,
                    json.dumps(r["header"], sort_keys=True)))
    return out


def finding_rows(c: Campaign) -> list[tuple[Any, ...]]:
    out = []
    for f in c.findings.values():
        b = c.buckets[f["bucket"]]
        out.append((f["id"], f["invariant"], f.get("explainedBy"), f["signature"], f["bucket"], b.count,
                    f["representatives"], f["rep"], f["seed"], f["originalSteps"], f["shrunkSteps"],
                    f["originalActions"], f["shrunkActions"], f["runs"], ratio(f["shrunkSteps"], f["originalSteps"]),
                    ratio(f["shrunkActions"], f["originalActions"]), bool(f["shrunk"]), bool(f["replays"]),
                    f["conforms"], f.get("divergence"), f["tracePath"], f["hash"], f["message"], float(f["foundAt"]),
                    json.dumps(f["header"], sort_keys=True)))
    return out


def ratio(a: int, b: int) -> float:
    return round(a / b, 4) if b else 1.0


def coverage_rows(c: Campaign) -> list[tuple[Any, ...]]:
    by_id = {r["id"]: r for r in c.runs}
    out = []
    for name, arm in c.arms.items():
        for kind, table in (("state", arm.coverage.states), ("witness", arm.coverage.witnesses)):
            for key, run_id in table.items():
                r = by_id[run_id]
                hits = arm.coverage.hits.get(key, 0) if kind == "witness" else 1
                out.append((name, kind, key, run_id, r["batch"], r["ordinal"], float(r["elapsedAt"]), int(hits)))
    return out


def write_tables(spark: Any, c: Campaign) -> dict[str, str]:
    """Rewrite the three tables under ``c.opts.out``; returns their paths."""
    out = Path(c.opts.out).resolve()
    paths = {}
    for name, cols, rows in (("runs", RUNS, run_rows(c)), ("findings", FINDINGS, finding_rows(c)),
                             ("coverage", COVERAGE, coverage_rows(c))):
        path = out / f"{name}.parquet"
        df = spark.createDataFrame(rows, schema=schema_ddl(cols))
        df.coalesce(1).write.mode("overwrite").parquet(path.as_uri())
        paths[name] = str(path)
    return paths
