"""confirmOffset on a real build: what a broker lets consumers read (``SYNC-CONFIRM-BOUND``, ``SYNC-VISIBLE-BOUND``)
and what a failover then takes away (``SYNC-SEEN-NO-LOSS``).

In controller mode with ``allAckInSyncStateSet=true`` a broker dispatches a message into its consume queue (makes
it readable) only once the message ends at or before its confirmOffset; a master's confirmOffset is meant to be the
minimum of what every SyncStateSet member has acknowledged. Three findings are about places where that bound is
not kept:

* F-CONFIRM-SKIPS-NEW-CONNECTION: ``AutoSwitchHAService.computeConfirmOffset`` leaves out a member whose HA
  connection has not acknowledged anything yet (ack -1 or 0, the #6729 filter);
* F-CONFIRM-LOCAL-SHORTCUT: ``CommitLog.getConfirmOffset`` returns the master's max offset while the master's
  confirmed (local) SyncStateSet is itself alone, even with an expansion in flight;
* F-RECOVER-NORMALLY-PAST-CONFIRM: ``CommitLog.recoverNormally`` (the restart after a clean shutdown) dispatches
  every whole message, past the checkpoint's confirmOffset.

Helpers that ``lab.py`` lacks, kept here: ``start_consumer`` (the Java tool's pull consumer in the background),
``seen`` (its reads so far), ``proxy_lines`` / ``wait_conn`` (the proxy's connection events: when an HA connection
closed or opened again), ``mqadmin`` (RocketMQ's own command line, for ``updateBrokerConfig`` and
``updateSubGroup``), ``ha_acks`` (the master's HA connections from its HA status) and ``lab_s`` (a wall-clock time
as seconds of the run).
"""

from __future__ import annotations

import re
import subprocess
import time
from typing import Any

from ...impl.sim.report import members
from .. import files as F
from .. import maven, netns
from ..clients import Client, Tail
from ..lab import Lab, LabError, log_ms
from ..observe import TOOL_JVM, Snapshot
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro

ALTER = "CONTROLLER_ALTER_SYNC_STATE_SET"
GET_REPLICA_INFO = "CONTROLLER_GET_REPLICA_INFO"
MQADMIN = "org.apache.rocketmq.tools.command.MQAdminStartup"


# --------------------------------------------------------------------------------------------- helpers


def wall_ms() -> float:
    return time.time() * 1000


def lab_s(lab: Lab, t_ms: float) -> str:
    """A wall-clock time (epoch ms) as seconds since the run was created, as the timeline prints it."""
    return f"{(t_ms - lab.spec.created_ms) / 1000:.1f}s"


def start_consumer(lab: Lab, topic: str, group: str, interval_ms: int = 200) -> Client:
    """The Java tool's pull consumer in the background (every queue from offset 0, the route refreshed each
    round): ``clients/consumer-GROUP.jsonl``."""
    c = Client(lab.spec, f"consumer-{group}", ["consume", "--namesrv", lab.spec.namesrv_addr, "--topic", topic,
                                               "--group", group, "--interval-ms", str(interval_ms),
                                               "--deadline-ms", "1500000"])
    lab.clients.append(c)
    return c


def seen(c: Client) -> list[dict[str, Any]]:
    """Every message the consumer has printed so far (``seen`` lines), in order."""
    return [d for d in Tail(c.path).read() if d.get("k") == "seen"]


def proxy_lines(lab: Lab, kind: str, since_ms: float = 0.0) -> list[dict[str, Any]]:
    return [d for d in Tail(lab.spec.dir / "events" / "proxy.jsonl").read()
            if d.get("k") == kind and float(d.get("t", 0)) >= since_ms]


def wait_conn(lab: Lab, route: str, src: str, ev: str, since_ms: float, timeout: float) -> dict[str, Any] | None:
    """The first ``conn`` event ``ev`` (open, close) of ``route`` from ``src`` since ``since_ms``, waiting up to
    ``timeout`` s."""
    end = time.monotonic() + timeout
    while True:
        for d in proxy_lines(lab, "conn", since_ms):
            if d.get("route") == route and d.get("src") == src and d.get("ev") == ev:
                return d
        if time.monotonic() >= end:
            return None
        time.sleep(0.2)


def mqadmin(lab: Lab, *args: str, timeout: float = 120) -> str:
    """RocketMQ's own ``mqadmin`` in the run's hub namespace; its output. Raises ``LabError`` unless it says
    success."""
    inst = maven.fetch(lab.version)
    argv = [*netns.exec_prefix(lab.spec.run, "hub"), "java", *TOOL_JVM, f"-Duser.home={lab.spec.dir / 'clients'}",
            "-cp", inst.tool_classpath, MQADMIN, *args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    if "success" not in out.lower():
        tail = " | ".join(out.strip().splitlines()[-3:])
        raise LabError(f"mqadmin {args[0]}: {tail[:300]}")
    return out


def ha_acks(s: Snapshot, master: str) -> list[tuple[int, bool]]:
    """The master's HA connections as its HA status lists them: (slaveAckOffset, inSync) each. ``inSync`` is
    membership of the master's local (confirmed) SyncStateSet; the address is the proxy's, so a connection is told
    apart by its ack."""
    b = s.brokers.get(master)
    if b is None or not b.ok:
        return []
    return [(int(c.get("slaveAckOffset", -1)), bool(c.get("inSync"))) for c in b.ha_connections]


def sss_text(lab: Lab, s: Snapshot | None) -> str:
    lead = s.leader if s else None
    if lead is None:
        return "no controller leader"
    return (f"master {lead.master} mE {lead.master_epoch} SSS {members(lab.sss_nodes(s))} sE {lead.sss_epoch}")


def keys_in(view: F.CommitLogView | None) -> set[str]:
    return {k for m in (view.messages if view else []) for k in m.keys}


def seen_text(d: dict[str, Any]) -> str:
    return (f"{d.get('key')} queueOffset {d.get('queueOffset')} commitLogOffset {d.get('commitLogOffset')} "
            f"(read at {d.get('t')})")


def lost_reads(lab: Lab, reads: list[dict[str, Any]], node: str) -> tuple[list[dict[str, Any]], int | None]:
    """The reads whose key ``node``'s commit log (up to its logical end) does not hold; and that end."""
    files = lab.files()
    view = files.logs.get(node)
    have = keys_in(view)
    uniq: dict[str, dict[str, Any]] = {}
    for d in reads:
        uniq.setdefault(str(d.get("key")), d)
    return [d for k, d in uniq.items() if k not in have], (view.end_offset if view else None)


def store_lines(lab: Lab, node: str, pattern: str, since_ms: float = 0.0, n: int = 3,
                first: bool = False) -> list[str]:
    """The last (``first``: the first) ``n`` lines of ``node``'s RocketMQ logs matching ``pattern`` at or after
    ``since_ms`` (to the second)."""
    out = [x.strip() for x in lab.broker_log(node, pattern) if (log_ms(x) or 0) >= since_ms - 1000]
    return out[:n] if first else out[-n:]


def short(line: str, n: int = 260) -> str:
    return line if len(line) <= n else line[: n - 3] + "..."


# ------------------------------------------------------------------------ F-CONFIRM-SKIPS-NEW-CONNECTION

SKIP_TOPIC = "ReproSkip"
SKIP_HOLD_MS = 12_000  # the delay put on the reconnected slave's reports (< haHousekeepingInterval - 5 s)


def plain_cut(lab: Lab, m: str, s1: str, sid: int) -> tuple[list[str], dict[str, Any]]:
    """Phase 1: cut s1's HA connection once, nothing else; when did the master's shrink land, when did s1
    reconnect, and was s1 in the SyncStateSet when it did."""
    route = f"{m}.ha"
    t0 = wall_ms()
    lab.proxy_fault("cut-stream", route=route, after_bytes=0, **{"from": s1, "to": m})
    closed = wait_conn(lab, route, s1, "close", t0, 30)
    reopened = wait_conn(lab, route, s1, "open", t0, 40)
    out = lab.wait(lambda x: x.t0 > t0 and x.leader is not None and sid not in x.leader.sss, 40,
                   f"the SyncStateSet without {s1} after the plain cut")
    t_re = float(reopened["t"]) if reopened else None
    alters = [d for d in lab.frames(t0) if d.get("req_name", d.get("name")) == ALTER
              and (t_re is None or float(d["t"]) <= t_re + 3000)]
    answer = next((d for d in alters if d.get("response") and d.get("to") == m), None)
    m_lines = store_lines(lab, m, r"Notify the syncStateSet has been changed into|SyncStateSet changed from", t0, 4)
    back = lab.wait(lambda x: x.leader is not None and sid in x.leader.sss and x.t0 > (t_re or t0), 90,
                    f"{s1} back in the SyncStateSet after the plain cut")
    landed = float(answer["t"]) if answer else None
    before = landed is not None and t_re is not None and landed < t_re
    ev = [f"phase 1 (the cut alone): {s1}'s HA connection to {m} cut at the proxy at {lab_s(lab, t0)}"
          + (f", closed at {lab_s(lab, float(closed['t']))}" if closed else ""),
          *[f"  frame {lab_s(lab, float(d['t']))} {d.get('from')}->{d.get('to')} {ALTER} "
            + (f"response code {d.get('code')} {d.get('ext')}" if d.get("response") else f"request {d.get('ext')}")
            for d in alters[:4]],
          *[f"  {m}'s log: {short(x, 200)}" for x in m_lines],
          f"  admin at {lab_s(lab, out.t)}: {sss_text(lab, out)}",
          f"  {s1} reconnected at {lab_s(lab, t_re) if t_re else '(never)'}: "
          + ("after the shrink had landed: it came back outside the SyncStateSet (no window)" if before
             else "before the shrink landed"),
          f"  back in the SyncStateSet at {lab_s(lab, back.t)} ({sss_text(lab, back)})"]
    return ev, {"shrinkAnswered": landed, "reconnected": t_re, "shrinkFirst": before}


@repro("F-CONFIRM-SKIPS-NEW-CONNECTION",
       title="confirmOffset skips an SSS member that has reconnected but not yet acked",
       invariant="SYNC-CONFIRM-BOUND (shown through SYNC-SEEN-NO-LOSS after a failover)",
       how="nameserver, controller c0, three brokers, allAckInSyncStateSet=true, RocketMQ's default HA timings "
           "(haSendHeartbeatInterval 5 s, haHousekeepingInterval 20 s) and controller heartbeat timeout (10 s); "
           "a producer (send timeout 400 ms) writes to the master M every 100 ms and a pull consumer reads M "
           "throughout. Phase 1 (control): a slave S1's HA connection is cut once at the proxy (cut-stream), "
           "nothing else; the proxy's frames and the admin API say when c0 answered M's shrink {M, S2} and when S1 "
           "reconnected. Phase 2 (S1 back in the SyncStateSet): c0 is SIGKILLed (a controller outage: M's shrink "
           "proposal cannot land, and nobody deposes M), then S1's HA connection is cut again; as soon as S1 has "
           "reconnected, everything S1 sends M on it is delayed 12 s at the proxy (S1's first report, due 5 s after "
           "its handshake, reaches M ~17 s after it); once the consumer has read from M a message that starts at or "
           "past S1's log end, S2 and then M are SIGKILLed and c0 is restarted: it replays its log (master M, "
           "SyncStateSet {M, S1, S2}) and elects S1, the one live member; the messages read are looked up in S1's "
           "log",
       config={"store": {"haSendHeartbeatInterval": 5000, "haHousekeepingInterval": 20000},
               "broker": {"controllerHeartBeatTimeoutMills": 10000}},
       expect={"5.3.3": "present (computeConfirmOffset: `ack > 0` filter, #6729)",
               "5.4.0": "not through an HA break: removeConnection (PR #9897) takes the member out of the local "
                        "SyncStateSet when its connection closes; the loss that follows is that change's",
               "5.5.0": "as 5.4.0"},
       minutes=4.0)
def skips_new_connection(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    ctl = s.leader.node
    id_of = {n: i for i, n in lab.ids().items()}
    s1, s2 = [b for b in lab.spec.brokers if b != m][:2]
    sid = id_of[s1]
    lab.create_topic(SKIP_TOPIC, 1)
    warm = lab.produce(SKIP_TOPIC, 10, "w-", interval_ms=20)
    lab.note(f"{m} master (ids {id_of}); {sum(1 for r in warm if r.get('status') == 'SEND_OK')}/10 SEND_OK")
    cons = start_consumer(lab, SKIP_TOPIC, "c_skip")
    lab.start_producer(SKIP_TOPIC, "p-", interval_ms=100, timeout_ms=400)
    # phase 1: the cut alone
    ev1, d1 = plain_cut(lab, m, s1, sid)
    for x in ev1:
        lab.note(x)
    whole = lab.whole(90)
    # phase 2: the controller is down when S1's connection breaks
    lab.kill(ctl, "a controller outage: M's shrink cannot land")
    t_arm = wall_ms()
    lab.proxy_fault("cut-stream", route=f"{m}.ha", after_bytes=0, **{"from": s1, "to": m})
    re_open = wait_conn(lab, f"{m}.ha", s1, "open", t_arm, 40)
    if re_open is None:
        return Verdict(INCONCLUSIVE, ev1, f"{s1} did not reconnect to {m} within 40 s of the second cut", d1)
    hold = lab.proxy_fault("delay", route=f"{m}.ha", ms=SKIP_HOLD_MS, **{"from": s1, "to": m})
    t_re = float(re_open["t"])
    lab.note(f"{s1} reconnected to {m} at {lab_s(lab, t_re)}; its bytes to {m} delayed {SKIP_HOLD_MS} ms")
    at = lab.wait(lambda v: v.t0 > t_re and all(b in v.brokers and v.brokers[b].ok for b in (m, s1)), 30,
                  f"{m}'s and {s1}'s state after the reconnect")
    c_end = at.brokers[s1].max_offset
    if c_end is None:
        return Verdict(INCONCLUSIVE, ev1, f"no log end for {s1} after its reconnect", d1)
    conns_at = ha_acks(at, m)
    lab.note(f"{s1}'s log ends at {c_end}; {m}'s HA connections (ack, inSync): {conns_at}")
    # the consumer reads from M what S1 does not have?
    deadline = t_re + 5000 + SKIP_HOLD_MS - 2000
    past: dict[str, Any] | None = None
    while past is None and wall_ms() < deadline:
        past = next((d for d in seen(cons) if int(d.get("commitLogOffset", -1)) >= c_end), None)
        if past is None:
            time.sleep(0.2)
    last = lab.snap()
    conns_read = ha_acks(last, m)
    sends = lab.stop_producer()
    if past is None:
        silent = any(a <= 0 and i for a, i in conns_at)
        return Verdict(NOT_REPRODUCED if silent else INCONCLUSIVE,
                       [*ev1, f"no read at or past {s1}'s end {c_end} before its first report was due; {m}'s HA "
                              f"connections (ack, inSync) at the reconnect {conns_at}, then {conns_read}"],
                       f"the consumer read nothing past {s1}'s log end {c_end} while {s1}'s new connection had not "
                       "acked", d1)
    t_read = float(past.get("t", wall_ms()))
    early = [d for d in seen(cons) if int(d.get("commitLogOffset", -1)) >= c_end and float(d.get("t", 0)) < t_re]
    before = [d for d in seen(cons) if float(d.get("t", 0)) < t_re]
    lab.kill(s2, f"{s1} still silent")
    lab.kill(m, f"{s1} still silent")
    t_kill = wall_ms()
    reads = [d for d in seen(cons) if float(d.get("t", 0)) <= t_kill]
    lab.lift(hold)
    lab.restart(ctl)
    new = lab.wait(lambda v: v.leader is not None and v.leader.master not in (None, m) and v.t0 > t_kill, 120,
                   f"{ctl}, restarted, electing another master")
    n = new.leader.master if new.leader else None
    assert n is not None
    cons.stop()
    n_snap = lab.wait(lambda v: n in v.brokers and v.brokers[n].ok and v.brokers[n].role == "MASTER", 60,
                      f"{n} acting as master")
    lost, n_end = lost_reads(lab, reads, n)
    ok_keys = {str(r.get("key")) for r in sends if r.get("status") == "SEND_OK"}
    acked_lost = [d for d in lost if str(d.get("key")) in ok_keys]
    member_silent = any(a <= 0 and i for a, i in [*conns_at, *conns_read])
    out_of_set = any(a <= 0 and not i for a, i in [*conns_at, *conns_read])
    elect = [d for d in lab.frames(t_kill) if d.get("name") == "NOTIFY_BROKER_ROLE_CHANGED"][:1]
    delayed = [d for d in proxy_lines(lab, "act", t_arm) if d.get("op") == "delay"]
    m_lines = store_lines(lab, m, r"Notify the syncStateSet has been changed into|Error happen when change "
                                  r"SyncStateSet", t_arm, 2)
    s1_lines = store_lines(lab, s1, r"AutoSwitchHAClient connect to master|truncateOffset is|Slave report current "
                                    r"offset", t_arm, 3)
    not_acked = sum(1 for r in sends if r.get("status") != "SEND_OK" and float(r.get("t", 0)) > t_arm)
    evidence = [
        *ev1,
        f"phase 2: {sss_text(lab, whole)}; {ctl} SIGKILLed, then {s1}'s HA connection cut at "
        f"{lab_s(lab, t_arm)}",
        *[f"  {m}'s log: {short(x, 220)}" for x in m_lines],
        f"  {s1} reconnected at {lab_s(lab, t_re)}; its bytes to {m} delayed {SKIP_HOLD_MS} ms from then "
        f"({len(delayed)} delay acts); {s1}'s log end {c_end}",
        *[f"  {s1}'s log: {short(x, 220)}" for x in s1_lines],
        f"  {m}'s HA status at {lab_s(lab, at.t)}: connections (slaveAckOffset, inSync) {conns_at}",
        f"  before {s1}'s reconnect the consumer had read {len(before)} messages, {len(early)} of them at or past "
        f"{c_end}" + (f" ({m}'s confirmOffset frozen while {s1} had no connection: the #6662 rule)" if not early
                      else ""),
        f"  the consumer read from {m} at {lab_s(lab, t_read)}: {seen_text(past)} (at or past {s1}'s end "
        f"{c_end}); {m}'s HA connections then: {conns_read}",
        f"  {not_acked} sends since the cut not acknowledged (SEND_OK needs every member's ack)",
        f"  {s2} and {m} SIGKILLed at {lab_s(lab, t_kill)}; {ctl} restarted; elected: {n} ({sss_text(lab, new)})"
        + (f"; frame {lab_s(lab, float(elect[0]['t']))} NOTIFY_BROKER_ROLE_CHANGED {elect[0].get('ext')}"
           if elect else ""),
        f"  {n} acting as master at {lab_s(lab, n_snap.t)}; its log ends at {n_end}; of the {len(reads)} reads "
        f"before the kill, {len(lost)} are not in it"
        + (": " + ", ".join(f"{d.get('key')}@{d.get('commitLogOffset')}" for d in lost[:12]) if lost else "")
        + f"; {len(acked_lost)} of them had been acknowledged (SEND_OK)",
    ]
    data = {"master": m, "cut": s1, "other": s2, "newMaster": n, "s1End": c_end, "connsAtReconnect": conns_at,
            "ackedLost": [d.get("key") for d in acked_lost], "memberSilent": member_silent,
            "connsAtRead": conns_read, "firstReadPast": past, "lost": [d.get("key") for d in lost],
            "phase1": d1, "reconnectToRead_ms": round(t_read - t_re), "readPastBeforeReconnect": len(early)}
    if lost and n == s1 and member_silent and not early:
        return Verdict(REPRODUCED, evidence,
                       f"with {s1} reconnected but silent (its new connection's ack "
                       f"{min((a for a, _ in conns_at), default=None)}, a member of {m}'s SyncStateSet), {m} let the "
                       f"consumer read messages {s1} lacked; {s1} was elected and {len(lost)} messages read are gone",
                       data)
    if lost and (early or out_of_set):
        return Verdict(NOT_REPRODUCED, evidence,
                       f"not through the -1 filter: {s1}'s new connection was not a member of {m}'s SyncStateSet "
                       f"(inSync false) and {m} exposed messages past {s1}'s end before {s1} reconnected ({len(early)} "
                       f"read): {m} took {s1} out of its local SyncStateSet when the connection closed (5.4.0+, "
                       f"AutoSwitchHAService.removeConnection after PR #9897), the shrink never reached the "
                       f"controller, which elected {s1}: {len(lost)} read messages lost, {len(acked_lost)} of them "
                       "acknowledged",
                       data)
    return Verdict(NOT_REPRODUCED, evidence, f"every read message is in {n}'s log" if not lost else
                   f"{len(lost)} read messages lost, but {s1}'s connection was never seen silent in the set", data)


# ----------------------------------------------------------------------------- F-CONFIRM-LOCAL-SHORTCUT

SHORT_TOPIC = "ReproShortcut"
REMOTING_TIMEOUT = r"close socket because of timeout"


def answered(lab: Lab, node: str, req: str, since_ms: float, code: int = 0) -> dict[str, Any] | None:
    return next((d for d in lab.frames(since_ms) if d.get("response") and d.get("to") == node
                 and d.get("req_name") == req and d.get("code") == code), None)


@repro("F-CONFIRM-LOCAL-SHORTCUT",
       title="A master whose confirmed SSS is itself alone exposes unacknowledged messages to consumers",
       invariant="SYNC-SEEN-NO-LOSS",
       how="nameserver, controller c0, two brokers (master M, slave X), allAckInSyncStateSet=true, the brokers' "
           "controller heartbeat timeout at RocketMQ's default 10 s; a producer (send timeout 400 ms) writes every "
           "100 ms and a pull consumer reads throughout; the bytes from M to X are held at the proxy (one way: X's "
           "HA connection stays open, haHousekeepingInterval at RocketMQ's default 20 s) until c0's SyncStateSet is "
           "{M}; then c0's answers to M's ALTER_SYNC_STATE_SET are dropped at the proxy and the hold is lifted: X "
           "catches up and M proposes {M, X}; from that proposal on c0's answers to M's CONTROLLER_GET_REPLICA_INFO "
           "(the metadata sync) are dropped too; c0 applies the expansion and M never hears it (its confirmed "
           "SyncStateSet stays {M}, the expansion in flight). Nothing else "
           "is done: RocketMQ's own reaction to the lost answers (the broker's 3 s RPC timeout closes its "
           "channel to c0, which c0 takes for M's death) makes c0 elect X, while M, unaware, goes on taking the "
           "producer's writes until the route moves to X; the drops are then lifted, M rejoins as X's slave, and "
           "the messages the consumer read are looked up in X's log",
       config={"cluster": {"brokers": 2}, "broker": {"controllerHeartBeatTimeoutMills": 10000},
               "store": {"haHousekeepingInterval": 20000}},
       expect={"5.3.3": "present (CommitLog.getConfirmOffset: local SyncStateSet size 1 -> max offset, #6618)",
               "5.4.0": "present (unchanged)", "5.5.0": "present (unchanged)"},
       minutes=4.0)
def local_shortcut(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    ctl = s.leader.node
    x = next(b for b in lab.spec.brokers if b != m)
    id_of = {n: i for i, n in lab.ids().items()}
    xid = id_of[x]
    m_addr = lab.spec.front_addr(m)
    lab.create_topic(SHORT_TOPIC, 1)
    warm = lab.produce(SHORT_TOPIC, 10, "w-", interval_ms=20)
    lab.note(f"{m} master, {x} slave (ids {id_of}); {sum(1 for r in warm if r.get('status') == 'SEND_OK')}/10 "
             "SEND_OK")
    cons = start_consumer(lab, SHORT_TOPIC, "c_short")
    lab.start_producer(SHORT_TOPIC, "p-", interval_ms=100, timeout_ms=400)
    # 1. X out of the SyncStateSet (its HA connection kept: only the bytes from M are held); M writes alone
    cut = lab.partition([m], [x], one_way=True)
    alone = lab.wait(lambda v: v.leader is not None and v.leader.master == m and xid not in v.leader.sss, 60,
                     f"the SyncStateSet without {x}")
    lab.note(f"{sss_text(lab, alone)}")
    time.sleep(2.0)
    # 2. M never hears what c0 answers: its ALTER_SYNC_STATE_SET answers from now on, its metadata answers from its
    # first proposal on (armed earlier, a lost metadata answer would close M's channel before the proposal)
    t_arm = wall_ms()
    f_alter = lab.proxy_fault("drop-response", code=ALTER, **{"from": ctl, "to": m})
    lab.heal(cut)
    ptail = Tail(lab.spec.dir / "events" / "proxy.jsonl")
    proposal: dict[str, Any] | None = None
    end = time.monotonic() + 40
    while proposal is None and time.monotonic() < end:
        proposal = next((d for d in ptail.read() if d.get("k") == "frame" and d.get("name") == ALTER
                         and d.get("from") == m and not d.get("response") and float(d.get("t", 0)) >= t_arm), None)
        if proposal is None:
            time.sleep(0.05)
    f_info = lab.proxy_fault("drop-response", code=GET_REPLICA_INFO, **{"from": ctl, "to": m})
    t_info = wall_ms()
    # 3. the expansion: applied by c0, unknown to M
    exp: dict[str, Any] | None = None
    end = time.monotonic() + 20
    while proposal is not None and exp is None and time.monotonic() < end:
        exp = answered(lab, m, ALTER, t_arm)
        time.sleep(0.2)
    time.sleep(1.5)  # the metadata answers in flight at the arming have come back (or been dropped) by now
    dropped_info = {d.get("opaque") for d in proxy_lines(lab, "act", t_arm) if d.get("id") == f_info}
    leaked = [d for d in lab.frames(float(exp["t"]) if exp else t_arm) if d.get("response") and d.get("to") == m
              and d.get("req_name") == GET_REPLICA_INFO and d.get("opaque") not in dropped_info]
    if exp is None or leaked:
        lab.stop_producer()
        for f in (f_alter, f_info):
            lab.lift(f)
        return Verdict(INCONCLUSIVE, why=(f"c0 accepted no ALTER_SYNC_STATE_SET of {m} within 40 s of the heal"
                                          if exp is None else
                                          f"a metadata answer reached {m} after c0 accepted its expansion, before "
                                          "the drop was armed: its SyncStateSet was not left alone"))
    t_exp = float(exp["t"])
    lab.note(f"c0 accepted {m}'s expansion at {lab_s(lab, t_exp)} (sE {exp.get('ext')}); the answer dropped")
    # 4. what RocketMQ does about the lost answers
    dep = lab.wait(lambda v: v.leader is not None and v.leader.master == x and v.t0 > t_arm, 60,
                   f"c0 electing {x}")
    notify = next((d for d in lab.frames(t_arm) if d.get("name") == "NOTIFY_BROKER_ROLE_CHANGED"
                   and (d.get("ext") or {}).get("masterBrokerId") == str(xid)), None)
    t_elect = float(notify["t"]) if notify else float(dep.t0)
    lab.note(f"c0 elected {x} ({sss_text(lab, dep)}) at {lab_s(lab, t_elect)}")
    views: list[str] = []
    alone_seen = False
    moved: dict[str, Any] | None = None
    end = time.monotonic() + 25
    rtail = Tail(lab.producer.path) if lab.producer else None
    results: list[dict[str, Any]] = []
    while time.monotonic() < end and moved is None:
        v = lab.fresh()
        b = v.brokers.get(m)
        if b is not None and b.ok:
            views.append(f"{lab_s(lab, v.t)}: {m} role {b.role} inSyncSlaveNums {b.in_sync_slaves} maxOffset "
                         f"{b.max_offset}; {sss_text(lab, v)}")
            alone_seen = alone_seen or (b.role == "MASTER" and b.in_sync_slaves == 0)
        if rtail is not None:
            results += [d for d in rtail.read() if d.get("k") == "send-result"]
        moved = next((r for r in results if r.get("status") == "SEND_OK" and float(r.get("t", 0)) > t_elect
                      and lab.spec.node_of_addr(str(r.get("addr", ""))) == x), None)
    time.sleep(2.0)
    sends = lab.stop_producer()
    t_stop = wall_ms()
    # 5. M learns: the drops lifted, it becomes X's slave
    for f in (f_alter, f_info):
        lab.lift(f)
    back = lab.try_wait(lambda v: v.t0 > t_stop and m in v.brokers and v.brokers[m].ok
                        and v.brokers[m].role == "SLAVE" and x in v.brokers
                        and v.brokers[m].max_offset == v.brokers[x].max_offset, 90)
    time.sleep(1.0)
    reads = seen(cons)
    cons.stop()
    lost, x_end = lost_reads(lab, reads, x)
    on_m_after = [d for d in reads if str(d.get("storeHost")) == m_addr and float(d.get("t", 0)) > t_elect]
    m_sends_after = [r for r in sends if float(r.get("t", 0)) > t_elect
                     and lab.spec.node_of_addr(str(r.get("addr", ""))) == m]
    drops = {"ALTER answers": lab.proxy_acts(f_alter), "GET_REPLICA_INFO answers": lab.proxy_acts(f_info)}
    closes = [d for d in proxy_lines(lab, "conn", t_arm) if d.get("route") == f"{ctl}.remoting"
              and d.get("src") == m and d.get("ev") == "close" and float(d["t"]) <= t_elect + 1000]
    timeouts = store_lines(lab, m, REMOTING_TIMEOUT, t_arm, 1, first=True)
    m_lines = store_lines(lab, m, r"The slave \d+ has caught up|Notify the syncStateSet has been changed into",
                          t_arm, 2, first=True)
    c_lines = store_lines(lab, ctl, r"inactive, broker|Elect new master|newMasterElected=false", t_arm, 4,
                          first=True)
    m_trunc = store_lines(lab, m, r"Truncate slave log to|truncateOffset is", t_stop, 2)
    evidence = [
        f"the bytes from {m} to {x} held until c0's SyncStateSet was {{{m}}} ({sss_text(lab, alone)})",
        f"c0's answers to {m} dropped at the proxy: ALTER_SYNC_STATE_SET from {lab_s(lab, t_arm)} (the heal), "
        f"GET_REPLICA_INFO from {lab_s(lab, t_info)} ({m}'s first proposal at "
        f"{lab_s(lab, float(proposal['t'])) if proposal else '?'}): {drops}",
        *[f"  {m}'s log: {short(v, 220)}" for v in m_lines],
        f"  frame {lab_s(lab, t_exp)} c0->{m} {ALTER} response code 0 {exp.get('ext')} (dropped): c0 applied "
        f"{{{m}, {x}}}",
        *[f"  proxy: {lab_s(lab, float(d['t']))} {m}'s connection to {ctl} closed ({d.get('why')})" for d in closes],
        *[f"  {m}'s remoting.log: {short(v, 200)}" for v in timeouts],
        *[f"  {ctl}'s log: {short(v, 220)}" for v in c_lines],
        f"  c0 elected {x} at {lab_s(lab, t_elect)}"
        + (f": NOTIFY_BROKER_ROLE_CHANGED {notify.get('ext')}" if notify else ""),
        *[f"  admin {v}" for v in views[:4]],
        f"  after the election {len(m_sends_after)} sends went to {m} ("
        + ", ".join(sorted({str(r.get('status')) for r in m_sends_after})) + f"); the consumer read "
        f"{len(on_m_after)} messages stored on {m} after it: "
        + ", ".join(f"{d.get('key')}@{d.get('commitLogOffset')}" for d in on_m_after[:8]),
        f"  the producer's first SEND_OK from {x}: "
        + (f"{lab_s(lab, float(moved['t']))} {moved.get('key')}" if moved else "none within 25 s"),
        f"drops lifted at {lab_s(lab, t_stop)}; {m} "
        + (f"back as {x}'s slave at {lab_s(lab, back.t)}" if back else "not back as a slave within 90 s")
        + "".join(f"; {m}'s log: {short(v, 160)}" for v in m_trunc),
        f"{x}'s log ends at {x_end}; of the {len(reads)} reads, {len(lost)} are not in it"
        + (": " + ", ".join(f"{d.get('key')}@{d.get('commitLogOffset')}" for d in lost[:12]) if lost else ""),
    ]
    data = {"master": m, "slave": x, "tExpansion": t_exp, "tElect": t_elect, "localAloneSeen": alone_seen,
            "lost": [d.get("key") for d in lost], "readOnMasterAfterElect": [d.get("key") for d in on_m_after],
            "drops": drops, "views": views}
    if lost and alone_seen:
        return Verdict(REPRODUCED, evidence,
                       f"c0 applied {{{m}, {x}}} but {m}'s confirmed SyncStateSet stayed {{{m}}}; deposed by c0 "
                       f"(the lost answers closed its channel), {m} went on dispatching every write at once and the "
                       f"consumer read {len(lost)} messages that {x}, elected from that SyncStateSet, does not have",
                       data)
    if not alone_seen:
        return Verdict(INCONCLUSIVE, evidence, f"{m}'s HA status never showed its confirmed SyncStateSet alone after "
                       f"the election ({len(lost)} read messages not in {x}'s log)", data)
    return Verdict(NOT_REPRODUCED, evidence, f"every read message is in {x}'s log", data)


# ------------------------------------------------------------------------ F-RECOVER-NORMALLY-PAST-CONFIRM

RECOVER_TOPIC = "ReproRecover"
RECOVER_GROUP = "c_recover"
SET_REPUT = re.compile(r"\[SetReputOffset\] maxPhysicalPosInLogicQueue=(\d+) clMinOffset=(-?\d+) "
                       r"clMaxOffset=(\d+) clConfirmedOffset=(\d+)")


def cq_end(lab: Lab, node: str, topic: str) -> tuple[int, int]:
    """(units, the end of the last unit's message: commitLogOffset + size) of ``topic``'s consume queues on
    ``node``, from its files."""
    try:
        qs = F.read_consume_queues(lab.spec.store_dir(node), topic)
    except F.RealFileError:
        return 0, 0
    units = [u for us in qs.values() for u in us]
    return len(units), max((u.commitlog_offset + u.size for u in units), default=0)


def cq_vs_log(lab: Lab, node: str, topic: str, up_to: int) -> tuple[list[F.CommitLogMessage],
                                                                     list[tuple[int, F.CommitLogMessage]]]:
    """``topic``'s messages (queue 0) in ``node``'s commit log below ``up_to`` that its consume queue does not
    point at; and the consume-queue slots whose message carries another queue offset (slot, message)."""
    store = lab.spec.store_dir(node)
    try:
        units = F.read_consume_queues(store, topic).get(0, [])
        log = F.read_commitlog(store / "commitlog", mapped_file_size=lab.spec.cfg.store.mapped_file_size_commit_log)
    except F.RealFileError:
        return [], []
    msgs = {m.physical_offset: m for m in log.messages if m.topic == topic and m.queue_id == 0
            and m.end_offset <= up_to}
    pointed = {u.commitlog_offset for u in units}
    missing = [m for off, m in sorted(msgs.items()) if off not in pointed]
    shifted = [(u.queue_offset, msgs[u.commitlog_offset]) for u in units
               if u.commitlog_offset in msgs and msgs[u.commitlog_offset].queue_offset != u.queue_offset]
    return missing, shifted


def checkpoint_confirm(lab: Lab, node: str) -> int | None:
    try:
        return F.read_store_checkpoint(lab.spec.store_dir(node)).confirm_phy_offset
    except F.RealFileError:
        return None


@repro("F-RECOVER-NORMALLY-PAST-CONFIRM",
       title="After a clean shutdown a broker dispatches messages past its confirmOffset to consumers",
       invariant="SYNC-VISIBLE-BOUND",
       how="nameserver, controller c0, three brokers (master M, slaves S1 and S2), allAckInSyncStateSet=true, "
           "haMaxTimeSlaveNotCatchup and haHousekeepingInterval 300 s (M keeps a stalled slave in its SyncStateSet "
           "through the scenario; RocketMQ's defaults, 15 s and 20 s, are shorter than a JVM restart on this "
           "machine), controller heartbeat timeout 10 s; slaveReadEnable set to true on every broker "
           "(mqadmin updateBrokerConfig) and a subscription group whose brokerId is S1's (mqadmin updateSubGroup -i: "
           "M then suggests the consumer read from S1); 10 messages acknowledged by all; S2 is paused (SIGSTOP) so "
           "that M's confirmOffset stays at their end; 20 more messages (send timeout 400 ms, unacknowledged) reach "
           "M and S1; S1 is stopped cleanly (SIGTERM) and restarted (no abort file: recoverNormally); S1's "
           "checkpoint (confirmPhyOffset), consume-queue files and store log are read; a pull consumer of that "
           "group reads the topic (from M and, as suggested, from S1); S2 is resumed at the end",
       config={"store": {"haMaxTimeSlaveNotCatchup": 300_000, "haHousekeepingInterval": 300_000},
               "broker": {"controllerHeartBeatTimeoutMills": 10000}},
       expect={"5.3.3": "present (recoverNormally: doDispatch ignores confirmOffset; #6618 guarded "
                        "recoverAbnormally only)",
               "5.4.0": "present (unchanged)", "5.5.0": "present (unchanged)"},
       minutes=5.0)
def recover_normally(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    id_of = {n: i for i, n in lab.ids().items()}
    s1, s2 = [b for b in lab.spec.brokers if b != m][:2]
    lab.create_topic(RECOVER_TOPIC, 1)
    for b in lab.spec.brokers:
        mqadmin(lab, "updateBrokerConfig", "-n", lab.spec.namesrv_addr, "-b", lab.spec.front_addr(b),
                "-k", "slaveReadEnable", "-v", "true")
    mqadmin(lab, "updateSubGroup", "-n", lab.spec.namesrv_addr, "-b", lab.spec.front_addr(m),
            "-g", RECOVER_GROUP, "-i", str(id_of[s1]))
    lab.note(f"slaveReadEnable=true on every broker; group {RECOVER_GROUP} reads from broker id {id_of[s1]} ({s1})")
    warm = lab.produce(RECOVER_TOPIC, 10, "w-", interval_ms=20)
    t_warm = wall_ms()
    same = lab.wait(lambda v: v.t0 > t_warm and all(b in v.brokers and v.brokers[b].ok for b in lab.spec.brokers)
                    and len({v.brokers[b].max_offset for b in lab.spec.brokers}) == 1
                    and (v.brokers[m].max_offset or 0) > 0, 60, "every broker at the master's end")
    e0 = same.brokers[m].max_offset or 0
    lab.note(f"{sum(1 for r in warm if r.get('status') == 'SEND_OK')}/10 SEND_OK; every log ends at {e0}")
    time.sleep(2.0)  # a heartbeat header carries M's confirmOffset e0 to the slaves
    lab.pause(s2)
    more = lab.tool(*lab._produce_args(RECOVER_TOPIC, "u-", 50, 256, 400), "--count", "20", timeout=180)
    lab._keep("produce-u-", more)
    sends = [d for d in more if d.get("k") == "send-result"]
    lab.note(f"{s2} paused; 20 more sends: {sum(1 for r in sends if r.get('status') == 'SEND_OK')} SEND_OK")
    t_sent = wall_ms()
    ahead = lab.wait(lambda v: v.t0 > t_sent and all(b in v.brokers and v.brokers[b].ok for b in (m, s1))
                     and (v.brokers[m].max_offset or 0) > e0
                     and v.brokers[s1].max_offset == v.brokers[m].max_offset, 60, f"{s1} at {m}'s end")
    e1 = ahead.brokers[s1].max_offset or 0
    conns = ha_acks(ahead, m)
    lab.note(f"{m} and {s1} end at {e1}; {m}'s HA connections (ack, inSync): {conns}")
    cq_before = cq_end(lab, s1, RECOVER_TOPIC)
    t_stop = wall_ms()
    lab.stop(s1)
    ck_stop = checkpoint_confirm(lab, s1)
    abort = (lab.spec.store_dir(s1) / "abort").exists()
    cq_stopped = cq_end(lab, s1, RECOVER_TOPIC)
    lab.note(f"{s1} stopped cleanly (abort file {'present' if abort else 'absent'}); checkpoint confirmPhyOffset "
             f"{ck_stop}; consume queue {cq_stopped[0]} units ending at {cq_stopped[1]} (before the stop: "
             f"{cq_before}); log end {e1}")
    if ck_stop is None or ck_stop >= e1:
        lab.resume(s2)
        return Verdict(INCONCLUSIVE, why=f"{s1}'s log ({e1}) did not run ahead of its checkpointed confirmOffset "
                                         f"({ck_stop}) at the clean stop")
    lab.restart(s1)
    back = lab.wait(lambda v: s1 in v.brokers and v.brokers[s1].ok and v.brokers[s1].role == "SLAVE"
                    and v.t0 > t_stop, 120, f"{s1} back as a slave")
    cq_after = cq_end(lab, s1, RECOVER_TOPIC)
    ck_after = checkpoint_confirm(lab, s1)
    reput = store_lines(lab, s1, r"\[SetReputOffset\]", t_stop, 1)
    recov = store_lines(lab, s1, r"message store recover mode|message store recover end", t_stop, 2)
    m_confirm = store_lines(lab, s1, r"State not matched, .*confirmOffset:", t_stop - 60_000, 1)
    lab.note(f"{s1} back as a slave: consume queue {cq_after[0]} units ending at {cq_after[1]}; checkpoint "
             f"confirmPhyOffset {ck_after}")
    mqadmin(lab, "updateBrokerConfig", "-n", lab.spec.namesrv_addr, "-b", lab.spec.front_addr(s1),
            "-k", "slaveReadEnable", "-v", "true")
    reads = lab.consume(RECOVER_TOPIC, 15, group=RECOVER_GROUP)
    m_cq = cq_end(lab, m, RECOVER_TOPIC)
    ck_read = checkpoint_confirm(lab, s1)
    post = lab.fresh()
    past = [d for d in reads if int(d.get("commitLogOffset", -1)) >= (ck_read if ck_read is not None else e1)]
    pulls_s1 = [d for d in proxy_lines(lab, "conn", t_stop) if d.get("route") == f"{s1}.remoting"
                and d.get("src") == "client"]
    missing, shifted = cq_vs_log(lab, s1, RECOVER_TOPIC, e1)
    m_missing, m_shifted = cq_vs_log(lab, m, RECOVER_TOPIC, e0)
    bug_lines = [x.strip() for x in lab.broker_log(s1, r"\[BUG\]logic queue order maybe wrong",
                                                   files=("storeerror.log",))
                 if (log_ms(x) or 0) >= t_stop - 1000]
    read_keys = {str(d.get("key")) for d in reads}
    never_read = [m_ for m_ in missing if not set(m_.keys) & read_keys]
    lab.resume(s2)
    first: dict[str, dict[str, Any]] = {}
    for d in past:
        first.setdefault(str(d.get("key")), d)
    uniq = sorted(first, key=lambda k: int(first[k].get("commitLogOffset", 0)))
    evidence = [
        f"{m} master, {s1} and {s2} slaves; every log at {e0} after 10 acknowledged messages; {s2} paused",
        f"20 more sends ({sum(1 for r in sends if r.get('status') == 'SEND_OK')} SEND_OK): {m} and {s1} end at "
        f"{e1}; {m}'s HA connections (slaveAckOffset, inSync): {conns}",
        f"{s1} SIGTERM at {lab_s(lab, t_stop)}: abort file {'present' if abort else 'absent'}; checkpoint "
        f"confirmPhyOffset {ck_stop}; {RECOVER_TOPIC}'s consume queue: {cq_stopped[0]} units, last message ending "
        f"at {cq_stopped[1]}",
        *[f"{s1}'s store.log before the stop (a frame from {m}): {short(v, 240)}" for v in m_confirm],
        *[f"{s1}'s store.log after the restart: {short(v, 220)}" for v in recov + reput],
        f"{s1} back as a slave ({sss_text(lab, back)}): consume queue {cq_after[0]} units, last message ending at "
        f"{cq_after[1]}; checkpoint confirmPhyOffset {ck_after}",
        f"the consumer (group {RECOVER_GROUP}) read {len(reads)} messages; {len(uniq)} distinct ones at or past "
        f"{s1}'s confirmPhyOffset {ck_read}: "
        + ", ".join(f"{k}@{first[k].get('commitLogOffset')}" for k in uniq[:8]) + (" ..." if len(uniq) > 8 else ""),
        f"{m}'s consume queue: {m_cq[0]} units, last message ending at {m_cq[1]} (what {m} itself exposes); "
        f"client connections to {s1}'s remoting port since the stop: {len(pulls_s1)}; "
        f"{sss_text(lab, post)}",
        f"{s1}'s consume queue against its commit log (to {e1}): {len(missing)} message(s) of the topic not in it"
        + "".join(f" ({','.join(x.keys)} at {x.physical_offset}, queue offset {x.queue_offset})" for x in missing[:3])
        + f"; {len(shifted)} slot(s) holding a message that carries another queue offset"
        + (f" (slot {shifted[0][0]}: {','.join(shifted[0][1].keys)} of queue offset {shifted[0][1].queue_offset}, "
           f"..., slot {shifted[-1][0]}: {','.join(shifted[-1][1].keys)} of {shifted[-1][1].queue_offset})"
           if shifted else "")
        + f"; {m}'s: {len(m_missing)} missing, {len(m_shifted)} shifted (to {e0})",
        *[f"{s1}'s storeerror.log: {short(x, 200)}" for x in bug_lines[:2]],
        f"  ({len(bug_lines)} such lines at the restart; never read by the consumer: "
        + (", ".join(",".join(x.keys) for x in never_read) or "none") + ")",
    ]
    data = {"master": m, "stopped": s1, "paused": s2, "e0": e0, "e1": e1, "checkpointAtStop": ck_stop,
            "checkpointAfter": ck_after, "cqAtStop": cq_stopped, "cqAfter": cq_after, "masterCq": m_cq,
            "readPast": uniq, "reput": reput, "cqMissing": [x.physical_offset for x in missing],
            "cqShifted": len(shifted), "bugLines": len(bug_lines)}
    hole = (f"; and it skipped the message at its consume queue's old end ({','.join(missing[0].keys)} at "
            f"{missing[0].physical_offset}): {len(shifted)} later messages sit one slot early and "
            f"{','.join(missing[0].keys)} is not readable from {s1}") if missing and shifted else ""
    dispatched_past = ck_after is not None and cq_after[1] > ck_after
    if past and dispatched_past:
        return Verdict(REPRODUCED, evidence,
                       f"{s1} restarted after a clean stop with its log at {e1} and confirmPhyOffset {ck_stop}; "
                       f"recoverNormally built its consume queue to {cq_after[1]} and a consumer read {len(uniq)} "
                       f"messages past the confirmOffset from it ({m}'s own consume queue ends at {m_cq[1]})"
                       + hole, data)
    if dispatched_past:
        return Verdict(REPRODUCED, evidence,
                       f"{s1}'s consume queue reaches {cq_after[1]}, past its confirmPhyOffset {ck_after} "
                       "(SYNC-VISIBLE-BOUND), but the consumer read none of those messages", data)
    return Verdict(NOT_REPRODUCED, evidence, f"{s1}'s consume queue ends at {cq_after[1]}, within its "
                   f"confirmPhyOffset {ck_after}", data)
