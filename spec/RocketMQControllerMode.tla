------------------------------ MODULE RocketMQControllerMode ------------------------------
(***************************************************************************)
(* RocketMQ 5 controller mode: the controller (ReplicasInfoManager), the   *)
(* brokers (ReplicasManager), HA replication (AutoSwitchHAService/Client/  *)
(* Connection), the producer's wait for acks (GroupTransferService) and    *)
(* bounded perturbations.                                                  *)
(*                                                                         *)
(* This module is an action-for-action, guard-for-guard translation of the *)
(* executable model models/controller_mode.py (the source of truth) and of *)
(* models/properties.py. TLC's distinct-state count (with VIEW View, with  *)
(* and without SYMMETRY Sym) equals the count of the model's BFS           *)
(* (models/explore.py); scripts/compare_counts.py checks it.               *)
(*                                                                         *)
(* Correspondence with the Python model:                                   *)
(*   * brokers 0..N-1            <-> model values of Brokers;              *)
(*   * NONE (-1, "no broker")    <-> the model value NONE;                 *)
(*   * bit masks of brokers      <-> sets of brokers;                      *)
(*   * remote NONE (no proposal) <-> NONE;                                 *)
(*   * ack -1 (not reported)     <-> -1;                                   *)
(*   * acked (mask over ids)     <-> a set of message ids in 1..MaxMsgs;   *)
(*   * reqs, pend (sorted tuples without duplicates) <-> sets of tuples;   *)
(*   * 0-based tuple indices i   <-> 1-based sequence indices i+1;         *)
(*     log[:p] is Prefix(log, p).                                          *)
(* The extra variable lastAct records the action and its arguments, as the *)
(* model's labels do; it is not part of the state (VIEW View omits it).    *)
(* Its brokers (and sets of brokers) are strings ("b1", "{b1, b2}"), not   *)
(* model values: TLC 2.15 picks a symmetry class's representative by       *)
(* comparing the variables in SANY's (hash) order, in which lastAct comes  *)
(* first; with model values in it, the permutation chosen would depend on  *)
(* lastAct and two states of one class could get different views.          *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Brokers,            \* a set of model values
    MaxMsgs,            \* messages the producer sends in all
    MaxCrashes,         \* bound on Crash
    MaxPartitions,      \* bound on Partition
    MaxAdminElect,      \* bound on AdminElect
    MaxLagShrinks,      \* bound on Shrink of a connected but lagging slave (a slow slave is a perturbation)
    Unclean,            \* enableElectUncleanMaster
    AllAck,             \* allAckInSyncStateSet
    PowerLoss,          \* a crash may lose the unflushed tail (SYNC_FLUSH)
    \* guards RocketMQ has (FALSE brings a bug back)
    GuardExpandConfirm,       \* maybeExpandInSyncStateSet: ack >= confirmOffset
    GuardExpandEpochStart,    \* maybeExpandInSyncStateSet: ack >= start of the last epoch entry
    GuardAlterMasterEpoch,    \* alterSyncStateSet check 4
    GuardAlterSSSEpoch,       \* alterSyncStateSet check 5
    GuardConsistentPointMin,  \* findConsistentPoint takes min of the ends (FALSE: max)
    AckSetUnion,              \* GroupTransferService counts local \cup remote (#5663; FALSE: local only)
    \* fixes of findings (FALSE: RocketMQ as it is)
    FixUnionKeepsAllProposals,      \* F-GAP-UNION
    FixConfirmWaitsFirstAck,        \* F-CONFIRM-SKIPS-NEW-CONNECTION
    FixFenceRequestsAcrossRestart,  \* M-PROPOSAL-OUTLIVES-RESTART
    FixConfirmShortcutUsesUnion,    \* F-CONFIRM-LOCAL-SHORTCUT
    FixKeepOwnEpochOnRestart,       \* F-EPOCH-REBASE-ON-RESTART (its liveness side)
    FixNoCommonEpochRestarts,       \* M-NO-COMMON-EPOCH (liveness)
    FixEpochEqReplacesEmpty,        \* F-EPOCH-EQ-SPLICE: appendEntry replaces an empty last epoch
    NONE                \* a model value: no broker, no proposal

ASSUME NONE \notin Brokers
ASSUME MaxMsgs \in Nat /\ MaxCrashes \in Nat /\ MaxPartitions \in Nat /\ MaxAdminElect \in Nat
       /\ MaxLagShrinks \in Nat

VARIABLES
    ctlMaster,   \* controller: the master (NONE: none)
    ctlME,       \* controller: masterEpoch
    ctlSSS,      \* controller: SyncStateSet
    ctlSE,       \* controller: syncStateSetEpoch
    registered,  \* controller: registered broker ids (every broker, from the start)
    reqs,        \* alterSyncStateSet requests in flight: <<from, mE, sE, set>>
    alive,       \* broker process up
    reach,       \* broker and controller can reach each other
    role,        \* the master a broker follows (itself: master; NONE: no role yet)
    bME,         \* broker: masterEpoch it knows
    bSE,         \* broker: syncStateSetEpoch it knows
    local,       \* master: local SyncStateSet ({} otherwise)
    remote,      \* master: proposal in flight (NONE: none)
    log,         \* commit log: sequence of <<epoch written, message id>>
    epochs,      \* epoch file: sequence of <<epoch, start offset>>
    flushed,     \* flushed offset
    confirm,     \* confirmOffset
    conn,        \* slave: the master it has a handshaken connection to (NONE: none)
    ack,         \* slave: that connection's slaveAckOffset (-1: not reported yet)
    sent,        \* messages produced so far (the next id is sent + 1)
    acked,       \* ids of messages whose put returned PUT_OK
    pend,        \* puts waiting for acks: <<writer, message id>>
    nCrash,      \* perturbation counters
    nPart,
    nAdmin,
    nShrink,
    lastAct      \* auxiliary: the last action and its arguments (not in View)

vars == <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, reach, role, bME, bSE, local, remote,
          log, epochs, flushed, confirm, conn, ack, sent, acked, pend, nCrash, nPart, nAdmin, nShrink, lastAct>>

\* The state proper: every variable but lastAct.
View == <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, reach, role, bME, bSE, local, remote,
          log, epochs, flushed, confirm, conn, ack, sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

Sym == Permutations(Brokers)

\* A broker, NONE or a set of brokers as it appears in lastAct (see the header)
Nm(x) == ToString(x)

-----------------------------------------------------------------------------------------------------
(* Helpers *)

Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max(S) == CHOOSE x \in S : \A y \in S : x >= y
Min2(a, b) == IF a <= b THEN a ELSE b
Max2(a, b) == IF a >= b THEN a ELSE b
Last(s) == s[Len(s)]

\* Python's s[:p] (p >= 0)
Prefix(s, p) == SubSeq(s, 1, Min2(p, Len(s)))

\* EpochFileCache.lastEpoch: -1 when empty
LastEpoch(ep) == IF ep = <<>> THEN -1 ELSE Last(ep)[1]

\* EpochFileCache.appendEntry: rejected (unchanged) unless both epoch and start grow (QUIRK-EPOCH-EQ); with
\* FixEpochEqReplacesEmpty (F-EPOCH-EQ-SPLICE) a greater epoch starting where the last entry starts replaces it
AppendEntry(ep, e, start) ==
    IF FixEpochEqReplacesEmpty /\ ep # <<>> /\ Last(ep)[2] = start /\ Last(ep)[1] < e
    THEN Append(SubSeq(ep, 1, Len(ep) - 1), <<e, start>>)
    ELSE IF ep # <<>> /\ (Last(ep)[1] >= e \/ Last(ep)[2] >= start) THEN ep ELSE Append(ep, <<e, start>>)

\* EpochFileCache.truncateSuffixByEpoch: drop entries with epoch >= e
TruncateSuffixByEpoch(ep, e) == SelectSeq(ep, LAMBDA x : x[1] < e)

\* EpochFileCache.truncateSuffixByOffset: drop entries with start >= off
TruncateSuffixByOffset(ep, off) == SelectSeq(ep, LAMBDA x : x[2] < off)

\* End of entry i (1-based): the next start, or (last entry) the log's max offset, as doTruncate builds it
EntryEnd(ep, i, logLen) == IF i < Len(ep) THEN ep[i + 1][2] ELSE logLen

\* The first index j of ep with epoch e (0: none)
FirstWithEpoch(ep, e) ==
    LET J == {j \in 1..Len(ep) : ep[j][1] = e} IN IF J = {} THEN 0 ELSE Min(J)

\* With FixEpochEqReplacesEmpty (F-EPOCH-EQ-SPLICE): the master lacks epoch lc[i][1] and holds a greater epoch
\* at lc[i]'s start right after lc[i - 1] (or first, as lc[i] is): it replaced that entry, which held no bytes
ReplacedAt(lc, i, mc) ==
    /\ FirstWithEpoch(mc, lc[i][1]) = 0
    /\ \E j \in 1..Len(mc) : /\ mc[j][2] = lc[i][2] /\ mc[j][1] > lc[i][1]
                            /\ IF j = 1 THEN i = 1 ELSE i > 1 /\ mc[j - 1] = lc[i - 1]

\* EpochFileCache.findConsistentPoint on the slave's cache lc (log length ll) against the master's mc
\* (log length ml); -1 if none. From the slave's last entry down: the first master entry with the same
\* epoch decides (same start: found; else: try the slave's previous entry); with FixEpochEqReplacesEmpty an entry
\* the master replaced decides too (found at its start).
ConsistentPoint(lc, ll, mc, ml, useMin) ==
    LET Match(i) == LET j == FirstWithEpoch(mc, lc[i][1]) IN j > 0 /\ mc[j][2] = lc[i][2]
        Repl(i) == FixEpochEqReplacesEmpty /\ ReplacedAt(lc, i, mc)
        I == {i \in 1..Len(lc) : Match(i) \/ Repl(i)}
    IN IF I = {} THEN -1
       ELSE LET i == Max(I)
                j == FirstWithEpoch(mc, lc[i][1])
                a == EntryEnd(lc, i, ll)
                b == EntryEnd(mc, j, ml)
            IN IF ~Match(i) THEN lc[i][2] ELSE IF useMin THEN Min2(a, b) ELSE Max2(a, b)

\* findEpochEntryByOffset: the index of the first entry with start <= off < end (the last ends at +inf);
\* 0 if none
CoveringIdx(ep, off) ==
    LET I == {i \in 1..Len(ep) : ep[i][2] <= off /\ (i = Len(ep) \/ off < ep[i + 1][2])}
    IN IF I = {} THEN 0 ELSE Min(I)

\* The message ids in a log
MsgsOf(l) == {l[i][2] : i \in 1..Len(l)}

\* The position (1-based offset end) of message id x in log l; 0 if absent
PosOf(l, x) == LET I == {i \in 1..Len(l) : l[i][2] = x} IN IF I = {} THEN 0 ELSE Min(I)

\* The controller's liveness oracle (isBrokerActive): up and heartbeating to the controller
CtlAlive(b) == alive[b] /\ reach[b]

\* AutoSwitchHAService.getSyncStateSet: local \cup remote while a proposal is in flight
AckSetTrueV(lc, rm) == IF rm # NONE THEN lc \cup rm ELSE lc
AckSetTrue(m) == AckSetTrueV(local[m], remote[m])
AckSet(m) == IF remote[m] # NONE /\ AckSetUnion THEN local[m] \cup remote[m] ELSE local[m]

\* AutoSwitchHAService.computeConfirmOffset on explicit values (S: the ack set of master m; cn, ak: the
\* conn and ack functions; n: m's log length; cf: m's confirmOffset): unchanged while a member has no
\* connection; else the min of the master's max and the acks > 0 of the members' connections (acks <= 0
\* skipped: the GAP; with the fix, an ack <= 0 keeps the stored value).
ComputeConfirmV(m, S, cn, ak, n, cf) ==
    IF \E x \in S : x # m /\ cn[x] # m THEN cf
    ELSE IF FixConfirmWaitsFirstAck /\ \E x \in S \ {m} : ak[x] <= 0 THEN cf
    ELSE Min({n} \cup {ak[x] : x \in {y \in S \ {m} : ak[y] > 0}})

ComputeConfirm(m) == ComputeConfirmV(m, AckSetTrue(m), conn, ack, Len(log[m]), confirm[m])

\* CommitLog.getConfirmOffset on a master: its max when alone in the local SSS or allAck is off
GetConfirmV(lc, rm, n, cf) ==
    LET alone == IF FixConfirmShortcutUsesUnion THEN AckSetTrueV(lc, rm) ELSE lc
    IN IF Cardinality(alone) = 1 \/ ~AllAck THEN n ELSE cf

GetConfirm(m) == GetConfirmV(local[m], remote[m], Len(log[m]), confirm[m])

\* DefaultElectPolicy sort key: (lastEpoch, maxOffset) from the heartbeat, compared lexicographically
Rank(b) == <<LastEpoch(epochs[b]), Len(log[b])>>
RankLess(r1, r2) == r1[1] < r2[1] \/ (r1[1] = r2[1] /\ r1[2] < r2[2])
Best(cands) == {c \in cands : \A d \in cands : ~RankLess(Rank(c), Rank(d))}

\* One tier of DefaultElectPolicy.elect: the possible results; {} means "try the next tier"
ElectTier(cands, old, prefer) ==
    IF cands = {} THEN {}
    ELSE IF old \in cands /\ (prefer = NONE \/ prefer = old) THEN {old}
    ELSE IF prefer # NONE THEN (IF prefer \in cands THEN {prefer} ELSE {})
    ELSE Best(cands)

\* DefaultElectPolicy.elect: the possible results ({}: none; {old}: the master still exists). Candidates are
\* SSS \cap alive, then (unclean on) registered \cap alive.
ElectPolicy(old, prefer) ==
    LET r1 == ElectTier({b \in ctlSSS : CtlAlive(b)}, old, prefer)
    IN IF r1 # {} THEN r1
       ELSE IF Unclean THEN ElectTier({b \in registered : CtlAlive(b)}, old, prefer)
       ELSE {}

\* ElectMasterEvent(elected): mE+1, SSS = {new}, sE+1
Elected(new) ==
    /\ ctlMaster' = new
    /\ ctlME' = ctlME + 1
    /\ ctlSSS' = {new}
    /\ ctlSE' = ctlSE + 1

\* destroyConnections on m: every slave connected to m loses its connection
DropConn(cn, m) == [x \in Brokers |-> IF cn[x] = m THEN NONE ELSE cn[x]]
DropAck(cn, ak, m) == [x \in Brokers |-> IF cn[x] = m THEN -1 ELSE ak[x]]

\* markSynchronizingSyncStateSet + doReportSyncStateSetChanged (_propose): the proposal becomes the remote set
\* (overwriting the previous one: GAP-UNION; the fix accumulates) and is sent if the controller is reachable.
ProposedRemote(m, new) ==
    [remote EXCEPT ![m] = IF FixUnionKeepsAllProposals /\ remote[m] # NONE THEN remote[m] \cup new ELSE new]
ProposedReqs(m, new) ==
    IF reach[m] THEN reqs \cup {<<m, bME[m], bSE[m], new>>} ELSE reqs
Propose(m, new) ==
    /\ remote' = ProposedRemote(m, new)
    /\ reqs' = ProposedReqs(m, new)

-----------------------------------------------------------------------------------------------------
(* Initial state: every broker up and reachable, nothing registered, no master, empty logs. *)

Init ==
    /\ ctlMaster = NONE
    /\ ctlME = 0
    /\ ctlSSS = {}
    /\ ctlSE = 0
    /\ registered = Brokers   \* registerBrokerToController is done before the first state
    /\ reqs = {}
    /\ alive = [b \in Brokers |-> TRUE]
    /\ reach = [b \in Brokers |-> TRUE]
    /\ role = [b \in Brokers |-> NONE]
    /\ bME = [b \in Brokers |-> 0]
    /\ bSE = [b \in Brokers |-> 0]
    /\ local = [b \in Brokers |-> {}]
    /\ remote = [b \in Brokers |-> NONE]
    /\ log = [b \in Brokers |-> <<>>]
    /\ epochs = [b \in Brokers |-> <<>>]
    /\ flushed = [b \in Brokers |-> 0]
    /\ confirm = [b \in Brokers |-> 0]
    /\ conn = [b \in Brokers |-> NONE]
    /\ ack = [b \in Brokers |-> -1]
    /\ sent = 0
    /\ acked = {}
    /\ pend = {}
    /\ nCrash = 0
    /\ nPart = 0
    /\ nAdmin = 0
    /\ nShrink = 0
    /\ lastAct = <<"Init">>

-----------------------------------------------------------------------------------------------------
(* Controller actions *)

\* ControllerManager.scanNeedReelectBrokerSets -> triggerElectMaster (ReplicasInfoManager.electMaster):
\* the master is not alive and some registered broker is. Nothing electable: ElectMasterEvent(notElected)
\* (master := null, mE+1).
ControllerElect ==
    /\ ctlMaster # NONE
    /\ ~CtlAlive(ctlMaster)
    /\ {b \in registered : CtlAlive(b)} # {}   \* (not \E: TLC would enumerate the witnesses)
    /\ LET res == ElectPolicy(ctlMaster, NONE) IN
        \/ /\ res = {}
           /\ ctlMaster' = NONE
           /\ ctlME' = ctlME + 1
           /\ lastAct' = <<"ControllerElect", Nm(NONE)>>
           /\ UNCHANGED <<ctlSSS, ctlSE>>
        \/ \E new \in res :
            /\ new # ctlMaster
            /\ Elected(new)
            /\ lastAct' = <<"ControllerElect", Nm(new)>>
    /\ UNCHANGED <<registered, reqs, alive, reach, role, bME, bSE, local, remote, log, epochs, flushed, confirm,
                   conn, ack, sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

\* ReplicasInfoManager.alterSyncStateSet checks 2-7, in order: "" for success, else the failed check
AlterOutcome(req) ==
    LET frm == req[1]  me == req[2]  se == req[3]  new == req[4] IN
    IF new = ctlSSS THEN "2-same-set"
    ELSE IF ctlMaster = NONE \/ ctlMaster # frm THEN "3-not-master"
    ELSE IF GuardAlterMasterEpoch /\ me # ctlME THEN "4-master-epoch"
    ELSE IF GuardAlterSSSEpoch /\ se # ctlSE THEN "5-sss-epoch"
    ELSE IF \E x \in new : x \notin registered \/ ~CtlAlive(x) THEN "6-not-alive"
    ELSE IF ctlMaster \notin new THEN "7-no-master"
    ELSE ""

\* ReplicasInfoManager.alterSyncStateSet: the controller handles one request (removed from the network)
ControllerAlter(req) ==
    /\ reqs' = reqs \ {req}
    /\ IF AlterOutcome(req) = ""
        THEN /\ ctlSSS' = req[4]
             /\ ctlSE' = ctlSE + 1
        ELSE UNCHANGED <<ctlSSS, ctlSE>>
    /\ lastAct' = <<"ControllerAlter", Nm(req[1]), req[2], req[3], Nm(req[4])>>
    /\ UNCHANGED <<ctlMaster, ctlME, registered, alive, reach, role, bME, bSE, local, remote, log, epochs,
                   flushed, confirm, conn, ack, sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

-----------------------------------------------------------------------------------------------------
(* Broker actions *)

\* ReplicasManager.brokerElect when the controller has no master (ReplicasInfoManager.electMaster). A first
\* election takes the requester; otherwise nothing electable means ELECT_MASTER_FAILED (no event).
BrokerElect(b) ==
    /\ alive[b] /\ reach[b] /\ b \in registered /\ ctlMaster = NONE
    /\ IF ctlME = 0
        THEN /\ Elected(b)
             /\ lastAct' = <<"BrokerElect", Nm(b), Nm(b)>>
        ELSE \E new \in ElectPolicy(NONE, NONE) :
             /\ Elected(new)
             /\ lastAct' = <<"BrokerElect", Nm(b), Nm(new)>>
    /\ UNCHANGED <<registered, reqs, alive, reach, role, bME, bSE, local, remote, log, epochs, flushed, confirm,
                   conn, ack, sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

\* mqadmin electMaster designating b (ReplicasInfoManager.electMaster with a brokerId; bounded).
\* A first election takes b unchecked.
AdminElect(b) ==
    /\ nAdmin < MaxAdminElect
    /\ registered # {}
    /\ IF ctlME = 0
        THEN Elected(b)
        ELSE LET res == ElectPolicy(ctlMaster, b) IN
             /\ res # {}
             /\ (CHOOSE x \in res : TRUE) # ctlMaster
             /\ Elected(CHOOSE x \in res : TRUE)
    /\ nAdmin' = nAdmin + 1
    /\ lastAct' = <<"AdminElect", Nm(b)>>
    /\ UNCHANGED <<registered, reqs, alive, reach, role, bME, bSE, local, remote, log, epochs, flushed, confirm,
                   conn, ack, sent, acked, pend, nCrash, nPart, nShrink>>

\* ReplicasManager.changeToMaster + AutoSwitchHAService.changeToMaster (or, already master,
\* changeToMasterWhenLastRoleIsMaster, which keeps connections). The steps read the state the earlier steps
\* left (the LET chain follows _change_to_master line by line): set mE; changeSyncStateSet (only for a
\* greater sE: clears the proposal, recomputes confirmOffset); if mE < lastEpoch the HA switch fails (the role
\* still changes); else (not master before) destroy the connections to b and recompute confirmOffset; truncate
\* the epoch file to epochs < mE and append (mE, max offset).
ChangeToMaster(b) ==
    LET me == ctlME
        wasMaster == role[b] = b
        bME1 == [bME EXCEPT ![b] = me]
        \* _change_sss(b, ctlSSS, ctlSE)
        doSSS == ctlSE > bSE[b]
        bSE1 == IF doSSS THEN [bSE EXCEPT ![b] = ctlSE] ELSE bSE
        local1 == IF doSSS THEN [local EXCEPT ![b] = ctlSSS] ELSE local
        remote1 == IF doSSS THEN [remote EXCEPT ![b] = NONE] ELSE remote
        confirm1 == IF doSSS
                    THEN [confirm EXCEPT ![b] = ComputeConfirmV(b, AckSetTrueV(local1[b], remote1[b]), conn, ack,
                                                                Len(log[b]), confirm[b])]
                    ELSE confirm
        ep == epochs[b]
        early == me < LastEpoch(ep)   \* the HA switch returns false; ReplicasManager ignores it
        switchConns == ~early /\ ~wasMaster
        conn2 == IF switchConns THEN [DropConn(conn, b) EXCEPT ![b] = NONE] ELSE conn
        ack2 == IF switchConns THEN [DropAck(conn, ack, b) EXCEPT ![b] = -1] ELSE ack
        confirm2 == IF switchConns
                    THEN [confirm1 EXCEPT ![b] = ComputeConfirmV(b, AckSetTrueV(local1[b], remote1[b]), conn2, ack2,
                                                                 Len(log[b]), confirm1[b])]
                    ELSE confirm1
        ep1 == IF LastEpoch(ep) >= me THEN TruncateSuffixByEpoch(ep, me) ELSE ep
        \* F-EPOCH-REBASE-ON-RESTART: back as master in the epoch it last led, RocketMQ drops that epoch's entry and
        \* appends (mE, max offset); the fix keeps the entry
        ep2 == IF FixKeepOwnEpochOnRestart /\ LastEpoch(ep) = me THEN ep ELSE AppendEntry(ep1, me, Len(log[b]))
    IN /\ bME' = bME1
       /\ bSE' = bSE1
       /\ local' = local1
       /\ remote' = remote1
       /\ confirm' = confirm2
       /\ conn' = conn2
       /\ ack' = ack2
       /\ epochs' = IF early THEN epochs ELSE [epochs EXCEPT ![b] = ep2]
       /\ role' = [role EXCEPT ![b] = b]
       /\ UNCHANGED pend

\* ReplicasManager.changeToSlave + AutoSwitchHAService.changeToSlave. A broker that stops being master
\* forgets its SSS views and its waiting puts (their producers time out).
ChangeToSlave(b, m) ==
    LET me == ctlME
        wasMaster == role[b] = b
        switchConns == role[b] # m /\ ~(me < LastEpoch(epochs[b]))
    IN /\ bME' = [bME EXCEPT ![b] = me]
       /\ IF role[b] = m
           THEN UNCHANGED <<role, local, remote, pend>>
           ELSE /\ role' = [role EXCEPT ![b] = m]
                /\ local' = [local EXCEPT ![b] = {}]
                /\ remote' = [remote EXCEPT ![b] = NONE]
                /\ pend' = IF wasMaster THEN {p \in pend : p[1] # b} ELSE pend
       /\ conn' = IF switchConns THEN [DropConn(conn, b) EXCEPT ![b] = NONE] ELSE conn
       /\ ack' = IF switchConns THEN [DropAck(conn, ack, b) EXCEPT ![b] = -1] ELSE ack
       /\ UNCHANGED <<bSE, confirm, epochs>>

\* ReplicasManager.changeSyncStateSet -> AutoSwitchHAService.setSyncStateSet, for a greater sE (the caller
\* checks it): clears the proposal and recomputes confirmOffset.
ChangeSSS(b, sss, se) ==
    LET local1 == [local EXCEPT ![b] = sss]
        remote1 == [remote EXCEPT ![b] = NONE]
    IN /\ se > bSE[b]
       /\ bSE' = [bSE EXCEPT ![b] = se]
       /\ local' = local1
       /\ remote' = remote1
       /\ confirm' = [confirm EXCEPT ![b] = ComputeConfirmV(b, AckSetTrueV(local1[b], remote1[b]), conn, ack,
                                                             Len(log[b]), confirm[b])]
       /\ UNCHANGED <<bME, role, epochs, conn, ack, pend>>

\* The broker adopts the controller's view: a reply, a role-change notification or the periodic
\* ReplicasManager.schedulingSyncBrokerMetadata (changeBrokerRole / changeSyncStateSet): a role change for a
\* greater mE, an SSS for a greater sE.
Sync(b) ==
    /\ alive[b] /\ reach[b] /\ b \in registered
    /\ IF ctlME > bME[b] /\ ctlMaster # NONE
        THEN IF ctlMaster = b THEN ChangeToMaster(b) ELSE ChangeToSlave(b, ctlMaster)
        ELSE /\ ctlME = bME[b] /\ role[b] = b /\ ctlSE > bSE[b]
             /\ ChangeSSS(b, ctlSSS, ctlSE)
    /\ lastAct' = <<"Sync", Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, reach, log, flushed, sent, acked,
                   nCrash, nPart, nAdmin, nShrink>>

\* CommitLog.asyncPutMessage on a master: appended, then waiting for its acks
Produce(b) ==
    /\ alive[b] /\ role[b] = b /\ sent < MaxMsgs
    /\ log' = [log EXCEPT ![b] = Append(log[b], <<bME[b], sent + 1>>)]
    /\ sent' = sent + 1
    /\ pend' = pend \cup {<<b, sent + 1>>}
    /\ lastAct' = <<"Produce", Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, reach, role, bME, bSE, local, remote,
                   epochs, flushed, confirm, conn, ack, acked, nCrash, nPart, nAdmin, nShrink>>

\* Whether a put ending at offset i may return PUT_OK (GroupTransferService.doWaitTransfer)
PutAcked(b, i) ==
    IF PowerLoss /\ flushed[b] < i THEN FALSE      \* SYNC_FLUSH
    ELSE IF ~AllAck THEN TRUE                      \* needAck = inSyncReplicas = 1
    ELSE LET S == AckSet(b)
             n == Cardinality(S)
         IN IF n <= 1 THEN TRUE
            ELSE 1 + Cardinality({x \in S : x # b /\ conn[x] = b /\ ack[x] >= i}) >= n

\* GroupTransferService.doWaitTransfer: the producer sees PUT_OK
AckPut(p) ==
    LET b == p[1]  m == p[2]  pos == PosOf(log[b], m) IN
    /\ alive[b] /\ role[b] = b
    /\ pos # 0
    /\ PutAcked(b, pos)
    /\ pend' = pend \ {p}
    /\ acked' = acked \cup {m}
    /\ lastAct' = <<"AckPut", Nm(b), m>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, reach, role, bME, bSE, local, remote,
                   log, epochs, flushed, confirm, conn, ack, sent, nCrash, nPart, nAdmin, nShrink>>

\* AutoSwitchHAClient connects to its master and truncates to findConsistentPoint (doTruncate); an empty epoch
\* cache truncates nothing; no consistent point fails (retried).
Handshake(b) ==
    LET m == role[b] IN
    /\ alive[b] /\ m # NONE /\ m # b /\ conn[b] = NONE /\ alive[m] /\ role[m] = m
    /\ LET ep == epochs[b]
           p0 == IF ep # <<>>
                 THEN ConsistentPoint(ep, Len(log[b]), epochs[m], Len(log[m]), GuardConsistentPointMin)
                 ELSE Len(log[b])
           \* M-NO-COMMON-EPOCH: no consistent point fails the handshake for ever; the fix starts again from 0
           p == IF p0 < 0 /\ FixNoCommonEpochRestarts THEN 0 ELSE p0
           newLog == IF ep # <<>> /\ p < Len(log[b]) THEN Prefix(log[b], p) ELSE log[b]
           newEp == IF ep # <<>> THEN TruncateSuffixByOffset(ep, p) ELSE ep
       IN /\ p >= 0
          /\ log' = [log EXCEPT ![b] = newLog]
          /\ epochs' = [epochs EXCEPT ![b] = newEp]
          /\ confirm' = [confirm EXCEPT ![b] = Min2(confirm[b], Len(newLog))]
          /\ flushed' = [flushed EXCEPT ![b] = Min2(flushed[b], Len(newLog))]
          /\ conn' = [conn EXCEPT ![b] = m]
          /\ ack' = [ack EXCEPT ![b] = -1]
    /\ lastAct' = <<"Handshake", Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, reach, role, bME, bSE, local, remote,
                   sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

\* AutoSwitchHAConnection.WriteSocketService sends the next message once the slave has reported; the header
\* names the master's epoch entry covering it; the slave (AutoSwitchHAClient) records a new epoch
\* (appendEntry) and takes confirmOffset = min(header, own max).
Transfer(b) ==
    LET m == conn[b] IN
    /\ m # NONE
    /\ ack[b] >= 0
    /\ Len(log[b]) < Len(log[m])
    /\ LET off == Len(log[b])
           hi == CoveringIdx(epochs[m], off)
           hdr == epochs[m][hi]
           ep == epochs[b]
           newEp == IF ep = <<>> \/ Last(ep)[1] # hdr[1] THEN AppendEntry(ep, hdr[1], hdr[2]) ELSE ep
           newLog == Append(log[b], log[m][off + 1])
       IN /\ hi # 0
          /\ log' = [log EXCEPT ![b] = newLog]
          /\ epochs' = [epochs EXCEPT ![b] = newEp]
          /\ confirm' = [confirm EXCEPT ![b] = Min2(GetConfirm(m), Len(newLog))]
    /\ lastAct' = <<"Transfer", Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, reach, role, bME, bSE, local, remote,
                   flushed, conn, ack, sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

\* The slave reports its max offset; the master (AutoSwitchHAConnection.ReadSocketService / HAServerReader)
\* records it, may propose the slave for its SSS (AutoSwitchHAService.maybeExpandInSyncStateSet) and
\* recomputes confirmOffset for a member of its local set (updateConfirmOffsetWhenSlaveAck; the fix: of the
\* ack set).
SlaveAck(b) ==
    LET m == conn[b] IN
    /\ m # NONE
    /\ LET a == Len(log[b])
           ack1 == [ack EXCEPT ![b] = a]
           expand == /\ b \notin local[m]
                     /\ ~(GuardExpandConfirm /\ a < GetConfirm(m))
                     /\ ~(GuardExpandEpochStart /\ epochs[m] # <<>> /\ a < Last(epochs[m])[2])
           newSet == local[m] \cup {b}
           remote1 == IF expand THEN ProposedRemote(m, newSet) ELSE remote
           reqs1 == IF expand THEN ProposedReqs(m, newSet) ELSE reqs
           S1 == AckSetTrueV(local[m], remote1[m])
           upd == b \in (IF FixConfirmShortcutUsesUnion THEN S1 ELSE local[m])
       IN /\ ack' = ack1
          /\ remote' = remote1
          /\ reqs' = reqs1
          /\ confirm' = IF upd
                        THEN [confirm EXCEPT ![m] = ComputeConfirmV(m, S1, conn, ack1, Len(log[m]), confirm[m])]
                        ELSE confirm
    /\ lastAct' = <<"SlaveAck", Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, alive, reach, role, bME, bSE, local, log, epochs,
                   flushed, conn, sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

\* The master proposes its SSS without a member whose connection is gone
\* (AutoSwitchHAService.removeConnection) or, a bounded number of times (a slow slave is a perturbation),
\* one that has not caught up (AutoSwitchHAService.maybeShrinkSyncStateSet, the 15 s timeout abstracted).
Shrink(m, b) ==
    /\ alive[m] /\ role[m] = m /\ b # m /\ b \in local[m]
    /\ \/ /\ conn[b] # m
          /\ UNCHANGED nShrink
       \/ /\ conn[b] = m
          /\ ack[b] < Len(log[m])
          /\ nShrink < MaxLagShrinks
          /\ nShrink' = nShrink + 1
    /\ Propose(m, local[m] \ {b})
    /\ lastAct' = <<"Shrink", Nm(m), Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, alive, reach, role, bME, bSE, local, log, epochs,
                   flushed, confirm, conn, ack, sent, acked, pend, nCrash, nPart, nAdmin>>

\* The commit log is forced to disk (FlushCommitLogService; only matters with PowerLoss)
Flush(b) ==
    /\ PowerLoss /\ alive[b] /\ flushed[b] < Len(log[b])
    /\ flushed' = [flushed EXCEPT ![b] = Len(log[b])]
    /\ lastAct' = <<"Flush", Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, reach, role, bME, bSE, local, remote,
                   log, epochs, confirm, conn, ack, sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

-----------------------------------------------------------------------------------------------------
(* Perturbations *)

\* kill -9 (the page cache survives) or, with PowerLoss, a power loss (the unflushed tail is lost). Volatile
\* state goes; the log, the epoch file and the confirmOffset checkpoint stay (BrokerController shutdown /
\* startup).
Crash(b) ==
    /\ alive[b]
    /\ nCrash < MaxCrashes
    /\ \E loseTail \in {FALSE} \cup (IF PowerLoss /\ flushed[b] < Len(log[b]) THEN {TRUE} ELSE {}) :
        LET newLog == IF loseTail THEN Prefix(log[b], flushed[b]) ELSE log[b] IN
        /\ alive' = [alive EXCEPT ![b] = FALSE]
        /\ role' = [role EXCEPT ![b] = NONE]
        /\ bME' = [bME EXCEPT ![b] = 0]
        /\ bSE' = [bSE EXCEPT ![b] = 0]
        /\ local' = [local EXCEPT ![b] = {}]
        /\ remote' = [remote EXCEPT ![b] = NONE]
        /\ conn' = [DropConn(conn, b) EXCEPT ![b] = NONE]
        /\ ack' = [DropAck(conn, ack, b) EXCEPT ![b] = -1]
        /\ log' = [log EXCEPT ![b] = newLog]
        /\ confirm' = [confirm EXCEPT ![b] = Min2(confirm[b], Len(newLog))]
        /\ pend' = {p \in pend : p[1] # b}
        /\ nCrash' = nCrash + 1
        /\ reqs' = IF FixFenceRequestsAcrossRestart THEN {r \in reqs : r[1] # b} ELSE reqs
        /\ lastAct' = <<"Crash", Nm(b), loseTail>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reach, epochs, flushed, sent, acked, nPart, nAdmin, nShrink>>

\* The broker comes back with no role (fenced until it learns one)
Restart(b) ==
    /\ ~alive[b]
    /\ alive' = [alive EXCEPT ![b] = TRUE]
    /\ lastAct' = <<"Restart", Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, reach, role, bME, bSE, local, remote, log,
                   epochs, flushed, confirm, conn, ack, sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

\* The broker and the controller cannot reach each other (bounded)
Partition(b) ==
    /\ reach[b]
    /\ nPart < MaxPartitions
    /\ reach' = [reach EXCEPT ![b] = FALSE]
    /\ nPart' = nPart + 1
    /\ lastAct' = <<"Partition", Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, role, bME, bSE, local, remote, log,
                   epochs, flushed, confirm, conn, ack, sent, acked, pend, nCrash, nAdmin, nShrink>>

\* The partition ends
Heal(b) ==
    /\ ~reach[b]
    /\ reach' = [reach EXCEPT ![b] = TRUE]
    /\ lastAct' = <<"Heal", Nm(b)>>
    /\ UNCHANGED <<ctlMaster, ctlME, ctlSSS, ctlSE, registered, reqs, alive, role, bME, bSE, local, remote, log,
                   epochs, flushed, confirm, conn, ack, sent, acked, pend, nCrash, nPart, nAdmin, nShrink>>

-----------------------------------------------------------------------------------------------------
(* Next-state relation and specifications *)

Next ==
    \/ ControllerElect
    \/ \E req \in reqs : ControllerAlter(req)
    \/ \E p \in pend : AckPut(p)
    \/ \E b \in Brokers :
        \/ Produce(b) \/ Handshake(b) \/ Transfer(b) \/ SlaveAck(b) \/ Flush(b) \/ Sync(b)
        \/ BrokerElect(b) \/ AdminElect(b) \/ Crash(b) \/ Restart(b) \/ Partition(b) \/ Heal(b)
        \/ \E x \in Brokers : Shrink(b, x)

Spec == Init /\ [][Next]_vars

\* Weak fairness on every action but the perturbations (Crash, Partition, AdminElect) and Produce (Shrink's
\* lagging-slave case is bounded by MaxLagShrinks). The subscript is View (lastAct excluded), so that a step
\* that changes only lastAct is not counted as a step of an action.
FairSpec ==
    /\ Spec
    /\ WF_View(ControllerElect)
    /\ WF_View(\E req \in reqs : ControllerAlter(req))
    /\ \A b \in Brokers, m \in 1..MaxMsgs : WF_View(AckPut(<<b, m>>))
    /\ \A b \in Brokers :
        /\ WF_View(Handshake(b))
        /\ WF_View(Transfer(b))
        /\ WF_View(SlaveAck(b))
        /\ WF_View(Flush(b))
        /\ WF_View(Sync(b))
        /\ WF_View(BrokerElect(b))
        /\ WF_View(Restart(b))
        /\ WF_View(Heal(b))
        /\ \A x \in Brokers : WF_View(Shrink(b, x))

-----------------------------------------------------------------------------------------------------
(* Type invariant *)

Msgs == 1..MaxMsgs
BrokerOrNone == Brokers \cup {NONE}
Entry == Nat \X Msgs
EpochEntry == Nat \X Nat

TypeOK ==
    /\ ctlMaster \in BrokerOrNone
    /\ ctlME \in Nat
    /\ ctlSSS \subseteq Brokers
    /\ ctlSE \in Nat
    /\ registered \subseteq Brokers
    /\ \A r \in reqs : r[1] \in Brokers /\ r[2] \in Nat /\ r[3] \in Nat /\ r[4] \subseteq Brokers
    /\ alive \in [Brokers -> BOOLEAN]
    /\ reach \in [Brokers -> BOOLEAN]
    /\ role \in [Brokers -> BrokerOrNone]
    /\ bME \in [Brokers -> Nat]
    /\ bSE \in [Brokers -> Nat]
    /\ local \in [Brokers -> SUBSET Brokers]
    /\ \A b \in Brokers : remote[b] = NONE \/ remote[b] \subseteq Brokers
    /\ \A b \in Brokers : log[b] \in Seq(Entry) /\ Len(log[b]) <= MaxMsgs
    /\ \A b \in Brokers : epochs[b] \in Seq(EpochEntry)
    /\ flushed \in [Brokers -> Nat]
    /\ confirm \in [Brokers -> Nat]
    /\ conn \in [Brokers -> BrokerOrNone]
    /\ ack \in [Brokers -> Nat \cup {-1}]
    /\ sent \in 0..MaxMsgs
    /\ acked \subseteq Msgs
    /\ pend \subseteq Brokers \X Msgs
    /\ nCrash \in 0..MaxCrashes
    /\ nPart \in 0..MaxPartitions
    /\ nAdmin \in 0..MaxAdminElect
    /\ nShrink \in 0..MaxLagShrinks

-----------------------------------------------------------------------------------------------------
(* Invariants (models/properties.py) *)

CTL_MASTER_IN_SSS == ctlMaster = NONE \/ ctlMaster \in ctlSSS

CTL_SSS_REGISTERED == ctlSSS \subseteq registered

\* At this level, as the brokers see it: no two live masters hold the same masterEpoch.
CTL_ONE_MASTER_PER_EPOCH ==
    \A a, b \in Brokers :
        (a # b /\ alive[a] /\ role[a] = a /\ alive[b] /\ role[b] = b) => bME[a] # bME[b]

EPOCH_FILE_WF ==
    \A b \in Brokers : \A i \in 1..(Len(epochs[b]) - 1) :
        epochs[b][i][1] < epochs[b][i + 1][1] /\ epochs[b][i][2] < epochs[b][i + 1][2]

\* A slave with a handshaken connection holds a prefix of its master's log.
HA_TRUNCATE_PREFIX ==
    \A b \in Brokers :
        conn[b] # NONE => (Len(log[b]) <= Len(log[conn[b]]) /\ SubSeq(log[conn[b]], 1, Len(log[b])) = log[b])

\* Two replicas holding the same epoch entry (epoch, start) agree from start to the smaller end.
HA_LOG_MATCHING ==
    \A a, b \in Brokers : a # b =>
        \A i \in 1..Len(epochs[a]) : \A j \in 1..Len(epochs[b]) :
            epochs[a][i] = epochs[b][j] =>
                LET st == epochs[a][i][2]
                    end == Min({EntryEnd(epochs[a], i, Len(log[a])), EntryEnd(epochs[b], j, Len(log[b])),
                                Len(log[a]), Len(log[b])})
                IN SubSeq(log[a], st + 1, end) = SubSeq(log[b], st + 1, end)

\* A master's confirmOffset (allAck) is within the log of every member of its local SSS, which agrees with
\* the master's up to it; a slave's confirmOffset never passes its own log end.
SYNC_CONFIRM_BOUND ==
    \A b \in Brokers :
        IF alive[b] /\ role[b] = b
        THEN AllAck => LET c == GetConfirm(b) IN
                       \A x \in local[b] : Len(log[x]) >= c /\ Prefix(log[x], c) = Prefix(log[b], c)
        ELSE confirm[b] <= Len(log[b])

SYNC_SSS_HOLDS_ACKED == \A x \in ctlSSS : acked \subseteq MsgsOf(log[x])

\* Every acknowledged message is in the log of the established master (the controller's master, up and
\* acting as master in the controller's masterEpoch).
SYNC_NO_ACK_LOSS ==
    LET m == ctlMaster IN
    (m = NONE \/ ~alive[m] \/ role[m] # m \/ bME[m] # ctlME) \/ acked \subseteq MsgsOf(log[m])

-----------------------------------------------------------------------------------------------------
(* Action properties (models/properties.py); checked as PROPERTY Prop_X == [][X]_vars *)

CTL_EPOCH_MONO ==
    /\ ctlME <= ctlME' /\ ctlME' <= ctlME + 1
    /\ ctlSE <= ctlSE' /\ ctlSE' <= ctlSE + 1

\* A SyncStateSet change without an election was requested by the current master with the current epochs,
\* and keeps the master.
CTL_ALTER_FENCED ==
    \/ ctlSSS' = ctlSSS
    \/ ctlME' # ctlME
    \/ \E r \in reqs \ reqs' :
        r[4] = ctlSSS' /\ r[1] = ctlMaster /\ r[2] = ctlME /\ r[3] = ctlSE /\ ctlMaster \in r[4]

CTL_CLEAN_ELECTION ==
    \/ Unclean
    \/ ctlME = 0
    \/ ctlME' # ctlME + 1
    \/ ctlMaster' \in {NONE, ctlMaster}
    \/ ctlMaster' \in ctlSSS /\ CtlAlive(ctlMaster')

BRK_EPOCH_MONO ==
    \A b \in Brokers :
        (alive[b] /\ alive'[b]) =>
            /\ bME'[b] >= bME[b]
            /\ bSE'[b] >= bSE[b]
            /\ role'[b] # role[b] => bME'[b] > bME[b]

\* allAck: a put returns PUT_OK only when every member of the master's ack set (local \cup remote) acked it.
SYNC_ACK_ALL ==
    AllAck =>
        \A p \in pend :
            (p[2] \in acked' /\ p[2] \notin acked) =>
                LET b == p[1]  pos == PosOf(log[b], p[2]) IN
                \A x \in AckSetTrue(b) : x # b => (conn[x] = b /\ ack[x] >= pos)

\* A slave newly proposed for a master's SSS has acked past every acknowledged message in the master's log.
SYNC_EXPAND_SAFE ==
    \A m \in Brokers :
        LET r == remote'[m] IN
        (r = NONE \/ r = remote[m]) \/
            LET before == local[m] \cup (IF remote[m] # NONE THEN remote[m] ELSE {})
                need == Max({0} \cup {i \in 1..Len(log'[m]) : log'[m][i][2] \in acked'})
            IN \A x \in r \ before : x # m => ack'[x] >= need

Prop_CTL_EPOCH_MONO == [][CTL_EPOCH_MONO]_vars
Prop_CTL_ALTER_FENCED == [][CTL_ALTER_FENCED]_vars
Prop_CTL_CLEAN_ELECTION == [][CTL_CLEAN_ELECTION]_vars
Prop_BRK_EPOCH_MONO == [][BRK_EPOCH_MONO]_vars
Prop_SYNC_ACK_ALL == [][SYNC_ACK_ALL]_vars
Prop_SYNC_EXPAND_SAFE == [][SYNC_EXPAND_SAFE]_vars

-----------------------------------------------------------------------------------------------------
(* Liveness (for FairSpec) *)

\* While an SSS member is alive and reachable, the controller eventually has a live, reachable master.
L_MASTER_ELECTED ==
    (\E x \in ctlSSS : alive[x] /\ reach[x]) ~> (ctlMaster # NONE /\ alive[ctlMaster] /\ reach[ctlMaster])

\* A slave that has caught up with its master (its ack covers the master's log) eventually is in the
\* controller's SyncStateSet, unless it dies meanwhile.
CaughtUp(b) == alive[b] /\ conn[b] # NONE /\ ack[b] >= Len(log[conn[b]])
L_REJOIN == \A b \in Brokers : CaughtUp(b) ~> (b \in ctlSSS \/ ~alive[b])

\* Once the bounded perturbations are over, every broker is eventually in the SyncStateSet for good (every
\* live slave catches up and joins).
L_ALL_IN_SSS == <>[](\A b \in Brokers : b \in ctlSSS)

=============================================================================================
