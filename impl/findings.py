"""Documented findings: violations the kit found that are real RocketMQ 5.3.3 behaviour (or, for a finding that
``needs`` an upstream switch, the behaviour of the later release that switch brings in).

Per release (``bugs.RELEASES``): a run's switches hold its release profile, so a finding whose fix that release
shipped (its fix switch is in the profile), whose ``needs`` the release lacks, or whose mechanism one of the
release's upstream switches removes (``removed_by``) is not a candidate there (``in_play``): it cannot explain a
violation of that release. ``releases_with(finding)`` lists the releases where it can.

Each finding has a stable id, the invariants it breaks, its write-up (``docs/findings/<id>.md``), a
replayable trace (``docs/findings/traces/<id>.jsonl.gz``) and a *fix switch* (``bugs.py``, kind "fix"): the
natural fix, so that a campaign can look past it and an engineer can check the fix holds.

``classify`` attributes a violation to a finding by re-running the same inputs with that finding's fix on:
if the violation no longer happens at that step, the finding explains it. Nothing is classified by its
message text alone.

``triage`` goes on where ``classify`` finds no single finding: a violation can need two findings together (each
fix alone leaves the other finding to break the same invariant at or before the same step). It then looks for the
smallest *set* of findings that explains it (``fix_set``), under the same rule as a single finding: every finding
of the set lists the violation's invariant, their fixes together remove the violation, and the set is 1-minimal
(with any one of its fixes left out the violation is back). The search is delta debugging over the fix switches:
all candidate fixes together first (if even they leave the violation, it is unexplained), then ``ddmin`` down to
a 1-minimal set; every try is a re-run, and ``SET_RERUNS`` bounds them. The explanation of a set is its ids,
sorted, joined by ``+`` (``explanation``): ``F-GAP-UNION+F-STALE-SSS-PROPOSAL``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
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
    # the release rules its runs need (bugs.py, ``Bug.release``: an upstream switch, or a fix a release shipped):
    # a finding of a later release than 5.3.3, or one that is a hole in a later release's fix
    needs: tuple[str, ...] = ()
    # the upstream switches whose rule takes its mechanism away: a release that has one of them cannot show it
    removed_by: tuple[str, ...] = ()


FINDINGS: dict[str, Finding] = {
    f.id: f
    for f in [
        Finding("F-TRANSFER-EPOCH-STALE", "An HA connection keeps transferring under an epoch that has ended",
                ("HA-EPOCH-BOUNDARY", "MODEL-CONFORM"), B.FIX_TRANSFER_EPOCH_REFRESH,
                "AutoSwitchHAConnection.changeTransferEpochToNext / transferToSlave",
                "apache/rocketmq#9689 (fixed by PR #9690 in 5.3.4)"),
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
                ("HA-LOG-MATCHING", "SYNC-CONFIRM-BOUND", "LIVE-HA-TRANSFER"), B.FIX_KEEP_OWN_EPOCH_ON_RESTART,
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
                "a hole in apache/rocketmq PR #9690 (RocketMQ 5.3.4); new", needs=(B.FIX_TRANSFER_EPOCH_REFRESH,)),
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
        Finding("F-SLAVE-FOLLOWS-DEPOSED-MASTER",
                "A slave that registered with the nameserver before its new master keeps replicating from the deposed "
                "master, now a slave, for good, and never rejoins the SyncStateSet",
                ("LIVE-HA-TRANSFER", "LIVE-SSS-CATCHUP", "SYNC-DISPATCH-CONFIRMED"), B.FIX_SLAVE_FOLLOWS_CURRENT_MASTER,
                "AutoSwitchHAClient.updateHaMasterAddress (only wakes the loop) + BrokerController."
                "handleRegisterBrokerResult (the HA address from the nameserver's answer) + AutoSwitchHAService "
                "(every broker accepts HA connections and serves its log, whatever its role)", "new"),
        Finding("F-PROPOSAL-AFTER-RESTART",
                "A killed master's SyncStateSet proposal, held by TCP, reaches the controller after the master "
                "restarted and re-registered, and puts a lagging slave into the SyncStateSet",
                ("SYNC-SSS-HOLDS-ACKED", "SYNC-NO-ACK-LOSS", "SYNC-CONFIRM-BOUND"), B.FIX_FENCE_OLD_INCARNATION,
                "ReplicasInfoManager.alterSyncStateSet (checks the request's epochs, nothing that tells two processes "
                "of the master apart) + DefaultBrokerHeartbeatManager.onBrokerChannelClose (the old connection's "
                "close reports the restarted master inactive)",
                "new (the implementation path of model finding M-PROPOSAL-OUTLIVES-RESTART)"),
        Finding("F-EPOCH-ENTRY-LOST-ON-RECONNECT",
                "A slave that reconnects at the start of an epoch drops that epoch's entry and never records it "
                "again; a later handshake then truncates the acknowledged messages it holds",
                ("SYNC-CONFIRM-BOUND", "SYNC-SSS-HOLDS-ACKED", "SYNC-NO-ACK-LOSS"),
                B.FIX_NEW_CONNECTION_RECORDS_EPOCH,
                "AutoSwitchHAClient.doTruncate (epochCache.truncateSuffixByOffset(truncateOffset) drops the entry "
                "that starts at the consistent point) + HAClientReader.processReadResult (an entry is appended only "
                "when masterEpoch != currentReceivedEpoch, which only init() resets, not a new connection)", "new",
                removed_by=(B.TRUNCATE_KEEPS_EPOCH_ENTRIES,)),
    ]
}


SEP = "+"  # between the ids of a set of findings in an explanation: "F-GAP-UNION+F-STALE-SSS-PROPOSAL"
SET_RERUNS = 16  # re-runs one set search may spend (the set of all candidates in play, then ddmin's steps)

Rerun = Callable[[dict[str, Any]], Mapping[str, Any] | None]


def releases_with(f: Finding) -> list[str]:
    """The releases whose profile leaves ``f`` in play (derived from the switches, not a table)."""
    return [r for r in B.RELEASES if in_play(f, list(B.release_switches(r)))]


def candidates(invariant: str) -> list[Finding]:
    return [f for f in FINDINGS.values() if invariant in f.invariants]


def explanation(ids: Iterable[str]) -> str:
    """The explanation of a set of findings: their ids sorted and joined by ``+`` (one id: the id itself)."""
    return SEP.join(sorted(set(ids)))


def explanation_ids(text: str) -> list[str]:
    """The finding ids of an explanation (``explanation``'s inverse); ``expected:<config>`` is one item."""
    return text.split(SEP)


def is_documented(text: str | None) -> bool:
    """Whether an explanation names documented findings only (one, or a set of them)."""
    return text is not None and all(i in FINDINGS for i in explanation_ids(text))


def gone(again: Mapping[str, Any] | None, violation: Mapping[str, Any]) -> bool:
    """A re-run no longer shows ``violation``: no failure, another invariant, or the same one later."""
    return again is None or again["invariant"] != violation["invariant"] or again["step"] > violation["step"]


def in_play(f: Finding, bugs: list[str]) -> bool:
    """A candidate whose fix can change the run: not on already (a release that shipped it has it on), its release
    rules (``needs``) on, and none of the upstream switches that remove its mechanism (``removed_by``) on. Triage is
    so per release: a run's ``bugs`` hold its release profile (``bugs.release_switches``)."""
    return (f.fix not in bugs and all(n in bugs for n in f.needs)
            and not any(r in bugs for r in f.removed_by))


def classify(header: dict[str, Any], violation: Mapping[str, Any], rerun: Rerun) -> str | None:
    """The finding whose fix removes ``violation``, or None.

    ``rerun(header)`` runs a header and returns its violation dict (or None). A candidate explains the
    violation when, with its fix added, the run no longer fails that invariant at or before that step. The
    candidates are tried in catalogue order; the first that removes it is the explanation.
    """
    bugs = list(header.get("bugs", []))
    for f in candidates(violation["invariant"]):
        if not in_play(f, bugs):
            continue
        if gone(rerun(dict(header, bugs=sorted([*bugs, f.fix]))), violation):
            return f.id
    return None


@dataclass(frozen=True)
class FixSet:
    """A set search's result: the findings whose fixes together remove the violation (empty: none found), whether
    the set is proven 1-minimal, and the re-runs spent."""

    ids: tuple[str, ...]
    minimal: bool
    reruns: int


def set_pool(candidates_: Iterable[Finding], bugs: list[str]) -> list[Finding]:
    """The findings a set search may use: those in play, and those whose only missing ``needs`` are fixes of
    findings in play (a finding that is a hole in another finding's fix, F-TRANSFER-NEGATIVE-BATCH in #9690's: the
    set that holds both fixes brings that rule in; ``admissible`` keeps such a finding out of a set without it)."""
    listed = list(candidates_)
    playing = [f for f in listed if in_play(f, bugs)]
    fixes = {f.fix for f in playing}
    later = [f for f in listed if f not in playing and f.fix not in bugs
             and not any(r in bugs for r in f.removed_by)
             and all(n in bugs or n in fixes for n in f.needs)]
    return playing + later


def admissible(ids: Iterable[str], bugs: list[str]) -> bool:
    """A set of findings whose ``needs`` its own fixes (or the run's switches) supply."""
    chosen = [FINDINGS[i] for i in ids]
    have = {*bugs, *(f.fix for f in chosen)}
    return all(n in have for f in chosen for n in f.needs)


class _Tries:
    """``clears(set of findings)``: one memoised re-run each, at most ``budget`` of them."""

    def __init__(self, header: dict[str, Any], violation: Mapping[str, Any], rerun: Rerun, fixes: dict[str, str],
                 budget: int) -> None:
        self.header, self.violation, self.rerun, self.fixes = header, violation, rerun, fixes
        self.left, self.runs = budget, 0
        self.seen: dict[frozenset[str], bool] = {}

    def spent(self) -> bool:
        return self.left <= 0

    def clears(self, ids: Iterable[str]) -> bool:
        key = frozenset(ids)
        if key not in self.seen and not admissible(key, list(self.header.get("bugs", []))):
            self.seen[key] = False  # a finding without the fix its mechanism needs: no re-run
        if key not in self.seen:
            if self.spent():
                return False
            self.left -= 1
            self.runs += 1
            bugs = sorted({*self.header.get("bugs", []), *(self.fixes[i] for i in key)})
            self.seen[key] = gone(self.rerun(dict(self.header, bugs=bugs)), self.violation)
        return self.seen[key]


def _chunks(items: list[str], n: int) -> list[list[str]]:
    size, extra = divmod(len(items), n)
    out, at = [], 0
    for k in range(n):
        step = size + (1 if k < extra else 0)
        out.append(items[at:at + step])
        at += step
    return [c for c in out if c]


def ddmin_set(items: list[str], tries: _Tries) -> tuple[list[str], bool]:
    """Zeller's ddmin over a set that clears the violation: a subset (a chunk first, then a complement) that still
    clears it, and again, down to a set from which no single item can be left out. Returns the set and whether it
    is proven 1-minimal (not when the budget ran out first)."""
    current, n = list(items), 2
    while len(current) >= 2 and not tries.spent():
        chunks = _chunks(current, n)
        smaller = next((c for c in chunks if tries.clears(c)), None)
        if smaller is not None:
            current, n = smaller, 2
            continue
        complements = [[x for x in current if x not in c] for c in chunks] if n > 2 else []
        rest = next((c for c in complements if tries.clears(c)), None)
        if rest is not None:
            current, n = rest, max(n - 1, 2)
            continue
        if n >= len(current):
            break
        n = min(2 * n, len(current))
    proven = all(tries.seen.get(frozenset(x for x in current if x != y)) is False for y in current)
    return current, len(current) < 2 or proven


def fix_set(header: dict[str, Any], violation: Mapping[str, Any], rerun: Rerun, pool: Iterable[Finding] | None = None,
            budget: int = SET_RERUNS, singles_tried: bool = True) -> FixSet:
    """The smallest set of findings (from ``pool``: by default the candidates, which list the violation's
    invariant) whose fixes together remove ``violation``; see the module doc.

    ``header`` should stop at the violation's step (``maxSteps``): each try is a re-run that far. With
    ``singles_tried`` (``classify`` has run) no single finding removes it, so a set has two or more.
    """
    bugs = list(header.get("bugs", []))
    chosen = set_pool(candidates(violation["invariant"]) if pool is None else pool, bugs)
    fixes = {f.id: f.fix for f in chosen}
    ids = sorted(fixes)
    tries = _Tries(header, violation, rerun, fixes, budget)
    if singles_tried:
        tries.seen.update({frozenset([i]): False for i in ids})
    if len(ids) < (2 if singles_tried else 1) or not tries.clears(ids):
        return FixSet((), False, tries.runs)
    small, minimal = ddmin_set(ids, tries)
    return FixSet(tuple(sorted(small)), minimal, tries.runs)


@dataclass(frozen=True)
class Triage:
    """``triage``'s answer: the explanation (one finding id, a set's ``explanation``, or None) and its re-runs."""

    explained_by: str | None
    reruns: int


def triage(header: dict[str, Any], violation: Mapping[str, Any], rerun: Rerun, budget: int = SET_RERUNS) -> Triage:
    """``classify`` (one finding at a time, in catalogue order), then, if none explains it, ``fix_set``.

    Every re-run stops at the violation's step. At most ``len(candidates) + budget`` re-runs: one per candidate,
    then the set of all of them and the ddmin steps. A set the budget leaves unproven 1-minimal still explains the
    violation (each of its findings lists the invariant and their fixes together remove it). With two candidates in
    play the set search is one re-run; SYNC-SSS-HOLDS-ACKED has four today, and ddmin takes a few more.
    """
    header = dict(header, maxSteps=int(violation["step"]))  # "gone" means: not failing at or before that step
    runs = [0]

    def counted(h: dict[str, Any]) -> Mapping[str, Any] | None:
        runs[0] += 1
        return rerun(h)

    single = classify(header, violation, counted)
    if single is not None:
        return Triage(single, runs[0])
    found = fix_set(header, violation, counted, budget=budget)
    return Triage(explanation(found.ids) if found.ids else None, runs[0])
