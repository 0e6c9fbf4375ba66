"""SyncStateSet proposals on a real build: a master's queued proposal sent with a later term's epochs
(F-STALE-SSS-PROPOSAL), and a newer proposal pushing an accepted one out of the master's ack set (F-GAP-UNION).

Both live in the master's proposal path. ``AutoSwitchHAService.maybeExpandInSyncStateSet`` (on every ack of a
caught-up slave outside the confirmed, "local", set) and ``removeConnection`` decide a new set, mark it as the
"remote" set (``markSynchronizingSyncStateSet``: ``remoteSyncStateSet.clear(); addAll(newSet)``) and submit it to
the single-thread ``AutoSwitchHAService_Executor_``, whose task is ``ReplicasManager.doReportSyncStateSetChanged``:
``alterSyncStateSet(..., this.masterEpoch, newSet, this.syncStateSetEpoch)``, epochs read when the task runs, the
call blocking up to 3 s. While a proposal is in flight the master waits for acks over local ∪ remote
(``getSyncStateSet``); only a confirmed set (``setSyncStateSet``: the controller's answer, or the periodic metadata
sync) ends it.

The means used here, besides partitions: the controller's answers to the master's ALTER_SYNC_STATE_SET held at the
proxy for less than the broker's 3 s RPC timeout (``delay-response``), which keeps the executor busy without a
timeout (a timed-out call closes the broker's channel, ``clientCloseSocketIfTimeout``, which the controller takes
for the broker's death: ``DefaultBrokerHeartbeatManager.onBrokerChannelClose``). The proxy records an answer when
the controller sends it, so the harness knows what the controller decided while the master does not yet.

Helpers ``lab.py`` lacks, kept here: ``alter_calls`` (each ALTER_SYNC_STATE_SET request of a node with its answer,
matched by connection and opaque), ``lines_since`` (a node's RocketMQ log lines from a time on), ``sends_now``
(the background producer's results so far), ``ctl_events`` (the committed controller log, replayed, as lines).
"""

from __future__ import annotations

import re
import time
from typing import Any

from ...impl.sim.report import members
from .. import files as F
from ..check import dledger_entries
from ..clients import Tail
from ..lab import Lab, log_ms
from ..observe import Snapshot
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro

ALTER = "CONTROLLER_ALTER_SYNC_STATE_SET"
CAUGHT_UP = re.compile(r"The slave (\d+) has caught up, slaveMaxOffset: (-?\d+)")
NOTIFY = re.compile(r"Notify the syncStateSet has been changed into \[([0-9, ]*)\]")
RUN_ALTER = re.compile(r"Event queue run event alterSyncStateSet, get the result .*?newSyncStateSet=\[([0-9, ]*)\]")
ANSWER_HOLD_MS = 2500  # < the broker's 3 s alterSyncStateSet timeout (BrokerOuterAPI.alterSyncStateSet)


# --------------------------------------------------------------------------------------------- helpers


def wall() -> float:
    return time.time() * 1000


def rel(lab: Lab, t_ms: float) -> str:
    """A wall-clock time as seconds of the run (the timeline's clock)."""
    return f"{(t_ms - lab.spec.created_ms) / 1000:.1f}s"


def id_of(lab: Lab, node: str) -> int | None:
    return next((i for i, n in lab.ids().items() if n == node), None)


def ctl_text(lab: Lab, s: Snapshot | None) -> str:
    lead = s.leader if s else None
    if lead is None:
        return "no controller leader"
    return f"master {lead.master} mE {lead.master_epoch} SSS {members(lab.sss_nodes(s))} sE {lead.sss_epoch}"


def lines_since(lab: Lab, node: str, rx: re.Pattern[str], since_ms: float,
                files: tuple[str, ...] = ("store.log",)) -> list[str]:
    """``node``'s log lines matching ``rx`` logged at or after ``since_ms`` (to the second: RocketMQ's pattern has
    no milliseconds, so a line up to 1 s earlier may be included)."""
    return [x.strip() for x in lab.broker_log(node, rx.pattern, files=files) if (log_ms(x) or 0) >= since_ms - 999]


def caught_up(lab: Lab, node: str, slave_id: int | None, since_ms: float) -> list[str]:
    """``node``'s decisions to take ``slave_id`` into its SyncStateSet (``maybeExpandInSyncStateSet``)."""
    return [x for x in lines_since(lab, node, CAUGHT_UP, since_ms)
            if (m := CAUGHT_UP.search(x)) is not None and int(m.group(1)) == slave_id]


def alter_calls(lab: Lab, node: str, since_ms: float) -> list[dict[str, Any]]:
    """``node``'s ALTER_SYNC_STATE_SET requests as the proxy read them, each with ``answer`` (the controller's
    response frame, when the proxy has read it: it is recorded when the controller sends it, before any delay)."""
    fr = lab.frames(since_ms)
    answers = {(d.get("conn"), d.get("opaque")): d for d in fr
               if d.get("response") and d.get("req_name") == ALTER and d.get("to") == node}
    out = []
    for d in fr:
        if not d.get("response") and d.get("name") == ALTER and d.get("from") == node:
            out.append({**d, "answer": answers.get((d.get("conn"), d.get("opaque")))})
    return out


def call_text(lab: Lab, c: dict[str, Any]) -> str:
    ext = c.get("ext") or {}
    a = c.get("answer")
    ans = "no answer read"
    if a is not None:
        aext = a.get("ext") or {}
        ans = (f"answered at {rel(lab, float(a['t']))} code {a.get('code')}"
               + (f" newSyncStateSetEpoch {aext.get('newSyncStateSetEpoch')}" if aext.get("newSyncStateSetEpoch")
                  else "")
               + (f" ({str(a.get('remark'))[:110]})" if a.get("remark") else ""))
    return f"{rel(lab, float(c['t']))} {c.get('from')}->{c.get('to')} ALTER_SYNC_STATE_SET masterEpoch " \
           f"{ext.get('masterEpoch')}: {ans}"


def sends_now(lab: Lab) -> list[dict[str, Any]]:
    """The background producer's send results so far (its file read from the start)."""
    if lab.producer is None:
        return []
    return [d for d in Tail(lab.producer.path).read() if d.get("k") == "send-result"]


def from_node(lab: Lab, r: dict[str, Any], node: str) -> bool:
    return str(r.get("addr", "")).startswith(lab.spec.host(node).front + ":")


def ok(r: dict[str, Any]) -> bool:
    return r.get("status") == "SEND_OK"


def send_text(lab: Lab, r: dict[str, Any]) -> str:
    return (f"{r.get('key')} {r.get('status')} commitLogOffset {r.get('commitLogOffset')} acknowledged at "
            f"{rel(lab, float(r['t']))}")


def keys_in(view: F.CommitLogView | None) -> set[str]:
    return {k for m in (view.messages if view else []) for k in m.keys}


def ctl_events(lab: Lab) -> list[tuple[int, dict[str, Any]]]:
    """The committed controller log of the node holding the most entries: (index, event) in order."""
    best: list[tuple[int, dict[str, Any]]] = []
    for c in lab.spec.controllers:
        try:
            entries = dledger_entries(F.read_dledger_log(lab.spec.store_dir(c)))
        except (F.RealFileError, RuntimeError):
            continue
        evs = [(e.index, ev) for e in entries for ev in e.events]
        if len(evs) > len(best):
            best = evs
    return best


def event_text(ix: int, ev: dict[str, Any]) -> str:
    kind = ev.get("type")
    if kind == "AlterSyncStateSet":
        return f"#{ix} AlterSyncStateSet {members(map(str, sorted(ev.get('newSyncStateSet') or [])))}"
    if kind == "ElectMaster":
        return (f"#{ix} ElectMaster {ev.get('newMasterBrokerId')}" if ev.get("newMasterElected")
                else f"#{ix} ElectMaster(no master)")
    return f"#{ix} {kind}"


def poll(fn: Any, timeout: float, every: float = 0.05) -> Any:
    """Call ``fn`` until it returns something truthy; that value, or None after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() >= end:
            return None
        time.sleep(every)


def master_epoch_named(lab: Lab, node: str, mid: int | None, since_ms: float) -> int | None:
    """The highest masterEpoch the controller has named ``node`` (broker id ``mid``) master with since
    ``since_ms``: its answers to the node's REGISTER/ELECT/GET_REPLICA_INFO and its NOTIFY_BROKER_ROLE_CHANGED."""
    best = None
    for d in lab.frames(since_ms):
        ext = d.get("ext") or {}
        if str(ext.get("masterBrokerId")) != str(mid) or ext.get("masterEpoch") in (None, ""):
            continue
        named = (d.get("response") and d.get("to") == node and d.get("code") in (0, 2011)) or \
                (not d.get("response") and d.get("name") == "NOTIFY_BROKER_ROLE_CHANGED" and d.get("to") == node)
        if named:
            e = int(ext["masterEpoch"])
            best = e if best is None else max(best, e)
    return best


# --------------------------------------------------------------------------------------------- F-STALE-SSS-PROPOSAL

STALE_TOPIC = "ReproStaleSss"


@repro("F-STALE-SSS-PROPOSAL",
       title="A SyncStateSet proposal queued in one term is sent with the epochs of the next",
       invariant="SYNC-SSS-HOLDS-ACKED (then SYNC-NO-ACK-LOSS once the slave it put back is elected)",
       how="nameserver, one controller c0, two brokers (master M, slave S), the safe profile "
           "(allAckInSyncStateSet=true); M and S cut from each other at the proxy until the controller's "
           "SyncStateSet is {M}; then M is cut from c0 (both ways) and M<->S healed: S reconnects and catches up, and "
           "on every caught-up ack M decides {M, S} and queues it on its single proposal thread, which sends one "
           "alterSyncStateSet at a time and, c0 being unreachable, spends 3 s on each (a producer writes to M every "
           "50 ms meanwhile, so S acks often); c0 stops hearing M's heartbeats and records 'no master' "
           "(ElectMaster(false), masterEpoch raised, SyncStateSet {M} kept); M and S are cut from each other again "
           "(S holds nothing written from now on); c0's answers to M's ALTER_SYNC_STATE_SET are delayed 2.5 s at "
           "the proxy (below the broker's 3 s timeout: the queue keeps draining at one proposal per 2.5 s instead "
           "of being rejected in milliseconds, and no call times out); M<->c0 is healed: c0 elects M again at a new "
           "masterEpoch with SyncStateSet {M}, M takes it (changeToMasterWhenLastRoleIsMaster: its ack set is {M}) "
           "and acknowledges the producer's messages alone; the first queued proposal M sends under the new "
           "masterEpoch is watched at the proxy; as soon as c0 has answered it with success (c0's answer still held "
           "by the proxy, so M has not learnt it) M is SIGKILLed; the controller elects from its SyncStateSet; "
           "everything is healed, the producer stopped, a consumer reads the topic; the evidence is the "
           "ALTER_SYNC_STATE_SET frames (header masterEpoch, answer code and newSyncStateSetEpoch, times), M's "
           "store.log decisions ('The slave N has caught up', with their times), c0's committed event log and "
           "S's commit log",
       config={"cluster": {"brokers": 2}},
       expect={"5.3.3": "present (ReplicasManager.doReportSyncStateSetChanged reads masterEpoch and "
                        "syncStateSetEpoch when the executor runs the task)",
               "5.4.0": "present (doReportSyncStateSetChanged unchanged; #9897 changes removeConnection only)",
               "5.5.0": "present (as 5.4.0)"},
       minutes=4.0)
def stale_sss_proposal(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    ctl = lab.spec.controllers[0]
    sl = next(b for b in lab.spec.brokers if b != m)
    mid, sid = id_of(lab, m), id_of(lab, sl)
    lab.create_topic(STALE_TOPIC, 1)
    r0 = lab.produce(STALE_TOPIC, 20, "st0-", interval_ms=20)
    lab.note(f"{m} (id {mid}) master, {sl} (id {sid}) slave; {sum(1 for r in r0 if ok(r))}/20 SEND_OK")
    # 1. S out of the SyncStateSet
    p_ms = lab.partition([m], [sl])
    out = lab.wait(lambda x: x.leader is not None and x.leader.master == m and sid not in x.leader.sss, 60,
                   f"the SyncStateSet without {sl}")
    assert out.leader is not None
    me0 = out.leader.master_epoch or 0
    lab.note(f"SyncStateSet without {sl}: {ctl_text(lab, out)}")
    # 2. M cut from the controller; S back: M decides {M, S} on each caught-up ack, one send per 3 s
    p_mc = lab.partition([m], [ctl])
    t_cut = wall()
    lab.heal(p_ms)
    lab.start_producer(STALE_TOPIC, "st1-", interval_ms=50, timeout_ms=3000)
    dep = lab.wait(lambda x: x.leader is not None and x.leader.master != m and (x.leader.master_epoch or 0) > me0,
                   60, f"{ctl} recording no master for {m}")
    lab.note(f"{ctl} without {m}'s heartbeats: {ctl_text(lab, dep)}")
    decided = poll(lambda: (lambda d: d if len(d) >= 3 else None)(caught_up(lab, m, sid, t_cut)), 60, 0.5)
    if not decided:
        lab.heal()
        return Verdict(INCONCLUSIVE, why=f"{m} decided {{{m}, {sl}}} fewer than 3 times within 60 s of the heal "
                                         f"({len(caught_up(lab, m, sid, t_cut))})")
    time.sleep(3.0)  # a few more decisions: the queue grows by one per ack and drains by one per 3 s
    # 3. S cut again: from here on it lacks what M writes
    lab.partition([m], [sl])
    t_cut2 = wall()
    n_decided = len(caught_up(lab, m, sid, t_cut))
    sent_cut = alter_calls(lab, m, t_cut)
    lab.note(f"{sl} cut from {m} again; {m} decided {{{mid}, {sid}}} {n_decided} times since {rel(lab, t_cut)}; "
             f"{len(sent_cut)} of its ALTER_SYNC_STATE_SET requests read by the proxy so far")
    # 4. the controller's answers to M held 2.5 s; M<->controller healed
    fid = lab.proxy_fault("delay-response", code=ALTER, ms=ANSWER_HOLD_MS, **{"from": ctl, "to": m})
    lab.heal(p_mc)
    t_heal = wall()
    me_dep = dep.leader.master_epoch if dep.leader else None

    # 5. M elected again; the first ALTER it sends under the new masterEpoch; kill M once the controller said yes
    def stale_accepted() -> dict[str, Any] | None:
        me = master_epoch_named(lab, m, mid, t_heal)
        if me is None:
            return None
        for c in alter_calls(lab, m, t_heal):
            if str((c.get("ext") or {}).get("masterEpoch")) == str(me) and c.get("answer") is not None:
                if c["answer"].get("code") == 0:
                    return {**c, "me": me}
        return None

    hit = poll(stale_accepted, 90, 0.05)
    t_kill = wall()
    if hit is not None:
        lab.kill(m, "the controller accepted its queued proposal under the new masterEpoch")
    me_new = master_epoch_named(lab, m, mid, t_heal)
    pre = lab.snap()
    sends = lab.stop_producer()
    calls = alter_calls(lab, m, t_cut)
    new_calls = [c for c in calls if me_new is not None and str((c.get("ext") or {}).get("masterEpoch")) == str(me_new)]
    if hit is None:
        lab.heal()
        lab.lift(fid)
        why = (f"{m} was not named master again within 90 s of the heal" if me_new is None else
               f"{m} was elected again at masterEpoch {me_new}, but none of its proposals under it was accepted "
               f"({len(new_calls)} sent: " + "; ".join(call_text(lab, c) for c in new_calls[:4]) + ")")
        verdict = NOT_REPRODUCED if new_calls and all(c.get("answer") is not None for c in new_calls) else INCONCLUSIVE
        return Verdict(verdict, [call_text(lab, c) for c in calls[-12:]], why,
                       {"master": m, "slave": sl, "meNew": me_new, "decided": n_decided})
    lab.note(f"{ctl} accepted {m}'s ALTER_SYNC_STATE_SET sent at {rel(lab, float(hit['t']))} under masterEpoch "
             f"{hit['me']}; {m} SIGKILLed at {rel(lab, t_kill)}, its answer still held at the proxy")
    new = lab.try_wait(lambda x: x.leader is not None and x.leader.master not in (None, m), 60)
    n = new.leader.master if new and new.leader else None
    lab.note(f"after {m}'s death: {ctl_text(lab, new)}")
    lab.heal()
    lab.lift(fid)
    seen = lab.consume(STALE_TOPIC, 12) if n is not None else []
    files = lab.files()
    s_keys = keys_in(files.logs.get(sl))
    s_end = files.logs[sl].end_offset if sl in files.logs else None
    seen_keys = {str(d.get("key")) for d in seen}
    acked = [r for r in sends if ok(r) and from_node(lab, r, m) and float(r["t"]) <= t_kill]
    lacked = [r for r in acked if str(r.get("key")) not in s_keys]
    lost = [r for r in acked if seen and str(r.get("key")) not in seen_keys]
    t_elect = float(hit["t"])  # at the latest the controller had named M master again when M sent this
    alone_before = [r for r in lacked if float(r["t"]) <= float(hit["answer"]["t"])]
    evs = ctl_events(lab)
    late = [ln for ln in caught_up(lab, m, sid, t_cut2 + 1000)]
    decisions = caught_up(lab, m, sid, t_cut)
    notify = lines_since(lab, m, NOTIFY, t_cut)
    run_alter = lines_since(lab, ctl, RUN_ALTER, t_heal, files=("broker_default.log", "broker.log"))
    evidence = [
        f"before: {ctl_text(lab, out)} ({sl} cut from {m} until the SyncStateSet shrank)",
        f"{m} cut from {ctl} at {rel(lab, t_cut)} and {sl} let back: {m}'s store.log has {len(decisions)} "
        f"decisions to take {sl} (id {sid}) in, from '{short(decisions[0], 150)}' to '{short(decisions[-1], 150)}'"
        if decisions else f"{m} cut from {ctl} at {rel(lab, t_cut)}",
        f"{m}'s store.log: {len(notify)} 'Notify the syncStateSet has been changed into' lines since then "
        f"(each a queued proposal); last: {short(notify[-1], 150) if notify else '-'}",
        f"{ctl} without {m}'s heartbeats: {ctl_text(lab, dep)} (masterEpoch {me0} -> {me_dep})",
        f"{sl} cut from {m} again at {rel(lab, t_cut2)}; {m}'s decisions about {sl} after that: {len(late)}",
        f"{m}<->{ctl} healed at {rel(lab, t_heal)}; {ctl}'s answers to {m}'s ALTER_SYNC_STATE_SET held "
        f"{ANSWER_HOLD_MS} ms at the proxy; {m} named master again at masterEpoch {me_new}",
        *[f"frame {call_text(lab, c)}" for c in calls if float(c["t"]) >= t_heal - 1000][:14],
        *[f"{ctl}'s broker_default.log: {short(x, 230)}" for x in run_alter[:3]],
        f"{m} SIGKILLed at {rel(lab, t_kill)}, {(t_kill - float(hit['answer']['t'])):.0f} ms after {ctl} answered "
        f"its proposal (the answer was still held: {m} never learnt it)",
        f"{ctl}'s committed log: " + ", ".join(event_text(i, e) for i, e in evs[-12:]),
        f"{sl}'s commit log ends at {s_end}; messages {m} acknowledged (SEND_OK) that {sl} does not hold: "
        f"{len(lacked)}, {len(alone_before)} of them before {ctl} accepted the proposal"
        + (f" (first {send_text(lab, lacked[0])}, last {send_text(lab, lacked[-1])})" if lacked else ""),
        f"after {m}'s death: {ctl_text(lab, new)}; a consumer read {len(seen)} messages; {len(lost)} acknowledged "
        f"messages missing" + (f": {', '.join(str(r.get('key')) for r in lost[:10])}" if lost else ""),
        f"the producer's history: {len(sends)} sends, {sum(1 for r in sends if ok(r))} SEND_OK "
        f"({sum(1 for r in acked if float(r['t']) >= t_heal)} from {m} after the heal)",
    ]
    stale_ev = next(((i, e) for i, e in evs if e.get("type") == "AlterSyncStateSet"
                     and sid in (e.get("newSyncStateSet") or []) and mid in (e.get("newSyncStateSet") or [])
                     and any(j < i and e2.get("type") == "ElectMaster" and e2.get("newMasterElected")
                             and e2.get("newMasterBrokerId") == mid for j, e2 in evs if j > 0)), None)
    data = {"master": m, "slave": sl, "masterId": mid, "slaveId": sid, "meDeposed": me_dep, "meNew": me_new,
            "decided": len(decisions), "decidedAfterCut": len(late), "lacked": [r.get("key") for r in lacked],
            "lost": [r.get("key") for r in lost], "newMaster": n, "sEnd": s_end,
            "acceptedAt": float(hit["answer"]["t"]), "sentAt": t_elect, "killedAt": t_kill,
            "frames": [call_text(lab, c) for c in calls], "events": [event_text(i, e) for i, e in evs],
            "preKill": ctl_text(lab, pre)}
    if late:
        return Verdict(INCONCLUSIVE, evidence, f"{m} decided to take {sl} in after {sl} was cut again ({len(late)} "
                       "lines): the accepted proposal may be a fresh one", data)
    if not lacked:
        return Verdict(INCONCLUSIVE, evidence, f"{ctl} accepted {m}'s queued proposal {{{mid}, {sid}}} under "
                       f"masterEpoch {hit['me']}, but {m} had acknowledged no message that {sl} lacks (the window "
                       "between its re-election and the proposal held no acknowledged write)", data)
    why = (f"{m}'s proposal {{{mid}, {sid}}}, decided before {sl} was cut (last decision "
           f"{log_time(decisions[-1])}), was sent at {rel(lab, t_elect)} with masterEpoch {hit['me']} (the term "
           f"that re-elected {m} with SyncStateSet {{{mid}}}) and accepted: {sl} was put back in the SyncStateSet "
           f"lacking {len(lacked)} messages {m} had acknowledged")
    if lost:
        why += f"; {n} was then elected and {len(lost)} acknowledged messages are gone"
    if stale_ev is None:
        why += " (the committed log does not show the AlterSyncStateSet after the re-election: see the events)"
    return Verdict(REPRODUCED, evidence, why, data)


def short(line: str, n: int = 240) -> str:
    return line if len(line) <= n else line[: n - 3] + "..."


def log_time(line: str) -> str:
    return line[:19]


# --------------------------------------------------------------------------------------------- F-GAP-UNION

GAP_TOPIC = "ReproGapUnion"
GAP_HOLD_MS = 2800  # the answer to the first expansion held this long (< the broker's 3 s timeout)


@repro("F-GAP-UNION",
       title="A newer SyncStateSet proposal pushes an accepted one out of the master's ack set",
       invariant="SYNC-SSS-HOLDS-ACKED (then SYNC-NO-ACK-LOSS once the pushed-out slave is elected)",
       how="nameserver, one controller c0, three brokers (master M, slaves S1 and S2), the safe profile "
           "(allAckInSyncStateSet=true), haHousekeepingInterval at RocketMQ's default 20 s; a producer writes to M "
           "every 50 ms (client timeout 3 s); S1's and S2's bytes to M are held at the proxy (one way): M hears no "
           "ack, so its puts wait, until its HA housekeeping closes both connections after 20 s without a read "
           "(removeConnection: SyncStateSet {M}, accepted by c0; M then acknowledges alone); the slaves reconnect, "
           "their new connections' bytes (handshake, acks) held as well; c0's answers to M's ALTER_SYNC_STATE_SET "
           "are delayed 2.8 s at the proxy (below the broker's 3 s timeout); S1's hold is lifted: S1 handshakes, "
           "catches up, and M decides P1 = {M, S1} (remote set {M, S1}) and sends it; as soon as the proxy reads "
           "that request, S1 is cut from M both ways (it stores nothing more) and S2's hold is lifted: S2 "
           "handshakes, catches up, and M decides P2 = {M, S2}, which replaces the remote set while P1 waits for "
           "its answer; c0 has accepted P1 (SyncStateSet {M, S1}); the producer's messages are now acknowledged on "
           "S2's ack; after 5 such acknowledgements (at most until 0.9 s before c0's answer to P1 can reach M) M "
           "is SIGKILLed; the controller elects from {M, S1}; everything is healed, the producer stopped, a "
           "consumer reads the topic; the evidence is the frames (P1's request and c0's answer with its time), M's "
           "store.log decisions, c0's committed event log, S1's commit log against the acknowledged messages",
       config={"cluster": {"brokers": 3}, "store": {"haHousekeepingInterval": 20000}},
       expect={"5.3.3": "present (markSynchronizingSyncStateSet replaces the remote set)",
               "5.4.0": "present (markSynchronizingSyncStateSet and getSyncStateSet unchanged; #9897 changes "
                        "removeConnection only)",
               "5.5.0": "present (as 5.4.0)"},
       minutes=4.0)
def gap_union(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    ctl = lab.spec.controllers[0]
    s1, s2 = [b for b in lab.spec.brokers if b != m]
    mid, id1, id2 = id_of(lab, m), id_of(lab, s1), id_of(lab, s2)
    lab.create_topic(GAP_TOPIC, 1)
    r0 = lab.produce(GAP_TOPIC, 20, "g0-", interval_ms=20)
    lab.note(f"{m} (id {mid}) master, {s1} (id {id1}) and {s2} (id {id2}) slaves; "
             f"{sum(1 for r in r0 if ok(r))}/20 SEND_OK")
    # 1. both slaves' bytes to M held: M's puts wait until its HA housekeeping closes their connections (SSS {M})
    h1 = lab.partition([s1], [m], one_way=True)
    h2 = lab.partition([s2], [m], one_way=True)
    lab.start_producer(GAP_TOPIC, "g1-", interval_ms=50, timeout_ms=3000)
    out = lab.wait(lambda x: x.leader is not None and x.leader.master == m and set(x.leader.sss) == {mid}, 60,
                   f"the SyncStateSet shrunk to {{{m}}}")
    lab.note(f"acks of {s1} and {s2} held: {ctl_text(lab, out)}")
    fid = lab.proxy_fault("delay-response", code=ALTER, ms=GAP_HOLD_MS, **{"from": ctl, "to": m})
    time.sleep(1.5)  # M acknowledges alone for a moment; both slaves store it
    # 2. S1's acks through: P1 = {M, S1}
    t1 = wall()
    lab.heal(h1)
    p1 = poll(lambda: next(iter(alter_calls(lab, m, t1)), None), 20, 0.03)
    if p1 is None:
        lab.heal()
        lab.lift(fid)
        return Verdict(INCONCLUSIVE, why=f"{m} sent no ALTER_SYNC_STATE_SET within 20 s of {s1}'s acks coming "
                                         "through")
    # 3. at once: S1 cut both ways, S2's acks through: P2 = {M, S2} replaces the remote set
    lab.partition([m], [s1])
    t_s1_cut = wall()
    lab.heal(h2)
    t2 = wall()
    ans = poll(lambda: next((c["answer"] for c in alter_calls(lab, m, t1)
                             if c.get("opaque") == p1.get("opaque") and c.get("conn") == p1.get("conn")
                             and c.get("answer") is not None), None), 5, 0.03)
    deliver = float(ans["t"]) + GAP_HOLD_MS if ans is not None else float(p1["t"]) + GAP_HOLD_MS
    # 4. messages acknowledged now need S2's ack only; kill M before the answer to P1 reaches it
    def enough() -> bool:
        after = [r for r in sends_now(lab) if ok(r) and from_node(lab, r, m) and float(r["t"]) > t2]
        return len(after) >= 5 or wall() > deliver - 900

    poll(enough, 5, 0.05)
    t_kill = wall()
    lab.kill(m, "before the controller's answer to its first expansion reached it")
    sends = lab.stop_producer()
    lab.note(f"P1 sent at {rel(lab, float(p1['t']))}, answered by {ctl} at "
             f"{rel(lab, float(ans['t'])) if ans else '?'} (code {ans.get('code') if ans else '?'}), delivered to "
             f"{m} not before {rel(lab, deliver)}; {s1} cut at {rel(lab, t_s1_cut)}, {s2}'s acks through at "
             f"{rel(lab, t2)}; {m} SIGKILLed at {rel(lab, t_kill)}")
    new = lab.try_wait(lambda x: x.leader is not None and x.leader.master not in (None, m), 60)
    n = new.leader.master if new and new.leader else None
    lab.note(f"after {m}'s death: {ctl_text(lab, new)}")
    lab.heal()
    lab.lift(fid)
    seen = lab.consume(GAP_TOPIC, 12) if n is not None else []
    files = lab.files()
    k1 = keys_in(files.logs.get(s1))
    k2 = keys_in(files.logs.get(s2))
    end1 = files.logs[s1].end_offset if s1 in files.logs else None
    seen_keys = {str(d.get("key")) for d in seen}
    acked = [r for r in sends if ok(r) and from_node(lab, r, m) and float(r["t"]) <= t_kill]
    lacked = [r for r in acked if str(r.get("key")) not in k1]
    in_window = [r for r in lacked if ans is not None and float(r["t"]) >= float(ans["t"])]
    lost = [r for r in acked if seen and str(r.get("key")) not in seen_keys]
    evs = ctl_events(lab)
    d1 = caught_up(lab, m, id1, t1)
    d2 = caught_up(lab, m, id2, t1)
    notify = lines_since(lab, m, NOTIFY, t1)
    run_alter = lines_since(lab, ctl, RUN_ALTER, t1, files=("broker_default.log", "broker.log"))
    calls = alter_calls(lab, m, t1 - 1000)
    evidence = [
        f"before: {ctl_text(lab, out)} ({s1}'s and {s2}'s bytes to {m} held at the proxy until {m}'s HA housekeeping "
        "closed their connections)",
        f"{s1}'s acks through at {rel(lab, t1)}: {m}'s store.log "
        + (f"'{short(d1[0], 160)}'" if d1 else "has no decision about it"),
        *[f"frame {call_text(lab, c)}" for c in calls[:3]],
        *[f"{ctl}'s broker_default.log: {short(x, 230)}" for x in run_alter[:2]],
        f"{s1} cut from {m} at {rel(lab, t_s1_cut)}; {s2}'s acks through at {rel(lab, t2)}: {m}'s store.log "
        + (f"'{short(d2[0], 160)}'" if d2 else "has no decision about it")
        + f"; 'Notify the syncStateSet has been changed into' since {rel(lab, t1)}: "
        + ", ".join(short(x[20:], 90) for x in notify[:4]),
        f"{ctl}'s answer to P1 held {GAP_HOLD_MS} ms at the proxy: {m} could not learn it before "
        f"{rel(lab, deliver)}; {m} SIGKILLed at {rel(lab, t_kill)} ({deliver - t_kill:.0f} ms before)",
        f"{ctl}'s committed log: " + ", ".join(event_text(i, e) for i, e in evs[-8:]),
        f"{s1}'s commit log ends at {end1}; messages {m} acknowledged that {s1} does not hold: {len(lacked)}, "
        f"{len(in_window)} of them after {ctl} had accepted P1"
        + (f" (first {send_text(lab, lacked[0])}, last {send_text(lab, lacked[-1])}); at the end, after "
           f"following the new master, {s2} holds {sum(1 for r in lacked if str(r.get('key')) in k2)} of them"
           if lacked else ""),
        f"after {m}'s death: {ctl_text(lab, new)}; a consumer read {len(seen)} messages; {len(lost)} acknowledged "
        f"messages missing" + (f": {', '.join(str(r.get('key')) for r in lost[:10])}" if lost else ""),
        f"the producer's history: {len(sends)} sends, {sum(1 for r in sends if ok(r))} SEND_OK",
    ]
    data = {"master": m, "s1": s1, "s2": s2, "ids": [mid, id1, id2], "p1Sent": float(p1["t"]),
            "p1Answered": float(ans["t"]) if ans else None, "p1Code": ans.get("code") if ans else None,
            "deliver": deliver, "killedAt": t_kill, "s1End": end1, "lacked": [r.get("key") for r in lacked],
            "inWindow": [r.get("key") for r in in_window], "lost": [r.get("key") for r in lost], "newMaster": n,
            "events": [event_text(i, e) for i, e in evs], "frames": [call_text(lab, c) for c in calls]}
    accepted_p1 = any(e.get("type") == "AlterSyncStateSet" and set(e.get("newSyncStateSet") or []) == {mid, id1}
                      for _, e in evs)
    if ans is None or ans.get("code") != 0 or not accepted_p1:
        return Verdict(INCONCLUSIVE, evidence, f"{ctl} did not accept P1 = {{{mid}, {id1}}} "
                       f"(answer code {ans.get('code') if ans else None})", data)
    if t_kill >= deliver:
        return Verdict(INCONCLUSIVE if not in_window else REPRODUCED, evidence,
                       f"{m} was killed {t_kill - deliver:.0f} ms after the answer to P1 could reach it"
                       + (f"; still, {len(in_window)} messages were acknowledged without {s1} while {ctl}'s "
                          f"SyncStateSet held {s1}" if in_window else ""), data)
    if not d2:
        return Verdict(INCONCLUSIVE, evidence, f"{m} did not decide to take {s2} in before it was killed", data)
    if not in_window:
        return Verdict(NOT_REPRODUCED, evidence, f"with {ctl}'s SyncStateSet {{{mid}, {id1}}} and P2 "
                       f"{{{mid}, {id2}}} decided, {m} acknowledged no message that {s1} lacks before it was killed",
                       data)
    why = (f"{ctl} accepted P1 = {{{mid}, {id1}}} at {rel(lab, float(ans['t']))}; P2 = {{{mid}, {id2}}} then "
           f"replaced {m}'s remote set, and {m} acknowledged {len(in_window)} messages on {s2}'s ack that {s1}, "
           f"a member of {ctl}'s SyncStateSet, does not hold")
    if lost:
        why += f"; {n} was elected from that SyncStateSet and {len(lost)} acknowledged messages are gone"
    return Verdict(REPRODUCED, evidence, why, data)
