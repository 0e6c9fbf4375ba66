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
SETTLED = {**QUIET, "sim": {"progress": True}}
"""A quiet run that ends with the settle tail and the progress checks (the LIVE-* switches' scenarios)."""
LEGACY_SYNC = {"cluster": {"mode": "legacy", "brokers": 2}, "store": {"brokerRole": "SYNC_MASTER"}}
"""The 4.x master/slave pair of the legacy-sync profile."""



def _cut(node: str) -> list[list[str]]:
    """Every link between ``node`` and the other nodes of a 3-controller, 3-broker deployment, both ways."""
    others = [n for n in ("ctl1", "ctl2", "ctl3", "b1", "b2", "b3") if n != node]
    return [[node, o] for o in others] + [[o, node] for o in others]


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
        extra = [self.bug] if on and B.BUGS[self.bug].kind in ("switch", "fidelity", "upstream", "guard") else []
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
        Scenario(B.LEADER_SKIPS_IDLE_HEARTBEAT, 1, 20000, [], config=SETTLED, fixes=B.FIXES_ALL,
                 story="A 3-node controller group with nothing to do once the brokers have registered: with the "
                       "switch its leader sends no heartbeat, the followers time out and elect again and again, so "
                       "the leader of the check was elected within the quiet window."),
        Scenario(B.FOLLOWER_COMMITS_WITH_ENTRIES, 1, 20000, [], config=SETTLED, fixes=B.FIXES_ALL,
                 story="A 3-node controller group: the brokers register, then the group is idle. With the switch the "
                       "followers take the leader's commit position only from pushes that bring entries, so the last "
                       "registrations stay unapplied on them for good."),
        Scenario(B.STALE_REPLY_DEPOSES, 1, 30000,
                 [{"t": 9000, "do": "rpc-replay", "node": "ctl1", "lag": 5500, "p": 1.0, "until": 9600},
                  {"t": 9000, "do": "rpc-replay", "node": "ctl3", "lag": 5500, "p": 1.0, "until": 9600},
                  {"t": 9700, "do": "partition", "id": "cut",
                   "links": [[a, b] for o in ("ctl1", "ctl3", "b1", "b2", "b3")
                             for a, b in (("ctl2", o), (o, "ctl2"))]},
                  {"t": 14000, "do": "heal", "id": "cut"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="Adversarial (beyond TCP): the answers ctl1 and ctl3 send to their leader ctl2 for 600 ms are "
                       "delivered again 5.5 s later. ctl2 is cut off meanwhile, ctl3 is elected in term 2, and once "
                       "the cut heals ctl2 follows ctl3; the old answers of term 1 then reach it, and with the switch "
                       "it drops the leader it knows."),
        Scenario(B.VOTE_GRANTS_OLDER_TERM, 3, 332000,
                 [{"t": 32260, "do": "partition", "id": "f1", "links": _cut("ctl3")},
                  {"t": 56561, "do": "heal", "id": "f1"},
                  {"t": 94399, "do": "net", "drop": 0.3, "dup": 0.3, "slow": 0.5, "until": 116499},
                  {"t": 128031, "do": "partition", "id": "f2", "links": _cut("ctl1")},
                  {"t": 140193, "do": "heal", "id": "f2"},
                  {"t": 311462, "do": "partition", "id": "f8", "links": _cut("ctl2")},
                  {"t": 329932, "do": "heal", "id": "f8"}],
                 config={"controller": {"isProcessReadEvent": True}}, fixes=B.FIXES_ALL, origin="found",
                 story="Found by the ctl profile (seed 3, the switch on) and shrunk: three controller leaders cut "
                       "off in turn and a lossy, slow window. When the last cut heals at 330 s, ctl1's vote request "
                       "of an older term reaches ctl3 after ctl3 moved to term 30 without voting; with the switch "
                       "ctl3 grants it, a vote of term 30 for a node that never stood in term 30."),
        Scenario(B.COMMIT_WAITS_FOR_ACK, 1, 40000,
                 [{"t": 12000, "do": "slow-commit", "extra": 6000, "duration": 8000}],
                 config={"controller": {"isProcessReadEvent": True}}, fixes=B.FIXES_ALL,
                 story="A 3-node DLedger group led by ctl2; from 12 s on, for 8 s, the leader's appends commit 6 s "
                       "late (a quorum that acknowledges late). A read logged at 15.1 s is held by every node at "
                       "once and released at 21.1 s; the leader's commit timer fires then and commits it. With the "
                       "switch the release finds no quorum check, and the entry waits for the next acknowledgement."),
        Scenario(B.SCAN_REELECT_CHECKS_MASTER, 1, 40000,
                 [{"t": 9000, "do": "crash", "node": "ctl"}, {"t": 9500, "do": "crash", "node": "b2"},
                  {"t": 12000, "do": "restart", "node": "ctl"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="Master b2 (id 1) dies while the controller is down; the restarted controller replays b2 as "
                       "the set's master, never hears from it, and hears from b1 and b3. Its first inactive-master "
                       "scan, at 17 s, finds the set and triggers an election. With the switch the scan's notice goes "
                       "through the master test of a broker's expiry, finds b2 named, and elects nothing."),
        Scenario(B.APPEND_SPANS_FILE, 1, 20000,
                 [{"t": 9000, "do": "produce", "count": 40, "size": 500}],
                 config={"store": {"mappedFileSizeCommitLog": 16384}, **QUIET}, fixes=B.FIXES_ALL,
                 story="16 KiB mapped files; forty 500-byte messages fill the first one. The master appends the "
                       "message that does not fit across the file end instead of closing the file with a filler."),
        Scenario(B.REPUT_STOPS_AT_FILE_END, 1, 20000,
                 [{"t": 9000, "do": "produce", "count": 40, "size": 500}],
                 config={"store": {"mappedFileSizeCommitLog": 16384}, **QUIET}, fixes=B.FIXES_ALL,
                 story="16 KiB mapped files; forty 500-byte messages fill the first one and go on in the second. The "
                       "reput rolls over the first file's filler and ends its pass there; no put follows, so the "
                       "messages of the second file wait undispatched although confirmed."),
        Scenario(B.LAST_FILE_FLAG_IGNORED, 1, 40000,
                 [{"t": 9000, "do": "produce", "count": 40, "size": 500}, {"t": 20000, "do": "restart", "node": "b3"}],
                 config={"store": {"mappedFileSizeCommitLog": 8192}, "sim": {"file_boundaries": True,
                                                                             "join_at": 20000}, **QUIET},
                 fixes=B.FIXES_ALL,
                 story="8 KiB mapped files; forty 500-byte messages take the master past two of them. b3 joins 20 s "
                       "in on a new store with syncFromLastFile and reports 0: its master must start the transfer "
                       "at the start of its last file (16 KiB), and starts it at 0."),
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
        # the progress invariants' switches (LIVE-*): seed 1 boots with master b2 (id 1), slaves b3 (id 2), b1 (id 3)
        Scenario(B.SYNC_SKIPS_BROKER_ELECT, 1, 45000,
                 [{"t": 8000, "do": "crash", "node": "b1"}, {"t": 8000, "do": "crash", "node": "b3"},
                  {"t": 24000, "do": "partition", "id": "cut", "links": [["b2", "ctl"], ["ctl", "b2"]]},
                  {"t": 25000, "do": "restart", "node": "b1"}, {"t": 25000, "do": "restart", "node": "b3"},
                  {"t": 45000, "do": "heal", "id": "cut"}],
                 config=SETTLED, fixes=B.FIXES_ALL,
                 story="Both slaves die; 15 s later master b2's shrink check takes its SyncStateSet down to b2 alone. "
                       "b2 is cut from the controller, the slaves come back as its slaves but cannot be proposed; b2's "
                       "heartbeat expires and the controller's elections find no live member: it names no master. "
                       "Once the cut heals, b2's metadata sync sees the higher masterEpoch without a master and, with "
                       "the switch, does not ask to be elected: the set never gets a master again (without it, b2 is "
                       "elected at once)."),
        Scenario(B.ALTER_CHECKS_OLD_SET_ALIVE, 1, 10000,
                 [{"t": 8000, "do": "crash", "node": "b1"}],
                 config=SETTLED, fixes=B.FIXES_ALL,
                 story="Slave b1 dies for good. Master b2 proposes the SyncStateSet without it; with the switch the "
                       "controller checks the current set's members for liveness, finds b1 dead and refuses, every "
                       "5 s, for good."),
        Scenario(B.EXPAND_CHECKS_UNION, 1, 25000,
                 [{"t": 8000, "do": "break-ha", "node": "b1"},
                  {"t": 12500, "do": "partition", "id": "cut", "links": [["b2", "ctl"], ["ctl", "b2"]]},
                  {"t": 21500, "do": "heal", "id": "cut"}],
                 config=SETTLED, fixes=B.FIXES_ALL,
                 story="b1's HA connection resets and master b2 shrinks it out of the SyncStateSet; b2 is then cut "
                       "from the controller (9 s, short of the heartbeat timeout) while b1 reconnects and acks, so the "
                       "proposal that adds b1 fails and stays in flight. With the switch b2 sees b1 in that in-flight "
                       "set and never proposes it again once the cut heals."),
        Scenario(B.HA_READ_TIME_ON_HANDSHAKE_ONLY, 1, 10000,
                 [{"t": 8000, "do": "produce", "count": 3}],
                 config=SETTLED, fixes=B.FIXES_ALL,
                 story="No fault: master b2's ends of the HA connections forget the slaves' acks, so housekeeping "
                       "closes each one 20 s after its handshake and the slave reconnects 5 s later, for ever."),
        Scenario(B.ROUTE_CHANGE_IGNORES_ADDRESSES, 1, 20000,
                 [{"t": 8000, "do": "produce", "count": 2}, {"t": 9000, "do": "crash", "node": "b2"},
                  {"t": 12000, "do": "restart", "node": "b2"}],
                 config=SETTLED, fixes=B.FIXES_ALL,
                 story="The producer routes to master b2; b2 dies, b3 is elected and b2 comes back as a slave. With "
                       "the switch the producer takes each route lookup as unchanged (same broker set) and keeps "
                       "sending to b2, which refuses: the probe sends after the heal both fail."),
        Scenario(B.SYNC_METADATA_TASK_DIES, 1, 20000,
                 [{"t": 8000, "do": "partition", "id": "cut", "links": [["b1", "ctl"], ["ctl", "b1"]]},
                  {"t": 16000, "do": "heal", "id": "cut"}],
                 config=SETTLED, fixes=B.FIXES_ALL,
                 story="Slave b1 is cut from the controller for 8 s; its metadata sync times out and, with the "
                       "switch, the exception kills the scheduled task: b1 never syncs its metadata again."),
        Scenario(B.ELECT_REQUEST_NOT_NOTIFIED, 1, 20000, [{"t": 10000, "do": "admin-elect", "brokerId": 3}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="mqadmin electMaster designates broker id 3. With the switch the controller answers the "
                       "admin only: neither it nor the deposed master b2 is notified, and b2 takes its slave role "
                       "at its next metadata sync, 3 s after the election instead of a few ms."),
        Scenario(B.CLOSE_KEEPS_MEMBER, 1, 40000, [{"t": 8000, "do": "crash", "node": "b3"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="Slave b3 (id 2) crashes; master b2 sees its HA connection close at once. Without the switch "
                       "removeConnection proposes the shrink and the controller drops b3 within a few ms; with it b3 "
                       "stays in the SyncStateSet until the lag check, 15 s later."),
        Scenario(B.REGISTER_OMITS_TOPIC_CONFIG, 1, 10000, [{"t": 5000, "do": "produce", "count": 2}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="The first master registers with the nameserver; with the switch its registration carries no "
                       "topic config, so the route serves no queue counts for the topic."),
        Scenario(B.COVER_NARROWS_TOPIC, 1, 60000,
                 [{"t": 5000, "do": "produce", "count": 4}, {"t": 8000, "do": "expand-queues", "by": 2},
                  {"t": 30000, "do": "crash", "node": "b2"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="Four messages fill queues 0 and 1; the admin widens the topic to 4 queues and slave b3 syncs "
                       "it. Master b2 dies and b3 is promoted: its log holds queues 0 and 1 only. The fix widens a "
                       "topic to its log's queues; with the switch b3 sets it to them, undoing the expansion."),
        Scenario(B.TRUNCATE_FILES_MISREPORTS, 28, 28553,
                 [{"t": 9345, "do": "partition", "id": "f1", "links": [["b3", "ctl"], ["b3", "b1"], ["b3", "b2"],
                                                                       ["ctl", "b3"], ["b1", "b3"], ["b2", "b3"]]},
                  {"t": 27389, "do": "heal", "id": "f1"}],
                 fixes=B.FIXES_ALL,
                 story="b3 is cut off while it holds messages the rest of the set does not; after the heal its "
                       "handshake cuts them (the consistent point). With the switch the store answers false for the "
                       "cut it made, and b3 gives up a handshake whose truncation went through."),
        Scenario(B.HA_ADDRESS_NO_WAKEUP, 1, 10000, [], config=QUIET, fixes=B.FIXES_ALL,
                 story="At start-up a slave's registration gives it the master's HA address while its HA client waits "
                       "out its first 5 s (it had none). Without the switch the address wakes it and it connects at "
                       "once; with it the connection starts about 5 s later."),
        Scenario(B.PULL_NEXT_OFFSET_STALE, 1, 10000, [{"t": 3000, "do": "produce", "count": 40}],
                 config={**LEGACY_SYNC, "workload": {"produce_interval": 0}, "sim": {"progress": True}},
                 fixes=B.FIXES_ALL,
                 story="A 4.x pair; 40 messages go out at once and the consumer pulls every second. Its first pull "
                       "gets a full batch of 32; with the switch the answer's next offset is the one it asked for, "
                       "so every later pull returns the same 32 and the last 8 are never read."),
        Scenario(B.LEGACY_PUSH_WAITS_HEARTBEAT, 1, 10000, [],
                 config={**LEGACY_SYNC, "workload": {"consume_interval": 0}, "sim": {"progress": True}},
                 fixes=B.FIXES_ALL,
                 story="A 4.x SYNC_MASTER and its slave, the producer sending every 400 ms on average. With the "
                       "switch a put no longer wakes the master's HA connection: it pushes on its heartbeat only, so "
                       "the slave lags its master by up to 5 s, far more than a replication round trip."),
        Scenario(B.LEGACY_RECONNECT_WAITS, 1, 12000, [{"t": 5000, "do": "break-ha", "node": "b2"}],
                 config={**LEGACY_SYNC, **QUIET}, fixes=B.FIXES_ALL,
                 story="A 4.x pair; at 5 s the slave's HA connection is reset. RocketMQ's HAClient closes it and "
                       "connects again in the same round of its loop; with the switch it first waits the 5 s of a "
                       "failed connect."),
        Scenario(B.REACHABLE_CHECK_GIVES_UP_EARLY, 1, 15000,
                 [{"t": 5000, "do": "partition", "id": "p", "links": [["b1", "ctl3"], ["ctl3", "b1"]]}],
                 config={**QUIET, "cluster": {"controllers": 3}}, fixes=B.FIXES_ALL,
                 story="Three controllers; at 5 s broker b1 loses its links to ctl3. Its next scan of the controller "
                       "addresses gets no connection to ctl3 and drops it after the connect timeout (3 s); with the "
                       "switch it gives up after 1.5 s."),
        Scenario(B.HA_CLIENT_SPINS, 1, 20000, [], config=SETTLED, fixes=B.FIXES_ALL,
                 story="A quiet run. Once the slaves' HA clients reach TRANSFER, each starts its next round at once: "
                       "timer after timer at the same millisecond, so the fault phase ends on its step limit and the "
                       "settle tail spends its whole step budget without getting to its progress checks."),
        Scenario(B.HA_HEARTBEAT_DEADLINE_STALE, 1, 20000, [], config=SETTLED, fixes=B.FIXES_ALL,
                 story="A quiet run. The master's HA connections, with nothing to transfer, arm their idle wake-up "
                       "at their last write plus 1 ms: each wakes every millisecond for nothing. Time still moves "
                       "(the tail's step budget would last), but in the first quiet second after the heal point a "
                       "connection wakes idle far more than 100 times."),
        # ---- issue 21: the guards, each reached by a fault at the guards (or the interleaved steps)
        Scenario(B.SLAVE_SKIPS_OFFSET_CHECK, 1, 30000,
                 [{"t": 7000, "do": "produce", "count": 2},
                  {"t": 8000, "do": "ha-fault", "node": "b1", "mode": "dup", "p": 1.0, "until": 8600},
                  {"t": 8100, "do": "produce", "count": 3}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="Adversarial (beyond TCP): every HA write into slave b1 arrives twice for 600 ms. The second "
                       "copy of a transfer frame names an offset b1 has passed; without the contiguity check b1 "
                       "appends it again at its end. With the check b1 closes the connection, reconnects and goes on."),
        Scenario(B.EPOCH_APPEND_UNCHECKED, 1, 60000,
                 [{"t": 2000, "do": "produce", "count": 2},
                  {"t": 6000, "do": "ha-fault", "node": "b1", "mode": "replay", "p": 1.0, "until": 60000},
                  {"t": 13000, "do": "crash", "node": "b2"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="Adversarial (beyond TCP): master b2 dies; slave b1 follows b3 (epoch 2), and the last write "
                       "of its connection to b2, an idle heartbeat of epoch 1 at b1's log end, is replayed on the new "
                       "connection after b3's handshake and first frame. Its offset is b1's end, so it passes the "
                       "contiguity check; the epoch file's append guard rejects the entry (1, 0) after (2, 697). "
                       "Without it the cache holds epoch 1 after epoch 2."),
        Scenario(B.CLEAN_SKIPS_LIVING_CHECK, 1, 12000,
                 [{"t": 8000, "do": "clean", "ids": "1"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="mqadmin cleanBrokerMetadata names id 1, a broker that runs and heartbeats. cleanBrokerData "
                       "refuses it (the broker is alive); with the switch the id is removed while it serves."),
        Scenario(B.ADDRESS_UPDATE_DROPPED, 1, 20000,
                 [{"t": 8000, "do": "crash", "node": "b1"}, {"t": 10000, "do": "restart", "node": "b1", "port": 10921}],
                 config=SETTLED, fixes=B.FIXES_ALL,
                 story="Broker b1 is killed and restarted on listenPort 10921 with its store and id. Its "
                       "registerBrokerToController carries the new address and the controller applies an "
                       "UpdateBrokerAddressEvent; with the switch the event is dropped and the controller keeps "
                       "b1:10911."),
        Scenario(B.ALTER_SKIPS_MEMBER_CHECKS, 1, 20000,
                 [{"t": 5200, "do": "partition", "id": "h", "links": [["b2", "ctl"]], "hold": 3000},
                  {"t": 6000, "do": "crash", "node": "b1"},
                  {"t": 6500, "do": "clean", "ids": "3"},
                  {"t": 8000, "do": "heal", "id": "h"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="TCP-faithful: master b2's link to the controller holds its requests (TCP retransmits) while "
                       "it proposes adding b1 (id 3); b1 dies and mqadmin cleans its id; the heal delivers the "
                       "proposal, whose epochs still match. alterSyncStateSet's membership check rejects a member "
                       "that is no longer registered; without it the SyncStateSet holds an unknown id."),
        Scenario(B.RECOVER_KEEPS_SPLIT_CONFIRM, 1, 60000,
                 [{"t": 2000, "do": "produce", "count": 2, "size": 500},
                  {"t": 7000, "do": "crash-at", "node": "b2", "point": "confirm-split", "within": 10000},
                  {"t": 8000, "do": "produce", "count": 3, "size": 500},
                  {"t": 15000, "do": "restart", "node": "b2"},
                  {"t": 30000, "do": "admin-elect", "brokerId": 1}],
                 config={**QUIET, "store": {"haTransferBatchSize": 300}}, fixes=B.FIXES_ALL,
                 story="Transfer batches of 300 bytes split 500-byte messages, so acks and master b2's confirmOffset "
                       "land inside messages; b2 is killed the first time its confirmOffset does. Recovery lowers a "
                       "confirmOffset past the last whole confirmed message to that message's end; without it b2 "
                       "restarts with its reput inside a message, and when mqadmin makes it master again its "
                       "truncateInvalidMsg scans from there and cuts whole, confirmed messages."),
        Scenario(B.ROLE_CHANGE_SKIPS_DISPATCH_WAIT, 1, 40000,
                 [{"t": 8000, "do": "produce", "count": 6},
                  {"t": 11500, "do": "slow-dispatch", "node": "b1", "ms": 5000},
                  {"t": 11500, "do": "slow-dispatch", "node": "b3", "ms": 5000},
                  {"t": 12000, "do": "crash", "node": "b2"},
                  {"t": 25000, "do": "produce", "count": 1}, {"t": 35000, "do": "produce", "count": 4}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="Interleaved steps: the slaves' reput threads stall as master b2 dies; b1's promotion "
                       "confirms what it received and must dispatch it before it recovers its topic queue table. "
                       "RocketMQ's role change waits (dispatchBehindBytes, 100 ms sleeps) until the stall ends; "
                       "without the wait the table misses the undispatched messages and b1's next puts reuse their "
                       "queue offsets."),
        Scenario(B.SLAVE_REPORTS_AT_HANDSHAKE, 1, 30000,
                 [{"t": 8000, "do": "partition", "id": "p", "links": [["b2", "b3"], ["b3", "b2"]]},
                  {"t": 8000, "do": "ha-stale", "node": "b1", "lag": 10000, "until": 30000},
                  {"t": 8100, "do": "produce", "count": 1},
                  {"t": 8200, "do": "crash", "node": "b1"}, {"t": 9200, "do": "restart", "node": "b1"}],
                 config=QUIET, fixes=B.FIXES_ALL,
                 story="TCP-faithful: slave b3 is cut from master b2; slave b1 acks a put, then dies and its FIN "
                       "reaches b2 10 s late, so b2 still holds b1's old connection when b1 is back and reconnects. "
                       "GroupTransferService counts connections: with an eager first report the new connection's "
                       "ack and the stale one's make three, and the put is acknowledged without b3. RocketMQ's slave "
                       "reports a new connection only at its 5 s heartbeat, after the put's 3 s timeout."),
    ]
}


def precursors_off(names: list[str] | tuple[str, ...]) -> list[str]:
    """Invariants the scenarios of the expected-loss configurations among ``names`` leave unchecked (their
    precursor), so that a run reaches the loss itself."""
    return sorted({i for n in names if B.BUGS[n].kind == "config" and n in SCENARIOS for i in SCENARIOS[n].disabled})
