"""The SyncStateSet-proposal reproductions (``rmqha/real/repros/sss_proposals.py``: F-STALE-SSS-PROPOSAL,
F-GAP-UNION) and the DLedger validation one (``dledger_validation.py``: F-DLEDGER-STALE-VALIDATION): their log-line
parsers on lines copied from real runs, and (``-m slow``) the real runs on RocketMQ 5.3.3 and 5.5.0 (all three
reproduce on both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqha.real.repro import REPRODUCED
from rmqha.real.repros import REPROS
from rmqha.real.repros.dledger_validation import RUN_EVENT, altered, elected
from rmqha.real.repros.sss_proposals import CAUGHT_UP, NOTIFY, RUN_ALTER, event_text
from tests.real_repro import check_repro

# lines as RocketMQ 5.3.3 wrote them in the runs the finding pages cite
CAUGHT = ("2026-11-25 18:55:32 INFO ReadSocketService - The slave 2 has caught up, slaveMaxOffset: 16992, "
          "confirmOffset: 16992, epoch: 1, leader epoch startOffset: 0.")
NOTIFIED = "2026-11-25 18:55:32 INFO ReadSocketService - Notify the syncStateSet has been changed into [1, 2]."
RUN_ALT = ("2026-11-25 18:55:33 INFO org.apache.rocketmq.controller.impl.DLedgerController$EventScheduler - Event "
           "queue run event alterSyncStateSet, get the result ControllerResult{events=[AlterSyncStateSetEvent{"
           "brokerName='broker-a', newSyncStateSet=[1, 2]}], response=AlterSyncStateSetResponseHeader{"
           "newSyncStateSetEpoch=6}}")
RUN_ELECT = ("2026-11-25 18:54:39 INFO org.apache.rocketmq.controller.impl.DLedgerController$EventScheduler - Event "
             "queue run event electMaster, get the result ControllerResult{events=[ElectMasterEvent{"
             "newMasterElected=true, brokerName='broker-a', newMasterBrokerId=2}], response=ElectMasterResponseHeader{"
             "masterBrokerId=2, masterAddress='10.77.0.112:10911', masterEpoch=2, syncStateSetEpoch=3}}")
RUN_READ = ("2026-11-25 18:54:39 INFO org.apache.rocketmq.controller.impl.DLedgerController$EventScheduler - Event "
            "queue run event getReplicaInfo, get the result ControllerResult{events=[], response=GetReplicaInfo"
            "ResponseHeader{masterBrokerId=1}}")
RUN_SHRINK = RUN_ALT.replace("newSyncStateSet=[1, 2]", "newSyncStateSet=[1]")


def test_the_three_findings_are_registered() -> None:
    assert REPROS["F-STALE-SSS-PROPOSAL"].config == {"cluster": {"brokers": 2}}
    assert REPROS["F-GAP-UNION"].config["cluster"] == {"brokers": 3}
    assert REPROS["F-DLEDGER-STALE-VALIDATION"].config["cluster"] == {"controllers": 3, "brokers": 2}
    for fid in ("F-STALE-SSS-PROPOSAL", "F-GAP-UNION", "F-DLEDGER-STALE-VALIDATION"):
        assert set(REPROS[fid].expect) == {"5.3.3", "5.4.0", "5.5.0"}
        assert all(v.startswith("present") for v in REPROS[fid].expect.values())


def test_decision_lines() -> None:
    m = CAUGHT_UP.search(CAUGHT)
    assert m is not None and (m.group(1), m.group(2)) == ("2", "16992")
    n = NOTIFY.search(NOTIFIED)
    assert n is not None and n.group(1) == "1, 2"
    a = RUN_ALTER.search(RUN_ALT)
    assert a is not None and a.group(1) == "1, 2"


def test_controller_run_lines() -> None:
    lines = [RUN_ELECT, RUN_READ, RUN_SHRINK, RUN_ALT]
    with_events = [x for x in lines if (mt := RUN_EVENT.search(x)) is not None and mt.group(2)]
    assert with_events == [RUN_ELECT, RUN_SHRINK, RUN_ALT]  # the read has no event
    assert elected(with_events, 2) == [RUN_ELECT]
    assert elected(with_events, 1) == []
    assert altered(with_events, {1}) == [RUN_SHRINK]
    assert altered(with_events, {1, 2}) == [RUN_ALT]


def test_event_text() -> None:
    assert event_text(14, {"type": "AlterSyncStateSet", "newSyncStateSet": [2, 1]}) == "#14 AlterSyncStateSet {1, 2}"
    assert event_text(9, {"type": "ElectMaster", "newMasterElected": True, "newMasterBrokerId": 1}) == \
        "#9 ElectMaster 1"
    assert event_text(6, {"type": "ElectMaster", "newMasterElected": False}) == "#6 ElectMaster(no master)"


@pytest.mark.slow
@pytest.mark.parametrize("fid", ["F-STALE-SSS-PROPOSAL", "F-GAP-UNION", "F-DLEDGER-STALE-VALIDATION"])
@pytest.mark.parametrize("version", ["5.3.3", "5.5.0"])
def test_real_sss_proposal_repros(tmp_path: Path, fid: str, version: str) -> None:
    check_repro(fid, version, REPRODUCED, tmp_path / "run")
