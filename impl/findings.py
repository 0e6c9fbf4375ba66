"""Documented findings: violations the kit found that are real RocketMQ 5.3.3 behaviour (or, for a finding that
``needs`` an upstream switch, the behaviour of the later release that switch brings in).

Each finding has a stable id, the invariants it breaks, its write-up (``docs/findings/<id>.md``), a
replayable trace (``docs/findings/traces/<id>.jsonl.gz``) and a *fix switch* (``bugs.py``, kind "fix"): the
natural fix, so that a campaign can look past it and an engineer can check the fix holds.

``classify`` attributes a violation to a finding by re-running the same inputs with that finding's fix on:
if the violation no longer happens at that step, the finding explains it. Nothing is classified by its
message text alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import bugs as B

SET_WIDE = ("SYNC-DISPATCH-CONFIRMED", "SYNC-CONFIRM-HELD")
"""Issue 21's set-wide checks: a master whose ack set lacks a member the controller's SyncStateSet holds confirms,
and lets replicas dispatch, bytes that member does not hold (before anything is lost)."""


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    invariants: tuple[str, ...]
    fix: str
    where: str
    reference: str
    # the upstream switches (bugs.py, kind "upstream") its runs need: a finding of a later release than 5.3.3
    needs: tuple[str, ...] = ()


FINDINGS: dict[str, Finding] = {
    f.id: f
    for f in [
        Finding("F-TRANSFER-EPOCH-STALE", "An HA connection keeps transferring under an epoch that has ended",
                ("HA-EPOCH-BOUNDARY", "MODEL-CONFORM"), B.FIX_TRANSFER_EPOCH_REFRESH,
                "AutoSwitchHAConnection.changeTransferEpochToNext / transferToSlave",
                "apache/rocketmq#9689 (fixed by #9690 after 5.3.3)"),
        Finding("F-CONFIRM-SKIPS-NEW-CONNECTION",
                "confirmOffset skips an SSS member that has reconnected but not yet acked",
                ("SYNC-CONFIRM-BOUND", *SET_WIDE), B.FIX_CONFIRM_WAITS_FIRST_ACK,
                "AutoSwitchHAService.computeConfirmOffset (the #6729 'ack > 0' filter)",
                "known gap of #6729's filter"),
        Finding("F-DLEDGER-STALE-VALIDATION",
                "The controller validates a request on a state that lacks a still-uncommitted earlier event",
                ("CTL-ALTER-FENCED", "CTL-CLEAN-ELECTION", "CTL-ONE-MASTER-PER-EPOCH", "CTL-READ-COMMITTED",
                 "MODEL-CONFORM"),
                B.FIX_VALIDATE_AFTER_COMMIT,
                "DLedgerController.EventScheduler / appendToDLedgerAndWait (5 s wait, then the next request)",
                "known gap: DLedger validates, then proposes"),
        Finding("F-STALE-SSS-PROPOSAL", "A queued SyncStateSet proposal is sent with the epochs of a later term",
                ("SYNC-SSS-HOLDS-ACKED", "SYNC-NO-ACK-LOSS"), B.FIX_PROPOSAL_KEEPS_EPOCHS,
                "ReplicasManager.doReportSyncStateSetChanged (reads masterEpoch / syncStateSetEpoch when it runs)",
                "new"),
        Finding("F-GAP-UNION", "A newer SyncStateSet proposal pushes an accepted one out of the ack set",
                ("SYNC-SSS-HOLDS-ACKED", "SYNC-NO-ACK-LOSS", "SYNC-EXPAND-SAFE", *SET_WIDE),
                B.FIX_UNION_KEEPS_ALL_PROPOSALS,
                "AutoSwitchHAService.markSynchronizingSyncStateSet (remote set overwritten)", "known gap (GAP-UNION)"),
        Finding("F-CONFIRM-LOCAL-SHORTCUT",
                "A master whose confirmed SSS is itself alone exposes unacknowledged messages to consumers",
                ("SYNC-SEEN-NO-LOSS", *SET_WIDE), B.FIX_CONFIRM_SHORTCUT_USES_UNION,
                "CommitLog.getConfirmOffset ('local SSS size == 1 -> maxPhyOffset')", "new"),
        Finding("F-RECOVER-NORMALLY-PAST-CONFIRM",
                "After a clean shutdown a broker dispatches messages past its confirmOffset to consumers",
                ("SYNC-VISIBLE-BOUND",), B.FIX_RECOVER_NORMALLY_UP_TO_CONFIRM,
                "CommitLog.recoverNormally (dispatches every message past the consume queue's end; only "
                "recoverAbnormally looks at confirmOffset in controller mode)", "new"),
        Finding("F-TRUNCATED-TAIL-RESURRECTS",
                "Recovery after a crash reads back bytes a truncation had cut",
                ("STORE-NO-RESURRECT",), B.FIX_TRUNCATE_CLEARS_FILE,
                "MappedFileQueue.truncateDirtyFiles (moves the write position only) + CommitLog.recoverAbnormally "
                "(scans to the first invalid message)", "new"),
        Finding("F-EPOCH-REBASE-ON-RESTART",
                "A master restarted and re-confirmed at the same epoch moves that epoch's start",
                ("HA-LOG-MATCHING", "SYNC-CONFIRM-BOUND"), B.FIX_KEEP_OWN_EPOCH_ON_RESTART,
                "AutoSwitchHAService.changeToMaster (truncateSuffixByEpoch then appendEntry at maxPhyOffset)", "new"),
        Finding("F-EPOCH-EQ-SPLICE",
                "A new master whose last epoch holds no bytes writes under that epoch, as the deposed master does",
                ("HA-LOG-MATCHING",), B.FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH,
                "EpochFileCache.appendEntry (QUIRK-EPOCH-EQ) in AutoSwitchHAService.changeToMaster; "
                "AutoSwitchHAClient (TRANSFER: heartbeats record the epoch too)",
                "QUIRK-EPOCH-EQ; related upstream PR #9942 (after 5.3.3)"),
        Finding("F-TRANSFER-NEGATIVE-BATCH",
                "With upstream fix #9690, a connection served past a truncation sends a batch of negative size",
                ("HA-EPOCH-BOUNDARY", "MODEL-CONFORM"), B.FIX_TRANSFER_CHECKS_LOG_END,
                "AutoSwitchHAConnection.transferToSlave (#9690's re-read end below nextTransferFromWhere)",
                "a hole in apache/rocketmq PR #9690 (after 5.3.3); new"),
        Finding("F-SYNC-DELETES-EVERY-TOPIC",
                "A slave's metadata sync deletes every topic before putting it back: elected or killed in the loop, "
                "a broker serves without the topic",
                ("QUEUE-ACKED-READABLE",), B.FIX_SYNC_DELETES_ONLY_MISSING,
                "SlaveSynchronize.syncTopicConfig (deleteTopicConfig outside the if, since 5.3.2 / #9207) + "
                "ReplicasManager.handleSlaveSynchronize (cancel(false) does not stop a running sync)",
                "apache/rocketmq#9984 (open; fix PR #9996 under review)"),
        Finding("F-TOPIC-CONFIG-LOST-ON-FAILOVER",
                "A queue expansion the slaves have not synced yet is lost with a failover, and the messages "
                "acknowledged in the new queues are never consumed",
                ("QUEUE-ACKED-READABLE",), B.FIX_MASTER_COVERS_ITS_QUEUES,
                "SlaveSynchronize.syncTopicConfig (every 10 s, ReplicasManager.handleSlaveSynchronize) + "
                "ReplicasManager.changeToMaster (keeps the topic config as last synced)", "new"),
        Finding("F-LOCAL-SHRINK-BEFORE-ACCEPT",
                "From 5.4.0 a master drops a disconnected slave from its SyncStateSet before the controller accepts "
                "it, and acknowledges without a replica the controller can still elect",
                ("SYNC-SSS-HOLDS-ACKED", "SYNC-NO-ACK-LOSS", "SYNC-SEEN-NO-LOSS", *SET_WIDE),
                B.FIX_SHRINK_WAITS_FOR_CONTROLLER,
                "AutoSwitchHAService.removeConnection (5.4.0+: the local SyncStateSet shrunk under the write lock "
                "when the connection closes, besides the proposal)",
                "introduced by apache/rocketmq PR #9897 (5.4.0, 5.5.0); new", needs=(B.LOCAL_SHRINK_ON_DISCONNECT,)),
    ]
}


def candidates(invariant: str) -> list[Finding]:
    return [f for f in FINDINGS.values() if invariant in f.invariants]


def classify(header: dict[str, Any], violation: Mapping[str, Any],
             rerun: Callable[[dict[str, Any]], Mapping[str, Any] | None]) -> str | None:
    """The finding whose fix removes ``violation``, or None.

    ``rerun(header)`` runs a header and returns its violation dict (or None). A candidate explains the
    violation when, with its fix added, the run no longer fails that invariant at or before that step.
    """
    bugs = list(header.get("bugs", []))
    for f in candidates(violation["invariant"]):
        if f.fix in bugs:
            continue
        again = rerun(dict(header, bugs=sorted([*bugs, f.fix])))
        if again is None or again["invariant"] != violation["invariant"] or again["step"] > violation["step"]:
            return f.id
    return None
