"""The HA epoch family's reproductions (``rmqha/real/repros/ha_epoch.py``): their helpers on planted proxy events,
and (``-m slow``) the real runs: F-TRANSFER-EPOCH-STALE reproduces on 5.3.3 and not on 5.4.0 (PR #9690, first in 5.3.4),
F-TRANSFER-NEGATIVE-BATCH reproduces on 5.4.0 and 5.5.0 and not on 5.3.3, F-EPOCH-EQ-SPLICE reproduces on all three."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqha.real.repro import NOT_REPRODUCED, REPRODUCED
from rmqha.real.repros import REPROS
from rmqha.real.repros.ha_epoch import (
    answered_ok,
    epoch_entry,
    first_difference,
    fmt_epochs,
    frames,
    ha_conns,
    last_epoch,
    open_ha,
)
from tests.real_repro import check_repro

# ----------------------------------------------------------------------------------------- helpers


def _conn(ev: str, cid: int, t: int, route: str = "b2.ha", src: str = "b1", **kw: Any) -> dict[str, Any]:
    return {"k": "conn", "ev": ev, "conn": cid, "t": t, "route": route, "src": src, "dst": route.split(".")[0], **kw}


def test_the_three_findings_are_registered() -> None:
    assert REPROS["F-TRANSFER-EPOCH-STALE"].invariant == "HA-EPOCH-BOUNDARY"
    assert REPROS["F-TRANSFER-NEGATIVE-BATCH"].invariant == "HA-EPOCH-BOUNDARY"
    assert REPROS["F-EPOCH-EQ-SPLICE"].invariant == "HA-LOG-MATCHING"
    assert REPROS["F-TRANSFER-EPOCH-STALE"].expect["5.4.0"].startswith("fixed")
    assert REPROS["F-TRANSFER-NEGATIVE-BATCH"].expect["5.3.3"].startswith("absent")
    for fid in ("F-TRANSFER-EPOCH-STALE", "F-TRANSFER-NEGATIVE-BATCH", "F-EPOCH-EQ-SPLICE"):
        assert set(REPROS[fid].expect) == {"5.3.3", "5.4.0", "5.5.0"}


def test_ha_connections_are_read_from_the_proxy_events() -> None:
    lines = [
        _conn("open", 5, 100),
        _conn("open", 6, 110, src="b3"),
        {"k": "conn", "ev": "open", "conn": 7, "t": 120, "route": "b2.remoting", "src": "b1", "dst": "b2"},
        _conn("close", 5, 500, why="eof"),
        _conn("open", 9, 900),
    ]
    conns = ha_conns(lines)
    assert [(c.conn, c.server, c.client, c.opened, c.closed, c.why) for c in conns] == [
        (5, "b2", "b1", 100, 500, "eof"), (6, "b2", "b3", 110, None, ""), (9, "b2", "b1", 900, None, "")]
    assert open_ha(lines, "b2", 200) == {"b1": 5, "b3": 6}
    assert open_ha(lines, "b2", 600) == {"b3": 6}
    assert open_ha(lines, "b2", 1000) == {"b1": 9, "b3": 6}
    assert open_ha(lines, "b1", 1000) == {}


def test_a_request_counts_as_answered_only_with_its_own_ok_response() -> None:
    req = {"k": "frame", "t": 50, "conn": 3, "opaque": 11, "from": "b2", "to": "ns", "response": False,
           "name": "REGISTER_BROKER", "ext": {"brokerId": "0"}}
    old = {**req, "t": 5, "opaque": 10}
    slave = {**req, "opaque": 12, "ext": {"brokerId": "2"}}
    lines = [
        old, {"k": "frame", "t": 6, "conn": 3, "opaque": 10, "from": "ns", "to": "b2", "response": True, "code": 0,
              "req_name": "REGISTER_BROKER"},
        req, slave,
        {"k": "frame", "t": 60, "conn": 3, "opaque": 12, "from": "ns", "to": "b2", "response": True, "code": 0,
         "req_name": "REGISTER_BROKER"},
    ]
    master = lambda e: e.get("brokerId") == "0"  # noqa: E731
    assert answered_ok(lines, "REGISTER_BROKER", "b2", 20, master) is None  # 11 has no answer yet; 10 is too old
    lines.append({"k": "frame", "t": 70, "conn": 3, "opaque": 11, "from": "ns", "to": "b2", "response": True,
                  "code": 0, "req_name": "REGISTER_BROKER"})
    assert answered_ok(lines, "REGISTER_BROKER", "b2", 20, master) == req
    assert len(frames(lines, "REGISTER_BROKER", after=20)) == 4
    assert len(frames(lines, "REGISTER_BROKER", frm="b2", after=20)) == 2


def test_epoch_helpers() -> None:
    eps = [(1, 0, 60626), (5, 60626, 2**63 - 1)]
    assert epoch_entry(eps, 5) == (5, 60626, 2**63 - 1)
    assert epoch_entry(eps, 2) is None
    assert last_epoch(eps) == 5 and last_epoch([]) is None
    assert fmt_epochs(eps) == "[(1, 0), (5, 60626)]"
    assert first_difference(b"abcd", b"abXd") == 2
    assert first_difference(b"abc", b"abcdef") is None


# ----------------------------------------------------------------------------------------- real runs


@pytest.mark.slow
@pytest.mark.parametrize(("fid", "version", "want"), [
    ("F-TRANSFER-EPOCH-STALE", "5.3.3", REPRODUCED),
    ("F-TRANSFER-EPOCH-STALE", "5.4.0", NOT_REPRODUCED),
    ("F-TRANSFER-NEGATIVE-BATCH", "5.3.3", NOT_REPRODUCED),
    ("F-TRANSFER-NEGATIVE-BATCH", "5.5.0", REPRODUCED),
    ("F-EPOCH-EQ-SPLICE", "5.3.3", REPRODUCED),
    ("F-EPOCH-EQ-SPLICE", "5.5.0", REPRODUCED),
])
def test_real_ha_epoch_repro(tmp_path: Path, fid: str, version: str, want: str) -> None:
    check_repro(fid, version, want, tmp_path / "run")
