"""How well the kit's timing matches real RocketMQ: start-up and failover, three ways, in one run.

The same scenario, on the same settings (the safe profile with the short timings of ``rmqha cluster``,
``rmqha/cluster/spec.py: LOCAL_TIMING``, which ``rmqha real`` also takes):

* **simulator**: the deterministic simulator (simulated time), an explicit schedule that SIGKILLs the master at
  20 s and restarts it 5 s later;
* **cluster**: ``rmqha cluster test --faults kill-master`` (the kit's own core, real processes on loopback);
* **real**: ``rmqha real test --faults kill-master`` (Apache RocketMQ from Maven Central).

Figures: *start-up*, from the first process started to a master whose SyncStateSet holds every broker; *elected
after*, from the kill to the controller naming another master (the simulator: the new master's role change; the
cluster: its status; real: the admin API, sampled twice a second, so up to one round late); *first write after*,
from the kill to the first acknowledged send on the new master (the client's own clock: the figure a user feels).
The ratios real/simulator and real/cluster say how far the kit's timing is from the real system's.

    python bench/bench_real.py [--repeat N] [--version V] [--json out.json]

Needs what ``rmqha real`` needs (root, Java 17, Maven). Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rmqha.impl.sim.runner import run as sim_run

from rmqha.cluster.run import RunOptions
from rmqha.cluster.run import run_test as cluster_test
from rmqha.cluster.spec import local_config
from rmqha.real import maven
from rmqha.real.run import RealTestOptions
from rmqha.real.run import run_test as real_test
from rmqha.real.spec import real_config

KILL_AT = 20_000


def _obs(text: str) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for line in text.splitlines()[1:-1]:
        d = json.loads(line)
        for o in d.get("obs", ()):
            out.append((int(d["t"]), o))
    return out


def simulator() -> dict[str, Any]:
    cfg = real_config("safe", {})
    first = sim_run(cfg, 1, 10**6, schedule=[], max_time=KILL_AT)
    assert first.text is not None
    obs = _obs(first.text)
    whole = next(t for t, o in obs if o["k"] == "ctl.apply" and len((o.get("after") or {}).get("syncStateSet") or [])
                 == cfg.cluster.brokers)
    master = [o["n"] for _, o in obs if o["k"] == "brk.role" and o["role"] == "MASTER"][-1]
    sched = [{"t": KILL_AT, "do": "crash", "node": master}, {"t": KILL_AT + 5000, "do": "restart", "node": master}]
    r = sim_run(cfg, 1, 10**6, schedule=sched, max_time=KILL_AT + 15_000)
    assert r.text is not None
    obs = _obs(r.text)
    new = next(((t, o["n"]) for t, o in obs if t >= KILL_AT and o["k"] == "brk.role" and o["role"] == "MASTER"
                and o["n"] != master), None)
    write = None if new is None else next((t for t, o in obs if t >= KILL_AT and o["k"] == "client.send-result"
                                           and o["status"] == "PUT_OK" and o.get("target") == new[1]), None)
    return {"startupS": whole / 1000, "electedAfterMs": None if new is None else new[0] - KILL_AT,
            "firstWriteAfterMs": None if write is None else write - KILL_AT}


def cluster(folder: Path) -> dict[str, Any]:
    t0 = time.monotonic()
    r = cluster_test(RunOptions(folder, local_config({}), "safe", duration=20.0, faults=("kill-master",)))
    history = [json.loads(x) for x in (folder / "history.jsonl").read_text().splitlines()]
    faults = [json.loads(x) for x in (folder / "faults.jsonl").read_text().splitlines()]
    crash = next(f for f in faults if f["do"] == "crash" and f.get("why", "") != "end of the workload")
    fo = r["failovers"][0] if r["failovers"] else {}
    new = fo.get("newMaster")
    write = next((e["t"] for e in history if e["k"] == "client.send-result" and e["t"] >= crash["t"]
                  and e["status"] == "PUT_OK" and e.get("target") == new), None)
    obs = _obs((folder / "trace.jsonl").read_text())
    warm = next((t for t, o in obs if o["k"] == "ctl.apply" and len((o.get("after") or {}).get("syncStateSet") or [])
                 == 3), None)
    return {"startupS": None if warm is None else warm / 1000, "wallS": round(time.monotonic() - t0, 1),
            "electedAfterMs": fo.get("electedAfterMs"),
            "firstWriteAfterMs": None if write is None else write - crash["t"]}


def real(folder: Path, version: str) -> dict[str, Any]:
    r = real_test(RealTestOptions(folder, real_config("safe", {}), "safe", version, duration=20.0,
                                  faults=("kill-master",), down=5.0, fresh=True))
    fo = r["failovers"][0] if r["failovers"] else {}
    return {"startupS": r["timing"].get("warmS"), "upS": r["timing"].get("upS"), "valid": r["valid"],
            "electedAfterMs": fo.get("electedAfterMs"), "firstWriteAfterMs": fo.get("firstWriteAfterMs")}


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--version", default=maven.PINNED)
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.repeat < 1:
        print("bench_real: --repeat must be >= 1", file=sys.stderr)
        return 2
    rows: dict[str, list[dict[str, Any]]] = {"simulator": [], "cluster": [], "real": []}
    with tempfile.TemporaryDirectory(prefix="rmqha-bench-real-") as tmp:
        for i in range(a.repeat):
            rows["simulator"].append(simulator())
            rows["cluster"].append(cluster(Path(tmp) / f"cluster{i}"))
            rows["real"].append(real(Path(tmp) / f"real{i}", a.version))
            print(f"round {i + 1}: " + json.dumps({k: v[-1] for k, v in rows.items()}), file=sys.stderr)
    med = {k: {m: _median(v, m) for m in ("startupS", "electedAfterMs", "firstWriteAfterMs")} for k, v in rows.items()}
    print(f"| figure | simulator | cluster | real {a.version} | real / simulator | real / cluster |")
    print("|---|---|---|---|---|---|")
    for m, label in (("startupS", "start-up to a whole SyncStateSet (s)"),
                     ("electedAfterMs", "kill to new master (ms)"),
                     ("firstWriteAfterMs", "kill to first write on it (ms)")):
        s, c, r = med["simulator"][m], med["cluster"][m], med["real"][m]

        def ratio(x: float | None, y: float | None) -> str:
            return "-" if x is None or not y else f"{x / y:.2f}"

        print(f"| {label} | {s if s is not None else '-'} | {c if c is not None else '-'} | "
              f"{r if r is not None else '-'} | {ratio(r, s)} | {ratio(r, c)} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "median": med}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
