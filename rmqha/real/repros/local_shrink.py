"""F-LOCAL-SHRINK-BEFORE-ACCEPT on a real build: a master that loses a slave's HA connection while the controller is
unreachable acknowledges writes without that slave, which the controller can still elect (``SYNC-NO-ACK-LOSS``).

From 5.4.0 (apache/rocketmq PR #9897) ``AutoSwitchHAService.removeConnection`` removes the slave from the master's
local SyncStateSet as soon as the connection closes, besides proposing the shrink to the controller; 5.3.3 only
proposed it, and kept acknowledging against the union of the local set and the proposal until the controller
answered. The master's HA status shows the local set: ``inSyncSlaveNums`` is its size minus one
(``AutoSwitchHAService.getRuntimeInfo``).

Helpers kept here (pure, tested on planted lines): ``results_since`` (the producer's results at or after a time),
``acked_missing`` (the acknowledged sends of a window whose message a log lacks) and ``status_counts``.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from ..lab import Lab, log_ms
from ..observe import Snapshot
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro
from .confirm_offset import (
    ALTER,
    ha_acks,
    keys_in,
    lab_s,
    lost_reads,
    seen,
    short,
    sss_text,
    start_consumer,
    store_lines,
    wait_conn,
    wall_ms,
)

TOPIC = "ReproLocalShrink"
PRODUCE_S = 10.0  # how long the producer goes on after the close (a send every 100 ms; one at a time)
SEND_TIMEOUT_MS = 5000  # over the master's 3 s wait for its slaves: a send it does not acknowledge says so itself


def results_since(lines: list[dict[str, Any]], t_ms: float) -> list[dict[str, Any]]:
    """The producer's ``send-result`` lines timed at or after ``t_ms`` (epoch ms), in order."""
    return [d for d in lines if d.get("k") == "send-result" and float(d.get("t", 0)) >= t_ms]


def status_counts(results: list[dict[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(str(d.get("status")) for d in results).items()))


def acked_missing(results: list[dict[str, Any]], have: set[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Of ``results``, the acknowledged ones (``SEND_OK``), and those of them whose key is not in ``have``."""
    acked = [d for d in results if d.get("status") == "SEND_OK"]
    return acked, [d for d in acked if str(d.get("key")) not in have]


def in_sync(s: Snapshot | None, node: str) -> int | None:
    """``inSyncSlaveNums`` of ``node``'s HA status: the size of its local (confirmed) SyncStateSet minus one."""
    b = s.brokers.get(node) if s else None
    return b.in_sync_slaves if b is not None and b.ok else None


@repro("F-LOCAL-SHRINK-BEFORE-ACCEPT",
       title="From 5.4.0 a master drops a disconnected slave from its SyncStateSet before the controller accepts it, "
             "and acknowledges without a replica the controller can still elect",
       invariant="SYNC-NO-ACK-LOSS",
       how="nameserver, controller c0, three brokers, allAckInSyncStateSet=true; 10 messages acknowledged by all; a "
           "producer (send timeout 5 s, over the master's 3 s wait for its slaves) writes to the master M every 100 ms"
           " and a pull consumer reads M throughout. c0 is SIGKILLed (a controller outage: no shrink can land, nobody "
           "deposes M), then every HA connection from a slave S1 to M is cut at the proxy (cut-stream, every "
           "connection, before its first byte: S1's connection closes and its reconnects never reach M); the producer "
           "goes on for 10 s; M's HA status (inSyncSlaveNums: its local SyncStateSet's size minus one) and store.log "
           "are read. S2 and then M are SIGKILLed, the cut is lifted and c0 is restarted: it replays its log (master "
           "M, SyncStateSet {M, S1, S2}) and elects S1, the one live member; the sends acknowledged after the cut are "
           "looked up in S1's log",
       expect={"5.3.3": "absent (removeConnection only proposes the shrink; the ack set keeps S1 until c0 answers: "
                        "the sends after the cut are not acknowledged)",
               "5.4.0": "present (removeConnection shrinks the local SyncStateSet at the close, PR #9897)",
               "5.5.0": "present (as 5.4.0)"},
       minutes=3.0)
def local_shrink(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    ctl = s.leader.node
    id_of = {n: i for i, n in lab.ids().items()}
    s1, s2 = [b for b in lab.spec.brokers if b != m][:2]
    lab.create_topic(TOPIC, 1)
    warm = lab.produce(TOPIC, 10, "w-", interval_ms=20)
    lab.note(f"{m} master (ids {id_of}); {sum(1 for r in warm if r.get('status') == 'SEND_OK')}/10 SEND_OK")
    cons = start_consumer(lab, TOPIC, "c_shrink")
    lab.start_producer(TOPIC, "p-", interval_ms=100, timeout_ms=SEND_TIMEOUT_MS)
    before = lab.fresh(answered=[m])
    n_before = in_sync(before, m)
    lab.note(f"{sss_text(lab, before)}; {m}'s inSyncSlaveNums {n_before}, HA connections (ack, inSync) "
             f"{ha_acks(before, m)}")
    lab.kill(ctl, "a controller outage: no shrink can land")
    t_cut = wall_ms()
    cut = lab.proxy_fault("cut-stream", route=f"{m}.ha", after_bytes=0, every=True, **{"from": s1, "to": m})
    closed = wait_conn(lab, f"{m}.ha", s1, "close", t_cut, 30)
    if closed is None:
        lab.stop_producer()
        return Verdict(INCONCLUSIVE, why=f"{s1}'s HA connection to {m} did not close within 30 s of the cut")
    t_closed = float(closed["t"])
    lab.note(f"{s1}'s HA connection to {m} closed at {lab_s(lab, t_closed)} ({closed.get('why')})")
    time.sleep(PRODUCE_S)
    during = lab.fresh(answered=[m, s1])
    n_during = in_sync(during, m)
    m_end = during.brokers[m].max_offset
    s1_end = during.brokers[s1].max_offset
    conns = ha_acks(during, m)
    sends = lab.stop_producer()
    after_cut = results_since(sends, t_closed)
    reads_before_kill = seen(cons)
    lab.note(f"{PRODUCE_S:.0f} s after the close: {m}'s inSyncSlaveNums {n_during}, HA connections {conns}; log ends "
             f"{m} {m_end}, {s1} {s1_end}; sends since the close: {status_counts(after_cut)}")
    m_lines = sorted(store_lines(lab, m, r"Notify the syncStateSet has been changed into|SyncStateSet changed from|"
                                         r"Error happen when change SyncStateSet", t_cut, 3, first=True),
                     key=lambda x: log_ms(x) or 0)
    lab.kill(s2, f"{s1} cut off")
    lab.kill(m, f"{s1} cut off")
    t_kill = wall_ms()
    lab.lift(cut)
    lab.restart(ctl)
    back = lab.try_wait(lambda v: v.leader is not None and v.t0 > t_kill, 60)
    new = lab.wait(lambda v: v.leader is not None and v.leader.master not in (None, m) and v.t0 > t_kill, 120,
                   f"{ctl}, restarted, electing another master")
    n = new.leader.master if new.leader else None
    assert n is not None
    n_snap = lab.wait(lambda v: n in v.brokers and v.brokers[n].ok and v.brokers[n].role == "MASTER", 60,
                      f"{n} acting as master")
    cons.stop()
    elect = [d for d in lab.frames(t_kill) if d.get("name") == "NOTIFY_BROKER_ROLE_CHANGED"][:1]
    alters = [d for d in lab.frames(t_cut) if d.get("req_name", d.get("name")) == ALTER and float(d["t"]) < t_kill]
    files = lab.files()
    have = keys_in(files.logs.get(n))
    n_end = n_snap.brokers[n].max_offset
    acked, missing = acked_missing(after_cut, have)
    _acked_all, missing_all = acked_missing(results_since(sends, 0), have)
    lost_seen, _ = lost_reads(lab, reads_before_kill, n)
    acked_keys = {str(d.get("key")) for d in acked}
    seen_acked = [d for d in lost_seen if str(d.get("key")) in acked_keys]
    past_s1 = [d for d in after_cut if int(d.get("commitLogOffset", -1)) >= (s1_end or 0)]
    evidence = [
        f"{m} master, {s1} and {s2} slaves (ids {id_of}); {sss_text(lab, before)}; {m}'s HA status: inSyncSlaveNums "
        f"{n_before}, connections (slaveAckOffset, inSync) {ha_acks(before, m)}",
        f"{ctl} SIGKILLed; every HA connection of {s1} to {m} cut at the proxy from {lab_s(lab, t_cut)}; the open one "
        f"closed at {lab_s(lab, t_closed)}",
        *[f"  {m}'s store.log: {short(x, 220)}" for x in m_lines],
        f"  {len(alters)} {ALTER} frames from {m} while {ctl} was down (it was not listening)",
        f"  {m}'s HA status {PRODUCE_S:.0f} s after the close ({lab_s(lab, during.t)}): inSyncSlaveNums {n_during} "
        f"(local SyncStateSet of {n_during + 1 if n_during is not None else '?'}), connections {conns}; log ends: "
        f"{m} {m_end}, {s1} {s1_end}",
        f"  sends since the close: {status_counts(after_cut)}; {len(past_s1)} stored at or past {s1}'s end {s1_end}"
        + (f" (first SEND_OK {acked[0].get('key')}@{acked[0].get('commitLogOffset')}, last "
           f"{acked[-1].get('key')}@{acked[-1].get('commitLogOffset')})" if acked else ""),
        f"{s2} and {m} SIGKILLed at {lab_s(lab, t_kill)}; cut lifted; {ctl} restarted"
        + (f" (its first answer, {lab_s(lab, back.t)}: {sss_text(lab, back)})" if back else "")
        + f"; elected: {n} ({sss_text(lab, new)})"
        + (f"; frame {lab_s(lab, float(elect[0]['t']))} NOTIFY_BROKER_ROLE_CHANGED {elect[0].get('ext')}"
           if elect else ""),
        f"{n} acting as master at {lab_s(lab, n_snap.t)}; its log ends at {n_end}; of the {len(acked)} sends "
        f"acknowledged (SEND_OK) after the close, {len(missing)} are not in it"
        + (": " + ", ".join(f"{d.get('key')}@{d.get('commitLogOffset')}" for d in missing[:10])
           + (" ..." if len(missing) > 10 else "") if missing else "")
        + f"; acknowledged and missing over the whole run: {len(missing_all)}",
        f"the consumer read {len(reads_before_kill)} messages before the kill; {len(lost_seen)} are not in {n}'s log, "
        f"{len(seen_acked)} of them acknowledged",
    ]
    data = {"master": m, "cut": s1, "other": s2, "newMaster": n, "inSyncBefore": n_before, "inSyncDuring": n_during,
            "mEnd": m_end, "s1End": s1_end, "sendsAfterClose": status_counts(after_cut),
            "ackedMissing": [d.get("key") for d in missing], "ackedMissingAll": [d.get("key") for d in missing_all],
            "seenLost": [d.get("key") for d in lost_seen], "tClosed": t_closed, "tKill": t_kill}
    if n != s1:
        return Verdict(INCONCLUSIVE, evidence, f"{ctl} elected {n}, not {s1}: the run did not reach the failover "
                       "to the cut slave", data)
    if missing:
        return Verdict(REPRODUCED, evidence,
                       f"with {ctl} down, {m} took {s1} out of its local SyncStateSet at the close (inSyncSlaveNums "
                       f"{n_before} -> {n_during}) and acknowledged {len(acked)} sends with {s2} alone; {ctl}, which "
                       f"never heard of the shrink, came back and elected {s1}: {len(missing)} acknowledged messages "
                       "lost", data)
    if not after_cut or m_end is None or s1_end is None or m_end <= s1_end:
        return Verdict(INCONCLUSIVE, evidence, f"{m}'s log did not grow past {s1}'s end after the close: the window "
                       "had no write in it", data)
    return Verdict(NOT_REPRODUCED, evidence,
                   f"{m} stored {m_end - s1_end} bytes past {s1}'s end after the close but acknowledged none of them "
                   f"({status_counts(after_cut)}; inSyncSlaveNums {n_before} -> {n_during}: its local SyncStateSet "
                   f"kept {s1}); {s1}, elected, lacks no acknowledged message", data)
