"""Executor side: what one Spark task does with its work items, returning plain rows to the driver.

A work item is a dict, one of:

* ``{"kind": "runs", "ctx": {...}, "inputs": [...]}``: run each input (a fresh seed, or a mutant's seed, config and
  explicit schedule) with every invariant checked, validated against the model where the run is in its scope (unless
  the campaign runs ``--no-conform``: ``ctx["conform"]``) and the coverage probe on; a failing run is explained at once
  (``findings.explain``: re-runs with fixes on). One row per run.
* ``{"kind": "shrink", "ctx": {...}, "finding": {...}}``: shrink one representative violation, trace it, replay
  it, validate it (``findings.shrink_violation``). One row.

A run in which the simulator raises is a row whose violation is ``EXCEPTION`` (with the exception's text); a
shrink that raises is a row with ``error``. Rows hold no wall-clock value that feeds back into a run (``wall`` is
reported, never used to decide anything), and every item is a pure function of its contents, so a task Spark
retries (its executor died) returns the same rows.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import config_from_dict
from rmqha.impl.sim.runner import header_for
from rmqha.models.campaign import scope

from .findings import explain, fix_hints, shrink_violation
from .runs import probed_run
from .schedule import draw_mix, mix_config
from .settings import settings_from_dict

EXCEPTION = "EXCEPTION"  # the "invariant" of a run the simulator raised in


def header_of(ctx: dict[str, Any], inp: dict[str, Any]) -> tuple[dict[str, Any], str, int]:
    """The trace header of one input (a fresh seed gets its swarm mix here), its family and broker count."""
    if inp.get("config") is not None:
        cfg = config_from_dict(inp["config"])
        family = inp.get("family") or "?"
    else:
        base = config_from_dict(ctx["config"])
        mix = draw_mix(inp["seed"], base, settings_from_dict(ctx["settings"]))
        cfg = mix_config(base, mix)
        family = mix.family
    conform = ctx.get("conform", True) and scope(cfg, ctx["bugs"], inp.get("schedule")) is None
    header = header_for(cfg, inp["seed"], ctx["steps"], ctx["bugs"], inp.get("schedule"), None, ctx["profile"],
                        ctx["disabled"], conform=conform, rocketmq=ctx.get("rocketmq", B.DEFAULT_RELEASE))
    return header, family, cfg.cluster.brokers


def run_input(ctx: dict[str, Any], inp: dict[str, Any]) -> dict[str, Any]:
    header, family, brokers = header_of(ctx, inp)
    t0 = time.perf_counter()
    try:
        pr = probed_run(header, want_actions=ctx.get("guided", False))
    except Exception as exc:  # the simulator itself failed: a finding of its own kind, never shrunk
        return {"id": inp["id"], "arm": inp["arm"], "seed": inp["seed"], "parent": inp.get("parent"),
                "mutation": inp.get("mutation"), "family": family, "brokers": brokers, "steps": 0, "simMs": 0,
                "states": {}, "witnesses": {}, "header": header, "explainedBy": None,
                "violation": {"invariant": EXCEPTION, "step": None, "t": None,
                              "message": f"{type(exc).__name__}: {exc}"[:2000]},
                "wall": time.perf_counter() - t0}
    row: dict[str, Any] = {
        "id": inp["id"], "arm": inp["arm"], "seed": inp["seed"], "parent": inp.get("parent"),
        "mutation": inp.get("mutation"), "family": family, "brokers": brokers, "steps": pr.steps, "simMs": pr.sim_ms,
        "states": pr.states, "witnesses": pr.witnesses, "violation": None, "explainedBy": None, "header": header}
    if ctx.get("guided"):
        row["actions"] = pr.actions
        row["roles"] = pr.roles
    if pr.violation is not None:
        v = pr.violation.to_dict()
        row["violation"] = {k: v[k] for k in ("invariant", "step", "t", "message")}
        row["explainedBy"] = explain(header, v) if ctx.get("triage", True) else None
        if ctx.get("triage", True) and row["explainedBy"] is None and not any(
                B.BUGS[b].kind == "switch" for b in header["bugs"]):
            row["fixHints"] = fix_hints(header, v)
    row["wall"] = time.perf_counter() - t0
    return row


def shrink_item(ctx: dict[str, Any], f: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        res = shrink_violation(f["header"], f["violation"], f.get("budget", ctx["shrinkBudget"]))
    except Exception as exc:  # reported, and the campaign goes on (the run itself is in the runs table)
        return {"bucket": f["bucket"], "rep": f["rep"], "error": f"{type(exc).__name__}: {exc}"[:2000],
                "wall": time.perf_counter() - t0}
    res["trace"] = base64.b64encode(res["trace"]).decode()
    return {"bucket": f["bucket"], "rep": f["rep"], "explainedBy": f["explainedBy"],
            "seed": f["header"]["seed"], **res, "wall": time.perf_counter() - t0}


def _crash_once(marker: str | None) -> None:
    """Test hook: the first task to see ``marker`` missing creates it and kills its Python worker."""
    if marker and not os.path.exists(marker):
        with open(marker, "w") as fh:
            fh.write("crashed once\n")
        os._exit(17)


def run_items(items: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The ``mapPartitions`` function: every item of the partition, in order."""
    for item in items:
        ctx = item["ctx"]
        _crash_once(ctx.get("crashOnce"))
        if item["kind"] == "runs":
            for inp in item["inputs"]:
                yield run_input(ctx, inp)
        elif item["kind"] == "shrink":
            yield shrink_item(ctx, item["finding"])
        else:  # pragma: no cover - the driver only sends the two kinds
            raise ValueError(f"unknown work item {item['kind']!r}")
