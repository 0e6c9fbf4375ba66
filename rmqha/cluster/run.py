"""``rmqha cluster test``: a cluster, a workload, a fault schedule, then the verdict (Jepsen's loop, with the
catalogue's invariants and the kit's trace shape).

Phases, each bounded in time: up (every process answers), warm-up (a master whose SyncStateSet holds every broker),
the workload (the producer ``p1`` and the consumer ``c1`` run from the start; the nemesis plays its recipes spread
over ``duration``), settle (every fault undone; the producer stopped; wait until the master's SyncStateSet is whole
and every broker has its log end), the probe (the producer back for ``PROBE_S`` seconds: its sends are LIVE-PUTS's),
then down and the checks (the progress invariants on the final states, when it settled). Outputs in the run folder:
``result.json`` (verdict, counts, failovers, final states), ``history.jsonl`` (the client history), ``trace.jsonl``
(the merged trace), ``report.html``; the cluster's own folders (traces, logs, files) stay.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..impl.sim.config import Config
from . import control as C
from .check import check, failovers, merged_trace, read_events, write_json
from .nemesis import RECIPES, Nemesis
from .report import write_report
from .spec import ClusterSpec

PROBE_S = 4.0
"""How long the producer runs again after the settle: puts must succeed then (LIVE-PUTS)."""


@dataclass
class RunOptions:
    folder: Path
    cfg: Config
    profile: str
    duration: float = 20.0
    faults: tuple[str, ...] = ("kill-master",)
    seed: int = 1
    bugs: frozenset[str] = frozenset()
    down: float = 4.0
    settle: float = 20.0
    fresh: bool = False  # wipe an earlier run in ``folder`` (rundir.py); without it, such a folder is refused


def run_test(opts: RunOptions, say: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    for r in opts.faults:
        if r not in RECIPES:
            raise C.ClusterError(f"unknown fault {r!r} (known: {', '.join(RECIPES)})")
    t_begin = time.monotonic()
    spec = C.up(opts.folder, opts.cfg, seed=opts.seed, bugs=opts.bugs,
                max_lifetime=int(opts.duration + opts.settle + 60 * (1 + len(opts.faults))), fresh=opts.fresh,
                owned=True)
    try:
        nem, final, notes, settled, probe_from = _workload(spec, opts, say)
    finally:
        C.down(spec)
    events = read_events(spec)
    verdict = check(spec, events, final, settled, probe_from)
    verdict.notes = notes + verdict.notes
    fo = failovers(spec, events, nem.context, nem.events)
    history = [e for e in events if e["k"].startswith("client.")]
    with open(spec.dir / "history.jsonl", "w", encoding="utf-8") as f:
        for e in history:
            f.write(json.dumps(e, sort_keys=True) + "\n")
    (spec.dir / "trace.jsonl").write_text(merged_trace(spec, events, nem.events, verdict), encoding="utf-8")
    result: dict[str, Any] = {"valid": verdict.valid, "violations": verdict.violations, "counts": verdict.counts,
              "finalMaster": verdict.final_master, "notes": verdict.notes, "failovers": fo, "faults": nem.events,
              "final": final, "profile": opts.profile, "bugs": sorted(opts.bugs), "duration": opts.duration,
              "recipes": list(opts.faults), "wallSeconds": round(time.monotonic() - t_begin, 1),
              "conformance": "n/a: conformance re-runs a trace's seed in the simulator; a real run has none to "
                             "re-run (the merged trace is a record, not a replayable run)"}
    for v in result["violations"]:  # the full lists are in the history; the result keeps a sample
        if len(v.get("lost", ())) > 50:
            v["lost"] = v["lost"][:50]
    write_json(spec.dir / "result.json", result)
    result["report"] = write_report(spec, result)
    return result


def _workload(spec: ClusterSpec, opts: RunOptions, say: Callable[[str], None]) -> tuple[
        Nemesis, dict[str, dict[str, Any] | None], list[str], bool, int | None]:
    """Warm-up, the workload under the fault schedule, settle, and once settled a probe (the producer again for
    ``PROBE_S``: puts must succeed then, LIVE-PUTS); the final status of every node, the notes, whether it settled
    and when the probe began."""
    say(f"cluster up in {opts.folder} ({len(spec.nodes)} processes)")
    nem = Nemesis(spec, opts.down, say)
    notes: list[str] = []
    try:
        warm = nem.wait_master(30.0, full=True)
        if warm is None:
            notes.append("no master with a whole SyncStateSet within 30 s of start")
        say(f"warm: master {warm[0] if warm else None}")
        start = time.monotonic()
        gap = opts.duration / (len(opts.faults) + 1)
        for i, recipe in enumerate(opts.faults):
            _sleep_until(start + gap * (i + 1) - opts.down / 2)
            nem.play(recipe)
        _sleep_until(start + opts.duration)
        nem.settle()
        C.signal_node(spec, "p1", signal.SIGKILL)
        nem.act("crash", node="p1", why="end of the workload")
        settled = nem.wait(lambda: _settled(nem), opts.settle, 0.3)
        probe_from: int | None = None
        if not settled:
            notes.append(f"not settled within {opts.settle:g} s (a master with the whole SyncStateSet and every "
                         "log end equal)")
        else:
            probe_from = nem.act("restart", node="p1", why="probe: puts after the settle")["t"]
            C.start_node(spec, "p1")
            time.sleep(PROBE_S)
            C.signal_node(spec, "p1", signal.SIGKILL)
            nem.act("crash", node="p1", why="end of the probe")
        time.sleep(1.0)  # the consumer's last pulls
        return nem, {n: C.query(spec, n) for n in spec.nodes}, notes, settled, probe_from
    finally:
        nem.close()


def _sleep_until(t: float) -> None:
    delay = t - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _settled(nem: Nemesis) -> bool:
    m = nem.master()
    if m is None or len(m[1]["sss"]) != len(nem.spec.brokers):
        return False
    ends = [(C.query(nem.spec, b, 0.5) or {}).get("max") for b in nem.spec.brokers]
    return len(set(ends)) == 1
