"""The safe real run under full CPU load (issue 30, item 3): with every core kept busy by a load generator, a master
killed in the safe configuration still fails over inside the SyncStateSet, loses nothing and converges; a slow
machine gives slower convergence figures in the result, not a violation.

The load generator is ``os.cpu_count()`` Python processes spinning at normal priority (each in its own process
group, dying with the test's process), started before the cluster and ended after it. It needs what the real runs
of ``tests/test_real.py`` need (root, Java, Maven, RocketMQ 5.3.3 fetched); it takes several minutes, so it is
``slow``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl.sim.children import end_child, start_child

from rmqha.real import maven
from rmqha.real.converge import SETTLED
from rmqha.real.run import RealTestOptions, run_test
from rmqha.real.spec import real_config

from .test_real import _nothing_left, real_ready  # noqa: F401  (the fixture)

SPIN = "import time\nend = time.monotonic() + 1800\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture
def busy_cores() -> Iterator[int]:
    """Every core kept busy for the test's length (each spinner ends itself after 30 min at the latest)."""
    n = os.cpu_count() or 1
    procs = [start_child([sys.executable, "-c", SPIN]) for _ in range(n)]
    try:
        yield n
    finally:
        for p in procs:
            end_child(p)


@pytest.mark.slow
def test_the_safe_real_run_under_full_cpu_load_is_valid(real_ready: None, busy_cores: int,  # noqa: F811
                                                         tmp_path: Path) -> None:
    folder = tmp_path / "loaded"
    with open("/proc/loadavg") as f:
        load_before = f.read().split()[0]
    opts = RealTestOptions(folder, real_config("safe", {}), "safe", maven.PINNED, duration=20.0,
                           faults=("kill-master",), down=4.0, settle=60.0)
    try:
        r: dict[str, Any] = run_test(opts, lambda m: print(m, file=sys.stderr))
    finally:
        _nothing_left(folder)
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[0]
    print(f"load {load_before} before, {load_after} after; {busy_cores} spinners; convergence {r['convergence']}",
          file=sys.stderr)
    assert r["valid"], (r["violations"], r["notes"], r["convergence"])
    (fo,) = r["failovers"]
    assert fo["newMaster"] not in (None, fo["oldMaster"]) and fo["newMasterInSss"], fo
    c = r["convergence"]
    assert c["outcome"] == "converged" and c["afterS"] is not None, c
    assert c["paceS"] > 0 and c["boundS"] >= 60.0
    assert all(c["times"][k] is not None for k in ("LIVE-MASTER", "LIVE-SSS-NO-DEAD", "LIVE-SSS-CATCHUP", SETTLED))
    assert "converged on" in r["checked"]["LIVE-MASTER"]
