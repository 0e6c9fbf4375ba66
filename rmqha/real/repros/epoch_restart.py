"""Epoch-file findings on a real build: a slave whose epoch file shares no entry with its master's never replicates
again (M-NO-COMMON-EPOCH), and a master restarted at its own masterEpoch moves that epoch's start
(F-EPOCH-REBASE-ON-RESTART), which strands its slaves the same way.

Both end in ``AutoSwitchHAClient.doTruncate``: ``EpochFileCache.findConsistentPoint`` looks for the newest local
epoch whose entry has the same start on the master; with none it returns -1, the client logs "Failed to find a
consistent point", closes the connection and tries again on its next connect, for ever.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from ..lab import Lab
from ..observe import Snapshot
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro

NO_POINT = r"Failed to find a consistent point"
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
TO_MASTER = re.compile(r"Change ha to master success, newMasterEpoch:(\d+), startOffset:(\d+)")


@dataclass
class LogCount:
    """How often a pattern shows in a node's RocketMQ logs, and its first and last lines."""

    count: int
    first: str
    last: str

    def span(self) -> str:
        a, b = LOG_TIME.match(self.first), LOG_TIME.match(self.last)
        return f"{a.group(1) if a else '?'} .. {b.group(1) if b else '?'}"


def frames(lab: Lab, since_ms: float = 0.0) -> list[dict[str, Any]]:
    """The controller protocol's frames the proxy recorded (``events/proxy.jsonl``), from ``since_ms`` (epoch ms)."""
    out: list[dict[str, Any]] = []
    p = lab.spec.dir / "events" / "proxy.jsonl"
    if not p.is_file():
        return out
    with open(p, encoding="utf-8") as f:
        for line in f:
            if '"frame"' not in line:
                continue
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("k") == "frame" and float(d.get("t", 0)) >= since_ms:
                out.append(d)
    return out


def answered_master(lab: Lab, node: str, since_ms: float) -> dict[str, Any] | None:
    """The first controller answer to ``node`` since ``since_ms`` that names a master (a register or elect
    response with a masterBrokerId), or None."""
    for d in frames(lab, since_ms):
        if (d.get("response") and d.get("to") == node
                and d.get("req_name") in ("CONTROLLER_REGISTER_BROKER", "CONTROLLER_ELECT_MASTER")
                and (d.get("ext") or {}).get("masterBrokerId") not in (None, "", "null")):
            return d
    return None


def log_count(lab: Lab, node: str, pattern: str) -> LogCount:
    lines = lab.broker_log(node, pattern)
    return LogCount(len(lines), lines[0].strip() if lines else "", lines[-1].strip() if lines else "")


def short(line: str, n: int = 240) -> str:
    return line if len(line) <= n else line[: n - 3] + "..."


def epochs_text(ep: list[tuple[int, int, int]]) -> str:
    return "[" + ", ".join(f"({e}, {s})" for e, s, _ in ep) + "]"


def in_sss(lab: Lab, s: Snapshot, node: str) -> bool:
    return node in lab.sss_nodes(s)


def watch_out(lab: Lab, node: str, seconds: float, topic: str, prefix: str) -> tuple[int, list[str], bool]:
    """For ``seconds``: produce a few messages to the master now and then and see whether ``node`` ever gets
    into the SyncStateSet again. Returns (messages acknowledged, a line per sample, whether it got in)."""
    end = time.monotonic() + seconds
    acked, samples, got_in = 0, [], False
    n = 0
    while time.monotonic() < end:
        n += 1
        res = lab.produce(topic, 10, f"{prefix}{n}-", interval_ms=50, timeout=60)
        acked += sum(1 for r in res if r.get("status") == "SEND_OK")
        s = lab.fresh()
        lead = s.leader
        b = s.brokers.get(node)
        m = s.master
        mo = s.brokers[m].max_offset if m and m in s.brokers else None
        samples.append(f"t={lab.now() / 1000:.0f}s SSS={lab.sss_nodes(s)} mE={lead.master_epoch if lead else None} "
                       f"master {m} maxOffset={mo}; {node}: role={b.role if b else None} "
                       f"maxOffset={b.max_offset if b else None}")
        if in_sss(lab, s, node):
            got_in = True
            break
        time.sleep(8)
    return acked, samples, got_in


# ------------------------------------------------------------------------------------------ M-NO-COMMON-EPOCH

NCE_TOPIC = "ReproNoCommon"


@repro("M-NO-COMMON-EPOCH",
       title="A slave whose epoch file shares no epoch with its master's never catches up",
       invariant="L_ALL_IN_SSS (liveness: every live broker eventually in the SyncStateSet)",
       how="a fresh cluster (nameserver, one controller, two brokers: the master M and one slave S) with "
           "RocketMQ's default HA timings (haSendHeartbeatInterval 5 s, haHousekeepingInterval 20 s); no message is "
           "ever written before the failover; once S is in the SyncStateSet the epoch caches are read (the model "
           "says a slave records an epoch only when bytes of it arrive); then S's HA connection is cut once at the "
           "proxy (its next report to M closes it), so that S reconnects and runs its handshake again; as soon as "
           "the admin API shows S back in the SyncStateSet, M is SIGKILLed; the controller elects S at "
           "masterEpoch 2; M is restarted and becomes S's slave; for two minutes the producer writes 10 messages "
           "to S every ~10 s and the admin API is asked whether M is back in the SyncStateSet; M's store log is "
           "searched for the HA handshake's 'Failed to find a consistent point'",
       config={"cluster": {"brokers": 2},
               "store": {"haSendHeartbeatInterval": 5000, "haHousekeepingInterval": 20000}},
       expect={"5.3.3": "present through a reconnect: doTruncate's truncateSuffixByOffset(0) empties an empty "
                        "slave's epoch cache, and it rejoins the SyncStateSet before the next TRANSFER frame "
                        "(up to haSendHeartbeatInterval later) gives it back the master's epoch",
               "5.4.0": "fixed (doTruncate keeps the epoch cache when the consistent point is the slave's end; "
                        "presumably apache/rocketmq#9942, merged 2025-12-22)", "5.5.0": "fixed (as 5.4.0)"},
       minutes=5.0)
def no_common_epoch(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    others = [b for b in lab.spec.brokers if b != m]
    s = lab.wait(lambda x: all(b in x.brokers and x.brokers[b].ok and bool(x.brokers[b].epochs)
                               for b in lab.spec.brokers), 30, "every broker's epoch cache")
    me1 = s.leader.master_epoch if s.leader else None
    written = {b: s.brokers[b].max_offset for b in lab.spec.brokers}
    ep0 = {b: s.brokers[b].epochs for b in lab.spec.brokers}
    lab.note(f"{m} master at masterEpoch {me1}; no message written (ends {written}); epoch caches "
             + ", ".join(f"{b} {epochs_text(e)}" for b, e in ep0.items()))
    if any(v not in (0, None) for v in written.values()):
        return Verdict(INCONCLUSIVE, why=f"a message was written before the failover (ends {written})")
    # a reconnect: the slave's handshake runs again
    t_cut = time.time() * 1000
    for b in others:
        lab.proxy_fault("cut-stream", route=f"{m}.ha", after_bytes=0, **{"from": b, "to": m})
    sids = set(others)
    lab.wait(lambda x: x.t0 > t_cut and x.leader is not None and not sids <= set(lab.sss_nodes(x)),
             60, "the cut slave out of the SyncStateSet")
    back = lab.wait(lambda x: x.leader is not None and x.leader.master == m
                    and set(lab.sss_nodes(x)) >= sids | {m}, 90, "the slave back in the SyncStateSet")
    lab.kill(m, "as soon as the SyncStateSet is whole again")
    t_kill = time.time() * 1000
    ep_kill = {b: back.brokers[b].epochs if b in back.brokers else [] for b in others}
    lab.note(f"{m} SIGKILLed {(t_kill - back.t) / 1000:.1f}s after the snapshot showing the SyncStateSet whole "
             "again; the slaves' epoch caches in it: "
             + ", ".join(f"{b} {epochs_text(e)}" for b, e in ep_kill.items()))
    new = lab.wait(lambda x: x.leader is not None and x.leader.master not in (None, m), 60,
                   "the controller electing another master")
    assert new.leader is not None
    n = new.leader.master
    assert n is not None
    new = lab.wait(lambda x: n in x.brokers and x.brokers[n].ok and x.brokers[n].role == "MASTER"
                   and bool(x.brokers[n].epochs), 30, f"{n}'s epoch cache as master")
    ep_n = new.brokers[n].epochs
    me2 = new.leader.master_epoch if new.leader else None
    lab.note(f"{n} elected at masterEpoch {me2}, epoch cache {epochs_text(ep_n)}")
    lab.restart(m)
    lab.create_topic(NCE_TOPIC, 1, on=[n])
    back2 = lab.wait(lambda x: m in x.brokers and x.brokers[m].ok and x.brokers[m].role == "SLAVE", 90,
                     f"{m} back as a slave")
    ep_m_back = back2.brokers[m].epochs
    lab.note(f"{m} is back as {n}'s slave with epoch cache {epochs_text(ep_m_back)}")
    acked, samples, got_in = watch_out(lab, m, 120, NCE_TOPIC, "nce")
    final = lab.fresh()
    no_point = log_count(lab, m, NO_POINT)
    hs = lab.broker_log(m, r"master epoch entries is|local epoch entries is|truncateOffset is")[-3:]
    rehand = {b: [x for x in lab.broker_log(b, r"local epoch entries is|Truncate slave log to")
                  if log_ms(x) >= t_cut - 1000][:2] for b in others}
    shared = sorted({(e, st) for e, st, _ in ep_n} & {(e, st) for e, st, _ in ep0[m]})
    evidence = [
        f"{m} first master (masterEpoch {me1}), no message written; with every broker in the SyncStateSet the "
        f"epoch caches were " + ", ".join(f"{b} {epochs_text(e)}" for b, e in ep0.items())
        + " (the slaves hold epoch 1 with no byte of it)",
        f"each slave's HA connection to {m} cut once at the proxy",
        *[f"{b} after the reconnect: {short(x, 200)}" for b, xs in rehand.items() for x in xs],
        f"back in the SyncStateSet ({lab.sss_nodes(back)}); the slaves' epoch caches then: "
        + ", ".join(f"{b} {epochs_text(e)}" for b, e in ep_kill.items()) + f"; {m} SIGKILLed",
        f"{n} elected at masterEpoch {me2}; its epoch cache {epochs_text(ep_n)}",
        f"{m} restarted as {n}'s slave with epoch cache {epochs_text(ep_m_back)}",
        *[f"{m}'s store.log: {short(x)}" for x in hs],
        f"{m}'s store.log has {no_point.count} '{NO_POINT}' lines"
        + (f" ({no_point.span()}); last: {short(no_point.last)}" if no_point.count else ""),
        f"{acked} messages acknowledged by {n} afterwards; final: SSS={lab.sss_nodes(final)}, {m} maxOffset="
        f"{final.brokers[m].max_offset if m in final.brokers else None}, {n} maxOffset="
        f"{final.brokers[n].max_offset if n in final.brokers else None}",
        *samples[:: max(1, len(samples) // 4)],
    ]
    data = {"master": m, "newMaster": n, "epochsBefore": ep0, "epochsAtKill": ep_kill, "epochsNew": ep_n,
            "epochsOldBack": ep_m_back, "noPointLines": no_point.count, "samples": samples, "acked": acked}
    if not got_in and no_point.count >= 2:
        return Verdict(REPRODUCED, evidence, f"{m} ({epochs_text(ep_m_back)}) never rejoined the SyncStateSet of "
                       f"{n} ({epochs_text(ep_n)}) in {len(samples)} samples over ~2 min; its handshake failed "
                       f"{no_point.count} times with '{NO_POINT}'", data)
    if got_in:
        why = f"{m} rejoined the SyncStateSet of {n}"
        if shared:
            why += (f": {n} still held {shared[-1]} when it was elected, so its epoch file is {epochs_text(ep_n)} "
                    f"(appendEntry refuses ({me2}, 0) after an entry starting at 0) and shares {shared[-1]} with "
                    f"{m}'s {epochs_text(ep0[m])}")
        return Verdict(NOT_REPRODUCED, evidence, why, data)
    return Verdict(INCONCLUSIVE, evidence, f"{m} stayed out of the SyncStateSet but its log does not show the "
                   "failed handshake", data)


def log_ms(line: str) -> float:
    """A RocketMQ log line's time (local, to the second) in epoch ms; 0 when it has none."""
    mt = LOG_TIME.match(line)
    return time.mktime(time.strptime(mt.group(1), "%Y-%m-%d %H:%M:%S")) * 1000 if mt else 0.0


# ------------------------------------------------------------------------------------------ F-EPOCH-REBASE-ON-RESTART

REBASE_TOPIC = "ReproRebase"


@repro("F-EPOCH-REBASE-ON-RESTART",
       title="A master restarted and re-confirmed at the same masterEpoch moves that epoch's start",
       invariant="HA-LOG-MATCHING (the replicas' epoch entries for one epoch must agree); consequence: "
                 "L_ALL_IN_SSS (the slaves never replicate again)",
       how="nameserver, one controller c0, three brokers, the brokers' controller heartbeat timeout at RocketMQ's "
           "default 10 s (a restarting broker retries its registration every 5 s and, fenced until then, heartbeats "
           "once per try: the kit's 3 s would let it expire between tries); the first master M (masterEpoch 1) takes"
           " 20 messages, every slave holds them (epoch caches [(1, 0)] everywhere); c0 is SIGKILLed (the controller"
           " is down, so nobody acts on M's death); M is SIGKILLed and restarted at once (it retries the controller "
           "every 5 s); the slaves are cut from c0 at the proxy, both ways (so that c0, when back, sees no live "
           "broker but M: its inactive-master scan needs a live broker to elect from); c0 is restarted, replays its "
           "log (master M, masterEpoch 1) and answers M's registration with M itself at masterEpoch 1; M runs "
           "AutoSwitchHAService.changeToMaster(1) with epoch 1 already in its file; the cut heals; for about two "
           "minutes the producer writes to M and the admin API is asked whether the slaves rejoin the SyncStateSet; "
           "the brokers' epoch caches, epoch files and store logs are read",
       config={"broker": {"controllerHeartBeatTimeoutMills": 10000}},
       expect={"5.3.3": "present (changeToMaster: truncateSuffixByEpoch(e) then appendEntry(e, maxPhyOffset))",
               "5.4.0": "present (changeToMaster unchanged)", "5.5.0": "present (changeToMaster unchanged)"},
       minutes=4.0)
def epoch_rebase(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    ctl = lab.spec.controllers[0]
    mid = next((i for i, n in lab.ids().items() if n == m), None)
    slaves = [b for b in lab.spec.brokers if b != m]
    lab.create_topic(REBASE_TOPIC, 1)
    res = lab.produce(REBASE_TOPIC, 20, "r0-", interval_ms=20)
    ok0 = sum(1 for r in res if r.get("status") == "SEND_OK")
    s = lab.wait(lambda x: all(b in x.brokers and x.brokers[b].ok for b in lab.spec.brokers)
                 and len({x.brokers[b].max_offset for b in lab.spec.brokers}) == 1
                 and (x.brokers[m].max_offset or 0) > 0, 60, "every broker at the master's log end")
    me1 = s.leader.master_epoch if s.leader else None
    end1 = s.brokers[m].max_offset or 0
    before = {b: s.brokers[b].epochs for b in lab.spec.brokers}
    lab.note(f"{m} master at masterEpoch {me1}; {ok0}/20 SEND_OK; every log ends at {end1}; epoch caches "
             + ", ".join(f"{b} {epochs_text(e)}" for b, e in before.items()))
    if not before[m] or before[m][-1][0] != me1:
        return Verdict(INCONCLUSIVE, why=f"{m}'s epoch cache {epochs_text(before[m])} does not end with its "
                                         f"masterEpoch {me1} (the start-up took more than one election): "
                                         "changeToMaster would append, the finding needs the epoch in the file")
    lab.kill(ctl, "the controller down: nobody acts on the master's death")
    lab.kill(m, "the master, while the controller is down")
    lab.restart(m)
    lab.partition(slaves, [ctl])
    lab.note(f"{m} restarted; {', '.join(slaves)} cut from {ctl} at the proxy")
    t_ctl = time.time() * 1000
    lab.restart(ctl)
    ans: dict[str, Any] | None = None
    end = time.monotonic() + 120
    while ans is None and time.monotonic() < end:
        ans = answered_master(lab, m, t_ctl)
        time.sleep(0.5)
    if ans is None:
        return Verdict(INCONCLUSIVE, why=f"{ctl} did not answer {m}'s registration with a master within 120 s")
    ext = ans.get("ext") or {}
    lab.note(f"{ctl} answered {m}: {ans.get('req_name')} code {ans.get('code')} {ext}")
    me2 = int(ext.get("masterEpoch", -1))
    if str(ext.get("masterBrokerId")) != str(mid) or me2 != me1:
        return Verdict(INCONCLUSIVE, why=f"{ctl} answered {m} naming broker {ext.get('masterBrokerId')} at "
                                         f"masterEpoch {me2}, not {m} (id {mid}) at {me1}: the precondition "
                                         "(re-confirmed at the same epoch) is not reached")
    t_ans = float(ans["t"])
    back = lab.wait(lambda x: x.t0 > t_ans + 1000 and m in x.brokers and x.brokers[m].ok
                    and x.brokers[m].role == "MASTER" and bool(x.brokers[m].epochs), 60,
                    f"{m}'s epoch cache after its re-confirmation")
    after_m = back.brokers[m].epochs
    end2 = back.brokers[m].max_offset or 0
    lab.note(f"{m} re-confirmed at masterEpoch {me2}; its epoch cache is now {epochs_text(after_m)}")
    lab.heal()
    acked, got_in = 0, False
    samples: list[str] = []
    for b in slaves:
        a, smp, gi = watch_out(lab, b, 45, REBASE_TOPIC, f"r-{b}-")
        acked, samples, got_in = acked + a, samples + smp, got_in or gi
    final = lab.fresh()
    files = lab.files()
    to_master = lab.broker_log(m, TO_MASTER.pattern)
    last_frames = [d for d in frames(lab, t_ctl) if d.get("to") == m and d.get("req_name") in
                   ("CONTROLLER_REGISTER_BROKER", "CONTROLLER_ELECT_MASTER")][:3]
    no_point = {b: log_count(lab, b, NO_POINT) for b in slaves}
    master_lines = {b: [x for x in lab.broker_log(b, r"master epoch entries is")][-1:] for b in slaves}
    file_pairs = {b: (ef.pairs() if (ef := files.epochs.get(b)) else []) for b in lab.spec.brokers}
    start_before = next((st for e, st, _ in before[m] if e == me1), None)
    start_after = next((st for e, st, _ in after_m if e == me1), None)
    evidence = [
        f"before: {m} master at masterEpoch {me1}, every log ends at {end1}; epoch caches "
        + ", ".join(f"{b} {epochs_text(e)}" for b, e in before.items()),
        f"{ctl} and {m} SIGKILLed; {m} restarted; {', '.join(slaves)} cut from {ctl}; {ctl} restarted",
        *[f"{ctl} -> {m}: {d.get('req_name')} answered code {d.get('code')} {d.get('ext')}" for d in last_frames],
        *[f"{m}'s store.log: {short(x)}" for x in to_master[-2:]],
        f"after: {m} master again at masterEpoch {me2}, log end {end2}, epoch cache {epochs_text(after_m)}",
        "epoch files at the end: " + ", ".join(f"{b} {p}" for b, p in file_pairs.items()),
        *[f"{b}'s store.log: {short(x[0])}" for b, x in master_lines.items() if x],
        *[f"{b}'s store.log has {c.count} '{NO_POINT}' lines ({c.span()})" for b, c in no_point.items()],
        f"{acked} messages acknowledged by {m} afterwards; final SSS={lab.sss_nodes(final)}; log ends "
        + ", ".join(f"{b} {final.brokers[b].max_offset if b in final.brokers else None}" for b in lab.spec.brokers),
        *samples[:: max(1, len(samples) // 4)],
    ]
    data = {"master": m, "epochsBefore": before, "epochsAfter": after_m, "end": end1, "files": file_pairs,
            "noPoint": {b: c.count for b, c in no_point.items()}, "samples": samples, "slavesBack": got_in}
    if start_before is not None and start_after is not None and start_after != start_before:
        why = (f"{m}, re-confirmed master at masterEpoch {me2}, moved epoch {me1}'s start from {start_before} to "
               f"{start_after} (its log end at the restart)")
        if not got_in:
            why += (f"; its slaves, holding ({me1}, {start_before}), failed the handshake "
                    f"{sum(c.count for c in no_point.values())} times and never rejoined the SyncStateSet")
        return Verdict(REPRODUCED, evidence, why, data)
    return Verdict(NOT_REPRODUCED, evidence, f"{m} re-confirmed at masterEpoch {me2} kept epoch {me1} at "
                   f"{start_after}", data)

