"""Derive a minimal replayable trace for every documented finding (docs/findings/traces/<id>.jsonl.gz).

For each finding: run seeds of the safe profile with every *other* finding's fix on; keep runs whose violation
the finding explains (with its own fix the violation is gone); take the earliest, shrink its fault schedule
by delta debugging, check that the shrunk run still fails and is clean with the fix, and write its trace and
an index (docs/findings/index.json) that tests/test_findings.py replays.

A finding of a progress invariant (LIVE-*) is searched with the settle tail on (``[sim] progress``); its explicit
runs end their fault phase at the heal point of the run they came from, so the tail starts where it did.

A finding the random search does not reach in a practical number of seeds has a hand-written starting point in
``EXPLICIT`` (seed, settings over the safe profile, explicit schedule); when the search finds no seed, that run is
shrunk and checked the same way, and its index entry records the search that came back empty.

    python scripts/derive_findings.py [--seeds 60] [--only F-ID] [--budget 200]
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS
from rmqha.impl.sim.config import Config, config_from_dict, default_config
from rmqha.impl.sim.faults import explicit_from_trace
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.shrink import shrink
from rmqha.impl.sim.tracefile import write_text

STEPS = 20_000
BUDGET = 200  # shrinking runs per finding (--budget)
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "findings"


# Starting points for findings the random search does not reach (see the module docstring).
EXPLICIT: dict[str, dict] = {
    "F-EPOCH-EQ-SPLICE": {
        # the logs must still be empty at the failover: no background producer; two sends, one routed to the deposed
        # master (the producer's cached route), one to the new master (the route refreshed after the first failed)
        "seed": 0,
        "config": {"workload": {"produce_interval": 0}},
        "schedule": [{"t": 31000, "do": "partition", "id": "p1", "links": [["ctl", "b3"], ["b3", "ctl"]]},
                     {"t": 45000, "do": "produce", "count": 1, "size": None},
                     {"t": 61000, "do": "produce", "count": 1, "size": None},
                     {"t": 70000, "do": "heal", "id": "p1"}],
    },
    "F-TOPIC-CONFIG-LOST-ON-FAILOVER": {
        # the expansion lands just after the slaves' sync; the producer's periodic route refresh (30 s) picks it
        # up; messages go to the new queues; the master dies before the slaves' next sync
        "seed": 1,
        "config": {"workload": {"produce_interval": 0, "consume_interval": 0, "queues": 4, "topic_config": True}},
        "schedule": [{"t": 8000, "do": "produce", "count": 4, "size": None},
                     {"t": 28000, "do": "expand-queues", "by": 2},
                     {"t": 31000, "do": "produce", "count": 6, "size": None},
                     {"t": 33000, "do": "crash", "node": "b2"}],
    },
    "F-PROPOSAL-AFTER-RESTART": {
        # two brokers; master b2's link to the controller holds its requests (stale-request) while it proposes b1;
        # b2 is killed, restarts, is cut from b1 and re-registers at the heal; it acknowledges alone; its dead
        # process's proposal arrives 12 s after the heal, then that connection's close
        "seed": 1,
        "config": {"cluster": {"brokers": 2}, "workload": {"produce_interval": 0, "consume_interval": 0}},
        "schedule": [{"t": 5000, "do": "partition", "id": "h", "links": [["b2", "ctl"]], "hold": 12000},
                     {"t": 6000, "do": "crash", "node": "b2"}, {"t": 7000, "do": "restart", "node": "b2"},
                     {"t": 7100, "do": "partition", "id": "c", "links": [["b2", "b1"], ["b1", "b2"]]},
                     {"t": 9000, "do": "heal", "id": "h"}, {"t": 10000, "do": "produce", "count": 3}],
    },
    "F-EPOCH-ENTRY-LOST-ON-RECONNECT": {
        # no background producer (the new epoch stays without bytes); b2 dies, b3 is master at epoch 2 and sends b1
        # its first frame (epoch 2, no body); b1's connection breaks and its handshake at the epoch's start drops the
        # entry; three sends land under epoch 2 on b1 without it; b3 is cut from the controller (its shrink of b1
        # cannot be applied) and b1's next handshake truncates them
        "seed": 1,
        "config": {"workload": {"produce_interval": 0, "consume_interval": 0}},
        "schedule": [{"t": 2000, "do": "produce", "count": 2}, {"t": 13000, "do": "crash", "node": "b2"},
                     {"t": 20000, "do": "break-ha", "node": "b1"}, {"t": 26000, "do": "produce", "count": 1},
                     {"t": 31000, "do": "produce", "count": 3},
                     {"t": 34000, "do": "partition", "id": "c", "links": [["b3", "ctl"], ["ctl", "b3"]]},
                     {"t": 35000, "do": "break-ha", "node": "b1"}],
    },
}


# Settings over the safe profile for the search of findings that need a fault kind of weight 0 by default.
SEARCH_CONFIG: dict[str, dict] = {
    "F-RECOVER-NORMALLY-PAST-CONFIRM": {"faults": {"weights": {"stop-broker": 3.0}}},
    "F-TRUNCATED-TAIL-RESURRECTS": {"sim": {"file_residue": True}},
    "F-TOPIC-CONFIG-LOST-ON-FAILOVER": {"workload": {"queues": 4, "topic_config": True},
                                        "faults": {"weights": {"expand-queues": 2.0}}},
    "F-SYNC-DELETES-EVERY-TOPIC": {"workload": {"queues": 4, "topic_config": True, "other_topics": 2000}},
    "F-SLAVE-FOLLOWS-DEPOSED-MASTER": {"sim": {"progress": True}},
    "F-PROPOSAL-AFTER-RESTART": {"faults": {"guards": True}},
}


def search_config(fid: str) -> Config:
    return config_from_dict(SEARCH_CONFIG.get(fid, {}), default_config("safe"))


def others(fid: str) -> list[str]:
    """The other findings' fixes, and the upstream switches the finding needs (a finding of a later release)."""
    return sorted([*(f for f in B.FIXES_ALL if f != FINDINGS[fid].fix), *FINDINGS[fid].needs])


def probe(args: tuple[str, int]) -> tuple[str, int, int | None]:
    fid, seed = args
    cfg = search_config(fid)
    r = run(cfg, seed, STEPS, bugs=others(fid), record=False)
    if r.violation is None or r.violation.invariant not in FINDINGS[fid].invariants:
        return fid, seed, None
    fixed = run(cfg, seed, STEPS, bugs=sorted([*others(fid), FINDINGS[fid].fix]), record=False)
    explained = fixed.violation is None or fixed.violation.step > r.violation.step
    return fid, seed, r.violation.step if explained else None


def heal_point(lines: list[dict]) -> int | None:
    """The heal point of a run with the settle tail (its ``settle`` step), or None."""
    return next((x["t"] for x in lines if x.get("ev") == "settle" and "healed" in x), None)


def derive(fid: str, seeds: list[int]) -> dict:
    cfg = search_config(fid)
    bugs = others(fid)
    for seed in seeds:
        r = run(cfg, seed, STEPS, bugs=bugs)
        lines = [json.loads(x) for x in r.text.splitlines()[1:-1]]
        schedule = [{k: v for k, v in a.items() if k != "fault"} for a in explicit_from_trace(lines)]
        entry = demonstrate(fid, cfg, seed, schedule, r.violation.invariant, r.violation.time, heal_point(lines))
        if entry is not None:
            return entry
    raise SystemExit(f"{fid}: no usable seed")


def derive_explicit(fid: str) -> dict:
    start = EXPLICIT[fid]
    cfg = config_from_dict(start["config"], default_config("safe"))
    r = run(cfg, start["seed"], STEPS, bugs=others(fid), schedule=start["schedule"], record=False)
    if r.violation is None or r.violation.invariant not in FINDINGS[fid].invariants:
        raise SystemExit(f"{fid}: the explicit starting schedule no longer fails ({r.violation})")
    entry = demonstrate(fid, cfg, start["seed"], start["schedule"], r.violation.invariant, r.violation.time)
    if entry is None:
        raise SystemExit(f"{fid}: the explicit starting schedule does not shrink into a clean demonstration")
    return entry


def demonstrate(fid: str, cfg: Config, seed: int, schedule: list[dict], inv: str, t: int,
                heal: int | None = None) -> dict | None:
    """Shrink ``schedule`` (which fails ``inv`` at ``t``; a progress invariant: after the heal point ``heal``), check
    that the shrunk run fails without the fix and is clean with it, write its trace; the index entry, or None if it
    is no clean demonstration."""
    bugs = others(fid)
    max_time = heal if heal is not None else t + 500
    res = shrink(cfg, seed, STEPS, bugs, schedule, inv, max_time, BUDGET)
    final = run(cfg, seed, STEPS, bugs=bugs, schedule=res.schedule, max_time=max_time, profile="safe")
    fixed = run(cfg, seed, STEPS, bugs=sorted([*bugs, FINDINGS[fid].fix]), schedule=res.schedule, max_time=max_time,
                record=False)
    if final.violation is None or fixed.violation is not None:
        print(f"{fid}: seed {seed} does not shrink into a clean demonstration; next")
        return None
    path = OUT / "traces" / f"{fid}.jsonl.gz"
    write_text(str(path), final.text)
    return {"id": fid, "seed": seed, "invariant": final.violation.invariant, "step": final.violation.step,
            "t": final.violation.time, "message": final.violation.message, "faults": len(res.schedule),
            "faultsBeforeShrinking": len(schedule), "trace": f"traces/{fid}.jsonl.gz", "hash": final.digest,
            "otherFixes": [b for b in bugs if b not in FINDINGS[fid].needs],
            **({"upstream": list(FINDINGS[fid].needs)} if FINDINGS[fid].needs else {})}


def main() -> None:
    global BUDGET
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=60)
    ap.add_argument("--only")
    ap.add_argument("--budget", type=int, default=BUDGET, help="shrinking runs per finding")
    args = ap.parse_args()
    BUDGET = args.budget
    ids = [args.only] if args.only else list(FINDINGS)
    hits: dict[str, list[tuple[int, int]]] = {}
    with ProcessPoolExecutor() as pool:
        for fid, seed, step in pool.map(probe, [(f, s) for f in ids for s in range(1, args.seeds + 1)]):
            if step is not None:
                hits.setdefault(fid, []).append((step, seed))
    index_path = OUT / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    for fid in ids:
        found = sorted(hits.get(fid, []))
        print(f"{fid}: {len(found)} of {args.seeds} seeds")
        if found:
            entry = derive(fid, [s for _, s in found])
        elif fid in EXPLICIT:
            print("  not found: shrinking its explicit starting schedule (EXPLICIT)")
            entry = derive_explicit(fid)
            entry["origin"] = "explicit"
        else:
            print(f"  not found: widen --seeds (e.g. --only {fid} --seeds 400)")
            continue
        entry["seedsHit"] = len(found)
        entry["seedsSearched"] = args.seeds
        index[fid] = entry
        print(f"  seed {entry['seed']}: {entry['invariant']} at step {entry['step']}, {entry['faults']} fault(s) "
              f"(from {entry['faultsBeforeShrinking']})")
        write_text(str(index_path), json.dumps(index, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
