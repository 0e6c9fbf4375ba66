"""F-SLAVE-FOLLOWS-DEPOSED-MASTER's reproduction (``rmqha/real/repros/slave_follows.py``): its helpers on planted
proxy lines, and (``-m slow``) the real runs on RocketMQ 5.3.3 and 5.5.0 (both reproduce)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqha.real.repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from rmqha.real.repros import REPROS
from rmqha.real.repros.slave_follows import Look, ha_events, judge, open_ha, register_answers
from tests.real_repro import check_repro


def test_registered_with_rocketmq_default_periods() -> None:
    r = REPROS["F-SLAVE-FOLLOWS-DEPOSED-MASTER"]
    assert r.invariant.startswith("LIVE-HA-TRANSFER")
    assert r.config["broker"]["registerNameServerPeriod"] == 30000
    assert r.config["store"]["haHousekeepingInterval"] == 20000


def _conn(t: float, ev: str, conn: int, route: str, src: str = "b3", **kw: Any) -> dict[str, Any]:
    return {"t": t, "k": "conn", "ev": ev, "conn": conn, "route": route, "src": src, "dst": route.split(".")[0], **kw}


LINES = [
    _conn(1000, "open", 1, "b1.ha"),
    _conn(1500, "open", 2, "b2.remoting"),  # not HA
    _conn(2000, "close", 1, "b1.ha", why="eof"),
    _conn(3000, "refused", 3, "b1.ha", why="syn lost"),
    _conn(4000, "open", 4, "b1.ha", src="b2"),  # another slave
    _conn(9000, "open", 5, "b1.ha"),
    _conn(20000, "open", 6, "b2.ha"),
    _conn(21000, "close", 6, "b2.ha", why="reset"),
]


def test_ha_events_are_one_sources_ha_connections_with_their_destination() -> None:
    evs = ha_events(LINES, "b3")
    assert [(d["conn"], d["ev"], d["node"]) for d in evs] == [
        (1, "open", "b1"), (1, "close", "b1"), (3, "refused", "b1"), (5, "open", "b1"), (6, "open", "b2"),
        (6, "close", "b2")]
    assert [d["conn"] for d in ha_events(LINES, "b3", since_ms=9000)] == [5, 6, 6]


def test_open_ha_is_the_connection_open_at_a_time() -> None:
    assert open_ha(LINES, "b3", 500) is None
    assert (open_ha(LINES, "b3", 1200) or {})["conn"] == 1
    assert open_ha(LINES, "b3", 2500) is None
    assert (open_ha(LINES, "b3", 20500) or {})["conn"] == 6  # the newest of two open
    assert (open_ha(LINES, "b3") or {})["conn"] == 5  # 6 closed: 5 is still open
    assert (open_ha(LINES, "b2") or {})["conn"] == 4


def test_register_answers_read_the_answer_headers() -> None:
    frames = [
        {"t": 1.0, "k": "frame", "from": "b3", "to": "ns", "response": False, "name": "REGISTER_BROKER",
         "ext": {"brokerId": "3"}},
        {"t": 2.0, "k": "frame", "from": "ns", "to": "b3", "response": True, "req_name": "REGISTER_BROKER",
         "code": 0, "ext": {"haServerAddr": "10.77.1.11:10912", "masterAddr": "10.77.1.11:10911"}},
        {"t": 3.0, "k": "frame", "from": "ns", "to": "b2", "response": True, "req_name": "REGISTER_BROKER",
         "code": 0, "ext": {}},
        {"t": 4.0, "k": "frame", "from": "ns", "to": "b3", "response": True, "req_name": "REGISTER_BROKER",
         "code": 0},
        {"t": 5.0, "k": "frame", "from": "c0", "to": "b3", "response": True, "req_name": "CONTROLLER_GET_REPLICA_INFO",
         "code": 0, "ext": {"masterAddress": "x"}},
    ]
    assert register_answers(frames, "b3") == [
        {"t": 2.0, "ha": "10.77.1.11:10912", "master": "10.77.1.11:10911", "code": 0},
        {"t": 4.0, "ha": None, "master": None, "code": 0}]


def _look(**kw: Any) -> Look:
    base: dict[str, Any] = {"deposed": "b1", "new": "b2", "conn_to": "b1", "conn_since": 10_000.0, "held": "b2",
                            "in_sss": False, "right_answer_at": 30_000.0, "end": 80_000.0}
    return Look(**{**base, **kw})


def test_judge() -> None:
    assert judge(_look())[0] == REPRODUCED
    assert judge(_look(end=45_000.0))[0] == INCONCLUSIVE  # not past the right address + housekeeping
    assert judge(_look(right_answer_at=None))[0] == INCONCLUSIVE  # never told the right address
    assert judge(_look(conn_to="b2", in_sss=True))[0] == NOT_REPRODUCED
    assert judge(_look(conn_to="b2", in_sss=False))[0] == INCONCLUSIVE
    assert judge(_look(conn_to=None, conn_since=None))[0] == INCONCLUSIVE


# ----------------------------------------------------------------------------------------- real runs


@pytest.mark.slow
@pytest.mark.parametrize(("version", "want"), [("5.3.3", REPRODUCED), ("5.5.0", REPRODUCED)])
def test_real_slave_follows_repro(tmp_path: Path, version: str, want: str) -> None:
    check_repro("F-SLAVE-FOLLOWS-DEPOSED-MASTER", version, want, tmp_path / "run")
