"""The operator's paths (issue 21): the fault kinds clean-living-broker, decommission-broker and move-broker, and the
profile jraft-ops that draws them with JRaft snapshots (``ReplicasInfoManager.cleanBrokerData`` /
``handleCleanBrokerDataEvent``, ``registerSuccess`` / ``handleUpdateBrokerAddress``, sofa-jraft's snapshot and
``installSnapshot``).

Their switches (``clean-skips-living-check``: CTL-CLEAN-SPARES-LIVING, ``address-update-dropped``: LIVE-CTL-ADDRESS)
have their scenarios in ``impl/sim/scenarios.py`` (``tests/test_bugs.py``).
"""

from __future__ import annotations

import json
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.world import Simulation

from tests.harness import ObsRecorder

QUIET = {"workload": {"produce_interval": 0, "consume_interval": 0}}


def _quiet(schedule: list[dict[str, Any]], max_time: int) -> tuple[Simulation, ObsRecorder]:
    rec = ObsRecorder()
    sim = Simulation(config_from_dict(QUIET, default_config("safe")), 1, schedule=schedule, max_time=max_time,
                     recorder=rec, bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None, sim.violation and sim.violation.to_dict()
    return sim, rec


def _cleans(rec: ObsRecorder) -> list[dict[str, Any]]:
    return [o for _, o in rec.kinds("ctl.apply") if o["event"]["type"] == "CleanBrokerData"]


def test_clean_of_a_running_broker_is_refused():
    """cleanBrokerData without isCleanLivingBroker refuses an id whose heartbeat is alive: nothing is applied and the
    broker stays in the replica table."""
    sim, rec = _quiet([{"t": 8000, "do": "clean", "ids": "1"}], 12_000)
    assert _cleans(rec) == []
    assert 1 in sim.controller_node().rim.replica_info_table["broker-a"].broker_id_info  # type: ignore[union-attr]


def test_a_decommissioned_slave_comes_back_with_a_new_id():
    """A slave killed, its id cleaned once its heartbeat expired (controllerHeartBeatTimeoutMills, 10 s), and its
    identity files deleted: it applies for a new id (getNextBrokerId / applyBrokerId) and registers again."""
    sim, _ = _quiet([], 6000)
    slave = next(b for b in sim.brokers if b != sim.believed_master())
    old = sim.broker_id(slave)
    sim, rec = _quiet([{"t": 6000, "do": "crash", "node": slave}, {"t": 20_000, "do": "clean", "ids": str(old)},
                       {"t": 21_000, "do": "lose-file", "node": slave, "file": "identity"},
                       {"t": 22_000, "do": "restart", "node": slave}], 40_000)
    cleaned = _cleans(rec)
    assert len(cleaned) == 1 and cleaned[0]["event"]["brokerIdSetToClean"] == [old]
    new = sim.broker_id(slave)
    assert new is not None and new != old
    table = sim.controller_node().rim.replica_info_table["broker-a"].broker_id_info  # type: ignore[union-attr]
    assert old not in table and new in table


def test_a_broker_moved_to_another_port_is_known_there():
    """A broker restarted on another listenPort with its old id: registerSuccess finds the address changed and the
    controller applies an UpdateBrokerAddressEvent."""
    sim, rec = _quiet([{"t": 8000, "do": "crash", "node": "b1"},
                       {"t": 10_000, "do": "restart", "node": "b1", "port": 10921}], 20_000)
    moved = [o for _, o in rec.kinds("ctl.apply") if o["event"]["type"] == "UpdateBrokerAddress"]
    assert [o["event"]["brokerAddress"] for o in moved] == ["b1:10921"]
    bid = sim.broker_id("b1")
    table = sim.controller_node().rim.replica_info_table["broker-a"]  # type: ignore[union-attr]
    assert bid is not None and table.broker_address(bid) == "b1:10921"


def test_the_jraft_ops_profile_takes_installs_cleans_and_moves():
    """The campaign's stage jraft-ops:1: snapshots taken and installed, the three operator kinds drawn, a clean
    and an address update applied, and every invariant (progress ones too) holds with the fixes on (on 5.3.4's
    JRaft scan gate, jraft-scan-after-wait: the run this test was written on)."""
    cfg = default_config("jraft-ops")
    cfg.sim.progress = True
    r = run(cfg, 1, 20_000, bugs=[*B.FIXES_ALL, B.JRAFT_SCAN_AFTER_WAIT])
    assert r.violation is None, r.violation
    lines = [json.loads(x) for x in r.text.splitlines()[1:]]
    obs = [o for line in lines for o in line.get("obs", [])]
    kinds = {line["act"].get("fault") for line in lines if "act" in line}
    assert {"crash-controller-follower", "clean-living-broker", "decommission-broker", "move-broker"} <= kinds
    assert any(o["k"] == "ctl.install-snapshot" for o in obs)
    applied = {o["event"]["type"] for o in obs if o["k"] == "ctl.apply"}
    assert {"CleanBrokerData", "UpdateBrokerAddress"} <= applied
