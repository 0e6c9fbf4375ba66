"""What every real-reproduction test shares: the prerequisite check (root for network namespaces, Java, Maven;
skipped without them unless ``RMQHA_REQUIRE_REAL=1``) and the verdict check of one run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rmqha.real import maven, netns
from rmqha.real.repro import INCONCLUSIVE, run_repro
from rmqha.real.repros import REPROS
from rmqha.real.spec import run_id


def require_real() -> None:
    ok, why = netns.available()
    if ok and not maven.maven_status()[0]:
        ok, why = False, "no Maven"
    if not ok:
        if os.environ.get("RMQHA_REQUIRE_REAL") == "1":
            pytest.fail(f"real RocketMQ runs are required here: {why}")
        pytest.skip(f"real RocketMQ: {why}")


def check_repro(fid: str, version: str, want: str, folder: Path) -> None:
    """One run of ``rmqha real repro fid --version version``: its verdict must be ``want``; an inconclusive run
    (a timing window the run did not hit) says nothing either way and skips; no namespace of the run is left."""
    require_real()
    out = run_repro(REPROS[fid], version, folder)
    assert netns.existing(run_id(folder)) == []
    if out.verdict == INCONCLUSIVE:
        pytest.skip(f"{fid} on {version}: inconclusive: {out.why}")
    assert out.verdict == want, (out.why, out.evidence)
