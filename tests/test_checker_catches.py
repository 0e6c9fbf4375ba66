"""Every checker is shown to catch a real violation.

Most invariants are demonstrated by a bug-switch scenario (``impl/sim/scenarios.py``, run by ``test_bugs.py``) or a
finding trace (``impl/findings.py``, run by ``test_findings.py``). The ones no reachable run breaks are shown here:
a real ``Simulation`` of the safe profile runs until the set is healthy (a master, a full SyncStateSet, acked
messages) with no violation; then the smallest corruption that breaks exactly one invariant is injected and the
checker has to name it.

* State predicates (``reads=...``): the corruption goes into the state the predicate reads, and the checker looks
  the way the world makes it look after a step, through ``Checker.after_step`` with the corrupted node in
  ``world.touched`` and no full re-check pending, so the incremental path (touched nodes, broker fingerprints) is
  the one exercised.
* Event predicates (``on=...``): when the world can be made to emit the event from corrupted state, it does (the
  simulation runs on). When the node computes the observation from the same state it guards with (so no state
  can produce a bad one), a real observation captured from the run is altered minimally and fed through
  ``Checker.after_step``, as ``test_bugs.test_ha_contiguous_checker_catches_a_gap`` does.

Each test has a negative control: the same kind of step without the corruption stays clean.

Tests marked ``xfail(strict=True)`` record checker weaknesses: a violation of the invariant that the checker, as
written, does not report. They are kept so that fixing the checker turns them into failures to un-mark.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from rmqha.impl.codes import BrokerRole
from rmqha.impl.controller.replicas_info import AlterSyncStateSetEvent
from rmqha.impl.findings import FINDINGS
from rmqha.impl.invariants import BY_ID, CATALOGUE, Checker
from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.scenarios import SCENARIOS
from rmqha.impl.sim.world import Simulation
from rmqha.impl.store.epoch_cache import EpochEntry
from rmqha.impl.store.message import body_for, encode

from tests.test_bugs import test_ha_contiguous_checker_catches_a_gap as _ha_contiguous_demo

HEALTHY_AT = 12_000  # ms of simulated time: the master is elected and its SSS holds every broker by ~6 s

# Checker weaknesses, each shown by a strict xfail test below (the reason is the diagnosis). Two more that this
# file found (CTL-EPOCH-MONO without a per-set high-water mark, BRK-EPOCH-MONO trusting the broker's own
# 'previous' epoch) are fixed in the checker; their tests now pass.
WEAK_EPOCH_FP = (
    "_brokers_changed fingerprints the epoch cache by EpochFileCache.version only; a write to the entry "
    "map that does not bump it leaves the fingerprint unchanged, so the step that touches the broker "
    "skips EPOCH-FILE-WF (it is seen only once some broker's fingerprint moves for another reason, or a "
    "fault action forces a full re-check)"
)
WEAK_TORN_INDEX = (
    "STORE-WHOLE-MESSAGES reads CommitLog.torn, which CommitLog._index fills once when bytes are "
    "appended; no re-check (not even a full one) rescans the log, so bytes of an already indexed message "
    "that change in place are never seen"
)

# invariant id -> the test that shows its checker catching a violation (filled by @demonstrates)
DEMONSTRATED: dict[str, Callable[..., Any]] = {"HA-CONTIGUOUS": _ha_contiguous_demo}


def demonstrates(inv: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        assert inv in BY_ID and inv not in DEMONSTRATED, inv
        DEMONSTRATED[inv] = fn
        return fn

    return register


# ------------------------------------------------------------------------------------------------ helpers


class RecordingChecker(Checker):
    """The real checker, also keeping every observation it was handed (to copy real ones)."""

    def __init__(self, world: Simulation) -> None:
        super().__init__(world)
        self.observed: list[dict[str, Any]] = []
        self.ran: set[str] = set()  # state predicate groups run by the last after_step

    def after_step(self, observations: list[dict[str, Any]]) -> None:
        self.observed.extend(observations)
        self.ran = set()
        super().after_step(observations)

    def _check_controller_state(self) -> None:
        self.ran.add("controller")
        super()._check_controller_state()

    def _check_broker_state(self) -> None:
        self.ran.add("brokers")
        super()._check_broker_state()

    def last(self, kind: str, **match: Any) -> dict[str, Any]:
        """A deep copy of the last observation of ``kind`` whose fields equal ``match``."""
        for obs in reversed(self.observed):
            if obs["k"] == kind and all(obs.get(k) == v for k, v in match.items()):
                return copy.deepcopy(obs)
        raise AssertionError(f"no {kind} {match} observed")


def healthy(schedule: list[dict[str, Any]] | None = None, until: int = HEALTHY_AT) -> Simulation:
    """A safe-profile run stepped to ``until``: one master, every broker in its SSS, acked messages, no violation."""
    sim = Simulation(default_config("safe"), 1, schedule=schedule or [], max_steps=10**9, max_time=until,
                     checker_factory=RecordingChecker)
    assert sim.run() is None
    assert sim.violation is None
    master = sim.believed_master()
    assert master is not None
    info = sim.controller_node().rim.sync_state_set_info_table["broker-a"]
    assert info.master_broker_id == sim.broker_id(master)
    assert info.sync_state_set == {sim.broker_id(b) for b in sim.brokers}
    assert len(sim.checker.acked) >= 10
    for b in sim.brokers:
        assert sim.broker(b).store.commitlog.keys  # every replica holds messages
    return sim


def run_until(sim: Simulation, t: int) -> None:
    """Let the world take its own steps until ``t`` (or the first violation)."""
    sim.max_time = t
    sim.run()


def slaves(sim: Simulation) -> list[str]:
    return [b for b in sim.brokers if sim.broker(b).store.role == BrokerRole.SLAVE]


def sss_info(sim: Simulation) -> Any:
    return sim.controller_node().rim.sync_state_set_info_table["broker-a"]


def look(sim: Simulation, *touched: str) -> set[str]:
    """One checker pass as the world runs it after a step in which ``touched`` handled something: no fault action,
    no full re-check pending, so only the incremental path (touched nodes, broker fingerprints) can see a change.
    Returns the state predicate groups that ran ("controller", "brokers")."""
    checker = sim.checker
    assert not checker._full_recheck and not sim.acted  # the cached path, not a forced full re-check
    sim.touched = set(touched)
    try:
        checker.after_step([])
    finally:
        sim.touched = set()
    return checker.ran


def look_fully(sim: Simulation, *touched: str) -> set[str]:
    """The pass after a step that ran a fault action: the world sets ``acted`` and every state predicate re-runs."""
    sim.acted = True
    sim.touched = set(touched)
    try:
        sim.checker.after_step([])
    finally:
        sim.touched = set()
        sim.acted = False
    return sim.checker.ran


def feed(sim: Simulation, obs: dict[str, Any]) -> None:
    """Hand the checker one observation, as the world does at the end of the step that emitted it."""
    sim.checker.after_step([obs])


class NotCaught(AssertionError):
    """The checker reported nothing (the failure the xfail tests below expect; any other one fails them)."""


def caught(sim: Simulation, inv: str) -> None:
    v = sim.violation
    if v is None:
        raise NotCaught(f"{inv}: no violation reported")
    assert v.invariant == inv, f"expected {inv}, got {v.invariant}: {v.message}"


def clean(sim: Simulation) -> None:
    v = sim.violation
    assert v is None, f"{v.invariant}: {v.message}"


def whole_message(log_end: int, key: str) -> bytes:
    return encode(key, body_for(key, 64), log_end, 0)


# ------------------------------------------------------------------------------------------- controller


@demonstrates("CTL-EPOCH-MONO")
def test_ctl_epoch_mono_is_caught():
    """Synthetic observation. The controller snapshots the set just before and just after ``apply_event`` (no yield
    between), and ``apply_event`` moves the epochs exactly as the rule says on any set both controller tables hold;
    the only other way (ApplyBrokerId rebuilding a half-present set at epoch 0) needs a replica table deleted, the
    SSS emptied and a broker with no identity file registering, far from a smallest corruption. So the last real
    ``ctl.apply`` (an AlterSyncStateSet, sE 2 -> 3) is replayed, then replayed with sE moving back instead."""
    sim = healthy()
    real = sim.checker.last("ctl.apply")
    assert real["event"]["type"] == "AlterSyncStateSet"
    assert real["after"]["syncStateSetEpoch"] == real["before"]["syncStateSetEpoch"] + 1

    feed(sim, copy.deepcopy(real))  # negative control: the genuine apply
    clean(sim)

    bad = copy.deepcopy(real)
    bad["after"]["syncStateSetEpoch"] = real["before"]["syncStateSetEpoch"] - 1
    feed(sim, bad)
    caught(sim, "CTL-EPOCH-MONO")


def test_ctl_epoch_mono_decrease_across_controller_restart_is_caught():
    """State corruption: the controller's replicated log loses its last committed entry while the controller is
    down (sE 3 -> 2 after the replay). Nothing else moves the epochs afterwards, so no event delta is wrong."""
    sched = [{"t": HEALTHY_AT + 100, "do": "crash", "node": "ctl"},
             {"t": HEALTHY_AT + 1000, "do": "restart", "node": "ctl"}]
    sim = healthy(sched)
    assert sss_info(sim).sync_state_set_epoch == 3
    run_until(sim, HEALTHY_AT + 500)
    clean(sim)
    assert sim.controller_node() is None
    last = sim.ctl_disk.entries.pop()
    assert last.committed and isinstance(last.event, AlterSyncStateSetEvent)
    run_until(sim, HEALTHY_AT + 12_000)
    assert sss_info(sim).sync_state_set_epoch == 2  # the epoch did go back
    caught(sim, "CTL-EPOCH-MONO")


@demonstrates("CTL-MASTER-IN-SSS")
def test_ctl_master_in_sss_is_caught():
    """State corruption: the controller's SyncStateSet loses its master (a slave removal is the control)."""
    sim = healthy()
    info = sss_info(sim)
    master = info.master_broker_id
    slave = min(info.sync_state_set - {master})

    info.sync_state_set.discard(slave)  # negative control: the master stays a member
    assert "controller" in look(sim, sim.controller)
    clean(sim)

    info.sync_state_set.discard(master)
    assert info.sync_state_set  # not empty: the master is simply not a member
    assert "controller" in look(sim, sim.controller)
    caught(sim, "CTL-MASTER-IN-SSS")


@demonstrates("CTL-SSS-REGISTERED")
def test_ctl_sss_registered_is_caught():
    """State corruption: a member of the controller's SyncStateSet is unregistered from the set's replica table
    while it stays in the SSS (unregistering one from both, as a partial CleanBrokerData does, is the control)."""
    sim = healthy()
    info = sss_info(sim)
    replicas = sim.controller_node().rim.replica_info_table["broker-a"]
    a, b = sorted(info.sync_state_set - {info.master_broker_id})

    replicas.remove_broker_id(a)  # negative control
    info.remove_from_sync_state(a)
    assert "controller" in look(sim, sim.controller)
    clean(sim)

    replicas.remove_broker_id(b)
    assert b in info.sync_state_set
    assert "controller" in look(sim, sim.controller)
    caught(sim, "CTL-SSS-REGISTERED")


@demonstrates("CTL-ID-UNIQUE")
def test_ctl_id_unique_is_caught():
    """State corruption: one broker's ``brokerIdentity`` file takes the id another broker already holds (an id no
    one holds is the control). The identity is part of the broker fingerprint."""
    sim = healthy()
    b, other = slaves(sim)
    disk = sim.disks[b]

    fresh = max(sim.broker_id(x) for x in sim.brokers) + 1
    disk.broker_identity = (*disk.broker_identity[:2], fresh)  # negative control: an id nobody else holds
    assert "brokers" in look(sim, b)
    clean(sim)

    disk.broker_identity = (*disk.broker_identity[:2], sim.disks[other].broker_identity[2])
    assert "brokers" in look(sim, b)
    caught(sim, "CTL-ID-UNIQUE")


# ---------------------------------------------------------------------------------------------- brokers


@demonstrates("BRK-EPOCH-MONO")
def test_brk_epoch_mono_is_caught():
    """State corruption, event from the world: the master's syncStateSetEpoch is lowered by one; its next periodic
    metadata sync re-adopts the controller's SSS at an epoch it already held, and the real ``brk.sss`` it emits is
    caught. The same run without the corruption stays clean."""
    control = healthy()
    run_until(control, HEALTHY_AT + 8000)
    clean(control)

    sim = healthy()
    master = sim.broker(sim.believed_master())
    before = len(sim.checker.observed)
    master.replicas.sync_state_set_epoch -= 1
    run_until(sim, HEALTHY_AT + 8000)
    caught(sim, "BRK-EPOCH-MONO")
    sss = [o for o in sim.checker.observed[before:] if o["k"] == "brk.sss"]
    assert sss and sss[-1]["n"] == master.name and sss[-1]["syncStateSetEpoch"] == sss_info(sim).sync_state_set_epoch


def test_brk_epoch_mono_role_change_after_decrease_is_caught():
    """State corruption: a slave's masterEpoch is lowered by one; its next metadata sync changes its role again at
    the controller's masterEpoch, which it already held (a role change not for a strictly greater epoch)."""
    sim = healthy()
    b = slaves(sim)[0]
    node = sim.broker(b)
    held = node.replicas.master_epoch
    before = len(sim.checker.observed)
    node.replicas.master_epoch = held - 1
    run_until(sim, HEALTHY_AT + 8000)
    roles = [o for o in sim.checker.observed[before:] if o["k"] == "brk.role" and o["n"] == b]
    assert roles and roles[0]["masterEpoch"] == held  # the role did change again at the epoch it held
    caught(sim, "BRK-EPOCH-MONO")


@demonstrates("BRK-SLAVE-NO-WRITE")
@pytest.mark.parametrize("who", ["slave", "fenced-master"])
def test_brk_slave_no_write_is_caught(who):
    """Synthetic observation. ``BrokerNode._put`` refuses a put on a slave or a fenced broker and emits
    ``brk.append`` from the very role and fence it just tested, with no yield in between, so no state makes a
    bad one. The master's last real append is replayed, then replayed as made by a slave / a fenced master."""
    sim = healthy()
    master = sim.believed_master()
    real = sim.checker.last("brk.append", n=master)
    assert real["role"] == BrokerRole.SYNC_MASTER.value and real["fenced"] is False

    feed(sim, copy.deepcopy(real))  # negative control
    clean(sim)

    bad = copy.deepcopy(real)
    if who == "slave":
        s = slaves(sim)[0]
        bad.update(n=s, role=BrokerRole.SLAVE.value, offset=sim.broker(s).store.max_phy_offset)
    else:
        bad.update(fenced=True)
    feed(sim, bad)
    caught(sim, "BRK-SLAVE-NO-WRITE")


# ---------------------------------------------------------------------------------------------- HA/store


@demonstrates("EPOCH-FILE-WF")
def test_epoch_file_wf_is_caught():
    """State corruption: an entry for an older epoch is put after the last one in a slave's epoch cache map and
    written out (``_flush``: the version bump and checkpoint write every EpochFileCache mutation does). A
    well-formed ``append_entry`` on the same cache is the control."""
    sim = healthy()
    b = slaves(sim)[0]
    cache = sim.broker(b).store.epoch_cache
    end = sim.broker(b).store.max_phy_offset
    last = cache.last_epoch()

    assert cache.append_entry(EpochEntry(last + 1, end))  # negative control
    assert "brokers" in look(sim, b)
    clean(sim)

    cache._map[last - 1] = EpochEntry(last - 1, end)  # out of order: after epoch last + 1 in the map
    cache._flush()
    assert sim.disks[b].epoch_file[-1] == (last - 1, end)
    assert "brokers" in look(sim, b)
    caught(sim, "EPOCH-FILE-WF")


@pytest.mark.xfail(strict=True, raises=NotCaught, reason=WEAK_EPOCH_FP)
def test_epoch_file_wf_unversioned_map_write_is_caught():
    """State corruption without the version bump: the same out-of-order entry, written straight into the map."""
    sim = healthy()
    b = slaves(sim)[0]
    cache = sim.broker(b).store.epoch_cache
    last = cache.last_epoch()
    cache._map[last - 1] = EpochEntry(last - 1, sim.broker(b).store.max_phy_offset)
    assert [e for e, _ in cache.pairs()] == [last, last - 1]
    look(sim, b)  # the step that touches the corrupted broker
    caught(sim, "EPOCH-FILE-WF")


@demonstrates("HA-EPOCH-BOUNDARY")
def test_ha_epoch_boundary_is_caught():
    """State corruption, the shape of F-TRANSFER-NEGATIVE-BATCH (the other shapes are shown by the
    transfer-crosses-epoch scenario and F-TRANSFER-EPOCH-STALE). A caught-up connection of the master is told, as
    upstream #9690's re-read of the epoch end would tell it, that its epoch ends at an offset below its position,
    where a new epoch entry starts: the next batch gets size end - position < 0 and goes out. The control is the
    same with the boundary exactly at the position: a batch of size 0 switches to the new epoch and the data
    follows under it."""
    sim = healthy()
    node = sim.broker(sim.believed_master())
    cache = node.store.epoch_cache
    conn = next(c for c in node.ha.connections.values() if c.next_transfer_from_where == node.store.max_phy_offset)

    def new_epoch_at(start: int) -> None:  # every connection learns the end of its (then last) epoch
        assert cache.append_entry(EpochEntry(cache.last_epoch() + 1, start))
        for c in node.ha.connections.values():
            c.current_transfer_epoch_end_offset = start

    at = conn.next_transfer_from_where  # negative control
    new_epoch_at(at)
    run_until(sim, sim.now + 2000)
    clean(sim)
    assert conn.current_transfer_epoch == cache.last_epoch() and conn.next_transfer_from_where > at + 1

    new_epoch_at((at + conn.next_transfer_from_where) // 2)
    run_until(sim, sim.now + 2000)
    caught(sim, "HA-EPOCH-BOUNDARY")
    assert "negative size" in sim.violation.message


@demonstrates("STORE-WHOLE-MESSAGES")
def test_store_whole_messages_is_caught():
    """State corruption: a slave's log receives the first half of a message and then a whole message (a batch cut
    mid-message, followed by more data), so a partial message is no longer the last thing in the log. A whole
    message appended alone is the control."""
    sim = healthy()
    b = slaves(sim)[0]
    log = sim.broker(b).store.commitlog

    log.append_data(whole_message(log.max_offset, "control-1"))  # negative control
    assert "brokers" in look(sim, b)
    clean(sim)

    half = whole_message(log.max_offset, "torn-1")
    log.append_data(half[: len(half) // 2])
    assert "brokers" in look(sim, b)  # an incomplete last message is allowed
    clean(sim)
    log.append_data(whole_message(log.max_offset, "after-torn"))
    assert "after-torn" in log.keys
    assert "brokers" in look(sim, b)
    caught(sim, "STORE-WHOLE-MESSAGES")


@pytest.mark.xfail(strict=True, raises=NotCaught, reason=WEAK_TORN_INDEX)
def test_store_whole_messages_in_place_damage_is_caught():
    """State corruption of indexed bytes: one body byte of a slave's first message flips (its CRC no longer
    matches), then the world forces a full re-check as after a fault action."""
    sim = healthy()
    b = slaves(sim)[0]
    log = sim.broker(b).store.commitlog
    first = log.records[0]
    log.data[first.offset + first.size - 1] ^= 0xFF
    assert "brokers" in look_fully(sim, b)  # the predicate did run
    caught(sim, "STORE-WHOLE-MESSAGES")


# -------------------------------------------------------------------------------------------------- sync


@demonstrates("SYNC-VISIBLE-BOUND")
def test_sync_visible_bound_is_caught():
    """Synthetic observation. ``BrokerNode._do_reput`` dispatches only whole messages ending at or before the reput
    end (confirmOffset without readUnCommitted) and reports the confirmOffset read right after, from the same
    store, so no store state makes a bad ``store.dispatch``. A slave's last real dispatch is replayed, then
    replayed as if confirmOffset had been one byte short of what was dispatched."""
    sim = healthy()
    s = slaves(sim)[0]
    real = sim.checker.last("store.dispatch", n=s)
    assert real["upto"] <= real["confirm"]

    feed(sim, copy.deepcopy(real))  # negative control
    clean(sim)

    bad = copy.deepcopy(real)
    bad["confirm"] = real["upto"] - 1
    feed(sim, bad)
    caught(sim, "SYNC-VISIBLE-BOUND")


# -------------------------------------------------------------------------------------------------- meta


def _snake(inv: str) -> str:
    return inv.lower().replace("-", "_")


def test_every_invariant_is_demonstrated():
    by_scenario = {s.invariant for s in SCENARIOS.values()}
    by_finding = {i for f in FINDINGS.values() for i in f.invariants}
    by_test = set(DEMONSTRATED)
    assert by_test <= set(BY_ID)
    missing = [i.id for i in CATALOGUE if i.id not in by_scenario | by_finding | by_test]
    assert not missing, f"invariants no scenario, finding or test shows being caught: {missing}"
    for inv, fn in DEMONSTRATED.items():
        marks = [m.name for m in getattr(fn, "pytestmark", [])]
        assert "xfail" not in marks and "skip" not in marks, f"{fn.__name__} cannot demonstrate {inv}"
        if inv != "HA-CONTIGUOUS":
            assert fn.__name__ == f"test_{_snake(inv)}_is_caught"
            assert globals()[fn.__name__] is fn  # collected from this module


@demonstrates("CLI-QUEUE-POSITION-STABLE")
def test_cli_queue_position_stable_is_caught():
    """A real run: 4 queues, a consumer reading them, and a promoted slave that does not recover its queue table
    (``queue-table-not-recovered``): the new master appends at a queue position the consumer has read. The same
    seed without the switch is the negative control."""
    from rmqha.impl import bugs as B
    from rmqha.impl.sim.config import config_from_dict, default_config
    from rmqha.impl.sim.runner import run

    cfg = config_from_dict({"workload": {"queues": 4}}, default_config("safe"))
    r = run(cfg, 1, 20_000, bugs=sorted([*B.FIXES_ALL, B.QUEUE_TABLE_NOT_RECOVERED]), record=False)
    assert r.violation is not None and r.violation.invariant == "CLI-QUEUE-POSITION-STABLE", r.violation
    assert "where a consumer had read" in r.violation.message
    control = run(cfg, 1, r.steps, bugs=sorted(B.FIXES_ALL), record=False)
    assert control.violation is None


def _controller_group(until: int = 12_000, **extra: Any) -> Simulation:
    """A 3-node controller group (``[cluster] controllers = 3``) stepped to ``until``, every fix on."""
    from rmqha.impl import bugs as B
    from rmqha.impl.sim.config import config_from_dict

    cfg = config_from_dict({"cluster": {"controllers": 3}, **extra}, default_config("safe"))
    sim = Simulation(cfg, 1, max_steps=10**9, max_time=until, checker_factory=RecordingChecker,
                     bugs=frozenset(B.FIXES_ALL))
    assert sim.run() is None
    return sim


@demonstrates("CTL-APPLY-PREFIX")
def test_ctl_apply_prefix_is_caught():
    """Synthetic observation on a real group. Every node applies every committed entry; the checker keeps what the
    first node applied at each index. A genuine apply of the same entry by another node is the control; the same
    index applied with another event (a node whose log diverged under a committed entry) is caught."""
    sim = _controller_group()
    real = sim.checker.last("ctl.apply")
    other = next(c for c in sim.controllers if c != real["node"])
    feed(sim, dict(copy.deepcopy(real), node=other, n=other))
    clean(sim)
    forged = copy.deepcopy(real)
    forged["node"] = forged["n"] = other
    forged["event"]["syncStateSetEpoch"] = forged["event"].get("syncStateSetEpoch", 0) + 7
    forged["event"]["forged"] = True
    feed(sim, forged)
    caught(sim, "CTL-APPLY-PREFIX")


@demonstrates("CTL-READ-COMMITTED")
def test_ctl_read_committed_is_caught():
    """A real run (seed 23, a 3-node group under leader crashes, leader cuts and slow applies): without
    ``fix-validate-after-commit`` the leader validates a request while an entry it knows committed is not applied
    yet (the DLedger flavour validates on the applied state). With the fix the same run is clean."""
    from rmqha.impl import bugs as B
    from rmqha.impl.sim.config import config_from_dict
    from rmqha.impl.sim.runner import run

    weights = {"crash-controller-leader": 1.0, "isolate-controller-leader": 1.0, "slow-apply": 1.5}
    cfg = config_from_dict({"cluster": {"controllers": 3}, "faults": {"weights": weights}}, default_config("safe"))
    without = sorted(set(B.FIXES_ALL) - {B.FIX_VALIDATE_AFTER_COMMIT})
    r = run(cfg, 23, 20_000, bugs=without, record=False)
    assert r.violation is not None and r.violation.invariant == "CTL-READ-COMMITTED", r.violation
    fixed = run(cfg, 23, r.steps, bugs=sorted(B.FIXES_ALL), record=False)
    assert fixed.violation is None
