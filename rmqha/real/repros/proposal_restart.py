"""M-PROPOSAL-OUTLIVES-RESTART on a real build: a SyncStateSet proposal the master sent before its crash is applied
after its restart. Java leaves one path open for it: the DLedger commit of the proposal takes longer than the
controller's 5 s wait (``DLedgerController.appendToDLedgerAndWait``), so the entry stays in the leader's log,
uncommitted, while the leader goes on answering from its applied state, and commits whenever replication resumes.

The scenario: a three-controller DLedger group; the leader's PUSH requests (DLedger replication, code 51004) to both
followers are dropped at the proxy, so nothing commits while the leader keeps its leadership (its heartbeats pass);
the master proposes {M, S}; M is SIGKILLed and restarted while the proposal waits; if M's new process is answered as
master it takes messages and is SIGKILLed again; replication is let through and the controller's log, its frames
and the admin API say what was applied, in which order, and who became master from which SyncStateSet.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ...impl.sim.report import members
from .. import files as F
from ..lab import Lab
from ..observe import Snapshot
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro
from .epoch_restart import epochs_text, frames

TOPIC = "ReproProposal"
DLEDGER_PUSH = 51004  # io.openmessaging.storage.dledger.protocol.DLedgerRequestCode.PUSH
MASTER_STILL_EXIST = 2011  # ResponseCode.CONTROLLER_MASTER_STILL_EXIST
ANSWER_WAIT_S = 90


def proxy_acts(lab: Lab, fid: str) -> int:
    p = lab.spec.dir / "events" / "proxy.jsonl"
    n = 0
    if p.is_file():
        with open(p, encoding="utf-8") as f:
            for line in f:
                if '"act"' in line and f'"id":"{fid}"' in line.replace(" ", ""):
                    n += 1
    return n


def frame_line(lab: Lab, d: dict[str, Any], t0: float) -> str:
    what = d.get("req_name") if d.get("response") else d.get("name")
    kind = f"response code {d.get('code')}" if d.get("response") else "request"
    ext = d.get("ext") or {}
    ext_s = ", ".join(f"{k}={v}" for k, v in sorted(ext.items()) if k not in ("clusterName", "brokerName",
                                                                               "invokeTime"))
    rem = f" remark={str(d.get('remark'))[:80]}" if d.get("remark") else ""
    return f"t={(float(d['t']) - t0) / 1000:.1f}s {d.get('from')}->{d.get('to')} {what} {kind} {ext_s}{rem}"


def ctl_state(s: Snapshot | None) -> str:
    lead = s.leader if s else None
    if lead is None:
        return "no leader"
    sss = members(lead.ids.get(i, str(i)) for i in sorted(lead.sss))
    return f"leader {lead.node}: master {lead.master} mE {lead.master_epoch} SSS {sss} sE {lead.sss_epoch}"


@repro("M-PROPOSAL-OUTLIVES-RESTART",
       title="A SyncStateSet proposal sent before a master's crash is applied after its restart",
       invariant="SYNC-CONFIRM-BOUND / SYNC-NO-ACK-LOSS (a restarted master's SyncStateSet must not take in a "
                 "replica through a proposal of its previous process: that replica lacks what the new process "
                 "acknowledged alone)",
       how="three DLedger controllers, two brokers (a fresh set: one epoch), the brokers' controller heartbeat "
           "timeout and the controller's inactive-master scan at RocketMQ's defaults (10 s, 5 s: how many "
           "elections the controller queues while M is down); the master M and the slave S are cut from each "
           "other at the proxy until M's SyncStateSet shrinks to {M}; then the leading controller's DLedger PUSH "
           "requests (code 51004) to both followers are dropped at the proxy (nothing commits; the DLedger "
           "heartbeats pass, so the leader stays leader); the cut heals, S catches up and M proposes {M, S} "
           "(ALTER_SYNC_STATE_SET): the controller validates it against its applied state, appends it, and it "
           "cannot commit (the controller gives up waiting after 5 s, the entry stays in its log); 2 s after M's "
           "first proposal M is SIGKILLed and restarted at once; once M's new process has been answered as master "
           "(from the applied state: SyncStateSet {M}) it takes 20 messages, acknowledged by M alone; M is "
           "SIGKILLed again and the PUSH drop is lifted; the controller's frames at the proxy, its committed "
           "DLedger log, the admin API and a consumer say what was applied, who was elected and whether M's "
           "acknowledged messages survived",
       config={"cluster": {"controllers": 3, "brokers": 2},
               "broker": {"controllerHeartBeatTimeoutMills": 10000},
               "controller": {"scanInactiveMasterInterval": 5000}},
       expect={"5.3.3": "absent: the stale proposal commits after the restart, but behind it the controller logs "
                        "the election for M's death, which deposes M in the same commit",
               "5.5.0": "absent (as 5.3.3)"},
       minutes=6.0)
def proposal_outlives_restart(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    leader = s.leader.node
    followers = [c for c in lab.spec.controllers if c != leader]
    sl = next(b for b in lab.spec.brokers if b != m)
    ids = lab.ids()
    mid = next((i for i, n in ids.items() if n == m), None)
    sid = next((i for i, n in ids.items() if n == sl), None)
    lab.create_topic(TOPIC, 1)
    r0 = lab.produce(TOPIC, 20, "p0-", interval_ms=20)
    lab.note(f"{m} (id {mid}) master, {sl} (id {sid}) slave, {leader} leads; "
             f"{sum(1 for r in r0 if r.get('status') == 'SEND_OK')}/20 SEND_OK")
    # 1. S out of the SyncStateSet
    cut = lab.partition([m], [sl])
    out = lab.wait(lambda x: x.leader is not None and x.leader.master == m and sid is not None
                   and sid not in x.leader.sss, 60, f"the SyncStateSet without {sl}")
    lab.note(f"SyncStateSet without {sl}: {ctl_state(out)}")
    # 2. nothing commits from now on
    idx0 = F.read_dledger_log(lab.spec.store_dir(leader)).ledger_end_index
    t_arm = time.time() * 1000
    fids = [lab.proxy_fault("drop-request", code=DLEDGER_PUSH, **{"from": leader, "to": f}) for f in followers]
    lab.note(f"{leader}'s DLedger PUSH requests to {', '.join(followers)} dropped at the proxy")
    # 3. S catches up, M proposes {M, S}
    lab.heal(cut)
    t_heal = time.time() * 1000
    first_alter: dict[str, Any] | None = None
    end = time.monotonic() + 60
    while first_alter is None and time.monotonic() < end:
        first_alter = next((d for d in frames(lab, t_heal) if d.get("name") == "CONTROLLER_ALTER_SYNC_STATE_SET"
                            and d.get("from") == m and not d.get("response")), None)
        time.sleep(0.3)
    if first_alter is None:
        for f in fids:
            lab.lift(f)
        return Verdict(INCONCLUSIVE, why=f"{m} sent no ALTER_SYNC_STATE_SET within 60 s of the heal")
    lab.note(f"{m} proposed a new SyncStateSet: {first_alter.get('ext')}")
    time.sleep(2.0)
    # 4. M crashes and restarts while its proposal waits
    t_kill = time.time() * 1000
    lab.kill(m, "its proposal uncommitted")
    proposals = [d for d in frames(lab, t_heal) if d.get("from") == m and float(d.get("t", 0)) < t_kill
                 and d.get("name") == "CONTROLLER_ALTER_SYNC_STATE_SET"]
    lab.restart(m)
    t_up = time.time() * 1000
    # 5. M's new process answered as master (from the controller's applied state)?
    answered: dict[str, Any] | None = None
    end = time.monotonic() + ANSWER_WAIT_S
    while answered is None and time.monotonic() < end:
        for d in frames(lab, t_up - 5000):
            if (d.get("response") and d.get("to") == m and d.get("code") in (0, MASTER_STILL_EXIST)
                    and d.get("req_name") in ("CONTROLLER_REGISTER_BROKER", "CONTROLLER_ELECT_MASTER")
                    and str((d.get("ext") or {}).get("masterBrokerId")) == str(mid)):
                answered = d
                break
        time.sleep(0.5)
    acked2: list[dict[str, Any]] = []
    me_new = -1
    if answered is not None:
        me_new = int((answered.get("ext") or {}).get("masterEpoch", -1))
        lab.note(f"{m}'s new process answered: {answered.get('req_name')} code {answered.get('code')} "
                 f"{answered.get('ext')}")
        t_ans = float(answered["t"])
        lab.wait(lambda x: m in x.brokers and x.brokers[m].ok and x.brokers[m].role == "MASTER" and x.t0 > t_ans,
                 90, f"{m} acting as master")
        sent2 = lab.produce(TOPIC, 20, "p2-", interval_ms=20, timeout=120)
        acked2 = [r for r in sent2 if r.get("status") == "SEND_OK"]
        lab.note(f"{len(acked2)}/20 SEND_OK from {m}'s new process")
        # 6. M dies again before replication resumes
        lab.kill(m, "after acknowledging alone")
    else:
        lab.note(f"{m}'s new process not answered as master in {ANSWER_WAIT_S} s")
    during = lab.snap()
    answers_to_m = [d for d in frames(lab, t_up - 5000) if d.get("response") and d.get("to") == m
                    and d.get("req_name") in ("CONTROLLER_REGISTER_BROKER", "CONTROLLER_ELECT_MASTER")]
    asks_of_m = [d for d in frames(lab, t_up - 5000) if not d.get("response") and d.get("from") == m
                 and d.get("name") in ("CONTROLLER_REGISTER_BROKER", "CONTROLLER_ELECT_MASTER")]
    timeouts_m = lab.broker_log(m, r"close socket because of timeout", files=("remoting.log",))
    # 7. replication resumes: what commits, in which order, and who is master from which SyncStateSet
    pushes_dropped = sum(proxy_acts(lab, f) for f in fids)
    t_lift = time.time() * 1000
    for f in fids:
        lab.lift(f)
    lab.note(f"PUSH drop lifted ({pushes_dropped} PUSH requests dropped)")
    lab.try_wait(lambda x: x.leader is not None and x.leader.master is not None
                 and x.t0 > t_lift + 3000, 90)
    samples: list[str] = []
    for _ in range(3):
        x = lab.fresh(60)
        samples.append(f"t={lab.now() / 1000:.0f}s {ctl_state(x)}; " + "; ".join(
            f"{b} role {x.brokers[b].role} max {x.brokers[b].max_offset} epochs {epochs_text(x.brokers[b].epochs)}"
            for b in lab.spec.brokers if b in x.brokers and x.brokers[b].ok))
    final = lab.fresh(60)
    new_master = final.leader.master if final.leader else None
    seen = lab.consume(TOPIC, 12) if (new_master and acked2) else []
    seen_keys = {str(d.get("key")) for d in seen}
    lost = [r for r in acked2 if str(r.get("key")) not in seen_keys] if seen or acked2 else []
    stalled = [e for e in F.read_dledger_log(lab.spec.store_dir(leader)).entries if e.index > idx0]
    follower_log = F.read_dledger_log(lab.spec.store_dir(followers[0]))
    replicated = sum(1 for e in follower_log.entries if e.index > idx0)
    kinds = [ev.to_kit() for e in stalled for ev in e.events if not isinstance(ev, F.UnknownEvent)]
    log_lines = [f"#{e.index}: " + ("; ".join(event_text(ev.to_kit()) for ev in e.events
                                              if not isinstance(ev, F.UnknownEvent)) or "(empty)")
                 for e in stalled]
    first_stale = next((k for k, ev in enumerate(kinds) if ev.get("type") == "AlterSyncStateSet"
                        and sid in ev.get("newSyncStateSet", [])), None)
    deposed_after = [ev for ev in kinds[(first_stale or 0) + 1:] if ev.get("type") == "ElectMaster"]
    fr = [frame_line(lab, d, t_arm) for d in frames(lab, t_arm - 1000)
          if d.get("req_name", d.get("name")) in ("CONTROLLER_ALTER_SYNC_STATE_SET", "CONTROLLER_ELECT_MASTER",
                                                  "NOTIFY_BROKER_ROLE_CHANGED")]
    ctl_fail = lab.broker_log(leader, r"Failed to append entry to DLedger", files=("broker_default.log",
                                                                                   "broker.log"))
    sl_no_point = lab.broker_log(sl, r"Failed to find a consistent point")
    m_alters_new = [d for d in frames(lab, t_up) if d.get("from") == m
                    and d.get("name") == "CONTROLLER_ALTER_SYNC_STATE_SET" and float(d.get("t", 0)) < t_lift]
    evidence = [
        f"before: {ctl_state(out)}; {m}'s proposals before its SIGKILL at t={(t_kill - t_arm) / 1000:.1f}s "
        f"(t: seconds since the PUSH drop): {len(proposals)} (first {first_alter.get('ext')})",
        f"{m}'s new process (restarted at t={(t_up - t_arm) / 1000:.1f}s): {len(asks_of_m)} REGISTER/ELECT "
        f"requests, {len(answers_to_m)} answered ("
        + ", ".join(sorted({f"code {d.get('code')}" for d in answers_to_m})) + f"); {len(timeouts_m)} of its "
        f"controller calls timed out after 3 s and closed the connection ('close socket because of timeout'); "
        + (f"answered as master at t={(float(answered['t']) - t_arm) / 1000:.1f}s: {answered.get('ext')}"
           if answered else "never answered as master while nothing committed"),
        f"the controller leader {leader}: {len(ctl_fail)} 'Failed to append entry to DLedger' (5 s waits); its "
        f"state while the drop held: {ctl_state(during)}",
        f"{pushes_dropped} PUSH requests dropped; lifted at t={(t_lift - t_arm) / 1000:.1f}s; {len(stalled)} "
        f"entries appended during the drop, {replicated} of them on {followers[0]} afterwards:",
        *[f"  {x}" for x in log_lines],
        *[f"frame {x}" for x in fr[-16:]],
        *samples,
        f"final: {ctl_state(final)}; {sl}'s handshakes with {m}'s new process: {len(sl_no_point)} "
        f"'Failed to find a consistent point'",
    ]
    if acked2:
        evidence.append(f"{len(acked2)} messages acknowledged by {m}'s new process alone; a consumer read "
                        f"{len(seen)} after the lift; {len(lost)} of the acknowledged ones missing")
    data = {"master": m, "slave": sl, "leader": leader, "masterId": mid, "slaveId": sid, "answeredEpoch": me_new,
            "pushesDropped": pushes_dropped, "proposalsBeforeKill": len(proposals), "samples": samples,
            "stalledEntries": log_lines, "frames": fr, "newMaster": new_master, "acked": len(acked2),
            "lost": [r.get("key") for r in lost], "answered": answered is not None}
    stale_applied = first_stale is not None and not m_alters_new and replicated >= len(stalled) > 0
    if answered is not None and new_master == sl and lost and stale_applied:
        return Verdict(REPRODUCED, evidence, f"the proposal {{{m}, {sl}}} of {m}'s previous process committed "
                       f"after {m}'s new process had been confirmed master at masterEpoch {me_new} with "
                       f"SyncStateSet {{{m}}}; {sl}, which never held what the new process acknowledged, was "
                       f"then elected from that SyncStateSet: {len(lost)} acknowledged messages lost", data)
    if answered is None and stale_applied and deposed_after:
        return Verdict(NOT_REPRODUCED, evidence,
                       f"the stale proposal did commit after {m}'s restart, but {m}'s new process was never "
                       f"confirmed master while it waited: each write event held the controller's event queue "
                       f"5 s, {m}'s calls timed out (3 s) and closed their connections, and the election the "
                       f"controller ran on {m}'s death was logged behind the proposal ({len(deposed_after)} "
                       f"ElectMaster entries after it): the proposal and {m}'s deposition committed together; "
                       f"final {ctl_state(final)}", data)
    return Verdict(INCONCLUSIVE if answered is None else NOT_REPRODUCED, evidence,
                   f"answered as master: {answered is not None}; stale proposal applied: {stale_applied}; "
                   f"ElectMaster entries after it: {len(deposed_after)}; elected after the lift: {new_master}; "
                   f"acknowledged messages missing: {len(lost)}", data)


def event_text(ev: dict[str, Any]) -> str:
    rest = {k: v for k, v in ev.items() if k not in ("type", "brokerName", "clusterName")}
    return f"{ev.get('type')} {json.dumps(rest, sort_keys=True)}"

