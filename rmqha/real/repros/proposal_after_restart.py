"""F-PROPOSAL-AFTER-RESTART on a real build: a killed master's SyncStateSet proposal, held in the network, reaches the
controller after the master's new process has registered and acknowledged messages alone; then the old
connection's close does.

The Java this turns on (5.3.3): the master proposes a SyncStateSet over its one channel to the controller
(``ReplicasManager.doReportSyncStateSetChanged`` -> ``BrokerOuterAPI.alterSyncStateSet``, the same channel as the
oneway ``sendHeartbeatToController``). The restarted process registers on a new channel
(``ReplicasManager.startBasicService`` -> ``registerBrokerToController``); the controller answers it master when
the master it has is alive (``ReplicasInfoManager.registerBroker``: ``alivePredicate``, i.e.
``DefaultBrokerHeartbeatManager.isBrokerActive``, the last heartbeat within the broker's timeout), with its
SyncStateSet, and the broker takes it (``ReplicasManager.changeToMaster``). ``ReplicasInfoManager.alterSyncStateSet``
checks the request's master id, masterEpoch, syncStateSetEpoch and each member's registration and liveness;
nothing in it tells the master's two processes apart. ``DefaultBrokerHeartbeatManager.onBrokerHeartbeat`` keeps the
channel an entry was created with; ``onBrokerChannelClose`` removes the entry whose channel closed and reports the
broker inactive (``ControllerManager.onBrokerInactive`` -> ``triggerElectMaster`` when it is the master).

The scenario (nameserver, controller c0, two brokers, ``allAckInSyncStateSet`` true, the brokers' controller
heartbeat timeout at RocketMQ's default 10 s):

1. M master, S slave, 10 messages in both. S is cut from M at the proxy (both ways) until c0's SyncStateSet is
   {M}; 5 messages acknowledged by M alone (S is behind).
2. The proxy's ``hold-conn`` is armed on M's open connection to c0 at its next CONTROLLER_ALTER_SYNC_STATE_SET:
   from that request on, what the connection carries to c0, and its close, are held in the proxy (which keeps the
   socket to c0 open), whatever becomes of M's process; connections M opens later pass.
3. The cut heals; S catches up; M proposes {M, S}: held (the proxy's ``act`` line shows the frame, its header and
   body). At once S is cut from M again (so that M's new process cannot take S back in itself), and M is
   SIGKILLed (within its 3 s RPC timeout, before M's client would close that channel itself) and restarted.
4. M's new process registers on a new connection: answered master at the masterEpoch of before with SyncStateSet
   {M}? (the proxy's record of CONTROLLER_REGISTER_BROKER answers, with the answer's body); the admin API shows it
   master; 20 messages, acknowledged by M alone (S is cut).
5. The hold is released: the old connection's bytes (heartbeats, the proposal), then its FIN, reach c0. What c0
   applied (its DLedger log, read with ``files.read_dledger_log``), its answer to the proposal (the proxy), its own
   log lines (``Channel ... inactive``, ``Rejecting alter syncStateSet``), the admin API (SyncStateSet, master)
   and, after the cut heals, the final master's commit log against the acknowledged messages say what happened.

Every precondition is checked as reached (the proposal in the held bytes, the restart's registration answered as
master at the same masterEpoch with SyncStateSet {M}, acknowledged messages): otherwise INCONCLUSIVE, saying which.

Pure helpers, tested on planted lines: ``held_acts``, ``master_answer``, ``stale_outcome``, ``judge``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ...impl.sim.report import members
from .. import files as F
from ..lab import Lab, LabError, log_ms
from ..observe import Snapshot
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro
from .confirm_offset import keys_in, lab_s, proxy_lines, short, sss_text, wall_ms

TOPIC = "ReproHeldProposal"
ALTER = "CONTROLLER_ALTER_SYNC_STATE_SET"
REGISTER = "CONTROLLER_REGISTER_BROKER"
HB_TIMEOUT_MS = 10_000  # the brokers' controllerHeartBeatTimeoutMills: RocketMQ's default
PROPOSAL_WAIT_S = 60
ANSWER_WAIT_S = 90
CTL_LOGS = ("broker_default.log", "broker.log", "controller.log", "controller_default.log", "remoting.log")
CTL_LINES = (r"inactive|expired|Rejecting alter syncStateSet|Elect a new master|elect-master|"
             r"ElectMaster|AlterSyncStateSet|alterSyncStateSet")


# --------------------------------------------------------------------------------------------- pure helpers


def held_acts(lines: list[dict[str, Any]], fid: str) -> list[dict[str, Any]]:
    """The proxy's ``act`` lines of the hold ``fid`` for frames it held, in order."""
    return [d for d in lines if d.get("k", "act") == "act" and d.get("id") == fid and d.get("held")]


def released_acts(lines: list[dict[str, Any]], fid: str) -> list[dict[str, Any]]:
    return [d for d in lines if d.get("k", "act") == "act" and d.get("id") == fid and d.get("released")]


def master_answer(frames: list[dict[str, Any]], node: str, mid: int, since_ms: float) -> dict[str, Any] | None:
    """The first answer (the proxy's frames) to ``node``'s CONTROLLER_REGISTER_BROKER since ``since_ms`` naming
    broker ``mid`` master (code 0, ``masterBrokerId`` in its header)."""
    for d in frames:
        if (d.get("response") and d.get("to") == node and d.get("req_name") == REGISTER and d.get("code") == 0
                and float(d.get("t", 0)) >= since_ms
                and str((d.get("ext") or {}).get("masterBrokerId")) == str(mid)):
            return d
    return None


def answer_sss(d: dict[str, Any]) -> tuple[list[int], int | None]:
    """The SyncStateSet and its epoch in a register answer's body (``SyncStateSet`` JSON)."""
    raw = d.get("body")
    body: dict[str, Any] = raw if isinstance(raw, dict) else {}
    sss = body.get("syncStateSet") or []
    ep = body.get("syncStateSetEpoch")
    return sorted(int(x) for x in sss), (int(ep) if ep is not None else None)


@dataclass
class Stale:
    """What the controller's committed log shows after the release."""

    applied: bool  # an AlterSyncStateSet taking in S after the release
    elected: int | None  # the broker id a later ElectMaster made master (None: none elected)
    elect_tried: bool  # an ElectMaster entry after the release (elected or not)
    lines: list[str]


def stale_outcome(entries: list[tuple[int, list[dict[str, Any]]]], mid: int, sid: int) -> Stale:
    """Read the controller's log entries appended after the release (index, kit events): was S taken into the
    SyncStateSet, and did an election follow?"""
    applied = False
    elected: int | None = None
    tried = False
    lines = []
    for idx, evs in entries:
        for ev in evs:
            t = ev.get("type")
            rest = {k: v for k, v in ev.items() if k not in ("type", "brokerName", "clusterName")}
            lines.append(f"#{idx} {t} {rest}")
            if t == "AlterSyncStateSet" and sid in ev.get("newSyncStateSet", []) and not tried:
                applied = True
            if t == "ElectMaster":
                tried = True
                if ev.get("newMasterElected") and elected is None:
                    elected = ev.get("newMasterBrokerId")
    return Stale(applied, elected, tried, lines)


def judge(stale: Stale, sid: int, lacking: int, lost: int, answer_code: int | None,
          answer_remark: str | None) -> tuple[str, str]:
    """The verdict once every precondition was reached: REPRODUCED when the stale proposal was applied while S
    lacked messages M's new process had acknowledged (SYNC-SSS-HOLDS-ACKED; with SYNC-NO-ACK-LOSS when S was then
    elected and the messages are gone); NOT_REPRODUCED when the controller did not apply it."""
    if stale.applied and lacking > 0:
        tail = ""
        if stale.elected == sid and lost > 0:
            tail = (f"; the old connection's close then had S elected master: {lost} acknowledged messages lost "
                    "(SYNC-NO-ACK-LOSS)")
        elif stale.elect_tried:
            tail = f"; an election followed (elected: {stale.elected}), {lost} acknowledged messages lost"
        return REPRODUCED, (f"the killed process's proposal, delivered after the new process had registered, was "
                            f"applied: the SyncStateSet took in S, which lacked {lacking} messages the new process "
                            f"had acknowledged alone (SYNC-SSS-HOLDS-ACKED){tail}")
    if stale.applied:
        return NOT_REPRODUCED, "the stale proposal was applied, but S lacked none of the acknowledged messages"
    why = f"answer code {answer_code}" + (f" ({answer_remark})" if answer_remark else "") \
        if answer_code is not None else "no answer seen"
    return NOT_REPRODUCED, (f"the controller did not take S into the SyncStateSet from the stale proposal ({why})"
                            + (f"; elected after the release: {stale.elected}" if stale.elect_tried else ""))


# --------------------------------------------------------------------------------------------- the run


def _ctl_entries(lab: Lab, ctl: str, after: int) -> list[tuple[int, list[dict[str, Any]]]]:
    log = F.read_dledger_log(lab.spec.store_dir(ctl))
    return [(e.index, [ev.to_kit() for ev in e.events if not isinstance(ev, F.UnknownEvent)])
            for e in log.entries if e.index > after]


def _ledger_end(lab: Lab, ctl: str) -> int:
    return F.read_dledger_log(lab.spec.store_dir(ctl)).ledger_end_index


def _max_offset(s: Snapshot | None, node: str) -> int | None:
    b = s.brokers.get(node) if s else None
    return b.max_offset if b is not None and b.ok else None


def _ctl_lines(lab: Lab, ctl: str, since_ms: float, n: int = 12) -> list[str]:
    out = [x.strip() for x in lab.broker_log(ctl, CTL_LINES, files=CTL_LOGS) if (log_ms(x) or 0) >= since_ms - 1000]
    return [short(x, 240) for x in out[:n]]


@repro("F-PROPOSAL-AFTER-RESTART",
       title="A killed master's proposal, held by the network, is applied after the master restarted",
       invariant="SYNC-SSS-HOLDS-ACKED (then SYNC-NO-ACK-LOSS: the old connection's close has the slave elected)",
       how="nameserver, controller c0, two brokers, allAckInSyncStateSet=true, the brokers' controller heartbeat "
           "timeout at RocketMQ's default 10 s; 10 messages in both; the slave S is cut from the master M at the "
           "proxy (both ways) until c0's SyncStateSet is {M}, 5 messages acknowledged by M alone; the proxy's "
           "hold-conn is armed on M's open connection to c0 at its next CONTROLLER_ALTER_SYNC_STATE_SET (from that "
           "request on, the connection's bytes to c0 and its close are held in the proxy, which keeps its socket "
           "to c0 open, while connections M opens later pass); the cut heals, S catches up and M proposes {M, S}: "
           "held; S is cut from M again, M is SIGKILLed at once and restarted; once M's new process has been "
           "answered master (CONTROLLER_REGISTER_BROKER) at the masterEpoch of before with SyncStateSet {M}, it "
           "takes 20 messages, acknowledged by M alone; then the hold is released (the held heartbeats and the "
           "proposal, then the old connection's FIN); c0's committed log, its answer, its log lines and the admin "
           "API say what it applied and whom it elected, and after the cut heals the final master's commit log is "
           "read for the acknowledged messages",
       config={"cluster": {"brokers": 2}, "broker": {"controllerHeartBeatTimeoutMills": HB_TIMEOUT_MS},
               "store": {"allAckInSyncStateSet": True}},
       expect={"5.3.3": "present (2 of 2 runs that reached the window: ReplicasInfoManager.alterSyncStateSet cannot "
                        "tell the master's two processes apart; a run whose restart outlasts the 10 s heartbeat "
                        "timeout is inconclusive)",
               "5.4.0": "not run", "5.5.0": "not run"},
       minutes=2.5)
def proposal_after_restart(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    ctl = s.leader.node
    sl = next(b for b in lab.spec.brokers if b != m)
    id_of = {n: i for i, n in lab.ids().items()}
    mid, sid = id_of[m], id_of[sl]
    lab.create_topic(TOPIC, 1)
    w = lab.produce(TOPIC, 10, "w-", interval_ms=20)
    lab.note(f"{m} (id {mid}) master, {sl} (id {sid}) slave, {ctl} controller; "
             f"{sum(1 for r in w if r.get('status') == 'SEND_OK')}/10 SEND_OK")
    ev: list[str] = []
    # 1. S out of the SyncStateSet
    cut = lab.partition([m], [sl])
    out = lab.wait(lambda x: x.leader is not None and x.leader.master == m and sorted(x.leader.sss) == [mid],
                   60, f"the SyncStateSet shrunk to {{{m}}}")
    me0 = out.leader.master_epoch if out.leader else None
    a = lab.produce(TOPIC, 5, "a-", interval_ms=20)
    ev.append(f"before: {sss_text(lab, out)}; {sum(1 for r in a if r.get('status') == 'SEND_OK')}/5 acknowledged "
              f"by {m} alone while {sl} was cut")
    # 2. the hold, armed at M's next proposal
    t_arm = wall_ms()
    fid, conns = lab.hold_conn(m, ctl, code=ALTER)
    ev.append(f"{lab_s(lab, t_arm)} hold-conn {fid} armed on {m}'s open connection(s) {conns} to {ctl} at its next "
              f"{ALTER}")
    # 3. S catches up, M proposes: held
    lab.heal(cut)
    held: dict[str, Any] | None = None
    end = time.monotonic() + PROPOSAL_WAIT_S
    while held is None and time.monotonic() < end:
        held = next((d for d in held_acts(proxy_lines(lab, "act", t_arm), fid) if d.get("name") == ALTER), None)
        if held is None:
            time.sleep(0.1)
    if held is None:
        lab.lift(fid)
        return Verdict(INCONCLUSIVE, ev, f"{m} sent no {ALTER} on the held connection within {PROPOSAL_WAIT_S} s "
                                         "of the heal")
    t_prop = float(held["t"])
    cut2 = lab.partition([m], [sl])
    t_kill = wall_ms()
    lab.kill(m, "its proposal held in the network")
    ev.append(f"{lab_s(lab, t_prop)} {m}'s proposal held at the proxy: conn {held.get('conn')} opaque "
              f"{held.get('opaque')} header {held.get('ext')} body {held.get('body')}; {sl} cut from {m} again and "
              f"{m} SIGKILLed {(t_kill - t_prop) / 1000:.2f} s later")
    lifted: list[str] = []
    try:
        return _after_kill(lab, ev, m, sl, ctl, mid, sid, me0, fid, held, t_prop, t_kill, cut2, lifted)
    finally:
        if not lifted:  # a precondition failed before the release: nothing stays held
            lab.lift(fid)


def _after_kill(lab: Lab, ev: list[str], m: str, sl: str, ctl: str, mid: int, sid: int, me0: int | None, fid: str,
                held: dict[str, Any], t_prop: float, t_kill: float, cut2: str, lifted: list[str]) -> Verdict:
    lab.restart(m)
    t_up = wall_ms()
    ev.append(f"{lab_s(lab, t_up)} {m} restarted (ready {(t_up - t_kill) / 1000:.1f} s after the kill)")
    # 4. the new process answered master at the same masterEpoch with {M}?
    ans: dict[str, Any] | None = None
    end = time.monotonic() + ANSWER_WAIT_S
    while ans is None and time.monotonic() < end:
        ans = master_answer(lab.frames(t_kill), m, mid, t_kill)
        if ans is None:
            time.sleep(0.3)
    regs = [d for d in lab.frames(t_kill) if d.get("to") == m and d.get("req_name") == REGISTER
            and d.get("response")]
    data: dict[str, Any] = {"master": m, "slave": sl, "masterId": mid, "slaveId": sid, "masterEpoch": me0,
                            "tProposal": t_prop, "tKill": t_kill, "heldOpaque": held.get("opaque")}
    if ans is None:
        ev += [f"{lab_s(lab, float(d['t']))} answer to {m}'s registration "
               f"({(float(d['t']) - t_prop) / 1000:.1f} s after the held proposal): code {d.get('code')} "
               f"{d.get('ext')} {d.get('body')}" for d in regs[:4]]
        first = regs[0] if regs else None
        data["firstAnswerAfterProposal_s"] = round((float(first["t"]) - t_prop) / 1000, 1) if first else None
        return Verdict(INCONCLUSIVE, ev, f"{m}'s new process was not answered master within {ANSWER_WAIT_S} s"
                       + (f": its first registration was answered {(float(first['t']) - t_prop) / 1000:.1f} s "
                          f"after the held proposal, with no master (the controller's "
                          f"{HB_TIMEOUT_MS / 1000:.0f} s heartbeat timeout had passed: the restart was too slow "
                          "for the window)" if first else ""), data)
    me_new = int((ans.get("ext") or {}).get("masterEpoch", -1))
    sss, sse = answer_sss(ans)
    ev.append(f"{lab_s(lab, float(ans['t']))} {ctl} answered {m}'s new registration "
              f"({(float(ans['t']) - t_prop) / 1000:.1f} s after the held proposal): {ans.get('ext')}, "
              f"SyncStateSet {members(map(str, sss))} epoch {sse}")
    data.update({"answeredEpoch": me_new, "answeredSss": sss, "answerAfterProposal_s":
                 round((float(ans["t"]) - t_prop) / 1000, 1)})
    if me0 is not None and me_new != me0:
        return Verdict(INCONCLUSIVE, ev, f"{m}'s new process was answered master at masterEpoch {me_new}, not "
                                         f"{me0}: the proposal is stale by its epoch", data)
    if sss != [mid]:
        return Verdict(INCONCLUSIVE, ev, f"the answer's SyncStateSet is {members(map(str, sss))}, not {{{mid}}}", data)
    try:
        lab.wait(lambda x: m in x.brokers and x.brokers[m].ok and x.brokers[m].role == "MASTER"
                 and x.leader is not None and x.leader.master == m and x.t0 > float(ans["t"]), 60,
                 f"{m}'s new process acting as master")
    except LabError as exc:
        return Verdict(INCONCLUSIVE, ev, str(exc), data)
    # 5. acknowledged by M alone
    sent = lab.produce(TOPIC, 20, "p-", interval_ms=20, timeout=120)
    acked = [r for r in sent if r.get("status") == "SEND_OK"]
    before = lab.fresh(30)
    s_max = _max_offset(before, sl)
    lacking = [r for r in acked if s_max is not None and int(r.get("commitLogOffset", -1)) >= s_max]
    ev.append(f"{len(acked)}/20 acknowledged by {m}'s new process alone; {sl}'s max offset {s_max} "
              f"(lacks {len(lacking)} of them); {sss_text(lab, before)}")
    data.update({"acked": len(acked), "lacking": len(lacking), "slaveMax": s_max})
    if not acked:
        return Verdict(INCONCLUSIVE, ev, f"{m}'s new process acknowledged nothing", data)
    b = before.leader
    if b is None or b.master != m or b.master_epoch != me0 or sorted(b.sss) != [mid]:
        return Verdict(INCONCLUSIVE, ev, f"before the release the controller no longer held {m} master at "
                                         f"masterEpoch {me0} with {{{m}}}: {sss_text(lab, before)}", data)
    # 6. the release: the old connection's bytes, then its close
    idx0 = _ledger_end(lab, ctl)
    t_rel = wall_ms()
    lab.lift(fid)
    lifted.append(fid)
    ev.append(f"{lab_s(lab, t_rel)} hold released ({(t_rel - t_prop) / 1000:.1f} s after the proposal; the "
              f"controller's log ended at index {idx0})")
    resp: dict[str, Any] | None = None
    end = time.monotonic() + 20
    while resp is None and time.monotonic() < end:
        resp = next((d for d in lab.frames(t_rel) if d.get("response") and d.get("req_name") == ALTER
                     and d.get("from") == ctl and d.get("to") == m and d.get("opaque") == held.get("opaque")
                     and d.get("conn") == held.get("conn")), None)
        if resp is None:
            time.sleep(0.3)
    lab.try_wait(lambda x: x.t0 > t_rel + 8000, 30)
    after = lab.fresh(30)
    acts = released_acts(proxy_lines(lab, "act", t_prop - 1000), fid)
    closes = [d for d in proxy_lines(lab, "conn", t_rel) if d.get("conn") == held.get("conn")]
    held_all = held_acts(proxy_lines(lab, "act", t_prop - 1000), fid)
    ev.append(f"held on conn {held.get('conn')}: {len(held_all)} frames ("
              + ", ".join(f"{d.get('name')}#{d.get('opaque')}" for d in held_all[:8])
              + (" ..." if len(held_all) > 8 else "") + "); "
              + "; ".join(f"released {d.get('frames')} frames, {d.get('bytes')} bytes, close held: {d.get('close')}"
                          for d in acts)
              + "; " + "; ".join(f"{lab_s(lab, float(d['t']))} conn {d.get('conn')} {d.get('ev')} ({d.get('why')})"
                                 for d in closes))
    if resp is not None:
        ev.append(f"{lab_s(lab, float(resp['t']))} {ctl}'s answer to the stale proposal: code {resp.get('code')} "
                  f"{resp.get('ext')} remark {resp.get('remark')} body {resp.get('body')}")
    else:
        shut = next((d for d in closes if d.get("ev") == "close"), None)
        ev.append(f"no answer of {ctl} to the stale proposal on the old connection"
                  + (f" (closed {float(shut['t']) - t_rel:.0f} ms after the release, {shut.get('why')})"
                     if shut else ""))
    stale = stale_outcome(_ctl_entries(lab, ctl, idx0), mid, sid)
    ev += [f"{ctl}'s log after the release: {x}" for x in stale.lines[:10]]
    ev += [f"{ctl}: {x}" for x in _ctl_lines(lab, ctl, t_rel)]
    ev.append(f"{lab_s(lab, after.t)} after the release: {sss_text(lab, after)}")
    # 7. settle: the cut heals, whoever is master; the acknowledged messages in the final master's log?
    lab.heal(cut2)
    fin = lab.try_wait(lambda x: x.t0 > wall_ms() - 500 and x.leader is not None and x.leader.master is not None,
                       60) or lab.snap()
    time.sleep(5)
    fin = lab.fresh(60)
    fm = fin.leader.master if fin.leader else None
    have = keys_in(lab.files().logs.get(fm)) if fm else set()
    lost = [r for r in acked if str(r.get("key")) not in have] if fm else []
    ev.append(f"final: {sss_text(lab, fin)}; {len(lost)} of the {len(acked)} messages {m}'s new process "
              f"acknowledged are missing from {fm}'s commit log")
    data.update({"stale": stale.lines, "applied": stale.applied, "elected": stale.elected,
                 "answerCode": resp.get("code") if resp else None, "finalMaster": fm,
                 "lost": [r.get("key") for r in lost]})
    verdict, why = judge(stale, sid, len(lacking), len(lost), resp.get("code") if resp else None,
                         resp.get("remark") if resp else None)
    return Verdict(verdict, ev, why, data)
