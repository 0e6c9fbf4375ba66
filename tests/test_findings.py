"""Every documented finding replays from its committed trace, byte for byte, and its fix switch removes it.

The traces in ``docs/findings/traces/`` are written by ``scripts/derive_findings.py``; ``docs/findings/index.json``
records each one's seed, hash and violation. A change to the core that alters any of them shows up here first:
re-derive the traces (and re-read the write-ups) rather than editing the expectations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import run_header
from rmqha.impl.sim.tracefile import read_text as read_trace_text
from rmqha.impl.trace import parse

DOCS = Path(__file__).resolve().parent.parent / "docs" / "findings"
INDEX = json.loads((DOCS / "index.json").read_text())


def test_every_finding_has_a_trace_and_a_write_up():
    assert sorted(INDEX) == sorted(FINDINGS)
    for fid in FINDINGS:
        assert (DOCS / INDEX[fid]["trace"]).exists(), fid
        assert (DOCS / f"{fid}.md").exists(), fid


@pytest.mark.parametrize("fid", sorted(INDEX))
def test_finding_trace_replays_and_fix_removes_it(fid):
    entry = INDEX[fid]
    text = read_trace_text(str(DOCS / entry["trace"]))
    header, _lines, footer = parse(text)
    assert footer["hash"] == entry["hash"]
    again = run_header(header)
    assert again.text == text, "the trace no longer reproduces: re-derive it (scripts/derive_findings.py)"
    assert again.violation is not None and again.violation.invariant == entry["invariant"]
    assert again.violation.invariant in FINDINGS[fid].invariants
    assert FINDINGS[fid].fix not in header["bugs"]
    assert set(FINDINGS[fid].needs) <= set(header["bugs"]), "a later release's finding replays with its switch"
    fixed = run_header(dict(header, bugs=sorted([*header["bugs"], FINDINGS[fid].fix])), keep=False)
    assert fixed.violation is None, fixed.violation


@pytest.mark.parametrize("fid", sorted(f for f in INDEX if "earlier" in INDEX[f]))
def test_the_set_wide_checks_see_it_earlier_and_the_fix_removes_that_too(fid):
    """Issue 21's set-wide checks (SYNC-DISPATCH-CONFIRMED, SYNC-CONFIRM-HELD) see these findings' mechanism before
    the violation the finding documents: a master whose ack set lacks a member the controller holds lets messages
    be dispatched that the member does not hold. Their traces leave the set-wide checks off to run on to the
    documented violation; with them on, the same run stops at the earlier step, and the finding's fix removes it."""
    entry = INDEX[fid]
    header, _lines, _footer = parse(read_trace_text(str(DOCS / entry["trace"])))
    assert {"SYNC-DISPATCH-CONFIRMED", "SYNC-CONFIRM-HELD"} <= set(header["disabledInvariants"])
    on = dict(header, disabledInvariants=[i for i in header["disabledInvariants"]
                                          if i not in ("SYNC-DISPATCH-CONFIRMED", "SYNC-CONFIRM-HELD")])
    early = run_header(on, keep=False).violation
    assert early is not None and (early.invariant, early.step) == (entry["earlier"]["invariant"],
                                                                   entry["earlier"]["step"])
    assert early.invariant in FINDINGS[fid].invariants and early.step < entry["step"]
    fixed = run_header(dict(on, bugs=sorted([*on["bugs"], FINDINGS[fid].fix])), keep=False)
    assert fixed.violation is None, fixed.violation


# ------------------------------------------------------------------------------------- F-EPOCH-EQ-SPLICE

_QUIET = {"workload": {"produce_interval": 0, "consume_interval": 1000}}  # the logs stay empty until a rule sends
_CUT_B3 = {"do": "partition", "id": "p1", "links": [["ctl", "b3"], ["b3", "ctl"]]}  # seed 0: b3 is the first master
EPOCH_EQ_SHAPES = {
    # the finding's trace: one send reaches the deposed master on the producer's cached route, one (after the
    # route refresh the first one's timeout triggers) the new master
    "cut-master": [{"t": 31000, **_CUT_B3}, {"t": 45000, "do": "produce", "count": 1, "size": None},
                   {"t": 61000, "do": "produce", "count": 1, "size": None}],
    # mqadmin electMaster while the master is cut from the controller; two sends race the route update
    "cut-admin": [{"t": 6000, **_CUT_B3}, {"t": 6000, "do": "admin-elect", "brokerId": 2},
                  {"t": 6005, "do": "produce", "count": 2, "size": None}],
    # the Hypothesis repro (suite ``fresh``): a slow network delays b3's role notification and the producer's route
    "lossy-admin": [{"t": 6000, "do": "net", "drop": 0.0, "dup": 0.1, "slow": 0.5, "until": 26000},
                    {"t": 6005, "do": "admin-elect", "brokerId": 2}, {"t": 6005, "do": "admin-elect", "brokerId": None},
                    {"t": 6005, "do": "produce", "count": 2, "size": None}],
}


def _epoch_eq_run(schedule: list[dict], fix: bool, max_time: int, disabled: tuple[str, ...] = ()):
    from rmqha.impl import bugs as B
    from rmqha.impl.sim.config import config_from_dict, default_config
    from rmqha.impl.sim.runner import run

    bugs = [f for f in B.FIXES_ALL if fix or f != B.FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH]
    return run(config_from_dict(_QUIET, default_config("safe")), 0, 100_000, bugs=bugs, schedule=schedule,
               max_time=max_time, disabled=disabled)


@pytest.mark.parametrize("shape", sorted(EPOCH_EQ_SHAPES))
def test_epoch_eq_splice_shapes_fail_without_the_fix_and_are_clean_with_it(shape):
    """Each shape writes under an epoch entry that two replicas hold (the new master could not record its own
    epoch: same start); the fix replaces the empty entry, and the same run stays clean well past that point."""
    broken = _epoch_eq_run(EPOCH_EQ_SHAPES[shape], False, 90_000)
    assert broken.violation is not None and broken.violation.invariant == "HA-LOG-MATCHING", broken.violation
    assert '"ok":false,"path":"changeToMaster"' in broken.text  # the rejected append (QUIRK-EPOCH-EQ)
    fixed = _epoch_eq_run(EPOCH_EQ_SHAPES[shape], True, 90_000)
    assert fixed.violation is None, fixed.violation
    assert '"replaced":1' in fixed.text


def test_epoch_eq_splice_goes_on_to_lose_an_acknowledged_message():
    """The trace's run, healed, then the new master crashes. With each violation's invariant left out in turn, the
    divergence runs through HA-TRUNCATE-PREFIX (the deposed master keeps its bytes at the handshake),
    SYNC-DISPATCH-CONFIRMED and SYNC-CONFIRM-HELD (a slave dispatches them, and confirms them, though the new master
    holds other bytes there), STORE-WHOLE-MESSAGES (new bytes appended after them), SYNC-SSS-HOLDS-ACKED (it rejoins
    the SSS) to SYNC-NO-ACK-LOSS (it is elected and cuts an acknowledged message). With the fix the run is clean, and
    the two brokers that hold the deposed master's bytes (267 of them, under the epoch the new master replaced) find
    their consistent point at that epoch's start, cut the bytes and resync (before the fix also took the replaced
    entry into the handshake they shared no epoch with the new master and never resynced: LIVE-HA-TRANSFER)."""
    schedule = [*EPOCH_EQ_SHAPES["cut-master"], {"t": 70000, "do": "heal", "id": "p1"},
                {"t": 85000, "do": "crash", "node": "b1", "powerLoss": False},
                {"t": 120000, "do": "restart", "node": "b1"}]
    seen: list[str] = []
    for _ in range(6):
        r = _epoch_eq_run(schedule, False, 150_000, ("HA-LOG-MATCHING", *seen))
        if r.violation is None:
            break
        seen.append(r.violation.invariant)
    assert seen == ["HA-TRUNCATE-PREFIX", "SYNC-DISPATCH-CONFIRMED", "SYNC-CONFIRM-HELD", "STORE-WHOLE-MESSAGES",
                    "SYNC-SSS-HOLDS-ACKED", "SYNC-NO-ACK-LOSS"]
    fixed = _epoch_eq_run(schedule, True, 150_000)
    assert fixed.violation is None, fixed.violation
    obs = [o for line in fixed.text.splitlines()[1:-1] for o in json.loads(line).get("obs", [])]
    assert not [o for o in obs if o["k"] == "ha.no-consistent-point"]
    resynced = {o["n"] for o in obs if o["k"] == "ha.truncate" and (o["before"], o["point"]) == (267, 0)
                and o["master"] == [[2, 0]]}
    assert resynced == {"b2", "b3"}


# ------------------------------------------------------------------------------ F-TRANSFER-NEGATIVE-BATCH, #9690

def _stale_end_run(bugs: frozenset[str]) -> tuple[Any, list[Any], int]:
    """A master (b2, seed 1) serving two slaves in its last epoch (end -1 on both connections). At 20 s its epoch
    cache goes through what the serving broker's own ``AutoSwitchHAClient.doTruncate`` does to it when the truncation
    removes a later epoch: an entry (2, L) at its log end L, then ``truncateSuffixByOffset(L)``, which drops it and
    leaves epoch 1's end at L (the stale end: EpochFileCache QUIRK, the reset hits a copy). The broker's log then grows
    past L within epoch 1 (it is still master; in RocketMQ a slave whose new master's epoch 1 is longer gets the same
    shape). At 40 s a new epoch is appended at the log end (``changeToMasterWhenLastRoleIsMaster``)."""
    from rmqha.impl.sim.world import Simulation
    from rmqha.impl.store.epoch_cache import EpochEntry

    from tests.harness import ObsRecorder

    rec = ObsRecorder()
    cfg = config_from_dict({"workload": {"consume_interval": 0}}, default_config("safe"))
    sim = Simulation(cfg, 1, schedule=[], max_time=40_000, recorder=rec, bugs=bugs)
    assert sim.run_before(20_000) is None
    master = sim.broker(sim.believed_master() or "")
    assert master is not None and master.name == "b2"
    assert all(c.current_transfer_epoch_end_offset == -1 for c in master.ha.connections.values())
    cache, end = master.ha.epoch_cache, master.store.max_phy_offset
    cache.append_entry(EpochEntry(2, end))
    cache.truncate_suffix_by_offset(end)
    assert [e.to_list() for e in cache.all_entries()] == [[1, 0, end]]  # the last entry, with an end
    assert sim.run() is None
    stalled = [c.next_transfer_from_where for c in master.ha.connections.values()]
    cache.append_entry(EpochEntry(3, master.store.max_phy_offset))
    sim.max_time = 50_000
    sim.run()
    return sim, stalled, end


def test_9690_takes_a_last_entrys_stale_end_and_stalls():
    """PR #9690 tests ``endOffset != Long.MAX_VALUE`` (not "the epoch is no longer the last"): with a last entry that
    carries the stale end L, both connections take L as their epoch's end, and once the log grows past it the clamp
    finds no next entry ("Can't find a bigger epochEntry", every 100 ms): they send nothing more and their slaves
    stall. When epoch 3 appears, the first batch is labelled with it though it lies in epoch 1: HA-EPOCH-BOUNDARY.
    With F-TRANSFER-NEGATIVE-BATCH's fix the re-read leaves a last entry's end alone and the run is clean."""
    only_9690 = frozenset(B.FIXES_ALL) - {B.FIX_TRANSFER_CHECKS_LOG_END}
    sim, stalled, end = _stale_end_run(only_9690)
    assert stalled == [end, end]
    assert sim.violation is not None and sim.violation.invariant == "HA-EPOCH-BOUNDARY", sim.violation
    assert "lies in epoch (1, 0) but its header says (3," in sim.violation.message

    sim, stalled, end = _stale_end_run(frozenset(B.FIXES_ALL))
    assert sim.violation is None, sim.violation
    assert all(p > end for p in stalled)
