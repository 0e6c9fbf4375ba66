"""What the kit's Java agent costs at start-up: ``rmqha real up`` with and without ``--agent``, in one run.

Each round brings the same cluster up twice, without the agent and with it (with its fix rules: ``--fix all``), in
an order that swaps between rounds, and takes it down. Figures: *up*, the whole ``real up`` (the supervisor's start
to every JVM listening: the nameserver and controllers first, then the brokers); *broker ready*, each broker's
start to its remoting port listening (``proc.ready`` in ``events/supervisor.jsonl``, the median of the brokers);
with the agent also *premain*, the agent's own start in each JVM (its ``started`` line). The ratios with/without
are the agent's cost. On a shared 2-core machine the JVMs' start varies a lot: read the ratio of the medians with
the spread beside it.

    python bench/bench_agent.py [--repeat N] [--version V] [--json out.json]

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

from rmqha.real import agent as A
from rmqha.real import control as C
from rmqha.real import maven
from rmqha.real.points import FIX_IDS
from rmqha.real.spec import real_config


def one(folder: Path, version: str, agent: bool) -> dict[str, Any]:
    t0 = time.monotonic()
    spec = C.up(folder, real_config("safe", {}), version=version, profile="safe", lifetime_s=600, fresh=True,
                agent=A.AgentOptions(fixes=FIX_IDS) if agent else None)
    up_s = time.monotonic() - t0
    try:
        ready = [json.loads(ln) for ln in (folder / "events" / "supervisor.jsonl").read_text().splitlines()]
        brokers = [float(e["after_ms"]) for e in ready if e["k"] == "proc.ready" and e["node"] in spec.brokers]
        premain = [float(e["premainMs"]) for e in A.read_events(spec.agent_events) if e["ev"] == "started"]
    finally:
        C.down(folder)
    return {"agent": agent, "upS": round(up_s, 2), "brokerReadyMs": statistics.median(brokers),
            "premainMs": statistics.median(premain) if premain else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--version", default=maven.PINNED)
    ap.add_argument("--json")
    a = ap.parse_args()
    A.build(maven.fetch(a.version))  # built before the first round: the build is not the start-up
    rows = []
    with tempfile.TemporaryDirectory(prefix="rmqha-bench-agent-") as tmp:
        for i in range(a.repeat):
            for agent in ((False, True) if i % 2 == 0 else (True, False)):
                r = one(Path(tmp) / "run", a.version, agent)
                rows.append(r)
                print(json.dumps(r), file=sys.stderr)

    def med(key: str, agent: bool) -> float:
        return statistics.median(float(r[key]) for r in rows if r["agent"] is agent)

    def spread(key: str, agent: bool) -> str:
        vals = sorted(float(r[key]) for r in rows if r["agent"] is agent)
        return f"{vals[0]:g}-{vals[-1]:g}"

    out = {"version": a.version, "repeat": a.repeat, "rows": rows,
           "upS": {"without": med("upS", False), "with": med("upS", True),
                   "ratio": round(med("upS", True) / med("upS", False), 2)},
           "brokerReadyMs": {"without": med("brokerReadyMs", False), "with": med("brokerReadyMs", True),
                             "ratio": round(med("brokerReadyMs", True) / med("brokerReadyMs", False), 2)},
           "premainMs": med("premainMs", True)}
    print(f"real up, RocketMQ {a.version}, {a.repeat} rounds (medians, spread):")
    up, br = out["upS"], out["brokerReadyMs"]
    print(f"  up            without {up['without']:.1f} s ({spread('upS', False)})  with {up['with']:.1f} s "
          f"({spread('upS', True)})  ratio {up['ratio']}")
    print(f"  broker ready  without {br['without']:.0f} ms  with {br['with']:.0f} ms  ratio {br['ratio']}")
    print(f"  the agent's premain, median over every JVM: {out['premainMs']:.0f} ms")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
