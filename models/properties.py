"""The catalogue's invariants at the model's level: one predicate per id, named as its TLA+ operator.

State invariants take a state; action properties (``[][P]_vars`` in the spec) take a transition. Ids this level
cannot express (message framing, controller ids, the HA wire) are listed in ``NOT_EXPRESSED`` with the reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from .controller_mode import (
    NONE,
    ModelConfig,
    State,
    ack_set_true,
    ctl_alive,
    entry_end,
    get_confirm,
    members,
    msgs_of,
)


def CTL_MASTER_IN_SSS(s: State, cfg: ModelConfig) -> bool:
    return s.ctlMaster == NONE or bool(s.ctlSSS >> s.ctlMaster & 1)


def CTL_SSS_REGISTERED(s: State, cfg: ModelConfig) -> bool:
    return s.ctlSSS & ~s.registered == 0


def CTL_ONE_MASTER_PER_EPOCH(s: State, cfg: ModelConfig) -> bool:
    """At this level, as the brokers see it: no two live masters hold the same masterEpoch."""
    seen: set[int] = set()
    for b in range(cfg.Brokers):
        if s.alive[b] and s.role[b] == b:
            if s.bME[b] in seen:
                return False
            seen.add(s.bME[b])
    return True


def EPOCH_FILE_WF(s: State, cfg: ModelConfig) -> bool:
    for ep in s.epochs:
        for (e1, s1), (e2, s2) in itertools.pairwise(ep):
            if not (e1 < e2 and s1 < s2):
                return False
    return True


def HA_TRUNCATE_PREFIX(s: State, cfg: ModelConfig) -> bool:
    """A slave with a handshaken connection holds a prefix of its master's log."""
    for b in range(cfg.Brokers):
        m = s.conn[b]
        if m != NONE:
            lb = s.log[b]
            if len(lb) > len(s.log[m]) or s.log[m][:len(lb)] != lb:
                return False
    return True


def HA_LOG_MATCHING(s: State, cfg: ModelConfig) -> bool:
    """Two replicas holding the same epoch entry (epoch, start) agree from start to the smaller end."""
    n = cfg.Brokers
    for a in range(n):
        for b in range(a + 1, n):
            ea, eb = s.epochs[a], s.epochs[b]
            for i, x in enumerate(ea):
                for j, y in enumerate(eb):
                    if x == y:
                        end = min(entry_end(ea, i, len(s.log[a])), entry_end(eb, j, len(s.log[b])),
                                  len(s.log[a]), len(s.log[b]))
                        if s.log[a][x[1]:end] != s.log[b][x[1]:end]:
                            return False
    return True


def SYNC_CONFIRM_BOUND(s: State, cfg: ModelConfig) -> bool:
    """A master's confirmOffset (allAck) is within the log of every member of its local SSS, which agrees with
    the master's up to it; a slave's confirmOffset never passes its own log end."""
    for b in range(cfg.Brokers):
        if s.alive[b] and s.role[b] == b:
            if cfg.AllAck:
                c = get_confirm(s, b, cfg)
                for x in members(s.local[b]):
                    if len(s.log[x]) < c or s.log[x][:c] != s.log[b][:c]:
                        return False
        elif s.confirm[b] > len(s.log[b]):
            return False
    return True


def SYNC_SSS_HOLDS_ACKED(s: State, cfg: ModelConfig) -> bool:
    for x in members(s.ctlSSS):
        if s.acked & ~msgs_of(s.log[x]):
            return False
    return True


def SYNC_NO_ACK_LOSS(s: State, cfg: ModelConfig) -> bool:
    """Every acknowledged message is in the log of the established master (the controller's master, up and
    acting as master in the controller's masterEpoch)."""
    m = s.ctlMaster
    if m == NONE or not s.alive[m] or s.role[m] != m or s.bME[m] != s.ctlME:
        return True
    return s.acked & ~msgs_of(s.log[m]) == 0


# ------------------------------------------------------------------------------------ action properties


def CTL_EPOCH_MONO(s: State, t: State, cfg: ModelConfig) -> bool:
    return s.ctlME <= t.ctlME <= s.ctlME + 1 and s.ctlSE <= t.ctlSE <= s.ctlSE + 1


def CTL_ALTER_FENCED(s: State, t: State, cfg: ModelConfig) -> bool:
    """A SyncStateSet change without an election was requested by the current master with the current epochs,
    and keeps the master."""
    if t.ctlSSS == s.ctlSSS or t.ctlME != s.ctlME:
        return True
    gone = set(s.reqs) - set(t.reqs)
    return any(r[3] == t.ctlSSS and r[0] == s.ctlMaster and r[1] == s.ctlME and r[2] == s.ctlSE
               and r[3] >> s.ctlMaster & 1 for r in gone)


def CTL_CLEAN_ELECTION(s: State, t: State, cfg: ModelConfig) -> bool:
    if cfg.Unclean or s.ctlME == 0 or t.ctlME != s.ctlME + 1 or t.ctlMaster in (NONE, s.ctlMaster):
        return True
    new = t.ctlMaster
    return bool(s.ctlSSS >> new & 1) and ctl_alive(s, new)


def BRK_EPOCH_MONO(s: State, t: State, cfg: ModelConfig) -> bool:
    for b in range(cfg.Brokers):
        if s.alive[b] and t.alive[b]:
            if t.bME[b] < s.bME[b] or t.bSE[b] < s.bSE[b]:
                return False
            if t.role[b] != s.role[b] and t.bME[b] <= s.bME[b]:
                return False
    return True


def SYNC_ACK_ALL(s: State, t: State, cfg: ModelConfig) -> bool:
    """allAck: a put returns PUT_OK only when every member of the master's ack set (local ∪ remote) acked it."""
    if not cfg.AllAck:
        return True
    for b, m in s.pend:
        if t.acked >> (m - 1) & 1 and not s.acked >> (m - 1) & 1:
            pos = next(i + 1 for i, (_, x) in enumerate(s.log[b]) if x == m)
            for x in members(ack_set_true(s, b)):
                if x != b and not (s.conn[x] == b and s.ack[x] >= pos):
                    return False
    return True


def SYNC_EXPAND_SAFE(s: State, t: State, cfg: ModelConfig) -> bool:
    """A slave newly proposed for a master's SSS has acked past every acknowledged message in the master's log."""
    for m in range(cfg.Brokers):
        r = t.remote[m]
        if r == NONE or r == s.remote[m]:
            continue
        before = s.local[m] | (s.remote[m] if s.remote[m] != NONE else 0)
        need = max((i + 1 for i, (_, x) in enumerate(t.log[m]) if t.acked >> (x - 1) & 1), default=0)
        for x in members(r & ~before):
            if x != m and t.ack[x] < need:
                return False
    return True


INVARIANTS: dict[str, Callable[[State, ModelConfig], bool]] = {
    f.__name__: f for f in (CTL_MASTER_IN_SSS, CTL_SSS_REGISTERED, CTL_ONE_MASTER_PER_EPOCH, EPOCH_FILE_WF,
                            HA_TRUNCATE_PREFIX, HA_LOG_MATCHING, SYNC_CONFIRM_BOUND, SYNC_SSS_HOLDS_ACKED,
                            SYNC_NO_ACK_LOSS)
}
ACTION_PROPERTIES: dict[str, Callable[[State, State, ModelConfig], bool]] = {
    f.__name__: f for f in (CTL_EPOCH_MONO, CTL_ALTER_FENCED, CTL_CLEAN_ELECTION, BRK_EPOCH_MONO, SYNC_ACK_ALL,
                            SYNC_EXPAND_SAFE)
}

NOT_EXPRESSED: dict[str, str] = {
    "CTL-ID-UNIQUE": "broker ids are given: applyBrokerId and its check code are below this level",
    "BRK-SLAVE-NO-WRITE": "only masters have a Produce action: true by construction",
    "HA-EPOCH-BOUNDARY": "a transfer carries one message: it cannot cross an epoch boundary",
    "HA-CONTIGUOUS": "a transfer appends at the slave's end by construction",
    "STORE-WHOLE-MESSAGES": "offsets count whole messages",
    "SYNC-VISIBLE-BOUND": "consumers are not modelled (SYNC-CONFIRM-BOUND bounds what they could see)",
    "SYNC-SEEN-NO-LOSS": "consumers are not modelled (SYNC-CONFIRM-BOUND bounds what they could see)",
}
