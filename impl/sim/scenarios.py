"""Deterministic scenarios, one per injectable bug: the named invariant fires with the switch on, and the
same run (same seed, same schedule) has no violation with it off.

Scenarios marked ``found`` came from random campaigns (the switch on, every finding's fix on), shrunk by
delta debugging (``sim/shrink.py``) to the actions that matter; the others were written by hand from the
mechanism of the upstream bug. ``tests/test_bugs.py`` runs them all; ``rmqha`` replays any of them with
``rmqha simulate --scenario NAME``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import bugs as B
from .actions import Action
from .config import Config, config_from_dict, default_config
from .scenarios_found import FOUND

QUIET = {"workload": {"produce_interval": 0, "consume_interval": 0}}



@dataclass(frozen=True)
class Scenario:
    bug: str
    seed: int
    max_time: int
    schedule: list[Action]
    config: dict[str, Any] = field(default_factory=dict)
    fixes: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    origin: str = "hand-written"
    story: str = ""

    @property
    def invariant(self) -> str:
        return B.BUGS[self.bug].invariant

    def _base(self) -> Config:
        """The scenario's config on the safe profile, with the part a fidelity switch lives in turned on."""
        cfg = config_from_dict(self.config, default_config("safe"))
        needs: dict[str, dict[str, Any]] = {}
        for section, key, value in B.BUGS[self.bug].needs:
            needs.setdefault(section, {})[key] = value
        return config_from_dict(needs, cfg) if needs else cfg

    def make_config(self) -> Config:
        cfg = self._base()
        settings: dict[str, dict[str, Any]] = {}
        for section, key, value in B.BUGS[self.bug].settings:
            settings.setdefault(section, {})[key] = value
        return config_from_dict(settings, cfg) if settings else cfg

    def bugs(self, on: bool) -> list[str]:
        extra = [self.bug] if on and B.BUGS[self.bug].kind in ("switch", "fidelity", "upstream") else []
        return sorted([*self.fixes, *extra])

    def config_for(self, on: bool) -> Config:
        return self.make_config() if on else self._base()


STORIES = {
    B.ACK_LOCAL_SSS_ONLY: "An SSS expansion stays in flight; the master acks over its confirmed set only and a member "
                          "of the in-flight union has not acked.",
    B.CONFIRM_IGNORES_DISCONNECTED: "A member of the SSS loses its connection while the shrink cannot reach the "
                                    "controller; confirmOffset moves on without it.",
    B.ALTER_SKIP_SSS_EPOCH_CHECK: "An older proposal of the master is accepted over a newer one.",
    B.ELECT_IGNORES_LIVENESS: "The controller elects a broker it has not heard from.",
    B.TRANSFER_CROSSES_EPOCH: "A batch sent to a slave spans an epoch boundary.",
    B.CONSISTENT_POINT_USES_MAX: "A slave with a divergent tail keeps it after the handshake.",
    "unclean-election": "A replica outside the SSS is elected and lacks acknowledged messages "
                        "(SYNC-SSS-HOLDS-ACKED, the precursor, is off so the run reaches the loss).",
    "allack-off": "The master acks after its own write; after a failover the new master lacks the message "
                  "(SYNC-SSS-HOLDS-ACKED, the precursor, is off so the run reaches the loss).",
}

SCENARIOS: dict[str, Scenario] = {
    s.bug: s
    for s in [
        *(Scenario(f["bug"], f["seed"], f["max_time"], f["schedule"], fixes=B.FIXES_ALL, disabled=tuple(f["disabled"]),
                   origin="found", story=STORIES.get(f["bug"], "")) for f in FOUND),
        Scenario(B.CONFIRM_COUNTS_NEW_CONNECTION, 1, 30000,
                 [{"t": 7000, "do": "partition", "id": "lag", "links": [["b2", "b4"], ["b4", "b2"]]},
                  {"t": 7000, "do": "break-ha", "node": "b4"},
                  {"t": 9000, "do": "produce", "count": 5},
                  {"t": 10500, "do": "heal", "id": "lag"},
                  {"t": 10900, "do": "partition", "id": "replies", "links": [["ctl", "b2"]]},
                  {"t": 11000, "do": "break-ha", "node": "b1"},
                  {"t": 16500, "do": "produce", "count": 5}],
                 config={"cluster": {"brokers": 4}, **QUIET},
                 disabled=("SYNC-CONFIRM-BOUND", "SYNC-DISPATCH-CONFIRMED", "SYNC-CONFIRM-HELD"),
                 story="b4 falls behind; b1 reconnects while the controller's replies cannot reach master b2, so "
                       "b1 stays in b2's local SSS with a connection that has not acked; b3's acks recompute "
                       "confirmOffset to -1 and lagging b4 passes 'ack >= confirmOffset'. SYNC-CONFIRM-BOUND and the "
                       "set-wide checks (SYNC-DISPATCH-CONFIRMED, SYNC-CONFIRM-HELD) are off in both runs: without "
                       "the switch the residual gap of the same filter (F-CONFIRM-SKIPS-NEW-CONNECTION) would stop "
                       "the run first."),
        Scenario(B.TRUNCATE_INVALID_WRONG_START, 1, 30000,
                 [{"t": 8000, "do": "slow-dispatch", "node": "b1", "ms": 30000},
                  {"t": 9000, "do": "produce", "count": 10},
                  {"t": 14500, "do": "produce", "count": 10},
                  {"t": 15100, "do": "partition", "id": "p1", "links": [["b2", "ctl"], ["ctl", "b2"]]},
                  {"t": 15200, "do": "break-ha", "node": "b1"}],
                 config={"cluster": {"brokers": 2}, **QUIET},
                 story="Slave b1's dispatch stalls while acknowledged messages arrive; its HA connection breaks "
                       "while master b2 cannot tell the controller, and b1's reconnect loop cuts complete, "
                       "acknowledged messages from a replica still in the SSS."),
        Scenario(B.DISPATCH_SKIPS_RANGE, 1, 20000,
                 [{"t": 9000, "do": "produce", "count": 5}],
                 config={"cluster": {"brokers": 2}, "store": {"haTransferBatchSize": 200}, **QUIET},
                 fixes=B.FIXES_ALL,
                 story="HA batches of 200 bytes cut the messages, so the slave's acks, and the master's "
                       "confirmOffset, stop inside them; each broker's reput waits at the message that straddles "
                       "confirmOffset and, with the switch, goes on past it once confirmOffset moves: at the end of "
                       "the run that message is in neither consume queue. Nothing else looks wrong."),
        Scenario(B.RECOVER_CONFIRMS_SCAN_END, 1, 30000,
                 [{"t": 8500, "do": "partition", "id": "p", "links": [["b2", "b1"], ["b2", "b3"]]},
                  {"t": 9000, "do": "produce", "count": 3}, {"t": 9500, "do": "crash", "node": "b2"},
                  {"t": 20000, "do": "heal", "id": "p"}, {"t": 25000, "do": "restart", "node": "b2"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="Master b2 appends three messages its slaves never receive (its HA writes to them are held "
                       "back) and is killed; b3 is elected. b2 restarts and, with the switch, its recovery takes the "
                       "end of its log as confirmOffset: bytes the new SyncStateSet does not hold. Without it the "
                       "checkpoint's value stands (0: nothing was confirmed)."),
        Scenario(B.SLAVE_CONFIRMS_OWN_MAX, 1, 20000,
                 [{"t": 9000, "do": "produce", "count": 5}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="The first slave to receive a batch takes its own max offset as confirmOffset and dispatches "
                       "the messages before the other slave of the SyncStateSet holds them."),
        Scenario(B.CLIENT_ACKS_ANNOUNCED_BODY, 1, 20000,
                 [{"t": 9000, "do": "produce", "count": 10, "size": 2000}],
                 config={"cluster": {"brokers": 2}, **QUIET},
                 story="Every HA write reaches the slave in pieces; a TRANSFER frame's header arrives before its "
                       "body and the slave acks the end the header announces."),
        Scenario(B.CONFIRM_MIN_INT32, 1, 20000,
                 [{"t": 9000, "do": "produce", "count": 10, "size": 1000}],
                 config={"cluster": {"brokers": 2}, **QUIET},
                 story="The logs start 4 KiB below 2^31; the master's max offset passes 2^31 and, compared as a "
                       "Java int, is smaller than the slave's ack, so confirmOffset runs ahead of the slave."),
        Scenario(B.RECOVER_IGNORES_ABORT_FILE, 12, 60500,
                 [{"t": 49456, "do": "crash", "node": "b2"}, {"t": 59944, "do": "restart", "node": "b2"}],
                 story="Slave b2 is killed while its log runs ahead of its confirmOffset; at the restart it "
                       "recovers as after a clean shutdown and dispatches past confirmOffset."),
        Scenario(B.UNFENCE_BEFORE_REGISTER, 1, 12000,
                 [{"t": 8000, "do": "produce", "count": 2},
                  {"t": 9000, "do": "crash", "node": "b2"}, {"t": 9200, "do": "restart", "node": "b2"},
                  {"t": 9201, "do": "produce", "count": 3}],
                 config=QUIET,
                 story="Master b2 is killed and restarted at once; the producer still routes to it, and its "
                       "store takes the sends before b2 has registered with the controller."),
        Scenario(B.NS_IGNORES_STATE_VERSION, 1, 45000,
                 [{"t": 8000, "do": "partition", "id": "p", "links": [["b2", "ctl"], ["ctl", "b2"]]}],
                 config=QUIET,
                 story="Master b2 is cut from the controller (not from the nameserver); b1 is elected at mE 2 and "
                       "registers; b2's periodic registration at mE 1 takes the master route back."),
        Scenario(B.QUEUE_TABLE_NOT_RECOVERED, 1, 40000,
                 [{"t": 8000, "do": "produce", "count": 6}, {"t": 12000, "do": "crash", "node": "b2"},
                  {"t": 25000, "do": "produce", "count": 1}, {"t": 35000, "do": "produce", "count": 4}],
                 config=QUIET,
                 fixes=B.FIXES_ALL,
                 story="Master b2 has put 6 messages into 2 queues and is killed; the slave promoted in its place "
                       "keeps the empty queue table it started with and gives the next message queue offset 0 "
                       "again (the first send after the failover goes to the dead master and refreshes the "
                       "producer's route)."),
        Scenario(B.OFFSET_NOT_FOUND_FROM_LAST, 1, 40000,
                 [{"t": 2000, "do": "produce", "count": 4}, {"t": 12000, "do": "crash", "node": "b2"},
                  {"t": 12500, "do": "crash", "node": "c1"}, {"t": 16000, "do": "produce", "count": 1},
                  {"t": 21000, "do": "produce", "count": 4}, {"t": 24000, "do": "restart", "node": "c1"},
                  {"t": 30000, "do": "produce", "count": 2}],
                 config={"workload": {"produce_interval": 0, "consume_interval": 500}},
                 fixes=B.FIXES_ALL,
                 story="The consumer commits its offsets to master b2 after the slaves' last SlaveSynchronize; b2 "
                       "dies, the consumer restarts, and the new master, which holds no offset for the group, "
                       "starts it at the queues' end: the messages written in between are skipped."),
        Scenario(B.SLAVE_SKIPS_TOPIC_SYNC, 1, 60000,
                 [{"t": 8000, "do": "produce", "count": 4}, {"t": 16000, "do": "expand-queues", "by": 2},
                  {"t": 31000, "do": "produce", "count": 6}, {"t": 45000, "do": "crash", "node": "b2"}],
                 config=QUIET, fixes=tuple(f for f in B.FIXES_ALL if f != B.FIX_MASTER_COVERS_ITS_QUEUES),
                 story="Master b2's topic grows from 4 to 6 queues at 16 s; the producer's route refresh at 30 s "
                       "sends messages to queues 4 and 5; b2 dies at 45 s, long after the slaves' syncs at 27 s and "
                       "39 s. Without the sync the new master b3 still serves 4 read queues (the fix of "
                       "F-TOPIC-CONFIG-LOST-ON-FAILOVER is off: it would hide the deviation)."),
        Scenario(B.TWO_LEADERS_ONE_TERM, 8, 30000,
                 [{"t": 6000, "do": "partition", "id": "ab", "links": [["ctl2", "ctl3"], ["ctl3", "ctl2"]]},
                  {"t": 6000, "do": "crash", "node": "ctl1"},
                  {"t": 22000, "do": "restart", "node": "ctl1"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="A 3-node controller group: the leader ctl1 dies while ctl2 and ctl3 cannot reach each other; "
                       "each keeps timing out into a new term alone. ctl1 returns, and while both candidates stand at "
                       "the same term it gives each its vote: two leaders of one term."),
        Scenario(B.APPEND_SPANS_FILE, 1, 20000,
                 [{"t": 9000, "do": "produce", "count": 40, "size": 500}],
                 config={"store": {"mappedFileSizeCommitLog": 16384}, **QUIET}, fixes=B.FIXES_ALL,
                 story="16 KiB mapped files; forty 500-byte messages fill the first one. The master appends the "
                       "message that does not fit across the file end instead of closing the file with a filler."),
        Scenario(B.JRAFT_APPLY_LOCAL_TIME, 1, 40000,
                 [{"t": 14000, "do": "slow-apply", "node": "ctl1", "extra": 12000, "duration": 30000},
                  {"t": 15000, "do": "crash", "node": "b1"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="A 3-node JRaft controller group led by ctl2; follower ctl1 applies 12 s late. Master b1 dies "
                       "and the leader logs the election. ctl2 applies it at once and elects broker 2; ctl1 applies "
                       "the same entry 12 s later and, judging liveness by its own clock instead of the request's "
                       "invokeTime, finds every heartbeat it has applied expired: no master. One log, two states."),
        Scenario(B.LOCAL_SHRINK_ON_DISCONNECT, 1, 45000,
                 [{"t": 8000, "do": "produce", "count": 3}, {"t": 9000, "do": "crash", "node": "ctl"},
                  {"t": 9500, "do": "break-ha", "node": "b1"},
                  {"t": 9700, "do": "partition", "id": "p1", "links": [["b1", "b2"], ["b2", "b1"]]},
                  {"t": 11000, "do": "produce", "count": 5},
                  {"t": 16000, "do": "crash", "node": "b2"}, {"t": 16000, "do": "crash", "node": "b3"},
                  {"t": 17000, "do": "restart", "node": "ctl"}],
                 config=QUIET, fixes=B.fixes_beside(B.LOCAL_SHRINK_ON_DISCONNECT),
                 disabled=("SYNC-SSS-HOLDS-ACKED",),
                 story="Master b2, SSS {b1, b2, b3}. The controller dies; b1's HA connection resets and b1 stays cut "
                       "from b2. With 5.4.0's removeConnection b2 drops b1 from its local SSS at once and acknowledges "
                       "the next five sends with b3 alone, while the controller's log still holds {b1, b2, b3}. b2 "
                       "and b3 die, the controller comes back and elects b1, which lacks them. Without the switch "
                       "(5.3.3) the sends wait for b1 and are not acknowledged. SYNC-SSS-HOLDS-ACKED (the precursor, "
                       "at the controller's restart) is off so the run reaches the loss."),
    ]
}


def precursors_off(names: list[str] | tuple[str, ...]) -> list[str]:
    """Invariants the scenarios of the expected-loss configurations among ``names`` leave unchecked (their
    precursor), so that a run reaches the loss itself."""
    return sorted({i for n in names if B.BUGS[n].kind == "config" and n in SCENARIOS for i in SCENARIOS[n].disabled})
