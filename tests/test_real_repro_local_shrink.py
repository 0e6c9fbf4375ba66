"""F-LOCAL-SHRINK-BEFORE-ACCEPT on real builds (``rmqha/real/repros/local_shrink.py``): its helpers on planted
producer lines and snapshots, and (``-m slow``) the real runs: absent on 5.3.3, present on 5.4.0 and 5.5.0 (PR
#9897). About a minute a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqha.real.observe import BrokerView, Snapshot
from rmqha.real.repro import NOT_REPRODUCED, REPRODUCED
from rmqha.real.repros import REPROS
from rmqha.real.repros.local_shrink import acked_missing, in_sync, results_since, status_counts
from tests.real_repro import check_repro

FID = "F-LOCAL-SHRINK-BEFORE-ACCEPT"

LINES = [
    {"k": "send", "key": "p-1", "t": 990},
    {"k": "send-result", "key": "w-9", "status": "SEND_OK", "t": 900},
    {"k": "send-result", "key": "p-1", "status": "SEND_OK", "t": 1000},
    {"k": "send-result", "key": "p-2", "status": "SEND_OK", "t": 1100},
    {"k": "send-result", "key": "p-3", "status": "FLUSH_SLAVE_TIMEOUT", "t": 4100},
    {"k": "send-result", "key": "p-4", "status": "error", "t": 4500},
]


def test_registered_with_its_invariant_and_expectations() -> None:
    r = REPROS[FID]
    assert r.invariant == "SYNC-NO-ACK-LOSS"
    assert set(r.expect) == {"5.3.3", "5.4.0", "5.5.0"}
    assert r.expect["5.3.3"].startswith("absent")
    assert r.expect["5.4.0"].startswith("present") and r.expect["5.5.0"].startswith("present")


def test_results_since_keeps_the_send_results_from_a_time() -> None:
    assert [d["key"] for d in results_since(LINES, 1000)] == ["p-1", "p-2", "p-3", "p-4"]
    assert [d["key"] for d in results_since(LINES, 0)] == ["w-9", "p-1", "p-2", "p-3", "p-4"]
    assert results_since(LINES, 5000) == []


def test_status_counts() -> None:
    assert status_counts(results_since(LINES, 1000)) == {"FLUSH_SLAVE_TIMEOUT": 1, "SEND_OK": 2, "error": 1}


def test_acked_missing_looks_up_only_the_acknowledged_sends() -> None:
    acked, missing = acked_missing(results_since(LINES, 1000), {"w-9", "p-1", "p-4"})
    assert [d["key"] for d in acked] == ["p-1", "p-2"]
    assert [d["key"] for d in missing] == ["p-2"]  # p-3 and p-4 are missing too, but were never acknowledged


def test_in_sync_reads_the_local_set_size_from_the_ha_status() -> None:
    s = Snapshot(1, {}, {"b1": BrokerView("b1", True, in_sync_slaves=1), "b2": BrokerView("b2", False)})
    assert in_sync(s, "b1") == 1
    assert in_sync(s, "b2") is None and in_sync(s, "b3") is None and in_sync(None, "b1") is None


@pytest.mark.slow
@pytest.mark.parametrize(("version", "want"), [("5.3.3", NOT_REPRODUCED), ("5.4.0", REPRODUCED),
                                               ("5.5.0", REPRODUCED)])
def test_real_local_shrink_repro(tmp_path: Path, version: str, want: str) -> None:
    check_repro(FID, version, want, tmp_path / "run")
