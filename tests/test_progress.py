"""The progress invariants (LIVE-*) and the settle tail that checks them (``impl/invariants/progress.py``,
``impl/invariants/settle.py``, ``impl/sim/settle.py``).

Each LIVE-* id fails in its bug switch's scenario (``tests/test_bugs.py`` runs them all, on and off); here: the settle
bounds are sums of RocketMQ's timeouts, the tail only appends to a run and is off unless ``[sim] progress`` says so
(old trace headers replay as before), its steps come in the order of the bounds, a generated run may leave a broker
dead, and the per-task predicate of LIVE-TASKS.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.broker.broker import BrokerNode
from rmqha.impl.invariants import BY_ID, progress_invariants
from rmqha.impl.invariants.progress import task_overdue
from rmqha.impl.invariants.settle import POLLING, master_terms, total
from rmqha.impl.sim.config import Config, config_from_dict, default_config
from rmqha.impl.sim.runner import run, run_header
from rmqha.impl.sim.scenarios import SCENARIOS
from rmqha.impl.sim.settle import Tail, deadlines, timeouts
from rmqha.impl.sim.world import Simulation
from rmqha.impl.trace import parse

FIRST_SIX = ("LIVE-MASTER", "LIVE-SSS-NO-DEAD", "LIVE-SSS-CATCHUP", "LIVE-HA-TRANSFER", "LIVE-PUTS", "LIVE-TASKS")
LIVE = tuple(i.id for i in progress_invariants())
LIVE_SWITCHES = sorted(b.name for b in B.BUGS.values() if b.kind in ("switch", "fidelity") and b.invariant in LIVE)
GROUP_ONLY = {"LIVE-CTL-LEADER", "LIVE-CTL-APPLIED"}
QUIET = {"workload": {"produce_interval": 0, "consume_interval": 0}}


def _steps(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines()[1:-1]]


def _progress(cfg: Config, on: bool = True) -> Config:
    return config_from_dict({"sim": {"progress": on}}, cfg)


def test_the_catalogue_holds_the_progress_invariants_each_with_a_switch() -> None:
    """The first six first, in their order; every LIVE-* id with at least one switch that has a scenario."""
    assert LIVE[:6] == FIRST_SIX and all(i.startswith("LIVE-") for i in LIVE)
    for inv_id in LIVE:
        inv = BY_ID[inv_id]
        assert inv.kind == "progress" and inv.settle is not None and not inv.on and not inv.reads
        switches = [b for b in B.BUGS.values() if b.invariant == inv_id and b.kind in ("switch", "fidelity")]
        assert switches and all(b.name in SCENARIOS for b in switches), inv_id


def test_settle_bounds_are_sums_of_the_configured_timeouts() -> None:
    """Every bound is the sum of its stages; a longer RocketMQ timeout lengthens exactly the bounds it is a stage of,
    by as much; a controller group adds its stages."""
    safe = default_config("safe")
    t = timeouts(safe)
    group = timeouts(default_config("fidelity"))
    legacy = timeouts(default_config("legacy-sync"))
    for inv in progress_invariants():
        assert inv.settle is not None
        for terms in (inv.settle(t), inv.settle(group), inv.settle(legacy)):
            assert all(term.ms > 0 for term in terms) and total(terms) == sum(term.ms for term in terms)
        # where each applies: a controller group's own (GROUP_ONLY) not with one node, LIVE-CONSUME in 4.x runs only
        assert bool(inv.settle(t)) is (inv.id not in GROUP_ONLY and inv.id != "LIVE-CONSUME"), inv.id
        assert bool(inv.settle(group)) is (inv.id != "LIVE-CONSUME"), inv.id
        assert bool(inv.settle(legacy)) is (inv.id not in GROUP_ONLY), inv.id
    longer = dataclasses.replace(safe.broker, controller_heartbeat_timeout_mills=25_000)
    assert total(master_terms(dataclasses.replace(t, broker=longer))) == total(master_terms(t)) + 15_000
    assert group.controllers == 3 and total(master_terms(group)) > total(master_terms(t))
    plan = deadlines(t)
    assert sorted(i for ids in plan.values() for i in ids) == sorted(set(LIVE) - GROUP_ONLY - {"LIVE-CONSUME"})
    assert list(plan) == sorted(plan)
    assert sorted(i for ids in deadlines(group).values() for i in ids) == sorted(set(LIVE) - {"LIVE-CONSUME"})
    assert sorted(i for ids in deadlines(legacy).values() for i in ids) == sorted(set(LIVE) - GROUP_ONLY)


def test_progress_is_off_and_quiet_by_default() -> None:
    assert not default_config("safe").sim.progress
    assert "progress" not in default_config("safe").to_dict()["sim"]
    assert _progress(default_config("safe")).to_dict()["sim"]["progress"] is True
    r = run(config_from_dict(QUIET, default_config("safe")), 3, 100_000, schedule=[], max_time=8000)
    assert not [s for s in _steps(r.text or "") if s["ev"] in ("settle", "probe", "progress-check")]


def test_the_settle_tail_only_appends_and_checks_in_bound_order() -> None:
    """The same explicit run with and without ``[sim] progress``: identical up to the end of its fault phase (but
    the header), then a settle step at the heal point, the probes and one check per bound, in order; it replays
    from its header byte for byte."""
    base = config_from_dict(QUIET, default_config("safe"))
    schedule = [{"t": 6000, "do": "crash", "node": "b1"}, {"t": 9000, "do": "restart", "node": "b1"}]
    fixes = list(B.FIXES_ALL)
    off = run(base, 4, 100_000, bugs=fixes, schedule=schedule, max_time=12_000)
    on = run(_progress(base), 4, 100_000, bugs=fixes, schedule=schedule, max_time=12_000)
    assert off.text is not None and on.text is not None and on.violation is None
    plain, settled = off.text.splitlines()[1:-1], on.text.splitlines()[1:-1]
    assert settled[:len(plain)] == plain
    tail = [s for s in _steps(on.text) if s["ev"] in ("settle", "probe", "progress-check")]
    assert tail[0]["ev"] == "settle" and tail[0]["healed"] is True and tail[0]["t"] == 12_000
    checks = [s for s in tail if s["ev"] == "progress-check"]
    plan = deadlines(timeouts(base))
    assert [(c["t"] - 12_000, c["ids"]) for c in checks] == list(plan.items())
    assert len([s for s in tail if s["ev"] == "probe"]) == 2
    header, _, footer = parse(on.text)
    assert header["config"]["sim"]["progress"] is True
    assert run_header(header).digest == footer["hash"]


def test_an_unhealed_run_ends_unchecked_and_a_broker_left_down_is_dead() -> None:
    base = _progress(config_from_dict(QUIET, default_config("safe")))
    cut = [{"t": 6000, "do": "partition", "id": "p", "links": [["b1", "b3"]]}]
    r = run(base, 4, 100_000, bugs=list(B.FIXES_ALL), schedule=cut, max_time=8000)
    settle = [s for s in _steps(r.text or "") if s["ev"] == "settle"]
    assert [s.get("healed") for s in settle] == [False] and _steps(r.text or "")[-1]["ev"] == "settle"
    dead = run(base, 4, 100_000, bugs=list(B.FIXES_ALL), schedule=[{"t": 6000, "do": "crash", "node": "b1"}],
               max_time=8000)
    assert [s.get("dead") for s in _steps(dead.text or "") if s["ev"] == "settle"] == [["b1"]]
    assert dead.violation is None  # b1 leaves the SyncStateSet; the others go on


def test_a_generated_run_may_leave_a_broker_dead() -> None:
    """Seed 1's fault phase (3000 steps) ends with b1 down, its restart pending: the tail drops the restart (the
    run's ``settle`` stream), so the checks see a set that lost b1 for good; seed 2's ends with every broker up."""
    cfg = _progress(default_config("safe"))
    for seed, dead in ((1, ["b1"]), (2, None)):
        r = run(cfg, seed, 3000, bugs=list(B.FIXES_ALL))
        (settle,) = [s for s in _steps(r.text or "") if s["ev"] == "settle" and "healed" in s]
        assert settle["healed"] and settle.get("dead") == dead and r.violation is None


@pytest.mark.parametrize("name", LIVE_SWITCHES)
def test_each_progress_invariant_fails_with_its_switch_only(name: str) -> None:
    """Each switch of a LIVE-* id (LIVE-MASTER, LIVE-SSS-NO-DEAD, LIVE-SSS-CATCHUP, LIVE-HA-TRANSFER, LIVE-PUTS,
    LIVE-TASKS, LIVE-CTL-ADDRESS, LIVE-CTL-LEADER, LIVE-CTL-APPLIED): its scenario fails that id at the heal point
    plus its bound, and is clean without the switch."""
    inv_id = B.BUGS[name].invariant
    s = SCENARIOS[name]
    on = run(s.config_for(True), s.seed, 200_000, bugs=s.bugs(True), schedule=s.schedule, max_time=s.max_time)
    assert on.violation is not None and on.violation.invariant == inv_id, on.violation
    bound = [b for b, ids in deadlines(timeouts(s.config_for(True))).items() if inv_id in ids]
    settle = next(x for x in _steps(on.text or "") if x["ev"] == "settle" and "healed" in x)
    assert bound == [on.violation.time - settle["t"]]
    off = run(s.config_for(False), s.seed, 200_000, bugs=s.bugs(False), schedule=s.schedule, max_time=s.max_time,
              record=False)
    assert off.violation is None, off.violation


@pytest.mark.parametrize("created,initial,period,last,now,expect", [
    (0, 3000, 5000, None, 2000, None),  # its first run is not due yet
    (0, 3000, 5000, None, 4000, 3000),  # due at 3000, never ran
    (0, 3000, 5000, 3000, 20_000, None),  # ran at its first tick, within the window (20000 - 5000 - 14000)
    (0, 3000, 5000, 3000, 30_000, 11_000),  # nothing since: overdue since 30000 - 5000 - 14000
    (0, 3000, 5000, 12_000, 30_000, None),
])
def test_task_overdue(created: int, initial: int, period: int, last: int | None, now: int,
                      expect: int | None) -> None:
    assert task_overdue(created, initial, period, last, now, 14_000) == expect


def test_simulate_turns_progress_on_for_new_runs(tmp_path: Path) -> None:
    for flags, on in (([], True), (["--no-progress"], False)):
        path = tmp_path / f"t{on}.jsonl"
        p = subprocess.run([sys.executable, "-m", "rmqha", "simulate", "--seed", "2", "--steps", "300", "--trace",
                            str(path), *flags], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        header = json.loads(path.read_text().splitlines()[0])
        assert header["config"]["sim"].get("progress", False) is on
        assert ('"ev":"progress-check"' in path.read_text()) is on


# ``rmqha simulate --seed N --bug NAME [--fix all]`` exits 1 with the switch's LIVE-* id: the seed of each, under the
# generated faults (the first seed that does, searched from 1; --fix all where unfixed findings fire first)
SIMULATE_SEEDS = {
    B.SYNC_SKIPS_BROKER_ELECT: (8, True),
    B.ALTER_CHECKS_OLD_SET_ALIVE: (53, True),
    B.EXPAND_CHECKS_UNION: (10, True),
    B.HA_READ_TIME_ON_HANDSHAKE_ONLY: (1, True),
    B.ROUTE_CHANGE_IGNORES_ADDRESSES: (1, True),
    B.SYNC_METADATA_TASK_DIES: (2, True),
}


@pytest.mark.parametrize("name", sorted(SIMULATE_SEEDS))
def test_a_generated_run_catches_each_progress_switch(name: str) -> None:
    """What ``rmqha simulate`` runs (the safe profile, progress on, 20 000 steps of random faults)."""
    seed, fix_all = SIMULATE_SEEDS[name]
    bugs = sorted({name, *(B.FIXES_ALL if fix_all else ())})
    r = run(_progress(default_config("safe")), seed, 20_000, bugs=bugs, record=False)
    assert r.violation is not None and r.violation.invariant == B.BUGS[name].invariant, r.violation


def test_a_legacy_run_settles_and_its_progress_is_checked() -> None:
    """A 4.x run (no controller) heals, and the 4.x forms of LIVE-SSS-CATCHUP, LIVE-HA-TRANSFER and LIVE-PUTS and
    LIVE-CONSUME are checked at their bounds (sums of the 4.x timeouts), clean; `rmqha simulate` turns the tail on
    for legacy profiles too."""
    from rmqha.cli.files import load_config

    cfg, _ = load_config(None, "legacy-sync", progress=True)
    assert cfg.sim.progress
    r = run(cfg, 1, 3000, bugs=list(B.FIXES_ALL))
    steps = _steps(r.text or "")
    (settle,) = [s for s in steps if s["ev"] == "settle" and "healed" in s]
    assert settle["healed"] and r.violation is None, r.violation
    checked = {i for s in steps if s["ev"] == "progress-check" for i in s["ids"]}
    assert {"LIVE-SSS-CATCHUP", "LIVE-HA-TRANSFER", "LIVE-PUTS", "LIVE-CONSUME"} <= checked
    assert len([s for s in steps if s["ev"] == "probe"]) == 2
    legacy = timeouts(cfg)
    assert legacy.legacy and total(BY_ID["LIVE-CONSUME"].settle(legacy)) > 0  # type: ignore[misc]


def test_a_reset_that_reaches_a_slave_before_its_connect_result_still_closes_its_connection() -> None:
    """Found by the Hypothesis cluster machine (LIVE-HA-TRANSFER, a kit bug): a slave's connect to a paused master is
    accepted only at the resume; a ``break-ha`` at the same instant resets the connection, and the reset reached the
    slave before the connect result, so the slave dropped it, went to HANDSHAKE on a dead connection and waited
    there for good. A socket exists from the accept on, so the reset now waits for the connect result: the slave's
    first read sees EOF, it closes, and reconnects 5 s later."""
    cfg = config_from_dict({"sim": {"progress": True}, "workload": {"produce_interval": 0}}, default_config("safe"))
    schedule = [{"t": 200, "do": "produce", "count": 1, "size": None},
                {"t": 18000, "do": "break-ha", "node": "b3"}, {"t": 23000, "do": "pause", "node": "b3"},
                {"t": 24000, "do": "break-ha", "node": "b3"}, {"t": 24000, "do": "resume", "node": "b3"}]
    r = run(cfg, 0, 10_000_000, bugs=sorted(B.FIXES_ALL), schedule=schedule, max_time=24_000)
    assert r.violation is None, r.violation
    steps = _steps(r.text or "")
    fin = next(i for i, e in enumerate(steps) if e.get("ev") == "ha" and e.get("fin") and e.get("dst") == "b1"
               and e["t"] >= 24_000)
    told = next(i for i, e in enumerate(steps) if e.get("ev") == "ha-connect" and e.get("node") == "b1"
                and e["t"] >= 24_000)
    assert fin < told and steps[fin]["conn"] == steps[told]["conn"]  # the case: the reset came first
    assert any(o.get("k") == "ha.client-close" and o.get("n") == "b1" for e in steps[told:told + 1]
               for o in e.get("obs", []))


def test_idle_wakeups_exempts_only_the_reput_poll() -> None:
    """LIVE-IDLE-WAKEUPS leaves out ReputMessageService's 1 ms poll by its callback's name: the name still is it."""
    assert POLLING == {BrokerNode._reput.__qualname__}


def test_idle_wakeups_allows_the_deadlines_a_busy_legacy_master_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4.x master under a producer sending every 20 ms: each report of its slave leaves its HA connection an idle
    round whose heartbeat deadline fires 5 s later, more than 100 in one quiet second. LIVE-IDLE-WAKEUPS allows one
    per event the broker was handed in the deadline before, so the run is clean; without that allowance (the
    lookback cut to nothing) the same run fails it."""
    cfg = config_from_dict({"workload": {"produce_interval": 20, "consume_interval": 0}, "sim": {"progress": True}},
                           default_config("legacy-sync"))
    assert run(cfg, 1, 5000, bugs=list(B.FIXES_ALL), record=False).violation is None
    init = Tail.__init__

    def no_lookback(self: Tail, sim: Simulation, end: int) -> None:
        init(self, sim, end)
        self._lookback = -1  # the current second's events only: none before it

    monkeypatch.setattr(Tail, "__init__", no_lookback)
    v = run(cfg, 1, 5000, bugs=list(B.FIXES_ALL), record=False).violation
    assert v is not None and v.invariant == "LIVE-IDLE-WAKEUPS" and "LegacyConnection" in v.message, v
