"""The model's ``consistent_point`` (``models/controller_mode.py``, the spec's ``ConsistentPoint``) against the
implementation's ``EpochFileCache.findConsistentPoint`` as ``AutoSwitchHAClient.doTruncate`` calls it (each cache's
last entry ending at its side's log end), with and without the fix of F-EPOCH-EQ-SPLICE, which also takes an entry
the master replaced (``FixEpochEqReplacesEmpty``). The conformance check compares every handshake's truncation point
with the model's; the two drifted once (the fix reached the implementation only), which a failover on empty logs
(profile ``fresh``) showed as MODEL-CONFORM."""

from __future__ import annotations

import random

import pytest
from rmqha.impl.store.epoch_cache import EpochEntry, EpochFileCache
from rmqha.models.controller_mode import consistent_point


def _impl(local: list[tuple[int, int]], local_len: int, master: list[tuple[int, int]], master_len: int,
          replaced: bool) -> int:
    def cache(entries: list[tuple[int, int]], end: int) -> EpochFileCache:
        c = EpochFileCache()
        c.init_cache_from_entries([EpochEntry(e, s) for e, s in entries])
        c.set_last_epoch_entry_end_offset(end)
        return c

    return cache(local, local_len).find_consistent_point(cache(master, master_len), replaced=replaced)


def _entries(rng: random.Random, history: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A replica's epoch file: a prefix of the set's history, sometimes with its last entry replaced by a later
    epoch at the same start (the fix's append) or followed by an epoch of its own."""
    out = list(history[:rng.randint(1, len(history))])
    roll = rng.random()
    if roll < 0.3:
        out[-1] = (out[-1][0] + rng.randint(1, 3), out[-1][1])
    elif roll < 0.5:
        out.append((out[-1][0] + rng.randint(1, 3), out[-1][1] + rng.randint(0, 3) * 100))
        if out[-1][1] == out[-2][1]:
            out.pop(-2)
    return out


@pytest.mark.parametrize("replaced", [False, True])
def test_the_model_finds_the_implementations_consistent_point(replaced: bool) -> None:
    rng = random.Random(21)
    reached = 0
    for _ in range(3000):
        history, start = [], 0
        for epoch in sorted(rng.sample(range(1, 12), rng.randint(1, 4))):
            history.append((epoch, start))
            start += rng.randint(0, 3) * 100
        local, master = _entries(rng, history), _entries(rng, history)
        local_len = local[-1][1] + rng.randint(0, 3) * 100
        master_len = master[-1][1] + rng.randint(0, 3) * 100
        want = _impl(local, local_len, master, master_len, replaced)
        got = consistent_point(tuple(local), local_len, tuple(master), master_len, True, replaced)
        assert got == want, (local, local_len, master, master_len)
        reached += replaced and want >= 0 and not any(e == local[-1][0] for e, _ in master)
    assert reached > 50 or not replaced  # the replaced-entry path itself was compared, many times


def test_a_failover_on_empty_logs_conforms_to_the_model() -> None:
    """Profile fresh, seed 1 (every fix): a slave that recorded the first master's epoch from a heartbeat meets a
    new master that replaced it; its handshake truncates to 0, and the model agrees."""
    from rmqha.impl import bugs as B
    from rmqha.impl.sim.config import config_from_dict, default_config
    from rmqha.models.campaign import run

    cfg = config_from_dict({"sim": {"progress": True}}, default_config("fresh"))
    r = run(cfg, 1, 20_000, bugs=sorted(B.FIXES_ALL), record=False, conform=True)
    assert r.violation is None, r.violation
