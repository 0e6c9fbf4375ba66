"""Injectable bugs: named, documented deviations that bring back a real or plausible RocketMQ bug.

Each switch is a string the core checks at exactly one place (grep for its constant). A run with a switch
on must be caught by the invariant the switch names; ``tests/test_bugs.py`` shows it with a deterministic
scenario, and the same scenario passes with the switch off. Beside the switches sit the *expected-loss
configurations*: real RocketMQ settings under which an acknowledged message can be lost by design.

This module is a leaf: it imports nothing from the kit, so every layer can read it.
"""

from __future__ import annotations

from dataclasses import dataclass

ACK_LOCAL_SSS_ONLY = "ack-local-sss-only"
CONFIRM_IGNORES_DISCONNECTED = "confirm-ignores-disconnected"
CONFIRM_COUNTS_NEW_CONNECTION = "confirm-counts-new-connection"
TRUNCATE_INVALID_WRONG_START = "truncate-invalid-wrong-start"
ALTER_SKIP_SSS_EPOCH_CHECK = "alter-skip-sss-epoch-check"
ELECT_IGNORES_LIVENESS = "elect-ignores-liveness"
TRANSFER_CROSSES_EPOCH = "transfer-crosses-epoch"
CONSISTENT_POINT_USES_MAX = "consistent-point-uses-max"
# bug switches of the progress invariants (LIVE-*): each a slip that leaves a state a fault made for good
SYNC_SKIPS_BROKER_ELECT = "sync-skips-broker-elect"
ALTER_CHECKS_OLD_SET_ALIVE = "alter-checks-old-set-alive"
EXPAND_CHECKS_UNION = "expand-checks-union"
HA_READ_TIME_ON_HANDSHAKE_ONLY = "ha-read-time-on-handshake-only"
ROUTE_CHANGE_IGNORES_ADDRESSES = "route-change-ignores-addresses"
SYNC_METADATA_TASK_DIES = "sync-metadata-task-dies"
PULL_NEXT_OFFSET_STALE = "pull-next-offset-stale"
ELECT_REQUEST_NOT_NOTIFIED = "elect-request-not-notified"
CLOSE_KEEPS_MEMBER = "close-keeps-member"
TRUNCATE_FILES_MISREPORTS = "truncate-files-misreports"
HA_ADDRESS_NO_WAKEUP = "ha-address-no-wakeup"
HA_CLIENT_SPINS = "ha-client-spins"
HA_HEARTBEAT_DEADLINE_STALE = "ha-heartbeat-deadline-stale"

# guard switches (issue 21): a guard that only the faults at the guards reach, removed or weakened
SLAVE_SKIPS_OFFSET_CHECK = "slave-skips-offset-check"
EPOCH_APPEND_UNCHECKED = "epoch-append-unchecked"
ALTER_SKIPS_MEMBER_CHECKS = "alter-skips-member-checks"
RECOVER_KEEPS_SPLIT_CONFIRM = "recover-keeps-split-confirm"
ROLE_CHANGE_SKIPS_DISPATCH_WAIT = "role-change-skips-dispatch-wait"
SLAVE_REPORTS_AT_HANDSHAKE = "slave-reports-at-handshake"
DISPATCH_SKIPS_RANGE = "dispatch-skips-range"
RECOVER_CONFIRMS_SCAN_END = "recover-confirms-scan-end"
SLAVE_CONFIRMS_OWN_MAX = "slave-confirms-own-max"
CLEAN_SKIPS_LIVING_CHECK = "clean-skips-living-check"
ADDRESS_UPDATE_DROPPED = "address-update-dropped"

# fidelity switches: a deviation in a part of the deployment that its settings turn on (docs/fidelity.md)
CLIENT_ACKS_ANNOUNCED_BODY = "client-acks-announced-body"
CONFIRM_MIN_INT32 = "confirm-min-int32"
RECOVER_IGNORES_ABORT_FILE = "recover-ignores-abort-file"
UNFENCE_BEFORE_REGISTER = "unfence-before-register"
NS_IGNORES_STATE_VERSION = "ns-ignores-state-version"
QUEUE_TABLE_NOT_RECOVERED = "queue-table-not-recovered"
OFFSET_NOT_FOUND_FROM_LAST = "offset-not-found-from-last"
TWO_LEADERS_ONE_TERM = "two-leaders-one-term"
JRAFT_APPLY_LOCAL_TIME = "jraft-apply-local-time"
LEADER_SKIPS_IDLE_HEARTBEAT = "leader-skips-idle-heartbeat"
FOLLOWER_COMMITS_WITH_ENTRIES = "follower-commits-with-entries"
STALE_REPLY_DEPOSES = "stale-reply-deposes"
VOTE_GRANTS_OLDER_TERM = "vote-grants-older-term"
COMMIT_WAITS_FOR_ACK = "commit-waits-for-ack"
SCAN_REELECT_CHECKS_MASTER = "scan-reelect-checks-master"
APPEND_SPANS_FILE = "append-spans-file"
REPUT_STOPS_AT_FILE_END = "reput-stops-at-file-end"
SLAVE_SKIPS_TOPIC_SYNC = "slave-skips-topic-sync"
LEGACY_PUSH_WAITS_HEARTBEAT = "legacy-push-waits-heartbeat"
REGISTER_OMITS_TOPIC_CONFIG = "register-omits-topic-config"
COVER_NARROWS_TOPIC = "cover-narrows-topic"
REACHABLE_CHECK_GIVES_UP_EARLY = "reachable-check-gives-up-early"
LEGACY_RECONNECT_WAITS = "legacy-reconnect-waits"
LAST_FILE_FLAG_IGNORED = "last-file-flag-ignored"

# upstream switches: a rule of a later RocketMQ release, brought into the 5.3.3-based core (the release changed it);
# a release profile (``RELEASES``, ``release_switches``) is the set of them that release has
JRAFT_SCAN_AFTER_WAIT = "jraft-scan-after-wait"
LOCAL_SHRINK_ON_DISCONNECT = "local-shrink-on-disconnect"
TRUNCATE_KEEPS_EPOCH_ENTRIES = "truncate-keeps-epoch-entries"
SYNC_TAKES_MASTER_VERSION = "sync-takes-master-version"
ELECT_COMPARES_LONG_OFFSETS = "elect-compares-long-offsets"
JRAFT_REELECT_CHECKS_ACTIVE = "jraft-reelect-checks-active"
IDENTITY_EQUALS_NULL_SAFE = "identity-equals-null-safe"

# the RocketMQ releases the kit has a profile for, oldest first; the core follows the first (DEFAULT_RELEASE)
RELEASES = ("5.3.3", "5.3.4", "5.4.0", "5.5.0", "5.5.1")
DEFAULT_RELEASE = "5.3.3"

# fix switches: the natural fix of a documented finding (docs/findings/), so campaigns can look past it
FIX_TRANSFER_EPOCH_REFRESH = "fix-transfer-epoch-refresh"
FIX_CONFIRM_WAITS_FIRST_ACK = "fix-confirm-waits-first-ack"
FIX_VALIDATE_AFTER_COMMIT = "fix-validate-after-commit"
FIX_PROPOSAL_KEEPS_EPOCHS = "fix-proposal-keeps-epochs"
FIX_UNION_KEEPS_ALL_PROPOSALS = "fix-union-keeps-all-proposals"
FIX_CONFIRM_SHORTCUT_USES_UNION = "fix-confirm-shortcut-uses-union"
FIX_KEEP_OWN_EPOCH_ON_RESTART = "fix-keep-own-epoch-on-restart"
FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH = "fix-epoch-eq-replaces-empty-epoch"
FIX_TRANSFER_CHECKS_LOG_END = "fix-transfer-checks-log-end"
FIX_RECOVER_NORMALLY_UP_TO_CONFIRM = "fix-recover-normally-up-to-confirm"
FIX_TRUNCATE_CLEARS_FILE = "fix-truncate-clears-file"
FIX_MASTER_COVERS_ITS_QUEUES = "fix-master-covers-its-queues"
FIX_SYNC_DELETES_ONLY_MISSING = "fix-sync-deletes-only-missing"
FIX_SHRINK_WAITS_FOR_CONTROLLER = "fix-shrink-waits-for-controller"
FIX_SLAVE_FOLLOWS_CURRENT_MASTER = "fix-slave-follows-current-master"
FIX_FENCE_OLD_INCARNATION = "fix-fence-old-incarnation"
FIX_NEW_CONNECTION_RECORDS_EPOCH = "fix-new-connection-records-epoch"
FIXES_ALL = (FIX_TRANSFER_EPOCH_REFRESH, FIX_CONFIRM_WAITS_FIRST_ACK, FIX_VALIDATE_AFTER_COMMIT,
             FIX_PROPOSAL_KEEPS_EPOCHS, FIX_UNION_KEEPS_ALL_PROPOSALS, FIX_CONFIRM_SHORTCUT_USES_UNION,
             FIX_KEEP_OWN_EPOCH_ON_RESTART, FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH, FIX_TRANSFER_CHECKS_LOG_END,
             FIX_RECOVER_NORMALLY_UP_TO_CONFIRM, FIX_TRUNCATE_CLEARS_FILE, FIX_MASTER_COVERS_ITS_QUEUES,
             FIX_SYNC_DELETES_ONLY_MISSING, FIX_SHRINK_WAITS_FOR_CONTROLLER, FIX_SLAVE_FOLLOWS_CURRENT_MASTER,
             FIX_FENCE_OLD_INCARNATION, FIX_NEW_CONNECTION_RECORDS_EPOCH)


@dataclass(frozen=True)
class Bug:
    name: str
    invariant: str
    where: str
    reference: str
    description: str
    # "switch" (a code deviation), "config" (an expected-loss setting), "fix", "fidelity" (a code deviation
    # in a part of the deployment that is off unless its settings, ``needs``, turn it on), "upstream" (a rule of
    # a later RocketMQ release than the 5.3.3 the core follows, so that a finding of that release can be run), or
    # "guard" (issue 21: a guard of RocketMQ's removed or weakened, which only the faults at the guards or the
    # interleaved steps reach; ``needs``: the settings that turn those on)
    kind: str = "switch"
    settings: tuple[tuple[str, str, object], ...] = ()  # for kind == "config": (section, key, value)
    needs: tuple[tuple[str, str, object], ...] = ()  # fidelity, guard: the settings that turn its part on
    # the first RocketMQ release (``RELEASES``) whose rule this switch is: for kind "upstream", the release that
    # changed the rule; for kind "fix", the release that shipped the same fix upstream (the release profile then
    # has the fix switch itself: one rule, one name). "" for every other switch.
    release: str = ""
    # kind "upstream" only: True when the release's rule (the switch on) removes a deviation the older rule shows
    # (the switch's test: the old rule, off, shows it; the release's does not); False when the release's rule
    # brings the violation in (the switch's scenario in impl/sim/scenarios.py fails ``invariant`` with it on)
    repairs: bool = False


BUGS: dict[str, Bug] = {
    b.name: b
    for b in [
        Bug(ACK_LOCAL_SSS_ONLY, "SYNC-ACK-ALL",
            "AutoSwitchHAService.getSyncStateSet (GroupTransferService.doWaitTransfer)",
            "apache/rocketmq#5663, fixed by #5798 (5.1.1)",
            "While an SSS expansion is in flight the master counts acks over its confirmed (local) set only, "
            "not local ∪ remote; a slave the controller already holds in the SSS can miss an acked message "
            "and still be elected."),
        Bug(CONFIRM_IGNORES_DISCONNECTED, "SYNC-CONFIRM-BOUND",
            "AutoSwitchHAService.computeConfirmOffset",
            "apache/rocketmq#6662, fixed by #6663 (5.1.1)",
            "confirmOffset is the minimum over the acks of *connected* SSS members only; a disconnected member "
            "no longer freezes it, so confirmOffset runs past that member's log end."),
        Bug(CONFIRM_COUNTS_NEW_CONNECTION, "SYNC-EXPAND-SAFE",
            "AutoSwitchHAService.computeConfirmOffset",
            "apache/rocketmq#6728, fixed by #6729 (5.1.1)",
            "confirmOffset also takes the -1/0 ack of a connection that has not reported yet; confirmOffset "
            "collapses and the expansion check (ack >= confirmOffset) admits a lagging slave into the SSS."),
        Bug(TRUNCATE_INVALID_WRONG_START, "SYNC-CONFIRM-BOUND",
            "AutoSwitchHAService.truncateInvalidMsg",
            "apache/rocketmq#6665, fixed by #6666 (5.1.1)",
            "The scan for a broken tail starts at maxPhyOffset - dispatchBehind instead of the reput offset, lands "
            "inside a message and cuts complete (acknowledged) messages. Since 5.1.1 promotion sets confirmOffset "
            "to maxPhyOffset first, which hides it there; the slave's reconnect loop (READY) still runs it."),
        Bug(ALTER_SKIP_SSS_EPOCH_CHECK, "CTL-ALTER-FENCED",
            "ReplicasInfoManager.alterSyncStateSet (check 5)",
            "synthetic (check 4, the masterEpoch check, is implied by checks 3 and 5: see docs/analysis.md)",
            "alterSyncStateSet no longer compares the request's syncStateSetEpoch with the controller's, so an "
            "older proposal of the current master overwrites a newer one."),
        Bug(ELECT_IGNORES_LIVENESS, "CTL-CLEAN-ELECTION",
            "DefaultElectPolicy.tryElect",
            "synthetic; RocketMQ's own tests build a DefaultElectPolicy without a valid predicate",
            "The election policy has no liveness predicate: a dead SSS member can be elected."),
        Bug(TRANSFER_CROSSES_EPOCH, "HA-EPOCH-BOUNDARY",
            "AutoSwitchHAConnection.transferToSlave",
            "synthetic (the clamp that #9689 shows missing on one path)",
            "The master no longer clamps a transfer batch at the end of the current epoch."),
        Bug(CONSISTENT_POINT_USES_MAX, "HA-TRUNCATE-PREFIX",
            "EpochFileCache.findConsistentPoint",
            "synthetic",
            "The consistent point of the latest shared epoch is the larger of the two ends instead of the smaller, "
            "so a slave keeps a divergent tail the master does not have."),
        Bug(SYNC_SKIPS_BROKER_ELECT, "LIVE-MASTER",
            "ReplicasManager.schedulingSyncBrokerMetadata (the else branch: brokerElect when the controller names no "
            "master)",
            "synthetic (the one path that asks for an election once the controller's own attempts found no live "
            "member of the SyncStateSet)",
            "A broker whose periodic metadata sync finds a higher masterEpoch with no master waits for a notification "
            "instead of asking to be elected (brokerElect), so a set whose controller-triggered election failed "
            "(electMaster with no live SyncStateSet member: master null) stays without a master once its members "
            "are back."),
        Bug(ALTER_CHECKS_OLD_SET_ALIVE, "LIVE-SSS-NO-DEAD",
            "ReplicasInfoManager.alterSyncStateSet (check 6: every member of the new SyncStateSet is alive)",
            "synthetic (the loop over the wrong set: syncStateInfo.getSyncStateSet() for newSyncStateSet)",
            "alterSyncStateSet checks that every member of the *current* SyncStateSet exists and is alive instead of "
            "every member of the new one, so the shrink that removes a dead member is refused, and so is every "
            "proposal after it: a broker that dies stays in the SyncStateSet for good."),
        Bug(EXPAND_CHECKS_UNION, "LIVE-SSS-CATCHUP",
            "AutoSwitchHAService.maybeExpandInSyncStateSet (its first check: the slave already in the set)",
            "synthetic (getSyncStateSet, the ack set, for getLocalSyncStateSet, the confirmed one)",
            "The expansion skips a slave that is in the ack set (local ∪ the proposal in flight) rather than in the "
            "confirmed set, so once a proposal that adds it fails (the controller unreachable), nothing proposes it "
            "again: the flag stays set and the slave, caught up, stays out of the SyncStateSet."),
        Bug(HA_READ_TIME_ON_HANDSHAKE_ONLY, "LIVE-HA-TRANSFER",
            "AutoSwitchHAConnection.HAServerReader (lastReadTimestamp, read by the haHousekeepingInterval check)",
            "synthetic (the timestamp refreshed in the handshake branch of processReadEvent only)",
            "The master's end of an HA connection refreshes its last-read time on the slave's handshake only, not on "
            "its acks, so housekeeping closes every connection haHousekeepingInterval after its handshake and the "
            "slave reconnects 5 s later: a close-and-reconnect loop."),
        Bug(ROUTE_CHANGE_IGNORES_ADDRESSES, "LIVE-PUTS",
            "MQClientInstance.updateTopicRouteInfoFromNameServer (TopicRouteData.topicRouteDataChanged)",
            "synthetic (the sorted BrokerData compared by compareTo, which reads brokerName only, for equals, which "
            "reads brokerAddrs too)",
            "The producer takes a route lookup as unchanged when it names the same broker set, whatever its master's "
            "address, so it keeps its first route: after a failover every send goes to the deposed master (refused, "
            "or timed out when it is dead) and no put succeeds again."),
        Bug(SYNC_METADATA_TASK_DIES, "LIVE-TASKS",
            "ReplicasManager.schedulingSyncBrokerMetadata (scheduleAtFixedRate; its catch (Exception))",
            "synthetic (the generic catch dropped: only MQBrokerException is caught)",
            "A metadata sync whose getReplicaInfo call fails (the controller unreachable: a RemotingTimeoutException) "
            "throws out of the scheduled task, and scheduleAtFixedRate suppresses every later run: the broker no "
            "longer learns role changes it was not notified of."),
        Bug(PULL_NEXT_OFFSET_STALE, "LIVE-CONSUME",
            "DefaultMessageStore.getMessage (GetMessageResult.nextBeginOffset, answered by PullMessageProcessor)",
            "synthetic (nextBeginOffset left at the requested offset on the full-batch path)",
            "A pull that returns a full batch (pullBatchSize messages) answers the requested queue offset as the next "
            "one, so a consumer with a backlog of a batch or more reads the same batch again at every pull and never "
            "gets past it."),
        Bug(ELECT_REQUEST_NOT_NOTIFIED, "BRK-ROLE-LATENCY",
            "ControllerRequestProcessor (CONTROLLER_ELECT_MASTER: notifyBrokerRoleChanged after a successful "
            "electMaster)",
            "synthetic (the notification left to the controller's own triggerElectMaster)",
            "An election a broker (brokerElect) or the admin (mqadmin electMaster) asked for is answered to the "
            "requester only: the set's other members are not notified and take their new role at their next "
            "schedulingSyncBrokerMetadata, up to syncBrokerMetadataPeriod later, the new master's puts refused "
            "meanwhile."),
        Bug(CLOSE_KEEPS_MEMBER, "SYNC-SHRINK-LATENCY",
            "AutoSwitchHAService.removeConnection",
            "synthetic (the override dropped: DefaultHAService.removeConnection only forgets the connection)",
            "A master whose HA connection to a member of its SyncStateSet closes only forgets the connection; the "
            "member stays in the SyncStateSet, and in the ack set, until the lag check drops it "
            "(haMaxTimeSlaveNotCatchup, then checkSyncStateSetPeriod): puts wait for its ack meanwhile."),
        Bug(TRUNCATE_FILES_MISREPORTS, "HA-TRUNCATE-REFUSED-UNALIGNED",
            "DefaultMessageStore.truncateFiles (its boolean result, read by AutoSwitchHAClient.doTruncate)",
            "synthetic (the result of the truncation's last call answered instead of true)",
            "truncateFiles cuts the log to the consistent point and then answers false, so the slave gives up a "
            "handshake whose truncation went through, closes the connection and reconnects 5 s later: one reset "
            "that no fault caused per truncation."),
        Bug(HA_ADDRESS_NO_WAKEUP, "HA-CLIENT-WAKEUP",
            "AutoSwitchHAClient.updateHaMasterAddress (wakeup after the address changes)",
            "synthetic (the wakeup dropped)",
            "A slave's HA client stores a new master HA address without waking up: a READY client with no "
            "connection connects only when its loop's 5 s wait runs out, so every first connection and every "
            "reconnect to a new master starts up to 5 s late."),
        Bug(HA_CLIENT_SPINS, "LIVE-TIME-ADVANCES",
            "AutoSwitchHAClient.run (waitForRunning(1000) between two rounds of TRANSFER)",
            "synthetic (the wait between the HA client's rounds dropped)",
            "The slave's HA client in TRANSFER starts its next round at once instead of waiting for its next "
            "deadline (the heartbeat or the housekeeping): it spins, and simulated time stands still."),
        Bug(HA_HEARTBEAT_DEADLINE_STALE, "LIVE-IDLE-WAKEUPS",
            "AutoSwitchHAConnection.WriteSocketService.run (an idle round: a heartbeat once haSendHeartbeatInterval "
            "passed since the last write, else waitForRunning(100))",
            "synthetic (the heartbeat interval left out of the idle write service's next deadline)",
            "The master's HA write service, with nothing to transfer, arms its next idle wake-up at its last write "
            "plus 1 ms instead of plus haSendHeartbeatInterval: a deadline already past, so each connection wakes "
            "every millisecond for nothing until its heartbeat is due, then again after it."),
        Bug(SLAVE_SKIPS_OFFSET_CHECK, "HA-CONTIGUOUS",
            "AutoSwitchHAClient.HAClientReader.processReadResult (TRANSFER: slavePhyOffset != masterPhyOffset)",
            "synthetic (the slave's contiguity check; over TCP the master's frames follow the slave's own report, so "
            "only an HA write duplicated or reordered beyond TCP reaches it: faults ha-dup, ha-reorder)",
            "The slave appends a TRANSFER frame's body at its log end whatever offset the frame names, instead of "
            "closing the connection when the offset is not its max offset.",
            kind="guard", needs=(("faults", "adversarial", True),)),
        Bug(EPOCH_APPEND_UNCHECKED, "EPOCH-FILE-WF",
            "EpochFileCache.appendEntry (lastEntry.epoch >= entry.epoch || lastEntry.startOffset >= "
            "entry.startOffset: rejected)",
            "synthetic (the epoch file's append guard; a frame of an older epoch reaches it when an old connection's "
            "write is replayed on a new one: fault ha-replay)",
            "The epoch cache appends an entry whatever its epoch and start, closing the last entry at the new start, "
            "instead of rejecting an entry that does not come after the last one.",
            kind="guard", needs=(("faults", "guards", True),)),
        Bug(CLEAN_SKIPS_LIVING_CHECK, "CTL-CLEAN-SPARES-LIVING",
            "ReplicasInfoManager.cleanBrokerData (without isCleanLivingBroker: each id to clean checked alive)",
            "synthetic (the loop over the ids to clean; reached by the fault clean-living-broker, profile jraft-ops)",
            "cleanBrokerData with explicit ids no longer refuses an id whose heartbeat is alive, so mqadmin "
            "cleanBrokerMetadata naming a running broker removes it from the controller's replica table and "
            "SyncStateSet while it serves."),
        Bug(ADDRESS_UPDATE_DROPPED, "LIVE-CTL-ADDRESS",
            "ReplicasInfoManager.handleUpdateBrokerAddress",
            "synthetic (the apply of UpdateBrokerAddressEvent; reached by the fault move-broker, profile jraft-ops)",
            "The controller drops an UpdateBrokerAddressEvent, so a broker restarted on another port with its old id "
            "stays known at its old address: getReplicaInfo and registerBroker answer a master address nothing "
            "listens on."),
        Bug(ALTER_SKIPS_MEMBER_CHECKS, "CTL-SSS-REGISTERED",
            "ReplicasInfoManager.alterSyncStateSet (check 6: every new member registered, then alive)",
            "synthetic (the membership checks; a proposal that outlived its member reaches them when the link holds "
            "the request while the member is cleaned: fault stale-request)",
            "alterSyncStateSet no longer checks that every member of the proposed SyncStateSet is a registered broker "
            "of the set and alive, so a proposal made before a member died and was cleaned re-adds it. (Without its "
            "clean, the dead member re-added breaks no safety invariant: it freezes confirmOffset and times puts out "
            "until the master's next shrink; only a liveness check sees it.)",
            kind="guard", needs=(("faults", "guards", True),)),
        Bug(RECOVER_KEEPS_SPLIT_CONFIRM, "SYNC-CONFIRM-BOUND",
            "CommitLog.recoverAbnormally (controller mode: confirmOffset > lastConfirmValidMsgPhyOffset -> corrected)",
            "synthetic (the clamp of a recovered confirmOffset to the last whole confirmed message; a crash while "
            "confirmOffset splits a message reaches it: fault crash-split-confirm)",
            "After a crash, recovery keeps the checkpoint's confirmOffset even when it lies past the last whole "
            "message it kept (inside the partial message the recovery cut off), instead of lowering it to that "
            "message's end.",
            kind="guard", needs=(("faults", "guards", True),)),
        Bug(ROLE_CHANGE_SKIPS_DISPATCH_WAIT, "QUEUE-OFFSET-GAPLESS",
            "AutoSwitchHAService.changeToMaster (while (dispatchBehindBytes() > 0) Thread.sleep(100), then "
            "recoverTopicQueueTable)",
            "synthetic (the role change's order against the reput thread; in the kit's atomic steps the reput's "
            "catch-up is part of the role change, so only [sim] interleave, where the reput runs on its own, "
            "reaches it)",
            "A broker turning master recovers its topic queue table without waiting for the reput to dispatch what "
            "it has not yet (the tail its promotion just confirmed), so its first puts get queue offsets that the "
            "undispatched messages already hold.", kind="guard",
            needs=(("sim", "interleave", True), ("workload", "queues", 2))),
        Bug(SLAVE_REPORTS_AT_HANDSHAKE, "SYNC-ACK-ALL",
            "AutoSwitchHAClient.doTruncate -> reportSlaveMaxOffset (reports only when the max offset grew; the next "
            "report waits for transferFromMaster's haSendHeartbeatInterval, 5 s) against "
            "CommitLog.GroupTransferService.doWaitTransfer (counts connections, not slaves)",
            "synthetic (an eager first report; a stale connection of the same slave, whose FIN is late, reaches it: "
            "fault ha-stale-tail)",
            "A reconnected slave reports its max offset right after the handshake, grown or not. The master still "
            "holding the slave's previous connection (its FIN late) counts both connections' acks for a waiting "
            "put, which is then acknowledged without another member of the SyncStateSet. RocketMQ's slave reports a "
            "new connection's offset only on growth or at its 5 s heartbeat, after the put's 3 s slaveTimeout: the "
            "timing is what keeps the per-connection count from acknowledging it.",
            kind="guard", needs=(("faults", "guards", True),)),
        Bug(DISPATCH_SKIPS_RANGE, "QUEUE-CONFIRMED-DISPATCHED",
            "ReputMessageService.doReput (reputFromOffset advanced only after a message is dispatched)",
            "synthetic (a dispatcher that skips a range: the reput offset moved on before the confirmOffset check)",
            "When the reput stops at a message that ends past confirmOffset, it notes the message's end as where to "
            "go on from, and once confirmOffset passes it resumes there: the message it waited for never reaches the "
            "consume queue, although it is confirmed and nothing else looks wrong."),
        Bug(RECOVER_CONFIRMS_SCAN_END, "SYNC-CONFIRM-HELD",
            "CommitLog.recoverNormally / recoverAbnormally (the confirmOffset handling after the scan)",
            "synthetic (the recovery's non-controller branch, setConfirmOffset(lastValidMsgPhyOffset), taken in "
            "controller mode)",
            "After a restart, recovery sets confirmOffset to the end of the log it recovered, as outside controller "
            "mode, instead of keeping the checkpoint's confirmPhyOffset lowered to that log: the unconfirmed tail a "
            "replica holds counts as confirmed, although the rest of the SyncStateSet may not hold it."),
        Bug(SLAVE_CONFIRMS_OWN_MAX, "SYNC-DISPATCH-CONFIRMED",
            "AutoSwitchHAClient.HAClientReader.processReadResult (setConfirmOffset(Math.min(masterConfirmOffset, "
            "maxPhyOffset)))",
            "synthetic (the slave stores the offset it reports, maxPhyOffset, instead of the header's confirmOffset)",
            "A slave takes its own max offset, the offset it is about to report to its master, as its confirmOffset "
            "instead of the transfer header's confirmOffset lowered to it: it confirms, and dispatches to its consume "
            "queues, every byte it has received, before the rest of the SyncStateSet holds it; its confirmOffset "
            "never passes its own log, so nothing about the slave alone looks wrong."),
        Bug(CLIENT_ACKS_ANNOUNCED_BODY, "HA-ACK-BOUND",
            "AutoSwitchHAClient.HAClientReader.processReadResult / reportSlaveMaxOffset",
            "synthetic (a reader that trusts a frame's header before its body is in: reachable only when frames "
            "arrive in pieces)",
            "When a TRANSFER frame's header has arrived but its body has not, the slave reports the end the header "
            "announces (offset + bodySize) as its max offset, acking bytes it does not hold.",
            kind="fidelity", needs=(("network", "ha_fragment", 1.0),)),
        Bug(CONFIRM_MIN_INT32, "SYNC-CONFIRM-BOUND",
            "AutoSwitchHAService.computeConfirmOffset",
            "synthetic (the class of DefaultElectPolicy's `(int) (o2.getMaxOffset() - o1.getMaxOffset())`: a long "
            "narrowed to an int; reachable only when offsets pass 2^31)",
            "confirmOffset takes the minimum of the acks comparing their low 32 bits as Java ints, so past 2^31 the "
            "master's own max offset (negative as an int) wins over a slave's smaller ack.",
            kind="fidelity", needs=(("sim", "base_offset", 2**31 - 4096),)),
        Bug(RECOVER_IGNORES_ABORT_FILE, "SYNC-VISIBLE-BOUND",
            "DefaultMessageStore.load (lastExitOK = !isTempFileExist())",
            "synthetic (a store that does not create or read its abort file)",
            "The store recovers as after a clean shutdown whatever the abort file says, so after a crash "
            "recoverNormally rebuilds the consume queue past confirmOffset.", kind="fidelity"),
        Bug(UNFENCE_BEFORE_REGISTER, "BRK-FENCED-UNTIL-RUNNING",
            "BrokerController.start / ReplicasManager.startBasicService (setFenced(true) until RUNNING)",
            "synthetic (a start-up that opens the store before the controller has named the broker's role)",
            "A (re)starting broker's store takes writes from the start, before it has registered with the "
            "controller and learned its role: it still believes the role it boots with.", kind="fidelity"),
        Bug(NS_IGNORES_STATE_VERSION, "NS-ROUTE-HIGHEST-EPOCH",
            "RouteInfoManager.registerBroker (the stateVersion comparison of two addresses for one broker id)",
            "synthetic (the nameserver before controller mode: the last registration wins)",
            "The nameserver lets any registration take a broker id, so the periodic registration of a deposed "
            "master that has not heard of the new epoch takes the master route back.", kind="fidelity"),
        Bug(QUEUE_TABLE_NOT_RECOVERED, "QUEUE-OFFSET-GAPLESS",
            "AutoSwitchHAService.changeToMaster (recoverTopicQueueTable after the dispatch caught up)",
            "synthetic (the step that keeps a promoted slave from reusing queue offsets)",
            "A slave promoted to master keeps the topicQueueTable it recovered at start-up instead of recovering it "
            "from its consume queues, so it assigns queue offsets its log already holds.",
            kind="fidelity", needs=(("workload", "queues", 2),)),
        Bug(OFFSET_NOT_FOUND_FROM_LAST, "CLI-NO-SKIP",
            "ConsumerManageProcessor.queryConsumerOffset + RebalancePushImpl.computePullFromWhere "
            "(CONSUME_FROM_LAST_OFFSET)",
            "RocketMQ's own answer once a queue's first message is no longer in memory (the kit's logs always are): "
            "QUERY_NOT_FOUND, and the client starts from the queue's max offset",
            "A broker that holds no offset for a group answers QUERY_NOT_FOUND and the consumer starts at the "
            "queue's end: after a failover that came before the slave synced the group's offsets "
            "(SlaveSynchronize, every 10 s), a restarted consumer skips what was written meanwhile.",
            kind="fidelity", needs=(("workload", "queues", 2),)),
        Bug(TWO_LEADERS_ONE_TERM, "CTL-ONE-LEADER-PER-TERM",
            "DLedgerLeaderElector.handleVote (one vote per term: the ledger's voteFor)",
            "synthetic (a vote request granted whoever the node already voted for in that term)",
            "A controller node grants every up-to-date candidate of a term its vote, so two candidates of one term "
            "can both reach a majority and lead.", kind="fidelity", needs=(("cluster", "controllers", 3),)),
        Bug(JRAFT_APPLY_LOCAL_TIME, "CTL-APPLY-PREFIX",
            "JRaftControllerStateMachine.processEvent (BrokerValidPredicateWithInvokeTime: liveness at invokeTime)",
            "synthetic (a JRaft node decides liveness by its own clock when it applies, not by the request's stamp)",
            "A JRaft controller node validates a logged request with the time it applies it, so a node that applies "
            "late computes another answer from the same entry.", kind="fidelity",
            needs=(("cluster", "controllers", 3), ("controller", "controllerType", "jRaft"))),
        Bug(LEADER_SKIPS_IDLE_HEARTBEAT, "LIVE-CTL-LEADER",
            "DLedgerLeaderElector.maintainAsLeader (sendHeartbeats every heartBeatTimeIntervalMs, whatever the "
            "pushers have to send)",
            "synthetic (the heartbeat folded into the entry pusher, which sends only when an entry is pending)",
            "A controller leader pushes to a follower only when it has entries the follower lacks: an idle group's "
            "followers hear nothing, time out and elect again, every few seconds, for as long as the group is idle.",
            kind="fidelity", needs=(("cluster", "controllers", 3),)),
        Bug(FOLLOWER_COMMITS_WITH_ENTRIES, "LIVE-CTL-APPLIED",
            "DLedgerEntryPusher.EntryDispatcher (a COMMIT push carries the leader's committed index when no entry is "
            "pending) / EntryHandler.handleDoCommit",
            "synthetic (the follower reads the committed index only from a push that carries entries)",
            "A controller follower takes the leader's commit position only from a push that brings entries, not from "
            "an empty one: the last entries before the group goes idle stay unapplied on the followers until the "
            "next entry comes.", kind="fidelity", needs=(("cluster", "controllers", 3),)),
        Bug(STALE_REPLY_DEPOSES, "CTL-LEADER-KEPT",
            "DLedgerEntryPusher.EntryDispatcher (an answer of an older term is a stale response and changes nothing; "
            "only a larger term changes the role: DLedgerLeaderElector.changeRoleToCandidate)",
            "synthetic (the term test of the answer written as 'another term' rather than 'a larger term')",
            "A controller node that receives an answer to a push carrying an older term (one delayed across an "
            "election) takes it as a sign of a new term and drops the leader it knows, or its leadership.",
            kind="fidelity", needs=(("cluster", "controllers", 3),)),
        Bug(VOTE_GRANTS_OLDER_TERM, "CTL-VOTE-CANDIDATE",
            "DLedgerLeaderElector.handleVote (request.getTerm() < memberState.currTerm(): REJECT_EXPIRED_VOTE_TERM)",
            "synthetic (the expired-term test left out: only the ledger and the vote of the node's own term are "
            "checked)",
            "A controller node grants a vote request of an older term (one delayed across an election) when it has "
            "not voted in its own term and the requester's log is up to date: it records a vote of its term for a "
            "node that never asked for it.", kind="fidelity", needs=(("cluster", "controllers", 3),)),
        Bug(COMMIT_WAITS_FOR_ACK, "CTL-COMMIT-QUORUM",
            "DLedgerEntryPusher.QuorumAckChecker.doWork (polls the peers' water marks without pause: the quorum index "
            "moves as soon as a quorum holds an entry)",
            "synthetic (the leader looks for a quorum only when an acknowledgement arrives, not when the entries a "
            "slow commit held back are released)",
            "A controller leader whose entries a slow commit held back does not commit them when they are released: "
            "they wait for the next acknowledgement of a push (a heartbeat's, up to 500 ms later), and the request "
            "waiting on them with it.", kind="fidelity", needs=(("cluster", "controllers", 3),)),
        Bug(SCAN_REELECT_CHECKS_MASTER, "CTL-SCAN-REELECTS",
            "ControllerManager.onBrokerInactive (a null broker id, DLedgerController.scanInactiveMasterAndTrigger"
            "Reelect's notice, forces an election: triggerElectMaster)",
            "synthetic (the scan's notice taken through the master test of a broker's expiry: getReplicaInfo, and an "
            "election only when the set's master is the null id)",
            "The controller leader's inactive-master scan finds a set whose named master is dead and elects nothing: "
            "the set keeps its dead master until a broker of the set asks for an election itself (brokerElect)."),
        Bug(APPEND_SPANS_FILE, "STORE-NO-SPAN-FILE",
            "CommitLog.DefaultAppendMessageCallback.doAppend (END_OF_FILE when msgLen + 8 > maxBlank)",
            "synthetic (the master appends a message across the end of a mapped file, without the filler)",
            "A master appends a message that does not fit in its mapped file across the file end instead of closing "
            "the file with a filler and starting the next one.", kind="fidelity",
            needs=(("sim", "file_boundaries", True),)),
        Bug(REPUT_STOPS_AT_FILE_END, "STORE-REPUT-DRAINS",
            "ReputMessageService.doReput (rollNextFile over an end-of-file filler, then the pass goes on)",
            "synthetic (a reput pass ends where it rolls to the next mapped file)",
            "A reput pass that meets an end-of-file filler rolls to the next file and stops there: the messages of the "
            "new file wait for the next wake-up (the next append or confirmOffset change), in a quiet spell for "
            "good.", kind="fidelity", needs=(("sim", "file_boundaries", True),)),
        Bug(LAST_FILE_FLAG_IGNORED, "HA-TRANSFER-START",
            "AutoSwitchHAConnection.WriteSocketService.run (slaveRequestOffset 0 with isSyncFromLastFile: "
            "nextTransferFromWhere := getMaxOffset - getMaxOffset % mappedFileSizeCommitLog)",
            "synthetic (the master reads the slave's isSyncFromLastFile flag but starts an empty slave at its min "
            "offset anyway)",
            "A master starts the transfer to a slave with an empty log at its log's first offset although the slave's "
            "handshake asked for the last commit-log file only (syncFromLastFile): the new replica copies the whole "
            "history it was configured to skip, and joins the SyncStateSet that much later.", kind="fidelity",
            needs=(("store", "syncFromLastFile", True),)),
        Bug(SLAVE_SKIPS_TOPIC_SYNC, "QUEUE-ACKED-READABLE",
            "SlaveSynchronize.syncTopicConfig (ReplicasManager.handleSlaveSynchronize, every 10 s)",
            "synthetic (a slave never copies the master's topic config)",
            "A slave keeps the topic config it was deployed with and never syncs the master's, so a queue expansion "
            "made long before a failover is lost with it.", kind="fidelity",
            needs=(("workload", "queues", 2), ("workload", "topic_config", True))),
        Bug(REGISTER_OMITS_TOPIC_CONFIG, "NS-ROUTE-TOPIC",
            "BrokerController.registerBrokerAll (TopicConfigManager.buildTopicConfigSerializeWrapper)",
            "synthetic (the registration built from an empty topic table)",
            "A broker registers with the nameserver without its topic config, so the route carries no queue data for "
            "the topic: clients fall back to what they were deployed with, and no queue expansion reaches them.",
            kind="fidelity", needs=(("workload", "queues", 2), ("workload", "topic_config", True))),
        Bug(COVER_NARROWS_TOPIC, "QUEUE-TOPIC-NO-SHRINK",
            "the kit's fix-master-covers-its-queues (a new master's topic config against the queues its log holds)",
            "synthetic (the topic set to the queues the log holds instead of widened to them)",
            "A new master sets its topic to exactly the queues its log holds instead of widening it to them, so a "
            "queue expansion the slave had synced but no message had used yet is undone by the promotion.",
            kind="fidelity", needs=(("workload", "queues", 2), ("workload", "topic_config", True))),
        Bug(LEGACY_PUSH_WAITS_HEARTBEAT, "LIVE-SSS-CATCHUP",
            "4.x CommitLog.handleHA / putMessage (HAService.getWaitNotifyObject().wakeupAll after a put)",
            "synthetic (the wake-up of the HA write threads dropped)",
            "A 4.x master's put no longer wakes its HA connections: each pushes new data only when its own wait runs "
            "out (haSendHeartbeatInterval) or the slave reports, so a slave lags its master by up to a heartbeat and "
            "a SYNC_MASTER's puts wait as long.", kind="fidelity",
            needs=(("cluster", "mode", "legacy"), ("cluster", "brokers", 2))),
        Bug(REACHABLE_CHECK_GIVES_UP_EARLY, "BRK-REACHABLE-TIMEOUT",
            "ReplicasManager.scanAvailableControllerAddresses -> NettyRemotingClient.isAddressReachable (a connect "
            "bounded by NettySystemConfig.connectTimeoutMillis, 3 s)",
            "synthetic (the reachability check bounded by half the connect timeout)",
            "A broker's scan of its controller addresses gives a connect 1.5 s instead of connectTimeoutMillis "
            "(3 s): an unreachable controller leaves the available addresses 1.5 s early, and one that answers "
            "slower than that is taken for unreachable.", kind="fidelity", needs=(("cluster", "controllers", 3),)),
        Bug(LEGACY_RECONNECT_WAITS, "HA-LEGACY-RECONNECT",
            "4.x HAService.HAClient.run (closeMaster, then the loop's next connectMaster at once; "
            "waitForRunning(1000 * 5) only when connectMaster fails)",
            "synthetic (the 5 s wait of a failed connect applied after a closed connection too)",
            "A 4.x slave whose connection to its master closed waits 5 s before connecting again, instead of "
            "connecting at once: after every reset or master restart its replication resumes 5 s late, and a "
            "SYNC_MASTER's puts meanwhile find no slave.", kind="fidelity",
            needs=(("cluster", "mode", "legacy"), ("cluster", "brokers", 2))),
        Bug(LOCAL_SHRINK_ON_DISCONNECT, "SYNC-NO-ACK-LOSS",
            "AutoSwitchHAService.removeConnection",
            "RocketMQ 5.4.0 and later: apache/rocketmq PR #9897 (\"Fix controller mode HAService removeConnection\", "
            "merged 2025-12-04); finding F-LOCAL-SHRINK-BEFORE-ACCEPT",
            "5.4.0's rule in the 5.3.3 core: when a SyncStateSet member's HA connection closes, the master removes it "
            "from its local (confirmed) SyncStateSet at once, under the write lock, besides proposing the shrink to "
            "the controller; until the controller answers, the ack set (local ∪ proposal) no longer holds it, so "
            "with the controller unreachable the master acknowledges without the member the controller may still "
            "elect.", kind="upstream", release="5.4.0"),
        Bug(JRAFT_SCAN_AFTER_WAIT, "LIVE-MASTER", "RaftBrokerHeartBeatManager.scanNotActiveBroker",
            "RocketMQ 5.3.4 and later: apache/rocketmq#9717, PR #9718",
            "5.3.4's gate of the JRaft inactive-broker scan: skip while no heartbeat has come in or until "
            "jRaftScanWaitTimeoutMs after the first one, then scan every time. 5.3.3's test is inverted (skip once "
            "firstReceivedHeartbeatTime + jRaftScanWaitTimeoutMs < now): a JRaft leader scans only in the first "
            "second after its first heartbeat, and a dead broker whose channel close the controller never sees is "
            "never found.", kind="upstream", release="5.3.4", repairs=True),
        Bug(TRUNCATE_KEEPS_EPOCH_ENTRIES, "SYNC-CONFIRM-BOUND", "AutoSwitchHAClient.doTruncate",
            "RocketMQ 5.4.0 and later: apache/rocketmq PR #9942 (\"Fix epoch truncate\"); removes the mechanism of "
            "F-EPOCH-ENTRY-LOST-ON-RECONNECT and M-NO-COMMON-EPOCH",
            "5.4.0's doTruncate: after truncateFiles(point), the epoch cache is cut (truncateSuffixByOffset) only when "
            "point < getMaxPhyOffset() read after the truncation, which a truncation that cut the log leaves equal "
            "to point: the handshake keeps the slave's epoch entries, including one that starts at the consistent "
            "point (5.3.3 drops it, and a slave that reconnected at the start of an epoch never records it again).",
            kind="upstream", release="5.4.0", repairs=True),
        Bug(SYNC_TAKES_MASTER_VERSION, "QUEUE-ACKED-READABLE", "SlaveSynchronize.syncTopicConfig",
            "RocketMQ 5.5.0 and later: apache/rocketmq#9777, PR #9778 (with the delete inside the if: "
            "fix-sync-deletes-only-missing)",
            "5.5.0's sync: no assignNewOne of the master's DataVersion before the loops; the master's entries are "
            "put without a bump (putTopicConfig) and the slave's version is then set to the master's "
            "(setDataVersion), so after a sync the two versions are equal and the next syncAll skips the table. "
            "5.3.3 (and 5.3.4) bump it after the assignment, so every sync finds the versions unequal and "
            "rewrites the table.", kind="upstream", release="5.5.0", repairs=True),
        Bug(ELECT_COMPARES_LONG_OFFSETS, "CTL-CLEAN-ELECTION", "DefaultElectPolicy (the comparator)",
            "RocketMQ 5.5.1 and later: apache/rocketmq#10578, PR #10579",
            "5.5.1's comparator: Integer.compare on the epochs, Long.compare on the max offsets, Integer.compare on "
            "the priorities. 5.3.3's narrows the offset difference to an int, so two candidates 2^31 bytes or "
            "more apart can be ordered the wrong way round and the one with less of the log is elected.",
            kind="upstream", release="5.5.1", repairs=True),
        Bug(JRAFT_REELECT_CHECKS_ACTIVE, "LIVE-MASTER",
            "RaftReplicasInfoManager.checkNotActiveBroker (scanNeedReelectBrokerSets' predicate)",
            "RocketMQ 5.5.1 and later: apache/rocketmq#10875, PR #10885",
            "5.5.1 hands scanNeedReelectBrokerSets the liveness predicate itself; 5.3.3's negated one picks the sets "
            "whose master is alive and which have an inactive member, not the sets whose master is dead and which "
            "have a live member.", kind="upstream", release="5.5.1", repairs=True),
        Bug(IDENTITY_EQUALS_NULL_SAFE, "LIVE-MASTER", "BrokerIdentityInfo.equals",
            "RocketMQ 5.5.1 and later: apache/rocketmq#10876, PR #10886",
            "5.5.1 compares the three fields with Objects.equals: a lookup whose key or entry has a null brokerId "
            "finds the entry with the same null id (or none) instead of throwing NullPointerException.",
            kind="upstream", release="5.5.1", repairs=True),
        Bug(FIX_TRANSFER_EPOCH_REFRESH, "HA-EPOCH-BOUNDARY", "AutoSwitchHAConnection.transferToSlave",
            "finding F-TRANSFER-EPOCH-STALE; upstream apache/rocketmq#9689, fixed by PR #9690 in RocketMQ 5.3.4 "
            "(this switch is that rule: the 5.3.4+ profiles have it)",
            "Before each batch, a connection re-reads the end of its current transfer epoch from the epoch cache "
            "instead of trusting the -1 ('last epoch') it noted when the epoch began, and takes it once it is not "
            "Long.MAX_VALUE (#9690's test, endOffset != LAST_EPOCH_END_OFFSET).", kind="fix", release="5.3.4"),
        Bug(FIX_CONFIRM_WAITS_FIRST_ACK, "SYNC-CONFIRM-BOUND", "AutoSwitchHAService.computeConfirmOffset",
            "finding F-CONFIRM-SKIPS-NEW-CONNECTION (docs/findings)",
            "A member of the ack set whose connection has not acked yet (ack <= 0) freezes confirmOffset, like a "
            "member with no connection, instead of being left out of the minimum.", kind="fix"),
        Bug(FIX_VALIDATE_AFTER_COMMIT, "CTL-ALTER-FENCED", "DLedgerController.EventScheduler",
            "finding F-DLEDGER-STALE-VALIDATION (docs/findings)",
            "The scheduler validates a request only once every entry already appended has committed, so no event "
            "is validated on a state that lacks an earlier one.", kind="fix"),
        Bug(FIX_PROPOSAL_KEEPS_EPOCHS, "SYNC-SSS-HOLDS-ACKED", "ReplicasManager.doReportSyncStateSetChanged",
            "finding F-STALE-SSS-PROPOSAL",
            "A queued SyncStateSet proposal is sent with the masterEpoch and syncStateSetEpoch current when it was "
            "decided, not when the executor gets to it, so the controller fences a proposal that outlived its epoch.",
            kind="fix"),
        Bug(FIX_UNION_KEEPS_ALL_PROPOSALS, "SYNC-SSS-HOLDS-ACKED", "AutoSwitchHAService.markSynchronizingSyncStateSet",
            "finding F-GAP-UNION (docs/findings)",
            "The remote set accumulates every proposal made since the last confirmed set instead of keeping only the "
            "latest, so a proposal the controller may still accept never drops out of the ack set.", kind="fix"),
        Bug(FIX_CONFIRM_SHORTCUT_USES_UNION, "SYNC-SEEN-NO-LOSS", "CommitLog.getConfirmOffset",
            "finding F-CONFIRM-LOCAL-SHORTCUT",
            "The 'one member: confirmOffset = maxPhyOffset' shortcut, and the recomputation on each ack, look at the "
            "ack set (local ∪ remote while a proposal is in flight) instead of the local set alone.", kind="fix"),
        Bug(FIX_KEEP_OWN_EPOCH_ON_RESTART, "HA-LOG-MATCHING", "AutoSwitchHAService.changeToMaster",
            "finding F-EPOCH-REBASE-ON-RESTART",
            "When the epoch cache's last epoch already equals the masterEpoch being taken (a master restarted and "
            "re-confirmed at the same epoch), the entry is kept instead of truncated and re-appended at the current "
            "max offset.", kind="fix"),
        Bug(FIX_EPOCH_EQ_REPLACES_EMPTY_EPOCH, "HA-LOG-MATCHING", "EpochFileCache.appendEntry",
            "finding F-EPOCH-EQ-SPLICE (docs/findings; related upstream PR #9942, after 5.3.3)",
            "An entry whose start equals the last entry's start and whose epoch is greater replaces that last entry "
            "(its epoch holds no bytes) instead of being rejected; an HA connection whose transfer epoch was replaced "
            "follows the entry that now covers its position; a slave's handshake takes an entry its master replaced "
            "as consistent up to its start (findConsistentPoint), so a deposed master whose last epoch the new master "
            "replaced can still sync (without it, no shared epoch: the handshake fails for good).", kind="fix"),
        Bug(FIX_TRANSFER_CHECKS_LOG_END, "HA-EPOCH-BOUNDARY", "AutoSwitchHAConnection.transferToSlave",
            "finding F-TRANSFER-NEGATIVE-BATCH (a hole in upstream PR #9690)",
            "Before a batch, a connection whose position lies past the commit log's end or past the end of its "
            "current epoch (the serving broker truncated its log under it) closes instead of sending; the slave "
            "reconnects and handshakes. With #9690's re-read, the end of an entry that is still the cache's last "
            "(the stale end truncateSuffixByOffset leaves) is not taken, so the connection does not stall on it.",
            kind="fix"),
        Bug(FIX_RECOVER_NORMALLY_UP_TO_CONFIRM, "SYNC-VISIBLE-BOUND", "CommitLog.recoverNormally",
            "finding F-RECOVER-NORMALLY-PAST-CONFIRM",
            "After a clean shutdown, recovery in controller mode rebuilds the consume queue only up to confirmOffset, "
            "as recoverAbnormally does, instead of dispatching every message past the consume queue's end.",
            kind="fix"),
        Bug(FIX_TRUNCATE_CLEARS_FILE, "STORE-NO-RESURRECT", "MappedFileQueue.truncateDirtyFiles",
            "finding F-TRUNCATED-TAIL-RESURRECTS",
            "A truncation clears the mapped file past the new write position (or recovery stops at the write "
            "position it had), so a later recovery scan cannot read the cut bytes back.", kind="fix"),
        Bug(FIX_MASTER_COVERS_ITS_QUEUES, "QUEUE-ACKED-READABLE",
            "ReplicasManager.changeToMaster (topic config as last synced by SlaveSynchronize)",
            "finding F-TOPIC-CONFIG-LOST-ON-FAILOVER",
            "A broker that turns master widens the topic's read and write queue counts to cover every queue its "
            "consume queues hold (its log is the record of which queues were written), so a queue expansion the "
            "slave had not synced yet survives the failover.", kind="fix"),
        Bug(FIX_SYNC_DELETES_ONLY_MISSING, "QUEUE-ACKED-READABLE", "SlaveSynchronize.syncTopicConfig",
            "finding F-SYNC-DELETES-EVERY-TOPIC; apache/rocketmq#9984 (PR #9996); the same rule shipped in "
            "RocketMQ 5.5.0 with PR #9778 (the 5.5.0+ profiles have this switch, and sync-takes-master-version)",
            "A slave's sync deletes only the topics the master no longer has (deleteTopicConfig inside the if), so "
            "the topics both sides have never leave its table or topics.json.", kind="fix", release="5.5.0"),
        Bug(FIX_SHRINK_WAITS_FOR_CONTROLLER, "SYNC-NO-ACK-LOSS", "AutoSwitchHAService.removeConnection",
            "finding F-LOCAL-SHRINK-BEFORE-ACCEPT (undoes the local shrink of PR #9897, 5.4.0+)",
            "With local-shrink-on-disconnect (5.4.0+): a closed connection's member leaves the local SyncStateSet only "
            "when the controller accepts the shrink (setSyncStateSet, 5.3.3's rule); until then the ack set keeps "
            "it. Without that switch it changes nothing.", kind="fix"),
        Bug(FIX_SLAVE_FOLLOWS_CURRENT_MASTER, "LIVE-HA-TRANSFER",
            "AutoSwitchHAClient.updateHaMasterAddress; AutoSwitchHAConnection (the slave's handshake)",
            "finding F-SLAVE-FOLLOWS-DEPOSED-MASTER",
            "A broker that is not master refuses a slave's HA handshake (closes the connection), so a slave never "
            "replicates from a deposed master; and when a nameserver registration gives the slave a new HA master "
            "address while it holds (or opens) a connection to the old one, the client closes it and connects to "
            "the new address at once, instead of only waking its loop (which reconnects only once the connection "
            "breaks).", kind="fix"),
        Bug(FIX_FENCE_OLD_INCARNATION, "SYNC-SSS-HOLDS-ACKED",
            "ControllerRequestProcessor / ReplicasInfoManager.alterSyncStateSet",
            "finding F-PROPOSAL-AFTER-RESTART (docs/findings)",
            "The controller fences the alterSyncStateSet of a master process older than the master's latest "
            "registration: it keeps, per broker id, the process incarnation its latest REGISTER_BROKER_TO_CONTROLLER "
            "came from (in the kit, the connection: one per process), and answers a request of an earlier one with "
            "CONTROLLER_FENCED_MASTER_EPOCH. A request of a later one passes (the master reconnected, or registered "
            "with another controller of the group: fencing every other connection froze the SyncStateSet of a "
            "master whose registration an earlier leader had seen, fidelity seed 30, LIVE-SSS-CATCHUP).",
            kind="fix"),
        Bug(FIX_NEW_CONNECTION_RECORDS_EPOCH, "SYNC-CONFIRM-BOUND",
            "AutoSwitchHAClient.closeMaster / HAClientReader.processReadResult (currentReceivedEpoch)",
            "finding F-EPOCH-ENTRY-LOST-ON-RECONNECT (docs/findings)",
            "A slave forgets the epoch it last received when its connection closes (currentReceivedEpoch = -1, as "
            "init() does), so the first frame of its next connection records its epoch entry again: an entry the "
            "handshake's truncateSuffixByOffset dropped (it started at the consistent point) comes back before any "
            "byte of that epoch is appended.", kind="fix"),
        Bug("unclean-election", "SYNC-NO-ACK-LOSS", "ControllerConfig.enableElectUncleanMaster",
            "DefaultElectPolicy (fallback to all replicas: an unclean master may lack acknowledged messages)",
            "Expected loss: a replica outside the SSS may be elected and lacks acknowledged messages.",
            kind="config", settings=(("controller", "enableElectUncleanMaster", True),)),
        Bug("allack-off", "SYNC-NO-ACK-LOSS", "MessageStoreConfig.allAckInSyncStateSet",
            "RocketMQ's default (false); docs/en/controller/deploy.md",
            "Expected loss: the master acks after its own write; a failover loses what no slave received.",
            kind="config", settings=(("store", "allAckInSyncStateSet", False),)),
    ]
}

SWITCHES = frozenset(name for name, b in BUGS.items() if b.kind == "switch")
FIXES = frozenset(name for name, b in BUGS.items() if b.kind == "fix")
FIDELITY = frozenset(name for name, b in BUGS.items() if b.kind == "fidelity")
UPSTREAM = frozenset(name for name, b in BUGS.items() if b.kind == "upstream")
GUARD = frozenset(name for name, b in BUGS.items() if b.kind == "guard")
CODE_KINDS = ("switch", "fix", "fidelity", "upstream", "guard")  # the kinds the core checks by name


def release_switches(release: str) -> tuple[str, ...]:
    """The release profile of ``release``: every switch whose rule that release has (``Bug.release`` at or before
    it), sorted; ``ValueError`` with one line for an unknown release."""
    if release not in RELEASES:
        raise ValueError(f"unknown RocketMQ release {release!r} (known: {', '.join(RELEASES)})")
    upto = RELEASES.index(release)
    return tuple(sorted(n for n, b in BUGS.items() if b.release and RELEASES.index(b.release) <= upto))


RELEASE_SWITCHES = frozenset(n for n, b in BUGS.items() if b.release)
"""Every switch some release profile has: the upstream switches and the fixes a release shipped."""


def with_release(names: list[str] | tuple[str, ...], release: str) -> list[str]:
    """``names`` moved to ``release``: the upstream switches of any release dropped, that release's profile added
    (the fixes among ``names`` stay, a fix a release shipped included), sorted and unique."""
    kept = [n for n in names if not (n in BUGS and BUGS[n].kind == "upstream")]
    return sorted({*kept, *release_switches(release)})


def check_names(names: list[str] | tuple[str, ...]) -> frozenset[str]:
    """Validate bug and fix names; raise ``ValueError`` with one line for an unknown one.

    Returns the code deviations to apply (switches, fixes and fidelity switches); "config" entries are
    settings, applied to the configuration by the caller (``config_overlay``).
    """
    for n in names:
        if n not in BUGS:
            raise ValueError(f"unknown bug or fix {n!r} (known: {', '.join(sorted(BUGS))})")
    return frozenset(n for n in names if BUGS[n].kind in CODE_KINDS)


# A fix that closes the code path a switch lives in: campaigns that hunt the switch run every other fix.
MASKED_BY: dict[str, tuple[str, ...]] = {CONFIRM_COUNTS_NEW_CONNECTION: (FIX_CONFIRM_WAITS_FIRST_ACK,),
                                         LOCAL_SHRINK_ON_DISCONNECT: (FIX_SHRINK_WAITS_FOR_CONTROLLER,)}


def fixes_beside(name: str) -> tuple[str, ...]:
    """Every fix switch that leaves ``name`` reachable (``FIXES_ALL`` minus ``MASKED_BY[name]``)."""
    return tuple(f for f in FIXES_ALL if f not in MASKED_BY.get(name, ()))


def names_from(bugs: list[str], fixes: list[str]) -> list[str]:
    """``--bug``/``--fix`` arguments as switch names (``all``; ``fix-`` optional), validated, sorted, unique."""
    names = list(bugs)
    for f in fixes:
        if f == "all":
            names.extend(FIXES_ALL)
        else:
            names.append(f if f in FIXES or f.startswith("fix-") else "fix-" + f)
    check_names(names)
    return sorted(set(names))


def config_overlay(names: list[str] | tuple[str, ...]) -> dict[str, dict[str, object]]:
    """The settings of the expected-loss configurations among ``names``, and those that turn on the part a
    fidelity or guard switch lives in, as a config overlay."""
    overlay: dict[str, dict[str, object]] = {}
    for n in names:
        for section, key, value in (*BUGS[n].settings, *BUGS[n].needs):
            overlay.setdefault(section, {})[key] = value
    return overlay
