"""Release profiles (``impl/bugs.py``: ``RELEASES``, ``release_switches``): each upstream switch that repairs a
5.3.3 rule has a deterministic test here that shows the old rule's behaviour with the switch off and the release's
with it on (the switches whose release brings a violation in, like ``local-shrink-on-disconnect``, have their
scenario in ``impl/sim/scenarios.py``: ``tests/test_bugs.py``); triage per release; the trace header's release.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.broker.topic_config import TopicConfigManager
from rmqha.impl.controller.elect_policy import BrokerLiveInfo, ElectPolicy
from rmqha.impl.controller.heartbeat import BrokerHeartbeatManager, NullBrokerIdError
from rmqha.impl.controller.jraft import RaftLiveTable, execute, request
from rmqha.impl.controller.replicas_info import ApplyBrokerIdEvent, ElectMasterEvent, ReplicasInfoManager
from rmqha.impl.findings import FINDINGS, in_play, releases_with
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import header_for, release_of, run, run_header

from tests.harness import ObsRecorder

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "docs" / "findings" / "traces"

# every upstream switch that repairs, and the test of this module (or another) that shows it
REPAIR_TESTS = {
    B.JRAFT_SCAN_AFTER_WAIT: "tests/test_fidelity_jraft.py::test_the_scan_waits_for_the_first_heartbeat_and_runs_"
                             "through_the_log",
    B.TRUNCATE_KEEPS_EPOCH_ENTRIES: "test_a_switch_that_removes_a_findings_mechanism_removes_its_trace_violation",
    B.SYNC_TAKES_MASTER_VERSION: "test_a_slave_sync_takes_the_masters_version_from_5_5_0",
    B.ELECT_COMPARES_LONG_OFFSETS: "test_the_election_compares_offsets_as_longs_from_5_5_1",
    B.JRAFT_REELECT_CHECKS_ACTIVE: "test_jraft_check_not_active_reelects_a_dead_masters_set_from_5_5_1",
    B.IDENTITY_EQUALS_NULL_SAFE: "test_a_null_broker_id_lookup_finds_its_entry_from_5_5_1",
}


def _header(fid: str) -> dict[str, Any]:
    with gzip.open(TRACES / f"{fid}.jsonl.gz", "rt") as f:
        return dict(json.loads(f.readline()))


def test_release_profiles_are_cumulative_and_named_by_their_switches():
    assert B.RELEASES[0] == B.DEFAULT_RELEASE == "5.3.3" and B.release_switches("5.3.3") == ()
    for older, newer in zip(B.RELEASES, B.RELEASES[1:], strict=False):
        assert set(B.release_switches(older)) < set(B.release_switches(newer))
    assert B.FIX_TRANSFER_EPOCH_REFRESH in B.release_switches("5.3.4")  # PR #9690 first shipped in 5.3.4
    assert B.LOCAL_SHRINK_ON_DISCONNECT not in B.release_switches("5.3.4")
    assert B.LOCAL_SHRINK_ON_DISCONNECT in B.release_switches("5.4.0")
    assert B.FIX_SYNC_DELETES_ONLY_MISSING in B.release_switches("5.5.0")
    assert B.FIX_SYNC_DELETES_ONLY_MISSING not in B.release_switches("5.4.0")
    for name in B.RELEASE_SWITCHES:
        assert B.BUGS[name].kind in ("upstream", "fix") and B.BUGS[name].release in B.RELEASES
    assert all(B.BUGS[n].release for n in B.UPSTREAM)  # every upstream switch belongs to a release
    with pytest.raises(ValueError, match="unknown RocketMQ release"):
        B.release_switches("6.0.0")


def test_every_repairing_upstream_switch_has_its_test():
    repairing = {n for n in B.UPSTREAM if B.BUGS[n].repairs}
    assert repairing == set(REPAIR_TESTS)
    for name, where in REPAIR_TESTS.items():
        path, _, test = where.rpartition("::")
        source = (ROOT / path).read_text() if path else Path(__file__).read_text()
        assert f"def {test}(" in source, f"{name}: {where} missing"


def test_the_header_records_a_release_and_replay_checks_its_switches():
    cfg = default_config("safe")
    old = header_for(cfg, 1, 10, [], None)
    assert "rocketmq" not in old and release_of(old) == "5.3.3"  # every header before release profiles
    bugs = list(B.release_switches("5.5.0"))
    h = header_for(cfg, 1, 10, bugs, None, rocketmq="5.5.0")
    assert h["rocketmq"] == "5.5.0" and release_of(h) == "5.5.0"
    with pytest.raises(ValueError, match="without its switch"):
        header_for(cfg, 1, 10, [], None, rocketmq="5.5.0")
    with pytest.raises(ValueError, match="unknown RocketMQ release"):
        release_of(dict(h, rocketmq="4.9.9"))
    a, b = run_header(dict(h, maxSteps=400)), run_header(dict(h, maxSteps=400))
    assert a.text == b.text and json.loads((a.text or "").splitlines()[0])["rocketmq"] == "5.5.0"


def test_triage_is_per_release_derived_from_the_switches():
    """A finding whose fix a release shipped, whose release rule a release lacks, or whose mechanism a release's
    switch removes cannot explain a violation there."""
    by = {f.id: releases_with(f) for f in FINDINGS.values()}
    assert by["F-TRANSFER-EPOCH-STALE"] == ["5.3.3"]  # #9690: 5.3.4
    assert by["F-TRANSFER-NEGATIVE-BATCH"] == ["5.3.4", "5.4.0", "5.5.0", "5.5.1"]  # a hole in #9690
    assert by["F-LOCAL-SHRINK-BEFORE-ACCEPT"] == ["5.4.0", "5.5.0", "5.5.1"]  # #9897
    assert by["F-EPOCH-ENTRY-LOST-ON-RECONNECT"] == ["5.3.3", "5.3.4"]  # #9942
    assert by["F-SYNC-DELETES-EVERY-TOPIC"] == ["5.3.3", "5.3.4", "5.4.0"]  # #9778
    assert by["F-GAP-UNION"] == list(B.RELEASES)
    f = FINDINGS["F-EPOCH-ENTRY-LOST-ON-RECONNECT"]
    assert in_play(f, []) and not in_play(f, [B.TRUNCATE_KEEPS_EPOCH_ENTRIES])


@pytest.mark.parametrize("fid", sorted(f.id for f in FINDINGS.values() if f.removed_by))
def test_a_switch_that_removes_a_findings_mechanism_removes_its_trace_violation(fid: str):
    """``removed_by`` is checked, not declared: the finding's trace, re-run with the switch, is clean up to the
    violation's time (as ``tests/test_findings.py`` checks the finding's own fix)."""
    header = _header(fid)
    broken = run_header(header, record=False)
    assert broken.violation is not None and broken.violation.invariant in FINDINGS[fid].invariants
    for switch in FINDINGS[fid].removed_by:
        again = run_header(dict(header, bugs=sorted([*header["bugs"], switch]),
                                maxTime=broken.violation.time + 500), record=False)
        assert again.violation is None, again.violation.to_dict()


def test_a_slave_sync_takes_the_masters_version_from_5_5_0():
    """SlaveSynchronize.syncTopicConfig: 5.3.3 assigns the master's version and then bumps it (delete, put), so the
    next sync of an unchanged master rewrites the table again; 5.5.0 (PR #9778, with the delete inside the if) puts
    without a bump and sets the master's version at the end: the next sync finds them equal and does nothing."""
    master = TopicConfigManager(4, None)
    master.update_topic_config(6, 6, state_version=1, now=100)
    old = TopicConfigManager(4, None)
    assert old.sync_from_master(master.to_wire(), 1, 200)
    assert old.version != master.version and old.sync_from_master(master.to_wire(), 1, 300)  # again and again
    new = TopicConfigManager(4, None)
    assert new.sync_from_master(master.to_wire(), 1, 200, delete_all=False, takes_version=True)
    assert (new.read, new.write) == (6, 6) and new.version == master.version
    assert not new.sync_from_master(master.to_wire(), 1, 300, delete_all=False, takes_version=True)

    def syncs(bugs: list[str]) -> int:
        rec = ObsRecorder()
        cfg = config_from_dict({"workload": {"produce_interval": 0, "consume_interval": 0, "queues": 2,
                                             "topic_config": True}}, default_config("safe"))
        from rmqha.impl.sim.world import Simulation
        sim = Simulation(cfg, 1, schedule=[], max_time=60_000, recorder=rec, bugs=frozenset(bugs))
        assert sim.run() is None
        return len([o for _, o in rec.kinds("brk.topic") if o["why"] == "sync"])

    five_three = syncs(list(B.FIXES_ALL))
    five_five = syncs(sorted({*B.FIXES_ALL, *B.release_switches("5.5.0")}))
    assert five_five == 2 < five_three  # each slave syncs once in a minute, instead of at every syncAll


def _info(bid: int, epoch: int, offset: int, priority: int = 0) -> BrokerLiveInfo:
    return BrokerLiveInfo("a", f"b{bid}:1", bid, 0, 10_000, epoch, offset, 0, priority)


def test_the_election_compares_offsets_as_longs_from_5_5_1():
    """DefaultElectPolicy's comparator, through ReplicasInfoManager.electMaster (where the controller reads the
    switch): master 1 is dead; broker 3 is 2^31 + 4096 bytes ahead of broker 2 in the same epoch. 5.3.3 narrows the
    difference to an int, which turns negative, so broker 2 sorts first and is elected; 5.5.1 (PR #10579) elects 3."""
    infos = {2: _info(2, 3, 1 << 20), 3: _info(3, 3, (1 << 20) + (1 << 31) + 4096)}

    def elect(bugs: frozenset[str]) -> Any:
        rim = ReplicasInfoManager(False, bugs)
        for bid in (1, 2, 3):
            rim.apply_event(ApplyBrokerIdEvent("c", "a", f"b{bid}:1", bid, "x"))
        rim.apply_event(ElectMasterEvent(True, "a", 1))
        rim.sync_state_set_info_table["a"].sync_state_set = {1, 2, 3}
        policy = ElectPolicy(lambda c, n, i: i in infos, lambda c, n, i: infos.get(i))
        result = rim.elect_master("a", None, False, policy, "c")
        return result.header.get("masterBrokerId")

    assert elect(frozenset()) == 2
    assert elect(frozenset([B.ELECT_COMPARES_LONG_OFFSETS])) == 3


def test_jraft_check_not_active_reelects_a_dead_masters_set_from_5_5_1():
    """RaftReplicasInfoManager.checkNotActiveBroker: with the master's entry gone (its channel closed) and the other
    members alive, 5.3.3's negated predicate skips the set; 5.5.1 (PR #10885) reports it as (null, name, null)."""
    def check(reelect: bool) -> Any:
        rim, live = ReplicasInfoManager(False), RaftLiveTable(reelect_checks_active=reelect)
        for bid in (1, 2, 3):
            rim.apply_event(ApplyBrokerIdEvent("c", "a", f"b{bid}:10911", bid, "x"))
        rim.apply_event(ElectMasterEvent(True, "a", 1))
        for bid in (1, 2, 3):
            live.on_heartbeat({"clusterName": "c", "brokerName": "a", "brokerAddr": f"b{bid}:10911", "brokerId": bid,
                               "heartbeatTimeoutMills": 10_000}, 0)
        execute(rim, live, request("closeChannel", 100, clusterName="c", brokerName="a", brokerId=1), 0)
        out = execute(rim, live, request("checkNotActive", 200), 0)
        assert out is not None
        return out.body

    assert check(False) == {"inactive": []}
    assert check(True) == {"inactive": [[None, "a", None]]}


def test_a_null_broker_id_lookup_finds_its_entry_from_5_5_1():
    """BrokerIdentityInfo.equals: 5.3.3 calls brokerId.equals on a null id (NullPointerException once an entry of the
    same hash exists); 5.5.1 (PR #10886) uses Objects.equals and finds the entry."""
    old, new = BrokerHeartbeatManager(), BrokerHeartbeatManager(null_safe=True)
    for hb in (old, new):
        hb.on_broker_heartbeat(0, "c", "a", "x:1", None, 10_000, "x#0", 1, 0, 0, 0)
    with pytest.raises(NullBrokerIdError):
        old.get_broker_live_info("c", "a", None)
    info = new.get_broker_live_info("c", "a", None)
    assert info is not None and info.broker_id == -1 and new.is_broker_active(1000, "c", "a", None)


def test_simulate_a_release_runs_its_rules():
    """``run`` with a release's switches and the release in the header: deterministic, and 5.5.0's rules are the
    ones the core reads (the header lists them)."""
    cfg = default_config("safe")
    bugs = sorted({*B.FIXES_ALL, *B.release_switches("5.5.0")})
    a = run(cfg, 5, 3000, bugs=bugs, rocketmq="5.5.0")
    b = run(cfg, 5, 3000, bugs=bugs, rocketmq="5.5.0")
    assert a.digest == b.digest and a.text is not None
    assert json.loads(a.text.splitlines()[0])["bugs"] == bugs


def test_the_command_line_runs_a_release_and_refuses_an_unknown_one(tmp_path: Path):
    import subprocess
    import sys

    trace = tmp_path / "t.jsonl"
    p = subprocess.run([sys.executable, "-m", "rmqha", "simulate", "--seed", "2", "--steps", "300", "--rocketmq",
                        "5.4.0", "--no-progress", "--trace", str(trace), "--json"],
                       capture_output=True, text=True, timeout=300)
    out = json.loads(p.stdout)
    assert out["rocketmq"] == "5.4.0" and set(B.release_switches("5.4.0")) <= set(out["bugs"])
    assert json.loads(trace.read_text().splitlines()[0])["rocketmq"] == "5.4.0"
    again = subprocess.run([sys.executable, "-m", "rmqha", "replay", str(trace)], capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr
    bad = subprocess.run([sys.executable, "-m", "rmqha", "simulate", "--seed", "2", "--rocketmq", "5.6.0"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "5.5.1" in bad.stderr


def test_a_fuzz_campaign_carries_its_release():
    from rmqha.spark_fuzz.campaign import options_from

    cfg = default_config("safe").to_dict()
    old = options_from("/tmp/x", cfg, None)
    new = options_from("/tmp/x", cfg, None, rocketmq="5.5.0", bugs=list(B.release_switches("5.5.0")))
    assert "rocketmq" not in old.identity()  # a journal of an earlier campaign resumes
    assert new.identity()["rocketmq"] == "5.5.0"


def test_a_local_shrink_to_one_member_wakes_the_reput():
    """Seed 31 of ``rmqha simulate --rocketmq 5.5.0``: at 92.444 s master b3's connections close and #9897's
    removeConnection shrinks its local SyncStateSet to itself, so CommitLog.getConfirmOffset's shortcut answers
    maxPhyOffset; RocketMQ's reput thread dispatches the rest at its next 1 ms poll. The kit once left the reput idle
    there (STORE-REPUT-DRAINS at 93.0 s, a fidelity bug of its local-shrink rule): the shrink now wakes it."""
    cfg = config_from_dict({"sim": {"progress": True}}, default_config("safe"))
    h = header_for(cfg, 31, 20_000, list(B.release_switches("5.5.0")), None, 95_000, "safe", rocketmq="5.5.0")
    r = run_header(h, keep=True)
    shrinks = [o for line in (r.text or "").splitlines()[1:-1] for o in json.loads(line).get("obs", [])
               if o["k"] == "ha.local-shrink" and o["local"] == [2]]
    assert shrinks  # the shrink to one member happens in this run
    assert r.violation is None or r.violation.invariant != "STORE-REPUT-DRAINS", r.violation.to_dict()
