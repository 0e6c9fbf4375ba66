"""The safe real run under full CPU load (issue 30, item 3): with every core kept busy by a load generator, a master
killed in the safe configuration still fails over inside the SyncStateSet, loses nothing and converges; a slow
machine gives slower convergence figures in the result, not a violation.

It runs the command a CI job would, ``rmqha real test ... --json --junit FILE``, and validates its JUnit output too.
The load generator is ``os.cpu_count()`` Python processes spinning at normal priority (each in its own process
group, dying with the test's process), started before the cluster and ended after it. It needs what the real runs
of ``tests/test_real.py`` need (root, Java, Maven, RocketMQ 5.3.3 fetched); it takes several minutes, so it is
``slow``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl.sim.children import end_child, start_child

from rmqha.cli import main
from rmqha.real import maven
from rmqha.real.converge import SETTLED

from .junit_schema import Schema
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
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, report = tmp_path / "loaded", tmp_path / "junit.xml"
    with open("/proc/loadavg") as f:
        load_before = f.read().split()[0]
    try:  # the command a CI job runs, with its JUnit output (docs/ci.md)
        code = main(["real", "test", "--dir", str(folder), "--faults", "kill-master", "--duration", "20", "--down",
                     "4", "--settle", "60", "--version", maven.PINNED, "--json", "--junit", str(report)])
    finally:
        _nothing_left(folder)
    r: dict[str, Any] = json.loads(capsys.readouterr().out)
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
    assert code == 0
    suite = Schema().validate(report.read_bytes()).find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and int(suite.get("tests", 0)) >= len(r["checked"])
