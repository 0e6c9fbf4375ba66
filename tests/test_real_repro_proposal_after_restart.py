"""F-PROPOSAL-AFTER-RESTART's reproduction (``rmqha/real/repros/proposal_after_restart.py``): its helpers on planted
proxy lines and controller events, and (``-m slow``) the real run on RocketMQ 5.3.3 (reproduced). The proxy's
``hold-conn`` is tested in ``tests/test_real_proxy.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqha.real.repro import NOT_REPRODUCED, REPRODUCED
from rmqha.real.repros import REPROS
from rmqha.real.repros.proposal_after_restart import (
    Stale,
    answer_sss,
    held_acts,
    judge,
    master_answer,
    released_acts,
    stale_outcome,
)
from tests.real_repro import check_repro


def test_registered_with_rocketmq_default_heartbeat_timeout_and_all_ack() -> None:
    r = REPROS["F-PROPOSAL-AFTER-RESTART"]
    assert r.invariant.startswith("SYNC-SSS-HOLDS-ACKED")
    assert r.config["broker"]["controllerHeartBeatTimeoutMills"] == 10000
    assert r.config["store"]["allAckInSyncStateSet"] is True
    assert r.config["cluster"]["brokers"] == 2


ACTS: list[dict[str, Any]] = [
    {"t": 1.0, "k": "act", "id": "f1", "op": "drop-request", "name": "X"},
    {"t": 2.0, "k": "act", "id": "f2", "op": "hold-conn", "held": True, "first": True, "conn": 1, "opaque": 475,
     "name": "CONTROLLER_ALTER_SYNC_STATE_SET", "ext": {"masterEpoch": "1"}, "body": {"syncStateSet": [1, 2]}},
    {"t": 2.1, "k": "act", "id": "f2", "op": "hold-conn", "held": True, "conn": 1, "opaque": 476,
     "name": "BROKER_HEARTBEAT"},
    {"t": 9.0, "k": "act", "id": "f2", "op": "hold-conn", "released": True, "conn": 1, "frames": 2, "bytes": 600,
     "close": True},
]


def test_held_and_released_acts_are_the_holds_own() -> None:
    assert [d["opaque"] for d in held_acts(ACTS, "f2")] == [475, 476]
    assert held_acts(ACTS, "f1") == []
    assert [d["frames"] for d in released_acts(ACTS, "f2")] == [2]


def test_master_answer_is_the_first_register_answer_naming_the_broker_master() -> None:
    frames = [
        {"t": 5.0, "response": True, "to": "b1", "req_name": "CONTROLLER_REGISTER_BROKER", "code": 0,
         "ext": {"masterBrokerId": "1"}},  # before the kill
        {"t": 12.0, "response": True, "to": "b1", "req_name": "CONTROLLER_REGISTER_BROKER", "code": 0,
         "ext": {}},  # no master in the answer
        {"t": 13.0, "response": True, "to": "b2", "req_name": "CONTROLLER_REGISTER_BROKER", "code": 0,
         "ext": {"masterBrokerId": "1"}},  # another broker
        {"t": 14.0, "response": True, "to": "b1", "req_name": "CONTROLLER_REGISTER_BROKER", "code": 0,
         "ext": {"masterBrokerId": "1", "masterEpoch": "1"}, "body": {"syncStateSet": [1], "syncStateSetEpoch": 3}},
    ]
    got = master_answer(frames, "b1", 1, since_ms=10.0)
    assert got is not None and got["t"] == 14.0
    assert answer_sss(got) == ([1], 3)
    assert answer_sss({"body": None}) == ([], None)
    assert master_answer(frames, "b1", 2, since_ms=10.0) is None


def test_stale_outcome_reads_the_alter_then_the_election() -> None:
    entries = [(6, [{"type": "AlterSyncStateSet", "brokerName": "a", "newSyncStateSet": [1, 2]}]),
               (7, [{"type": "ElectMaster", "brokerName": "a", "newMasterElected": True, "newMasterBrokerId": 2}])]
    st = stale_outcome(entries, 1, 2)
    assert st.applied and st.elected == 2 and st.elect_tried and len(st.lines) == 2
    # an election first (M's close processed before the proposal): the set that follows is not the stale one's
    first = stale_outcome([entries[1], entries[0]], 1, 2)
    assert not first.applied and first.elected == 2
    none = stale_outcome([(6, [{"type": "ElectMaster", "newMasterElected": False, "newMasterBrokerId": None}])], 1, 2)
    assert not none.applied and none.elected is None and none.elect_tried


def test_judge() -> None:
    hit = Stale(True, 2, True, [])
    v, why = judge(hit, 2, lacking=20, lost=20, answer_code=None, answer_remark=None)
    assert v == REPRODUCED and "SYNC-SSS-HOLDS-ACKED" in why and "SYNC-NO-ACK-LOSS" in why
    v, why = judge(Stale(True, None, False, []), 2, lacking=20, lost=0, answer_code=0, answer_remark=None)
    assert v == REPRODUCED and "SYNC-NO-ACK-LOSS" not in why
    v, _ = judge(hit, 2, lacking=0, lost=0, answer_code=0, answer_remark=None)
    assert v == NOT_REPRODUCED
    v, why = judge(Stale(False, None, False, []), 2, lacking=20, lost=0, answer_code=2012,
                   answer_remark="fenced")
    assert v == NOT_REPRODUCED and "2012" in why and "fenced" in why


@pytest.mark.slow
def test_real_533_reproduces(tmp_path: Path) -> None:
    check_repro("F-PROPOSAL-AFTER-RESTART", "5.3.3", REPRODUCED, tmp_path / "v533")
