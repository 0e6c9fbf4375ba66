"""Every injectable bug is caught: its scenario fails the invariant it names with the switch on, and the same
run has no violation with it off (impl/sim/scenarios.py)."""

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.invariants import BY_ID, Checker
from rmqha.impl.sim.runner import run
from rmqha.impl.sim.scenarios import SCENARIOS


def _run(name: str, on: bool):
    s = SCENARIOS[name]
    return run(s.config_for(on), s.seed, 200_000, bugs=s.bugs(on), schedule=s.schedule, max_time=s.max_time,
               disabled=s.disabled, record=False)


def test_every_switch_and_expected_loss_config_has_a_scenario():
    # an upstream switch that repairs (its release removes a deviation) has its test in tests/test_releases.py
    wanted = {n for n, b in B.BUGS.items() if b.kind in ("switch", "config", "fidelity", "upstream", "guard")
              and not b.repairs}
    assert wanted == set(SCENARIOS)
    assert len([n for n, b in B.BUGS.items() if b.kind == "switch"]) >= 6
    for s in SCENARIOS.values():
        assert s.invariant in BY_ID


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_switch_on_fails_the_named_invariant(name):
    r = _run(name, on=True)
    assert r.violation is not None, f"{name}: no violation with the switch on"
    assert r.violation.invariant == SCENARIOS[name].invariant, r.violation.message


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_switch_off_same_run_is_clean(name):
    r = _run(name, on=False)
    assert r.violation is None, f"{name}: {r.violation.invariant}: {r.violation.message}"
    assert r.sim_time > 0


def test_ha_contiguous_checker_catches_a_gap():
    """No reachable schedule makes a master send a gap (frames follow the slave's own report over TCP), so the
    HA-CONTIGUOUS predicate is shown on the observation the slave emits for each append."""
    from rmqha.impl.sim.config import default_config
    from rmqha.impl.sim.world import Simulation

    sim = Simulation(default_config("safe"), 1, schedule=[], max_time=1)
    checker = Checker(sim)
    checker.after_step([{"k": "ha.slave-append", "n": "b1", "offset": 100, "size": 10, "max": 100}])
    assert sim.violation is None
    checker.after_step([{"k": "ha.slave-append", "n": "b1", "offset": 140, "size": 10, "max": 120}])
    assert sim.violation is not None and sim.violation.invariant == "HA-CONTIGUOUS"


@pytest.mark.parametrize(("request_offset", "last_file", "lo", "good", "bad"), [
    (5000, False, 0, 5000, 4096),  # a slave that holds a log: where its first report says it ends
    (5000, True, 0, 5000, 4096),  # the flag matters only to an empty slave
    (0, False, 100, 100, 8192),  # an empty slave without the flag: the master's first offset
    (0, True, 0, 16384, 0),  # with it: the start of the last file (log end 20000, 8 KiB files)
    (0, True, 18000, 18000, 16384),  # a based log whose first offset lies inside that file: no lower than it
])
def test_ha_transfer_start_checker(request_offset, last_file, lo, good, bad):
    """HA-TRANSFER-START on each branch of WriteSocketService.run's start: the right position holds, another fails."""
    from rmqha.impl.sim.config import default_config
    from rmqha.impl.sim.world import Simulation

    def obs(position):
        return {"k": "ha.transfer-start", "n": "b1", "conn": 1, "slave": 2, "request": request_offset,
                "lastFile": last_file, "min": lo, "max": 20000, "fileSize": 8192, "position": position}

    sim = Simulation(default_config("safe"), 1, schedule=[], max_time=1)
    checker = Checker(sim)
    checker.after_step([obs(good)])
    assert sim.violation is None
    checker.after_step([obs(bad)])
    assert sim.violation is not None and sim.violation.invariant == "HA-TRANSFER-START"


def test_ha_truncate_prefix_checker_catches_a_point_past_the_log_end():
    """consistent-point-uses-max's other shape: max() of the two ends of the shared epoch is past the slave's own
    log, which truncates nothing and then reports that point as acked. The bytes it holds still match, so the
    prefix comparison alone is blind to it; the truncation observation is checked against the log end."""
    from rmqha.impl.sim.config import default_config
    from rmqha.impl.sim.world import Simulation

    sim = Simulation(default_config("safe"), 1, schedule=[], max_time=1)
    checker = Checker(sim)
    base = {"k": "ha.truncate", "n": "b1", "masterMax": 900, "master": [[1, 0], [2, 500]]}
    checker.after_step([dict(base, point=500, before=700)])
    assert sim.violation is None
    checker.after_step([dict(base, point=800, before=700)])
    assert sim.violation is not None and sim.violation.invariant == "HA-TRUNCATE-PREFIX"


def _put_results(text: str) -> list[dict]:
    import json

    return [o for line in text.splitlines()[1:-1] for o in json.loads(line).get("obs", [])
            if o["k"] in ("brk.put-result", "ha.local-shrink")]


def test_local_shrink_on_disconnect_acks_without_the_cut_member_and_its_fix_waits():
    """local-shrink-on-disconnect (5.4.0's removeConnection, PR #9897) on its scenario: when b1's (id 3) connection
    closes with the controller down, master b2 drops b1 from its local set at once, and the five sends after the cut
    are acknowledged with b3's ack alone (local = proposal = [1, 2]). With the finding's fix (or without the switch:
    5.3.3) the local set keeps b1 until the controller answers, the ack set is the union [1, 2, 3], and the same
    sends end FLUSH_SLAVE_TIMEOUT; nothing acknowledged is lost."""
    s = SCENARIOS[B.LOCAL_SHRINK_ON_DISCONNECT]

    def go(bugs: list[str]):
        return run(s.config_for(True), s.seed, 200_000, bugs=bugs, schedule=s.schedule, max_time=s.max_time,
                   disabled=s.disabled)

    broken = go(s.bugs(True))
    assert broken.violation is not None and broken.violation.invariant == "SYNC-NO-ACK-LOSS"
    obs = _put_results(broken.text)
    assert [o for o in obs if o["k"] == "ha.local-shrink"] == [
        {"k": "ha.local-shrink", "n": "b2", "slave": 3, "local": [1, 2]}]
    after = [o for o in obs if o["k"] == "brk.put-result" and o["end"] > 1191]
    assert len(after) == 5 and {o["status"] for o in after} == {"PUT_OK"}
    assert all(o["ack"]["local"] == [1, 2] and o["ack"]["inFlight"] for o in after)

    for bugs in (sorted([*s.bugs(True), B.FIX_SHRINK_WAITS_FOR_CONTROLLER]), s.bugs(False)):
        fixed = go(bugs)
        assert fixed.violation is None, fixed.violation
        obs = _put_results(fixed.text)
        assert not [o for o in obs if o["k"] == "ha.local-shrink"]
        after = [o for o in obs if o["k"] == "brk.put-result" and o["end"] > 1191]
        assert len(after) == 5 and {o["status"] for o in after} == {"FLUSH_SLAVE_TIMEOUT"}
        assert all(o["ack"]["local"] == [1, 2, 3] and o["ack"]["remote"] == [1, 2] for o in after)
