"""The faults at the guards and the interleaved broker steps (issue 21, items 2 and 3): off for every header that does
not name them, deterministic, shrinkable, and each one reaching a guard (impl/sim/scenarios.py holds one scenario per
guard switch; the other fault kinds' demonstrations are here)."""

from __future__ import annotations

import json

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.controller.node import _connection_number
from rmqha.impl.rng import DetRng
from rmqha.impl.sim.actions import (
    ADVERSARIAL_KINDS,
    DEFAULT_WEIGHTS,
    FAULT_KINDS,
    GUARD_KINDS,
    UNWEIGHED_GUARD_KINDS,
    Action,
)
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.faults import FaultGenerator, explicit_from_trace, validate_actions
from rmqha.impl.sim.runner import run, run_header
from rmqha.impl.sim.scenarios import QUIET, SCENARIOS
from rmqha.impl.sim.shrink import shrink
from rmqha.impl.trace import parse

FIXES = list(B.FIXES_ALL)


def _run(schedule: list[Action], bugs: list[str] = (), *, settings: dict | None = None, max_time: int = 40000,
         fixes: list[str] = FIXES, seed: int = 1, record: bool = True):
    cfg = config_from_dict(settings if settings is not None else QUIET, default_config("safe"))
    return run(cfg, seed, 200_000, bugs=sorted({*fixes, *bugs}), schedule=schedule, max_time=max_time, record=record)


def _steps(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines()[1:-1]]


# ------------------------------------------------------------------------------------------------ determinism


def test_the_new_kinds_are_off_unless_the_config_turns_them_on():
    weights = dict(FaultGenerator(default_config("safe").faults, DetRng(1)).weights)
    assert not set(weights) & GUARD_KINDS
    faithful = dict(FaultGenerator(default_config("guards").faults, DetRng(1)).weights)
    assert set(faithful) & GUARD_KINDS == GUARD_KINDS - ADVERSARIAL_KINDS
    every = dict(FaultGenerator(default_config("adversarial").faults, DetRng(1)).weights)
    assert set(every) & GUARD_KINDS == GUARD_KINDS
    named = config_from_dict({"faults": {"weights": {"ha-dup": 2.0}}}, default_config("safe"))
    assert dict(FaultGenerator(named.faults, DetRng(1)).weights)["ha-dup"] == 2.0
    assert GUARD_KINDS - UNWEIGHED_GUARD_KINDS <= set(DEFAULT_WEIGHTS) and GUARD_KINDS <= set(FAULT_KINDS)
    # a kind added later has no default weight: an adversarial header that does not weigh it draws as it did
    assert not UNWEIGHED_GUARD_KINDS & set(DEFAULT_WEIGHTS)
    old = config_from_dict({"faults": {"weights": {}}}, default_config("adversarial"))
    old.faults.weights = {}
    assert not set(dict(FaultGenerator(old.faults, DetRng(1)).weights)) & UNWEIGHED_GUARD_KINDS
    # the settings are quiet: a header that does not use them does not name them (old headers replay as they were)
    text = json.dumps(default_config("safe").to_dict())
    assert "guards" not in text and "adversarial" not in text and "interleave" not in text


@pytest.mark.parametrize("profile", ["guards", "adversarial"])
def test_a_run_with_every_new_fault_replays_byte_for_byte(profile):
    first = run(default_config(profile), 5, 6000, bugs=FIXES, profile=profile)
    header, _, footer = parse(first.text or "")
    again = run_header(header)
    assert again.text == first.text and footer["hash"] == first.digest
    acted = {s["act"].get("fault") for s in _steps(first.text or "") if s["ev"] == "act"}
    assert acted & GUARD_KINDS, acted
    actions = explicit_from_trace(_steps(first.text or ""))
    validate_actions(actions, lambda n: True)
    explicit = run(default_config(profile), 5, 6000, bugs=FIXES, schedule=actions)
    assert explicit.steps > 0


def test_interleaved_role_changes_run_in_sub_steps_and_stay_deterministic():
    """With [sim] interleave a promotion's sub-steps are separate timer steps (the reput runs between them)."""
    sched = [{"t": 2000, "do": "produce", "count": 3}, {"t": 6000, "do": "crash", "node": "b2"}]
    plain = _run(sched, max_time=12000)
    mixed = _run(sched, settings={**QUIET, "sim": {"interleave": True}}, max_time=12000)
    again = _run(sched, settings={**QUIET, "sim": {"interleave": True}}, max_time=12000)
    assert mixed.violation is None and plain.violation is None
    assert mixed.text == again.text

    def promoted(text: str) -> int:
        return next(s["t"] for s in _steps(text) for o in s.get("obs", [])
                    if o["k"] == "brk.role" and o["role"] == "MASTER" and o["masterEpoch"] == 2)

    assert promoted(mixed.text or "") > promoted(plain.text or "")  # the role change spans several steps


# ------------------------------------------------------------------------------------------------ the faults


def test_a_held_partition_delivers_a_dead_incarnations_requests_after_its_successors():
    """b2's link to the controller holds what b2 sends; b2 dies and restarts; at the heal the live process's
    requests go at once, the dead one's (on channel b2#0) ``hold`` ms later, followed by its connection's close."""
    sched = [{"t": 5000, "do": "partition", "id": "h", "links": [["b2", "ctl"]], "hold": 4000},
             {"t": 6000, "do": "crash", "node": "b2"}, {"t": 7000, "do": "restart", "node": "b2"},
             {"t": 9000, "do": "heal", "id": "h"}]
    r = _run(sched, max_time=16000)
    steps = _steps(r.text or "")
    from_b2 = [s for s in steps if s["ev"] == "msg" and s["src"] == "b2" and s["dst"] == "ctl" and 9000 <= s["t"]]
    registered = min(s["t"] for s in from_b2 if s["cmd"].get("op") == "CONTROLLER_REGISTER_BROKER")
    closed = [s["t"] for s in steps if s["ev"] == "channel-closed" and s["peer"] == "b2" and s["node"] == "ctl"]
    assert registered < 9100 and len(closed) == 1 and closed[0] >= 13000  # the old connection closes 4 s late
    late = [s["t"] for s in from_b2 if 13000 <= s["t"] < closed[0]]
    assert late  # the old incarnation's held heartbeats, 4 s after the heal, just before its close


def test_a_stale_ha_tail_keeps_the_old_connection_until_a_write_is_reset():
    """ha-stale: b1's FIN reaches master b2 10 s late; b2 holds the old connection beside b1's new one until its next
    write on it (the idle heartbeat, 5 s after its last) comes back as a reset, long before the FIN."""
    sched = [{"t": 8000, "do": "ha-stale", "node": "b1", "lag": 10000, "until": 30000},
             {"t": 8200, "do": "crash", "node": "b1"}, {"t": 9200, "do": "restart", "node": "b1"}]
    r = _run(sched, max_time=25000)
    steps = _steps(r.text or "")
    closes = [s["t"] for s in steps for o in s.get("obs", [])
              if o["k"] == "ha.conn-closed" and o["n"] == "b2" and o["peer"] == "b1"]
    accepted = [s["t"] for s in steps for o in s.get("obs", []) if o["k"] == "ha.accept" and o["peer"] == "b1"]
    assert len(accepted) == 2 and closes and accepted[1] < closes[0] < 18000


def test_adversarial_reorder_reaches_the_contiguity_check():
    sched = [{"t": 7000, "do": "produce", "count": 2},
             {"t": 8000, "do": "ha-fault", "node": "b1", "mode": "reorder", "p": 1.0, "until": 8600},
             {"t": 8100, "do": "produce", "count": 3}]
    broken = _run(sched, [B.SLAVE_SKIPS_OFFSET_CHECK], max_time=30000)
    assert broken.violation is not None and broken.violation.invariant == "HA-CONTIGUOUS"
    guarded = _run(sched, max_time=30000)
    assert guarded.violation is None
    assert "master pushed offset not equal the max phy offset in slave" in (guarded.text or "")


def test_one_flipped_bit_never_makes_a_frame_state_another_valid_state():
    from rmqha.impl.ha.frames import HANDSHAKE, TRANSFER
    from rmqha.impl.sim.world import corrupt_state_word

    for state in (HANDSHAKE, TRANSFER):
        frame = state.to_bytes(4, "big") + b"rest"
        for bit in range(32):
            out = corrupt_state_word(frame, bit)
            assert out[4:] == b"rest" and int.from_bytes(out[:4], "big", signed=True) not in (HANDSHAKE, TRANSFER)


@pytest.mark.parametrize("node", ["b1", "b2", "b3"])
def test_adversarial_corruption_is_refused_and_the_connection_recovers(node):
    """ha-corrupt: every frame into ``node`` for 600 ms arrives with its state word corrupted to READY or SUSPEND (the
    slave's reader, or the master's, raises FrameError and the connection closes, as RocketMQ's readers refuse a
    state they do not expect); the slave reconnects and catches up, nothing breaks."""
    sched = [{"t": 7000, "do": "produce", "count": 2},
             {"t": 8000, "do": "ha-fault", "node": node, "mode": "corrupt", "p": 1.0, "until": 8600},
             {"t": 8100, "do": "produce", "count": 3}, {"t": 20000, "do": "produce", "count": 1}]
    r = _run(sched, max_time=40000)
    assert r.violation is None, r.violation
    errors = [o for s in _steps(r.text or "") for o in s.get("obs", []) if o["k"] == "ha.frame-error"]
    assert errors and all(o["error"].split("state ")[1][0] in "03" for o in errors), errors
    end = [s for s in _steps(r.text or "") if s["ev"] == "act" and s["act"]["do"] == "produce"][-1]["t"]
    appends = [s["t"] for s in _steps(r.text or "") for o in s.get("obs", []) if o["k"] == "ha.slave-append"]
    assert any(t > end for t in appends)  # replication goes on after the corruption


def test_adversarial_request_replay_reaches_the_sync_state_set_epoch_check():
    """rpc-replay: master b2's alterSyncStateSet ({1, 2} at sE 1) arrives again after the set moved to sE 3."""
    sched = [{"t": 5000, "do": "rpc-replay", "node": "b2", "lag": 3000, "p": 1.0, "until": 6000}]
    broken = _run(sched, [B.ALTER_SKIP_SSS_EPOCH_CHECK], max_time=20000)
    assert broken.violation is not None and broken.violation.invariant == "CTL-ALTER-FENCED"
    assert _run(sched, max_time=20000).violation is None


@pytest.mark.parametrize("point", ["role-change", "empty-epoch"])
def test_a_crash_between_the_epoch_append_and_the_first_write_reaches_the_epoch_append_guard(point):
    """b3 is made master and killed once its new epoch entry is appended (at the role change's second boundary, or
    at the end of the step that left the entry without bytes); re-elected after its restart, it appends a later epoch
    at the same start. The guard rejects it (QUIRK-EPOCH-EQ: the fix of F-EPOCH-EQ-SPLICE, which would replace the
    empty entry, is off here); without it the file holds two entries with one start."""
    arm = {"t": 7000, "do": "crash-at", "node": "b3", "point": point, "within": 10000}
    if point == "role-change":
        arm["step"] = 2
    sched = [{"t": 2000, "do": "produce", "count": 2}, arm, {"t": 8000, "do": "admin-elect", "brokerId": 2},
             {"t": 9000, "do": "restart", "node": "b3"}]
    fixes = [f for f in B.FIXES_ALL if f != B.FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH]
    broken = _run(sched, [B.EPOCH_APPEND_UNCHECKED], fixes=fixes)
    assert broken.violation is not None and broken.violation.invariant == "EPOCH-FILE-WF", broken.violation
    guarded = _run(sched, fixes=fixes)
    assert guarded.violation is None
    crashes = [o for s in _steps(guarded.text or "") for o in s.get("obs", []) if o["k"] == "sim.crash"]
    assert [o.get("at") for o in crashes] == [point]


def test_the_shrinker_keeps_the_new_kinds_it_needs():
    """ddmin over a guard scenario's schedule padded with faults it does not need: the new kinds survive."""
    s = SCENARIOS[B.ALTER_SKIPS_MEMBER_CHECKS]
    noise: list[Action] = [{"t": 3000, "do": "rpc-replay", "node": "b3", "lag": 500, "p": 1.0, "until": 3500},
                           {"t": 3100, "do": "ha-stale", "node": "b3", "lag": 1000, "until": 3200},
                           {"t": 3200, "do": "crash-at", "node": "b3", "point": "empty-epoch", "within": 100},
                           {"t": 4000, "do": "ha-fault", "node": "b3", "mode": "dup", "p": 0.0, "until": 4100}]
    padded = sorted([*noise, *s.schedule], key=lambda a: a["t"])
    res = shrink(s.config_for(True), s.seed, 200_000, s.bugs(True), padded, s.invariant, s.max_time, budget=60)
    kept = {a["do"] for a in res.schedule}
    assert res.schedule and len(res.schedule) <= len(s.schedule) and "partition" in kept and "clean" in kept
    assert all(a.get("hold") == 3000 for a in res.schedule if a["do"] == "partition")


def test_the_fuzz_swarm_draws_the_guards_apart_from_a_seeds_other_draws():
    """[fuzz] guards: a seed's family, spacing, brokers and other kinds are what they were without the guards."""
    from rmqha.spark_fuzz.schedule import draw_mix, mix_config
    from rmqha.spark_fuzz.settings import FuzzSettings, settings_from_dict

    safe = default_config("safe")
    drew = 0
    for seed in range(1, 31):
        without = draw_mix(seed, safe, FuzzSettings(guards=0.0))
        full = draw_mix(seed, safe, FuzzSettings(guards=1.0, adversarial=1.0))
        assert (full.family, full.brokers, full.mean_interval) == (without.family, without.brokers,
                                                                   without.mean_interval)
        assert {k: w for k, w in full.weights.items() if k not in GUARD_KINDS} == without.weights
        assert not without.interleave and full.interleave
        drew += sum(1 for k in GUARD_KINDS if full.weights.get(k, 0) > 0)
        cfg = mix_config(safe, full)
        assert cfg.sim.interleave and config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()
    assert drew > 30
    assert settings_from_dict({"guards": 0.5}).guards == 0.5
    with pytest.raises(ValueError):
        settings_from_dict({"adversarial": 2})


def test_conformance_leaves_the_faults_at_the_guards_out_of_the_models_scope():
    """The model has atomic steps and TCP's promises: a run with the faults at the guards or interleaved steps is
    outside what ``rmqha conform`` checks (a crash inside a step, held and replayed messages), and says so."""
    from rmqha.impl.sim.runner import header_for
    from rmqha.models.conform import outside_model

    safe = default_config("safe")
    assert outside_model(safe, header_for(safe, 1, 10, [], None)) is None
    for profile in ("guards", "adversarial"):
        cfg = default_config(profile)
        assert "faults at the guards" in (outside_model(cfg, header_for(cfg, 1, 10, [], None)) or "")
    held: list[Action] = [{"t": 5, "do": "partition", "id": "h", "links": [["b1", "ctl"]], "hold": 100}]
    assert "faults at the guards" in (outside_model(safe, header_for(safe, 1, 10, [], held)) or "")


def test_the_generator_draws_each_kind_at_the_guards_with_its_variants():
    """Each composite kind expands into its primitives (the stale request with and without a restart under it)."""
    from rmqha.spark_fuzz.schedule import _Ghost

    seen: dict[str, set[str]] = {}
    gen = FaultGenerator(default_config("adversarial").faults, DetRng(7))
    for kind in sorted(GUARD_KINDS):
        for n in range(40):
            gen.busy.clear()
            actions = gen._make(kind, 1000 * n, _Ghost(3, lambda t: "b1"))
            seen.setdefault(kind, set()).update(a["do"] for a in actions)
            validate_actions(actions, lambda n: True)
    assert seen["stale-request"] == {"partition", "crash", "restart", "heal"}
    assert seen["ha-stale-tail"] == {"ha-stale", "break-ha", "crash", "restart"}
    assert seen["crash-role-change"] == {"crash-at", "admin-elect", "restart"}
    assert seen["ha-replay"] == {"ha-fault", "break-ha"} and seen["rpc-replay"] == {"rpc-replay"}


def test_the_incarnation_fence_lets_a_master_on_a_newer_connection_through():
    """fix-fence-old-incarnation fences a request on a connection *older* than the master's latest registration,
    not every other one: in a three-controller group a leader that saw only the master's earlier registration
    (the later one went to a controller that then crashed) must still take the restarted master's proposals.
    Fencing every other connection froze that master's SyncStateSet for good (fidelity seed 30, --fix all:
    LIVE-SSS-CATCHUP, every alterSyncStateSet answered CONTROLLER_FENCED_MASTER_EPOCH)."""
    cfg = config_from_dict({"sim": {"progress": True}}, default_config("fidelity"))
    r = run(cfg, 30, 20_000, bugs=sorted(B.FIXES_ALL), record=False)
    assert r.violation is None, r.violation
    assert [_connection_number(c) for c in ("b1#0", "b1#12", "b1")] == [0, 12, -1]  # sender#n, as both drivers name
