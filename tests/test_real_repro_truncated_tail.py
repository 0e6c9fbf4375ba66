"""F-TRUNCATED-TAIL-RESURRECTS on real builds (``rmqha/real/repros/truncated_tail.py``), one of the three positive
controls of the reproductions (upstream apache/rocketmq#10666, open): present on every served version. About a
minute a run, so ``-m slow``; with the kit's agent and the finding's fix rule (``--fix F-TRUNCATED-TAIL-RESURRECTS``:
``FixTruncatedTailResurrects``, the same change as ``fix-truncate-clears-file``) the same schedule does not reproduce
it: on 5.5.0 in the default run, as the suite's fix test, on the other versions behind ``-m slow``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqha.real import agent as A
from rmqha.real import netns
from rmqha.real.repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, run_repro
from rmqha.real.repros import REPROS
from rmqha.real.spec import run_id
from tests.real_repro import check_repro, require_real

FID = "F-TRUNCATED-TAIL-RESURRECTS"


def test_registered_with_its_invariant_and_expectations() -> None:
    r = REPROS[FID]
    assert r.invariant == "STORE-NO-RESURRECT"
    assert set(r.expect) == {"5.3.3", "5.4.0", "5.5.0"}
    assert all(v.startswith("present") for v in r.expect.values())


@pytest.mark.slow
@pytest.mark.parametrize("version", ["5.3.3", "5.4.0", "5.5.0"])
def test_real_truncated_tail_repro(tmp_path: Path, version: str) -> None:
    check_repro(FID, version, REPRODUCED, tmp_path / "run")


def _with_fix(folder: Path, version: str) -> None:
    """The reproduction with the fix rule: not reproduced, and the rule did the work (its lines say it cleared the
    cut messages' bytes past the truncation, on the broker the reproduction then kills and restarts)."""
    require_real()
    out = run_repro(REPROS[FID], version, folder, fixes=(FID,))
    assert netns.existing(run_id(folder)) == []
    assert out.fixes == [FID] and out.agent is not None and out.agent["fixesAbsent"] == {}
    if out.verdict == INCONCLUSIVE:
        pytest.skip(f"{FID} with its fix on {version}: inconclusive: {out.why}")
    assert out.verdict == NOT_REPRODUCED, (out.why, out.evidence)
    m = out.data["master"]
    fixes = [e for e in A.read_events(folder / "events" / "agent.jsonl") if e["ev"] == "fix" and e["node"] == m]
    assert fixes and fixes[0]["offset"] == out.data["logicalEnd"] and fixes[0]["nonZeroBytes"] > 0, fixes
    assert out.data["recovered"] == out.data["logicalEnd"] and not out.data["stale"]


def test_real_truncated_tail_fixed_by_the_agents_rule(tmp_path: Path) -> None:
    _with_fix(tmp_path / "run", "5.5.0")


@pytest.mark.slow
@pytest.mark.parametrize("version", ["5.3.3", "5.4.0"])
def test_real_truncated_tail_fixed_on_the_other_versions(tmp_path: Path, version: str) -> None:
    _with_fix(tmp_path / "run", version)
