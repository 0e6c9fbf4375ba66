"""F-DLEDGER-STALE-VALIDATION on a real build: the DLedger controller validates a request on its applied state,
which lacks an event it appended earlier and has not committed yet.

``DLedgerController.ControllerEventHandler.run`` computes the result on the applied state (``supplier.get()``),
appends its events and waits 5 s for the commit (``appendToDLedgerAndWait``: ``dLedgerFuture.get(5, SECONDS)``);
on a timeout the requester gets an error, the entry stays in the leader's log, and the single scheduler thread takes
the next request, validating it on the same applied state. When replication resumes, every appended entry commits
and applies in log order, with no re-check (``ReplicasInfoManager.handleAlterSyncStateSet`` replaces the set,
``handleElectMaster`` replaces the master).

The means, as ``proposal_restart.py``: three DLedger controllers; the leader's PUSH requests (DLedger replication,
code 51004) to both followers dropped at the proxy, so nothing commits while the leader keeps leading (the DLedger
heartbeats pass).
"""

from __future__ import annotations

import re
import time
from typing import Any

from ...impl.sim.report import members
from .. import files as F
from ..check import Verdict as CheckVerdict
from ..check import check_controller
from ..lab import Lab
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro
from .sss_proposals import ALTER, ctl_text, id_of, lines_since, ok, poll, rel, short, wall

TOPIC = "ReproDledgerStale"
DLEDGER_PUSH = 51004  # io.openmessaging.storage.dledger.protocol.DLedgerRequestCode.PUSH
RUN_EVENT = re.compile(r"Event queue run event (\w+), get the result ControllerResult\{events=\[(.*?)\], response")
ELECTED = re.compile(r"ElectMasterEvent\{newMasterElected=true, brokerName='[^']*', newMasterBrokerId=(\d+)\}")
ALTERED = re.compile(r"AlterSyncStateSetEvent\{brokerName='[^']*', newSyncStateSet=\[([0-9, ]*)\]\}")
APPEND_FAILED = re.compile(r"Failed to append entry to DLedger")
CTL_LOGS = ("broker_default.log", "broker.log")


def run_events(lab: Lab, node: str, since_ms: float) -> list[str]:
    """The controller's 'Event queue run event' lines with at least one event (write requests that validated)."""
    return [x for x in lines_since(lab, node, RUN_EVENT, since_ms, files=CTL_LOGS)
            if (mt := RUN_EVENT.search(x)) is not None and mt.group(2)]


def elected(lines: list[str], bid: int | None) -> list[str]:
    return [x for x in lines if (mt := ELECTED.search(x)) is not None and int(mt.group(1)) == bid]


def altered(lines: list[str], want: set[int]) -> list[str]:
    out = []
    for x in lines:
        mt = ALTERED.search(x)
        if mt is not None and {int(v) for v in mt.group(1).replace(" ", "").split(",") if v} == want:
            out.append(x)
    return out


def entry_text(e: F.ControllerEntry) -> str:
    evs = [ev.to_kit() for ev in e.events if not isinstance(ev, F.UnknownEvent)]
    parts = []
    for ev in evs:
        if ev.get("type") == "AlterSyncStateSet":
            parts.append(f"AlterSyncStateSet {members(map(str, sorted(ev.get('newSyncStateSet') or [])))}")
        elif ev.get("type") == "ElectMaster":
            parts.append(f"ElectMaster {ev.get('newMasterBrokerId')}" if ev.get("newMasterElected")
                         else "ElectMaster(no master)")
        else:
            parts.append(str(ev.get("type")))
    return f"#{e.index} " + ("; ".join(parts) or "(empty)")


def state_text(st: dict[str, Any] | None) -> str:
    if not st:
        return "-"
    sss = members(map(str, sorted(st.get("syncStateSet") or [])))
    return f"master {st.get('master')} mE {st.get('masterEpoch')} SSS {sss} sE {st.get('syncStateSetEpoch')}"


@repro("F-DLEDGER-STALE-VALIDATION",
       title="The DLedger controller validates a request on a state lacking its still-uncommitted earlier event",
       invariant="CTL-ALTER-FENCED (an AlterSyncStateSet applied on a state it was not validated against: here "
                 "it drops the master an earlier, uncommitted election had chosen); CTL-MASTER-IN-SSS follows",
       how="three DLedger controllers (leader L, followers F1, F2), two brokers (master M, slave S), the safe "
           "profile; L's DLedger PUSH requests (code 51004) to F1 and F2 are dropped at the proxy (nothing commits; "
           "the DLedger heartbeats pass, so L stays leader); M is cut at the proxy from L and from S (both ways): L "
           "stops hearing M's heartbeats and, S being alive and in the SyncStateSet {M, S}, elects S: the "
           "ElectMaster event is validated on the applied state, appended, and cannot commit (L gives up waiting "
           "after 5 s, the entry stays); once L's log shows that election validated, M<->L is healed (M<->S stays "
           "cut): M, which never learnt of the election (L answers reads from its applied state: master M), "
           "proposes the shrink {M} with its old epochs; L validates it on the applied state (master M, M's "
           "masterEpoch and syncStateSetEpoch: accepted) and appends it behind the election; then the PUSH drop is "
           "lifted and everything commits in log order; the cut heals; the committed log is replayed by the kit "
           "(rmqha/real/check.py: check_controller) and L's 'Event queue run event' lines say what each request "
           "was validated into and when",
       config={"cluster": {"controllers": 3, "brokers": 2}},
       expect={"5.3.3": "present (ControllerEventHandler.run validates on the applied state; a 5 s commit timeout "
                        "leaves the entry in the log)",
               "5.4.0": "present (DLedgerController unchanged)", "5.5.0": "present (DLedgerController unchanged)"},
       minutes=5.0)
def dledger_stale_validation(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    leader = s.leader.node
    followers = [c for c in lab.spec.controllers if c != leader]
    sl = next(b for b in lab.spec.brokers if b != m)
    mid, sid = id_of(lab, m), id_of(lab, sl)
    lab.create_topic(TOPIC, 1)
    r0 = lab.produce(TOPIC, 20, "d0-", interval_ms=20)
    before = lab.fresh()
    lab.note(f"{m} (id {mid}) master, {sl} (id {sid}) slave, {leader} leads; {ctl_text(lab, before)}; "
             f"{sum(1 for r in r0 if ok(r))}/20 SEND_OK")
    lg0 = F.read_dledger_log(lab.spec.store_dir(leader))
    idx0 = lg0.ledger_end_index
    # 1. nothing commits from now on
    t_arm = wall()
    fids = [lab.proxy_fault("drop-request", code=DLEDGER_PUSH, **{"from": leader, "to": f}) for f in followers]
    lab.note(f"{leader}'s DLedger PUSH requests to {', '.join(followers)} dropped at the proxy (log ends at #{idx0})")
    # 2. M cut from the leader and from S: the leader elects S, uncommitted
    p_ml = lab.partition([m], [leader])
    lab.partition([m], [sl])
    t_cut = wall()
    el = poll(lambda: elected(run_events(lab, leader, t_cut), sid), 60, 0.3)
    if not el:
        for f in fids:
            lab.lift(f)
        lab.heal()
        return Verdict(INCONCLUSIVE, why=f"{leader} validated no election of {sl} within 60 s of cutting {m} off")
    lab.note(f"{leader} validated the election of {sl}: {short(el[0], 200)}")
    # 3. M back to the leader (still cut from S): its shrink {M}, validated on the applied state
    lab.heal(p_ml)
    t_heal = wall()
    al = poll(lambda: altered(run_events(lab, leader, t_heal), {mid} if mid is not None else set()), 90, 0.3)
    during = lab.snap()
    lg1 = F.read_dledger_log(lab.spec.store_dir(leader))
    committed_during = lg1.committed_index
    pushes = sum(lab.proxy_acts(f) for f in fids)
    # 4. replication resumes
    t_lift = wall()
    for f in fids:
        lab.lift(f)
    lab.note(f"PUSH drop lifted at {rel(lab, t_lift)} ({pushes} PUSH requests dropped; {leader}'s log ends at "
             f"#{lg1.ledger_end_index}, its checkpoint's committedIndex {committed_during})")
    if not al:
        lab.note(f"{leader} validated no shrink {{{mid}}} of {m} within 90 s of the heal")
    end_idx = lg1.ledger_end_index

    def replicated() -> bool:
        return all(F.read_dledger_log(lab.spec.store_dir(f)).ledger_end_index >= end_idx for f in followers)

    poll(replicated, 60, 1.0)
    time.sleep(3.0)
    lab.heal()
    samples = []
    for _ in range(3):
        x = lab.fresh(60)
        samples.append(f"t={lab.now() / 1000:.0f}s {ctl_text(lab, x)}; " + "; ".join(
            f"{b} role {x.brokers[b].role} max {x.brokers[b].max_offset}" for b in lab.spec.brokers
            if b in x.brokers and x.brokers[b].ok))
        time.sleep(2.0)
    files = lab.files()
    cv = CheckVerdict()
    applied = check_controller(cv, lab.spec, files)
    stalled = [e for e in F.read_dledger_log(lab.spec.store_dir(leader)).entries if e.index > idx0]
    stalled_ix = {e.index for e in stalled if e.index <= end_idx}
    replay = [o for o in applied if o["index"] in stalled_ix]
    after = [o for o in applied if o["index"] > end_idx][:6]
    ctl_viol = [v for v in cv.violations if v["invariant"] in ("CTL-ALTER-FENCED", "CTL-MASTER-IN-SSS",
                                                              "CTL-EPOCH-MONO", "CTL-ONE-MASTER-PER-EPOCH")]
    runs = run_events(lab, leader, t_arm)
    fails = lines_since(lab, leader, APPEND_FAILED, t_arm, files=CTL_LOGS)
    frames = [d for d in lab.frames(t_arm - 1000)
              if (d.get("name") == ALTER and d.get("from") == m) or (d.get("req_name") == ALTER and d.get("to") == m)]
    alters_validated = [x for x in runs if "alterSyncStateSet" in x]
    evidence = [
        f"before: {ctl_text(lab, before)}; {leader}'s log ended at #{idx0}",
        f"{leader}'s PUSH to {', '.join(followers)} dropped from {rel(lab, t_arm)} ({pushes} dropped); {m} cut "
        f"from {leader} and {sl} at {rel(lab, t_cut)}; {m}<->{leader} healed at {rel(lab, t_heal)}; PUSH drop "
        f"lifted at {rel(lab, t_lift)}",
        f"while the drop held: {leader}'s checkpoint committedIndex {committed_during}, log end "
        f"#{lg1.ledger_end_index}; the admin API (applied state): {ctl_text(lab, during)}; {len(fails)} 'Failed "
        "to append entry to DLedger' (5 s waits)",
        *[f"{leader} validated at {x[11:19]}: {short(x[x.find('Event queue'):], 190)}" for x in runs[:10]],
        *[f"frame {rel(lab, float(d['t']))} {d.get('from')}->{d.get('to')} "
          + (f"ALTER answer code {d.get('code')} {str(d.get('remark') or '')[:80]}" if d.get("response")
             else f"ALTER request masterEpoch {(d.get('ext') or {}).get('masterEpoch')}") for d in frames[:8]],
        "the entries appended while nothing committed, replayed in commit order (state before -> event):",
        *[f"  #{o['index']}: {state_text(o['before'])} -> {o['event'].get('type')} "
          + (str(sorted(o['event'].get('newSyncStateSet') or [])) if o['event'].get('type') == "AlterSyncStateSet"
             else str(o['event'].get('newMasterBrokerId') if o['event'].get('newMasterElected') else 'none'))
          + f" => {state_text(o['after'])}" for o in replay[:12]],
        "the entries that followed (validated after the commits resumed):",
        *[f"  #{o['index']}: {state_text(o['before'])} -> {o['event'].get('type')} "
          + (str(sorted(o['event'].get('newSyncStateSet') or [])) if o['event'].get('type') == "AlterSyncStateSet"
             else str(o['event'].get('newMasterBrokerId') if o['event'].get('newMasterElected') else 'none'))
          + f" => {state_text(o['after'])}" for o in after],
        *[f"kit replay (check_controller): {v['invariant']}: {v['message']}" for v in ctl_viol],
        *samples,
    ]
    data = {"master": m, "slave": sl, "leader": leader, "idx0": idx0, "endIdx": end_idx, "pushes": pushes,
            "committedDuring": committed_during, "runs": runs, "violations": cv.violations,
            "stalled": [entry_text(e) for e in stalled], "samples": samples}
    if committed_during is not None and committed_during > idx0:
        return Verdict(INCONCLUSIVE, evidence, f"{leader}'s committed index moved to {committed_during} past #{idx0} "
                       "while the PUSH drop held: the stall did not hold", data)
    fenced = [v for v in ctl_viol if v["invariant"] == "CTL-ALTER-FENCED"]
    two_alters = len([o for o in replay if o["event"].get("type") == "AlterSyncStateSet"]) >= 2
    if fenced:
        return Verdict(REPRODUCED, evidence, f"{leader} validated {m}'s shrink {{{mid}}} on its applied state "
                       f"(master {m}) while its election of {sl} was appended and uncommitted; both committed and the "
                       f"shrink applied after the election: {fenced[0]['message']}", data)
    if two_alters:
        return Verdict(REPRODUCED, evidence, f"{len(alters_validated)} AlterSyncStateSet requests were validated "
                       f"on the same applied state while nothing committed, and all applied in log order, each "
                       "on a syncStateSetEpoch it was not fenced against", data)
    if not al:
        return Verdict(INCONCLUSIVE, evidence, f"{leader} validated no shrink of {m} while the election of {sl} "
                       "waited uncommitted", data)
    return Verdict(NOT_REPRODUCED, evidence, "the stalled entries committed without a fencing violation on replay",
                   data)
