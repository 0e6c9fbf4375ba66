"""Controller invariants (CTL-*): the state ``ReplicasInfoManager`` keeps per broker set, the events it applies, and
the replicated controller group (DLedger / JRaft) that orders them.

The event checks read each ``ctl.apply`` observation: the event, the context it was validated with, and the set's
snapshot before and after it (``impl/wire.SetSnapshot``). In a replicated group every node applies every entry;
only its first apply is checked against the set's history (the checker records which one it is), the others are
compared with it (CTL-APPLY-PREFIX).
"""

from __future__ import annotations

import json

from ..controller.node import ControllerNode
from ..controller.raft import HEARTBEAT, LEADER, MAX_HEARTBEAT_LEAK
from ..observations import (
    CtlApply,
    CtlCandidate,
    CtlElected,
    CtlElectRequest,
    CtlResult,
    CtlRole,
    CtlScanInactive,
    CtlValidate,
    CtlVote,
)
from .context import Context
from .registry import Violated, invariant, violated


@invariant("CTL-APPLY-PREFIX", layer="controller", on=("ctl.apply", "ctl.result"),
           source="DLedgerEntryPusher (a follower drops a conflicting suffix, never a committed entry) + "
                  "StateMachineCaller (applies committed entries in order)",
           exceptions="only with [cluster] controllers > 1")
def apply_prefix(ctx: Context, obs: CtlApply | CtlResult) -> Violated | None:
    """Every controller node applies the same entries in the same order: what a node applies at an index is what
    every other node applied there."""
    if obs["k"] == "ctl.result":  # a JRaft node's answer to a logged request: every node computes the same one
        answer = (obs["term"], obs["op"], obs["code"], json.dumps(obs["event"], sort_keys=True))
        first = ctx.applied_results.setdefault(obs["index"], (answer, obs["node"]))
        if first[0] != answer:
            return violated(f"{obs['node']} computed at index {obs['index']} {obs['op']} -> code {obs['code']}, "
                            f"event {answer[3]}; {first[1]} computed code {first[0][2]}, event {first[0][3]} from the "
                            "same entry", obs=obs)
        return None
    if ctx.apply_had is None or ctx.apply_key is None:  # a single controller: one apply per entry
        return None
    had, key = ctx.apply_had, ctx.apply_key
    if had[0] != key:
        return violated(f"{obs['node']} applied at index {obs['index']} an entry (term {key[0]}) other than the "
                        f"one {had[1]} applied there (term {had[0][0]})", obs=obs)
    return None


@invariant("CTL-EPOCH-MONO", layer="controller", on=("ctl.apply",), reads=("controller",),
           source="SyncStateInfo.updateMasterInfo / updateSyncStateSetInfo; ReplicasInfoManager.applyEvent",
           exceptions="cleanBrokerData of a whole set, or of every member of its SyncStateSet (the SyncStateSet entry "
                      "goes and the next applyBrokerId rebuilds the set: QUIRK), restarts both epochs at 0 when the "
                      "set returns")
def epoch_mono(ctx: Context, obs: CtlApply | None = None) -> Violated | None:
    """Per broker set, masterEpoch and syncStateSetEpoch never decrease; an applied ElectMaster raises mE by 1, an
    elected master or an AlterSyncStateSet raises sE by 1, nothing else moves them."""
    if obs is None:  # the state: no set's epochs below the highest this incarnation of the set reached
        ctl = ctx.world.controller_node()
        if ctl is None:
            return None
        for name, info in ctl.rim.sync_state_set_info_table.items():
            mark_key = (name, ctx.set_incarnation.get(name, 0))
            mark = ctx.ctl_epoch_marks.get(mark_key, (0, 0))
            if info.master_epoch < mark[0] or info.sync_state_set_epoch < mark[1]:
                return violated(f"{name} is at mE {info.master_epoch} sE {info.sync_state_set_epoch} after mE "
                                f"{mark[0]} sE {mark[1]}", controller=ctl.rim.snapshot())
            ctx.ctl_epoch_marks[mark_key] = (info.master_epoch, info.sync_state_set_epoch)
        return None
    if not ctx.apply_first:
        return None
    ev, before, after = obs["event"], obs["before"], obs["after"]
    if before is None or after is None or before.get("masterEpoch") is None or after.get("masterEpoch") is None:
        return None
    # a set's snapshot has both epochs or neither (SyncStateInfo holds both)
    assert before["masterEpoch"] is not None and after["masterEpoch"] is not None
    assert before["syncStateSetEpoch"] is not None and after["syncStateSetEpoch"] is not None
    kind = ev["type"]
    dme = after["masterEpoch"] - before["masterEpoch"]
    dse = after["syncStateSetEpoch"] - before["syncStateSetEpoch"]
    want_me = 1 if ev["type"] == "ElectMaster" else 0
    want_se = 1 if (ev["type"] == "ElectMaster" and ev["newMasterElected"]) or ev["type"] == "AlterSyncStateSet" \
        else 0
    if dme != want_me or dse != want_se:
        return violated(f"{kind} moved mE by {dme} and sE by {dse} (expected {want_me}, {want_se})", event=ev,
                        before=before, after=after)
    return None


@invariant("CTL-ONE-MASTER-PER-EPOCH", layer="controller", on=("ctl.apply",),
           source="ReplicasInfoManager.handleElectMaster (the only writer of the master)")
def one_master_per_epoch(ctx: Context, obs: CtlApply) -> Violated | None:
    """For each broker set and masterEpoch, the controller records at most one master."""
    ev, after = obs["event"], obs["after"]
    me = after.get("masterEpoch") if after is not None else None
    if not ctx.apply_first or ev["type"] != "ElectMaster" or after is None or me is None:
        return None
    name = ev.get("brokerName", "")
    key = (name, ctx.set_incarnation.get(name, 0), me)
    master = after["master"]
    had = ctx.epoch_masters.setdefault(key, master)
    ctx.epoch_masters[key] = master
    if had != master:
        return violated(f"masterEpoch {after['masterEpoch']} of {name} had master {had}, now {master}", event=ev,
                        after=after)
    return None


@invariant("CTL-CLEAN-ELECTION", layer="controller", on=("ctl.apply",),
           source="DefaultElectPolicy.tryElect; ReplicasInfoManager.electMaster (all = null when unclean is off)",
           exceptions="a first-time election (mE == 0) skips every check")
def clean_election(ctx: Context, obs: CtlApply) -> Violated | None:
    """With unclean election off, a newly elected master was in the SyncStateSet and alive when elected."""
    ev, before, c = obs["event"], obs["before"], obs["ctx"]
    if not ctx.apply_first or ev["type"] != "ElectMaster" or not ev["newMasterElected"] or c.get("unclean"):
        return None
    after = obs["after"]
    if after is None or after.get("masterEpoch") is None:
        return None
    if before is None or (before.get("masterEpoch") or 0) <= 0:  # a first election takes the requester unchecked
        return None
    new = ev["newMasterBrokerId"]
    alive = c.get("alive", {}).get(str(new))
    old_sss = before.get("syncStateSet") or []
    if new not in old_sss or alive is False:
        why = f"outside the SSS {before.get('syncStateSet')}" if new not in old_sss else "not alive"
        return violated(f"broker {new} was elected while {why}", event=ev, ctx=c, before=before)
    return None


@invariant("CTL-ALTER-FENCED", layer="controller", on=("ctl.apply",),
           source="ReplicasInfoManager.alterSyncStateSet (checks 3-7)",
           exceptions="DLedger validates at the leader only; an event applied later is not re-checked")
def alter_fenced(ctx: Context, obs: CtlApply) -> Violated | None:
    """An applied AlterSyncStateSet was requested by the current master with the current masterEpoch and
    syncStateSetEpoch, and keeps the master."""
    ev, b, c = obs["event"], obs["before"], obs["ctx"]
    if not ctx.apply_first or ev["type"] != "AlterSyncStateSet" or b is None:
        return None
    problems = []
    if b.get("master") != c.get("masterBrokerId"):
        problems.append(f"requested by {c.get('masterBrokerId')} but master is {b.get('master')}")
    if b.get("masterEpoch") != c.get("masterEpoch"):
        problems.append(f"request mE {c.get('masterEpoch')} != controller mE {b.get('masterEpoch')}")
    if b.get("syncStateSetEpoch") != c.get("syncStateSetEpoch"):
        problems.append(f"request sE {c.get('syncStateSetEpoch')} != controller sE {b.get('syncStateSetEpoch')}")
    if b.get("master") not in ev["newSyncStateSet"]:
        problems.append(f"new SSS {ev['newSyncStateSet']} drops master {b.get('master')}")
    if problems:
        return violated("; ".join(problems), event=ev, ctx=c, before=b)
    return None


@invariant("CTL-CLEAN-SPARES-LIVING", layer="controller", on=("ctl.apply",),
           source="ReplicasInfoManager.cleanBrokerData (without isCleanLivingBroker: a set with a master, or an id "
                  "whose heartbeat is alive, is refused); handleCleanBrokerDataEvent",
           exceptions="isCleanLivingBroker (the admin forces it); DLedger validates at the leader, and a broker may "
                      "come back between the validation and the apply")
def clean_spares_living(ctx: Context, obs: CtlApply) -> Violated | None:
    """An applied CleanBrokerData that the admin did not force removes no broker the controller saw alive when it
    validated the request, and wipes a whole set only when the set had no master."""
    ev, before, c = obs["event"], obs["before"], obs["ctx"]
    if not ctx.apply_first or ev["type"] != "CleanBrokerData" or c.get("living"):
        return None
    ids = ev["brokerIdSetToClean"]
    if not ids:
        if before is not None and before.get("master") is not None:
            return violated(f"the whole set {ev['brokerName']} was cleaned while it had master {before['master']}",
                            event=ev, ctx=c, before=before)
        return None
    alive = c.get("alive", {})
    living = [i for i in ids if alive.get(str(i))]
    if living:
        return violated(f"broker id(s) {living} of {ev['brokerName']} cleaned while alive (not forced)", event=ev,
                        ctx=c, before=before)
    return None


@invariant("CTL-MASTER-IN-SSS", layer="controller", reads=("controller",),
           source="ReplicasInfoManager.alterSyncStateSet (check 7); handleElectMaster sets SSS := {master}",
           exceptions="CleanBrokerDataEvent with explicit ids can remove the master from the SSS")
def master_in_sss(ctx: Context) -> Violated | None:
    """The controller's master is null or a member of its SyncStateSet."""
    ctl = ctx.world.controller_node()
    if ctl is None:
        return None
    for name, info in ctl.rim.sync_state_set_info_table.items():
        replicas = ctl.rim.replica_info_table.get(name)
        if replicas is not None and info.master_broker_id is not None \
                and not replicas.is_broker_exist(info.master_broker_id):
            continue  # the exception: a clean with explicit ids removed the master's id (and its SSS membership)
        if info.master_broker_id is not None and info.master_broker_id not in info.sync_state_set:
            return violated(f"master {info.master_broker_id} not in SSS {sorted(info.sync_state_set)}",
                            controller=ctl.rim.snapshot())
    return None


@invariant("CTL-SSS-REGISTERED", layer="controller", reads=("controller",),
           source="ReplicasInfoManager.alterSyncStateSet (check 6); DefaultElectPolicy candidates",
           exceptions="a first-time election takes the requester's id unchecked")
def sss_registered(ctx: Context) -> Violated | None:
    """The SyncStateSet only holds registered broker ids."""
    ctl = ctx.world.controller_node()
    if ctl is None:
        return None
    rim = ctl.rim
    for name, info in rim.sync_state_set_info_table.items():
        replicas = rim.replica_info_table.get(name)
        registered = set(replicas.broker_id_info) if replicas else set()
        if not info.sync_state_set <= registered:
            return violated(f"SSS {sorted(info.sync_state_set)} has unregistered ids (registered "
                            f"{sorted(registered)})", controller=rim.snapshot())
    return None


@invariant("CTL-ID-UNIQUE", layer="controller", reads=("brokers",),
           source="ReplicasInfoManager.applyBrokerId (check-code CAS); ReplicasManager.register",
           exceptions="a partial clean followed by a re-apply can rebuild a set")
def id_unique(ctx: Context) -> Violated | None:
    """No two brokers of a set hold the same controller id."""
    world = ctx.world
    ids: dict[int, str] = {}
    for b in world.brokers:
        ident = world.disks[b].broker_identity
        if ident is not None:
            if ident[2] in ids:
                return violated(f"{ids[ident[2]]} and {b} both hold controller id {ident[2]}")
            ids[ident[2]] = b
    return None


@invariant("CTL-ONE-LEADER-PER-TERM", layer="controller", on=("ctl.elected",),
           source="DLedgerLeaderElector (one vote per term, a majority to lead)",
           exceptions="only with [cluster] controllers > 1")
def one_leader_per_term(ctx: Context, obs: CtlElected) -> Violated | None:
    """A replicated controller group has at most one leader per term."""
    node = obs.get("n", "")
    had = ctx.term_leaders.setdefault(obs["term"], node)
    if had != node:
        return violated(f"{node} and {had} both lead term {obs['term']}", obs=obs)
    return None


@invariant("CTL-VOTE-CANDIDATE", layer="controller", on=("ctl.candidate", "ctl.vote"),
           source="DLedgerLeaderElector.handleVote (a vote request of an older term is rejected, "
                  "REJECT_EXPIRED_VOTE_TERM; the vote of the current term goes to its requester: setCurrVoteFor); "
                  "JRaft NodeImpl.handleRequestVoteRequest",
           exceptions="only with [cluster] controllers > 1")
def vote_candidate(ctx: Context, obs: CtlCandidate | CtlVote) -> Violated | None:
    """A controller node grants its vote of a term only to a node that stood as a candidate in that term."""
    if obs["k"] == "ctl.candidate":
        ctx.candidacies.add((obs.get("n", ""), obs["term"]))
        return None
    if (obs["for"], obs["term"]) not in ctx.candidacies:
        return violated(f"{obs.get('n')} granted its vote of term {obs['term']} to {obs['for']}, which never stood "
                        "as a candidate in that term", obs=obs)
    return None


@invariant("CTL-LEADER-KEPT", layer="controller", on=("ctl.role",),
           source="DLedgerLeaderElector.handleHeartBeat (a heartbeat of the current term sets an unknown leader, "
                  "refreshes the known one, never replaces it), handleVote (a vote request of an older or equal term "
                  "changes no role; a larger one makes the node a candidate of that term), sendHeartbeats (a leader "
                  "gives up its role in its own term only when no quorum answered for maxHeartBeatLeak heartbeats); "
                  "JRaft NodeImpl.handleAppendEntriesRequest / checkDeadNodes (the same rules)",
           exceptions="only with [cluster] controllers > 1")
def leader_kept(ctx: Context, obs: CtlRole) -> Violated | None:
    """Within one term, what a controller node knows of the group's leader only grows: a follower that knows the
    leader of its term keeps it, a candidate leaves its candidacy only for the leader of its term, and a leader gives
    up its role in its own term only when fewer than a majority of the group (itself included) have answered its
    pushes for maxHeartBeatLeak heartbeats, having led that long. A higher term may change anything."""
    if obs["term"] != obs["wasTerm"]:
        return None
    node, was, known = obs.get("n", "?"), obs["was"], obs["wasLeader"]
    quorum = len(ctx.world.controllers) // 2 + 1
    window = MAX_HEARTBEAT_LEAK * HEARTBEAT
    if was == "leader":
        acked, led = obs.get("acked", quorum), obs.get("ledFor", 0)
        if acked >= quorum or led <= window:
            return violated(f"{node} gave up the leadership of term {obs['term']} with {acked} of "
                            f"{len(ctx.world.controllers)} members answering its pushes within {window} ms, after "
                            f"leading {led} ms", obs=obs)
        return None
    if known is not None and obs["leader"] != known:
        return violated(f"{node} knew {known} as the leader of term {obs['term']} and now knows "
                        f"{obs['leader'] or 'none'}, in the same term", obs=obs)
    if was == "candidate" and obs["leader"] is None:
        return violated(f"{node} gave up its candidacy of term {obs['term']} with no leader of that term and no "
                        "higher term", obs=obs)
    return None


@invariant("CTL-COMMIT-QUORUM", layer="controller", reads=("controller",),
           source="DLedgerEntryPusher.QuorumAckChecker.doWork (the quorum index, the median of the peers' water marks "
                  "and the leader's own ledger end, becomes the committed index at once: "
                  "MemberState.leaderUpdateCommittedIndex, for an entry of the current term, raft 5.4.2); "
                  "JRaft BallotBox.commitAt (an entry commits when its ballot is granted by a quorum)",
           exceptions="only with [cluster] controllers > 1; the slow-commit fault stands for a quorum that "
                      "acknowledges late: an entry it holds back counts as held from its release time on")
def commit_quorum(ctx: Context) -> Violated | None:
    """A controller leader commits an entry of its own term as soon as a majority of the group holds it: at the end
    of every step a leader takes, no entry of its term that it and enough followers (by their acknowledged
    positions) hold, and that no slow commit still holds back, lies above its commit position."""
    world = ctx.world
    if len(world.controllers) == 1:
        return None
    running = world.processes()
    for name in world.controllers:
        node = running.get(name) if name in world.touched else None
        if not isinstance(node, ControllerNode) or node.repl is None or node.repl.role != LEADER:
            continue
        repl, now = node.repl, world.now
        entries = node.disk.entries
        for idx in range(len(entries), repl.commit, -1):
            entry = entries[idx - 1]
            if entry.term != repl.state.term or entry.ready_at > now:
                continue
            held = 1 + sum(1 for peer in repl.peers if repl.match.get(peer, 0) >= idx)
            if held >= repl.quorum:
                return violated(f"{name}, leader of term {repl.state.term}, holds entry {idx - 1} of its term on "
                                f"{held} of {len(world.controllers)} members (released at {entry.ready_at}) and has "
                                f"committed only {repl.commit} entries", match=dict(repl.match))
    return None


@invariant("CTL-SCAN-REELECTS", layer="controller", on=("ctl.elect-request", "ctl.scan-inactive"),
           source="DLedgerController.scanInactiveMasterAndTriggerReelect (each set it finds goes to the listeners as "
                  "onBrokerInactive(null, brokerName, null)) + ControllerManager.onBrokerInactive (a null broker id "
                  "forces an election: triggerElectMaster, Controller.electMaster)",
           exceptions="the DLedger flavour and a single controller (the JRaft controller runs no such scan)")
def scan_reelects(ctx: Context, obs: CtlElectRequest | CtlScanInactive) -> Violated | None:
    """When the controller leader's inactive-master scan finds a broker set whose named master is not alive and
    that has a live replica, the controller requests an election of that set in the same scan."""
    node = obs.get("n", "")
    if obs["k"] == "ctl.elect-request":
        if obs["requester"] == "controller":
            step, names = ctx.controller_elects.get(node, (-1, set()))
            if step != ctx.world.step:
                step, names = ctx.world.step, set()
            names.add(obs["brokerName"])
            ctx.controller_elects[node] = (step, names)
        return None
    step, names = ctx.controller_elects.get(node, (-1, set()))
    missing = [s for s in obs["brokerSets"] if step != ctx.world.step or s not in names]
    if missing:
        return violated(f"{node}'s inactive-master scan found {missing} with a dead master and requested no "
                        "election of them", obs=obs)
    return None


@invariant("CTL-READ-COMMITTED", layer="controller", on=("ctl.validate",),
           source="DLedgerController.EventScheduler (validates on the state machine) + StateMachineCaller (applies "
                  "committed entries, possibly late)",
           exceptions="only with [cluster] controllers > 1; the DLedger flavour validates on the applied state, which "
                      "may lag the commit position (F-DLEDGER-STALE-VALIDATION's family)")
def read_committed(ctx: Context, obs: CtlValidate) -> Violated | None:
    """A controller node computes every reply on a state that includes every entry it knows committed: its apply
    position has reached its commit position when it validates a request."""
    if obs["applied"] < obs["commit"]:
        return violated(f"{obs.get('n')} validated {obs['op']} on a state with {obs['applied']} entries applied of "
                        f"{obs['commit']} committed", obs=obs)
    return None
