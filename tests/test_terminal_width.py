"""What the commands print, at 80 columns (``rmqha/cli/terminal.py``): the progress of ``rmqha fuzz`` (the bar on a
terminal, the plain lines on a log) and of ``rmqha simulate --seeds``, their summaries, and the tables of
``rmqha cluster status`` and ``rmqha real status``. Every line fits, the key figures are there, and ids, invariant
names and node names are whole. The names are the longest the kit has (its invariant catalogue and findings)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rmqha.impl.findings import FINDINGS
from rmqha.impl.invariants import BY_ID
from rmqha.impl.sim.config import default_config
from rmqha.spark_fuzz.campaign import Campaign, Progress, options_from
from rmqha.spark_fuzz.findings import finding_id

from rmqha.cli.terminal import (
    FuzzProgress,
    batch_progress,
    batch_summary,
    cluster_failover_line,
    cluster_rows,
    cluster_status_table,
    fuzz_log_lines,
    fuzz_summary,
    real_status_table,
)
from rmqha.cluster.report import process_cell
from rmqha.cluster.spec import ClusterSpec
from rmqha.real.observe import BrokerView, ControllerView, Snapshot
from rmqha.real.spec import RealSpec

ROOT = Path(__file__).resolve().parent.parent
INV = sorted(BY_ID, key=lambda i: (-len(i), i))  # the longest invariant names first
FIX = sorted(FINDINGS, key=lambda i: (-len(i), i))  # the longest finding names first
REPR = re.compile(r"\{'|\['|\bTrue\b|\bFalse\b|\bNone\b")


def printed(r: RenderableType, width: int = 80, terminal: bool = False) -> list[str]:
    c = Console(width=width, file=io.StringIO(), record=True, force_terminal=terminal, color_system=None)
    c.print(r)
    return c.export_text().splitlines()


def fits(lines: list[str], width: int = 80) -> None:
    assert lines and max(map(len, lines)) <= width, "\n".join(ln for ln in lines if len(ln) > width)
    assert not REPR.search("\n".join(lines)), "\n".join(lines)


def _progress(big: bool) -> Progress:
    n = 1000 if big else 1
    return Progress(1234 * n, 8_451_240 * n, 66.2, 120 * n, 8, 3 * n, {"guided": 9191 * n, "unguided": 8000 * n},
                    {"guided": 15, "unguided": 14}, 12, 2)


def test_fuzz_progress_bar_keeps_the_key_figures_at_80_columns() -> None:
    for big in (False, True):
        p = _progress(big)
        c = Console(width=80, file=io.StringIO(), record=True, force_terminal=True, color_system=None)
        bar = FuzzProgress(60, False, c)
        bar.show(p, 30)
        lines = printed(bar.progress.make_tasks_table(bar.progress.tasks), terminal=True)
        fits(lines)
        assert len(lines) == 1, lines
        line = lines[0]
        assert f"{p.runs:,} runs" in line and f"{p.violations:,} viol" in line, line
        assert f"{p.unique} uniq" in line and f"{p.unexplained:,} unexpl" in line, line
        wide = printed(bar.progress.make_tasks_table(bar.progress.tasks), width=220, terminal=True)[0]
        assert "steps/s" in wide and "witnesses 15" in wide and f"{p.unique} unique" in wide, wide


def test_fuzz_log_lines_fit_80_columns_key_figures_first() -> None:
    p = _progress(False)
    lines = fuzz_log_lines(p)
    fits(lines)
    assert lines[0].startswith("fuzz     66 s: 1,234 runs, 120 violations, 8 unique, 3 unexplained"), lines
    assert any("witnesses 15" in ln for ln in lines) and len(lines) == 2, lines


def _fuzz_summary() -> dict[str, Any]:
    long_inv, next_inv, third = INV[:3]
    ids = [finding_id(long_inv, "a"), finding_id(long_inv, "b"), finding_id(next_inv, "c")]
    buckets = [{"bucket": f"{long_inv}|x", "invariant": long_inv, "explainedBy": FIX[0], "count": 117,
                "seeds": [1, 2], "firstAt": 1.0, "fixHints": []},
               {"bucket": f"{next_inv}|x", "invariant": next_inv, "explainedBy": None, "count": 3, "seeds": [5],
                "firstAt": 2.0, "fixHints": [FIX[1], FIX[2]]},
               {"bucket": f"{third}|x", "invariant": third, "explainedBy": FIX[2], "count": 9, "seeds": [7],
                "firstAt": 3.0, "fixHints": []}]

    def finding(fid: str, b: dict[str, Any]) -> dict[str, Any]:
        return {"id": fid, "invariant": b["invariant"], "explainedBy": b["explainedBy"], "bucket": b["bucket"],
                "shrunkActions": 13, "originalActions": 140, "shrunkSteps": 5726, "originalSteps": 20000,
                "replays": True, "conforms": "diverges (step 1204: b2 role)"}

    return {"out": "runs/fuzz", "arms": ["guided", "unguided"], "bugs": [], "profile": "safe", "runs": 1234,
            "steps": 8_451_240, "simSeconds": 1.0, "elapsed": 86.2, "fuzzElapsed": 66.0, "stepsPerSecond": 128_049,
            "violations": 129, "buckets": buckets,
            "findings": [finding(ids[0], buckets[0]), finding(ids[1], buckets[0]), finding(ids[2], buckets[1])],
            "unexplained": 3, "shrinkErrors": [], "runsPerSecond": 18.7, "resumedBatches": 0, "detected": {},
            "coverage": {"guided": {"states": 9191, "witnesses": {"a": 1}, "runs": 617}},
            "tables": {"runs": "x", "findings": "y"}, "report": "runs/fuzz/report.html"}


def test_fuzz_summary_at_80_columns_keeps_ids_and_invariants_whole(tmp_path: Path) -> None:
    s = _fuzz_summary()
    shape = Campaign(None, options_from(str(tmp_path), default_config("safe").to_dict(), None)).summary()
    assert set(s) == set(shape) | {"tables", "report"}  # what the command prints: the campaign's summary
    lines = printed(fuzz_summary(s))
    fits(lines)
    text = "\n".join(lines)
    assert "1,234 runs, 129 violations, 3 unique findings, 3 unexplained" in text
    for f in s["findings"]:
        assert f["id"] in text, f["id"]
    for b in s["buckets"]:
        assert b["invariant"] in text, b["invariant"]
    assert FIX[0] in text and "unexplained" in text and "not shrunk" in text
    wide = "\n".join(printed(fuzz_summary(s), width=200))
    assert re.search(rf"{re.escape(INV[0])} +{re.escape(FIX[0])} +117 +{re.escape(s['findings'][0]['id'])}", wide)


def test_simulate_batch_at_80_columns() -> None:
    inv = INV[0]
    results = [{"seed": k, "simMs": 1000, "violation": {"invariant": inv} if k % 3 == 0 else None,
                "finding": FIX[0] if k % 2 else None} for k in range(1, 40)]
    lines = printed(batch_summary(results, "safe", sorted(FIX[:3]), 12345.0, 12.3))
    fits(lines)
    text = "\n".join(lines)
    assert "39 seeds, 13 violations, 6 unexplained" in text
    assert inv in text and FIX[0] in text and "3 9 15 21 27 33 39" in text
    c = Console(width=80, file=io.StringIO(), record=True, force_terminal=True, color_system=None)
    bar = batch_progress(False, c)
    bar.add_task("seeds", total=100_000, completed=99_999, stat="12,345 violations")
    fits(printed(bar.make_tasks_table(bar.tasks), terminal=True))


def _cluster() -> tuple[ClusterSpec, dict[str, Any]]:
    r = json.loads((ROOT / "tests" / "data" / "reports" / "cluster-result.json").read_text())
    spec = ClusterSpec(ROOT, default_config("safe").to_dict(), 1, [], ["ns", "ctl", "b1", "b2", "b3", "p1", "c1"],
                       ["ctl"], ["b1", "b2", "b3"], "ns", {}, 0, 0.0, 600)
    return spec, r


def test_cluster_status_at_80_columns() -> None:
    spec, r = _cluster()
    states = r["final"]
    procs = {n: process_cell(st.get("pid") if st else None) for n, st in states.items()}
    procs["b3"] = process_cell(4_194_304, "no answer")
    lines = printed(cluster_status_table(cluster_rows(spec, states, procs), "n1 (12 links)"))
    fits(lines)
    text = "\n".join(lines)
    for n in spec.nodes:
        assert re.search(rf"^{n} ", text, re.M), n
    assert "{b1, b2, b3}" in text and "down (no process)" in text and "pid 4194304, no answer" in text
    assert "master" in text and "leader" in text and "partitions: n1 (12 links)" in text
    wide = "\n".join(printed(cluster_status_table(cluster_rows(spec, states, procs), "none"), width=160))
    assert "confirm" in wide and "left out" not in wide and "24,355" in wide
    for f in r["failovers"]:
        line = cluster_failover_line(f)
        assert not REPR.search(line) and f["recipe"] in line, line


def test_real_status_at_80_columns() -> None:
    spec = RealSpec(ROOT, "r1", "5.5.1", "DLedger", ["ctl1", "ctl2", "ctl3"], ["b1", "b2", "b3"],
                    default_config("safe").to_dict(), "safe", 600, 0)
    ctl = {n: ControllerView(n, True, is_leader=n == "ctl1", master="b2", master_epoch=12, sss_epoch=31,
                             sss=[1, 2, 3], ids={1: "b1", 2: "b2", 3: "b3"}) for n in spec.controllers}
    brokers = {"b1": BrokerView("b1", False, "connect to 127.0.0.11:10911 failed: connection refused (errno 111)"),
               "b2": BrokerView("b2", True, broker_id=2, role="MASTER", max_offset=1_234_567_890,
                                epochs=[(1, 0, 100), (5, 100, 900), (12, 900, -1)]),
               "b3": BrokerView("b3", True, broker_id=3, role="SLAVE", max_offset=1_234_567_890,
                                epochs=[(1, 0, 100), (5, 100, 900), (12, 900, -1)])}
    procs = {n: {"state": "running", "pid": 40_000 + k} for k, n in enumerate(spec.nodes)}
    procs |= {"b1": {"state": "exited", "pid": 40_004, "code": -9}, "ctl3": {"state": "starting", "pid": 40_003}}
    lines = printed(real_status_table(spec, Snapshot(0, ctl, brokers), procs))
    fits(lines)
    text = "\n".join(lines)
    assert "{b1, b2, b3}" in text and "12 (sE 31)" in text and "down (signal 9)" in text
    assert "pid 40003, starting" in text and "b1: connect to 127.0.0.11:10911 failed" in text
    for n in spec.nodes:
        assert re.search(rf"^{n} ", text, re.M), n
    wide = "\n".join(printed(real_status_table(spec, Snapshot(0, ctl, brokers), procs), width=240))
    assert "1@0 5@100 12@900" in wide and "1,234,567,890" in wide and "left out" not in wide
    assert "left out at this width: " in text  # and says so at 80
