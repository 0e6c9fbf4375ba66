"""F-TRUNCATED-TAIL-RESURRECTS on real builds (``rmqha/real/repros/truncated_tail.py``), one of the three positive
controls of the reproductions (upstream apache/rocketmq#10666, open): present on every served version. About a
minute a run, so ``-m slow``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqha.real.repro import REPRODUCED
from rmqha.real.repros import REPROS
from tests.real_repro import check_repro

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
