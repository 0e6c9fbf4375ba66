"""F-EPOCH-ENTRY-LOST-ON-RECONNECT on a real build: a slave that loses its HA connection right after a new master's
first (empty) TRANSFER frame forgets that epoch for good, and truncates the epoch's acknowledged messages at its next
handshake while it is in the SyncStateSet (``docs/findings/F-EPOCH-ENTRY-LOST-ON-RECONNECT.md``).

The Java it relies on (RocketMQ 5.3.3, ``store/.../ha/autoswitch``):

* ``AutoSwitchHAService.changeToSlave``: a role change re-opens the HA client (``AutoSwitchHAClient.reOpen`` ->
  ``init``), the only place that sets ``currentReceivedEpoch`` to -1.
* ``AutoSwitchHAConnection.WriteSocketService.run``: after the handshake a new connection waits for the slave's
  first report (``AutoSwitchHAClient.transferFromMaster``, every ``haSendHeartbeatInterval``) and then, with nothing
  to send, writes a heartbeat (``sendHeartbeatIfNeeded``: a 36-byte TRANSFER header, body 0) labelled with the
  epoch entry ``findEpochEntryByOffset`` finds for the slave's offset: the new master's (e, X) when the slave
  ends at X.
* ``AutoSwitchHAClient.HAClientReader.processReadResult``, TRANSFER: ``masterEpoch != currentReceivedEpoch`` ->
  ``epochCache.appendEntry(e, X)``; heartbeats take that path.
* ``AutoSwitchHAClient.closeMaster`` / ``connectMaster`` leave ``currentReceivedEpoch``; ``doTruncate`` finds the
  consistent point (``EpochFileCache.findConsistentPoint``), ``truncateFiles`` there, then
  ``EpochFileCache.truncateSuffixByOffset``, which drops every entry starting at or after it.

The scenario (three brokers, ``allAckInSyncStateSet``, RocketMQ's default HA timings so that a new connection's
first frame comes 5 s after the handshake and a stalled slave leaves the SyncStateSet after 15 s, and the brokers'
10 s heartbeat timeout at the controller):

1. 10 messages under the first master M's epoch (so that the next epoch starts past the last entry's start).
2. Before M is killed, each slave T's HA listener gets a one-shot cut of its stream to the other slave, after the
   handshake T will send (20 bytes + 12 per epoch entry, T's entries being M's plus the new one) and one TRANSFER
   header (36 bytes): the stream closes (FIN) right after the new master's first frame. M is SIGKILLed and left
   dead; the controller elects T; S's first connection to T carries the handshake and the empty heartbeat of epoch e
   and is closed; S reconnects 5 s later. Checked: T's handshake held e's entry (S's store log), the cut fell after
   exactly those bytes (the proxy's ``act`` line), T wrote nothing of epoch e before it (T's max offset is X).
3. S's second handshake (its store log: "local epoch entries is ...", "truncateOffset is X") and its epoch cache
   afterwards (admin ``getBrokerEpochCache``): does (e, X) survive?
4. 20 sends, each acknowledged only with S's ack (the SyncStateSet is {T, S}); S's epoch cache after it holds them.
5. T cut from the controller at the proxy, both ways, then S's HA connection closed at once (the proxy's
   ``cut-stream`` with ``now``): on 5.3.3 ``AutoSwitchHAService.removeConnection`` drops a closed connection's slave
   from the SyncStateSet and asks the controller at once, so without the partition the controller's set loses S
   before its next handshake (the page's schedule has the same partition: the shrink must not reach the
   controller). At S's next handshake, 5 s later (``closeMasterAndWait``), its store log's truncateOffset against
   its max offset: are epoch e's acknowledged messages truncated while S is in the controller's SyncStateSet? Then
   T is SIGKILLed at once (before S's first report on the new connection, 5 s after its handshake, lets T refill
   it); the controller, without T's heartbeats for 10 s (RocketMQ's default timeout; the kit's 3 s would elect S
   before its handshake), elects from the SyncStateSet; what the new master's log and a consumer hold of the
   acknowledged messages (SYNC-NO-ACK-LOSS).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from ...impl.sim.report import members
from ..lab import Lab, LabError
from ..observe import Snapshot
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro
from .ha_epoch import LogWatch, ProxyEvents, epoch_entry, epochs_of, fmt_epochs, fresh_ok, max_of, poll, short

TOPIC = "ReproEpochEntry"
HANDSHAKE_HEADER = 20  # AutoSwitchHAConnection.HANDSHAKE_HEADER_SIZE: state, body size, offset, epoch
EPOCH_ENTRY = 12  # AutoSwitchHAConnection.EPOCH_ENTRY_SIZE: epoch, start offset
TRANSFER_HEADER = 36  # AutoSwitchHAConnection.TRANSFER_HEADER_SIZE: + epoch start offset, confirm offset
ENTRY = re.compile(r"epoch=(\d+), startOffset=(\d+)")  # EpochEntry.toString
END = re.compile(r"endOffset=(-?\d+)")
TRUNCATE = re.compile(r"truncateOffset is (-?\d+)")
HANDSHAKE_LINES = r"Receive handshake, masterMaxPosition|local epoch entries is|truncateOffset is|Truncate slave log to"


def entries(line: str) -> list[tuple[int, int]]:
    """The (epoch, start) pairs a store-log line prints (``EpochEntry.toString``, ``List.toString``)."""
    return [(int(e), int(s)) for e, s in ENTRY.findall(line)]


def first_frame_bytes(entries_after_election: int) -> int:
    """What a new master sends first on a connection: its handshake (``buildHandshakeBuffer``: header + one entry
    per epoch) and one TRANSFER frame with no body (``sendHeartbeatIfNeeded``)."""
    return HANDSHAKE_HEADER + EPOCH_ENTRY * entries_after_election + TRANSFER_HEADER


def handshakes(lines: list[str]) -> list[dict[str, Any]]:
    """S's handshakes in order, from ``HANDSHAKE_LINES``: the master's entries, the local entries and the local
    log end (``doTruncate`` logs the local cache with its last entry ending at the slave's max offset), the
    consistent point."""
    out: list[dict[str, Any]] = []
    for x in lines:
        if "Receive handshake" in x:
            m = re.search(r"masterMaxPosition (-?\d+)", x)
            out.append({"master_max": int(m.group(1)) if m else None, "master": entries(x), "local": None,
                        "local_end": None, "truncate": None, "lines": [x]})
        elif out:
            if "local epoch entries is" in x:
                out[-1]["local"] = entries(x)
                ends = END.findall(x)  # the last entry's end: the slave's max offset (setLastEpochEntryEndOffset)
                out[-1]["local_end"] = int(ends[-1]) if ends else None
            elif (t := TRUNCATE.search(x)) is not None:
                out[-1]["truncate"] = int(t.group(1))
            out[-1]["lines"].append(x)
    return out


def act_line(ev: ProxyEvents, fid: str) -> dict[str, Any] | None:
    return next((d for d in ev.update() if d.get("k") == "act" and d.get("id") == fid), None)


def in_sss(lab: Lab, s: Snapshot, node: str) -> bool:
    return node in lab.sss_nodes(s)


def until_fresh(lab: Lab, nodes: list[str], pred: Callable[[Snapshot], bool], timeout: float,
                what: str) -> Snapshot:
    """The first snapshot taken after this call (``fresh_ok``: ``nodes`` answering) that passes ``pred``: the
    observer's queue may still hold snapshots from before a step that has just ended (a batch of sends)."""
    end = time.monotonic() + timeout
    while True:
        x = fresh_ok(lab, nodes, timeout=max(30.0, end - time.monotonic()))
        if pred(x):
            return x
        if time.monotonic() >= end:
            raise LabError(f"waited {timeout:.0f} s for {what}")


@repro("F-EPOCH-ENTRY-LOST-ON-RECONNECT",
       title="A slave that reconnects at an epoch's start loses the epoch's entry, then truncates the epoch's "
             "acknowledged messages while in the SyncStateSet",
       invariant="SYNC-SSS-HOLDS-ACKED (and SYNC-NO-ACK-LOSS once the truncated member is elected)",
       how="nameserver, controller c0, three brokers, allAckInSyncStateSet=true, RocketMQ's default HA timings "
           "(haSendHeartbeatInterval 5 s, haHousekeepingInterval 20 s, haMaxTimeSlaveNotCatchup 15 s) and broker "
           "heartbeat timeout at the controller (10 s); 10 messages "
           "under the first master M's epoch; each slave's HA listener is armed at the proxy to close (FIN) its "
           "stream to the other slave after its handshake and one 36-byte TRANSFER header; M is SIGKILLed (and left "
           "dead) with the producer idle, the controller elects T, whose first frame to the other slave S is an "
           "empty heartbeat of the new epoch e, and the stream closes right after it; S reconnects; its handshake "
           "and epoch cache are read (store log, admin getBrokerEpochCache); 20 messages are sent, acknowledged with "
           "S's ack; T is cut from the controller at the proxy (both ways: its SyncStateSet shrink cannot reach "
           "it) and S's HA connection closed at once; at S's next handshake (store log: truncateOffset) T is "
           "SIGKILLed; the controller elects from the SyncStateSet; the new master's log and a consumer are read",
       config={"broker": {"controllerHeartBeatTimeoutMills": 10000},
               "store": {"haSendHeartbeatInterval": 5000, "haHousekeepingInterval": 20000,
                         "haMaxTimeSlaveNotCatchup": 15000}},
       expect={"5.3.3": "present (currentReceivedEpoch is reset only by AutoSwitchHAClient.init; doTruncate's "
                        "truncateSuffixByOffset drops an entry starting at the consistent point)",
               "5.4.0": "fixed (doTruncate truncates the epoch cache only below the slave's max offset, so the "
                        "reconnect keeps (e, X): M-NO-COMMON-EPOCH's fix, presumably apache/rocketmq#9942)",
               "5.5.0": "fixed (as 5.4.0)"},
       minutes=3.0)
def epoch_entry_lost(lab: Lab) -> Verdict:
    ev = ProxyEvents(lab)
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    slaves = sorted(b for b in lab.spec.brokers if b != m)
    e1 = s.leader.master_epoch or 0
    lab.create_topic(TOPIC, 1)
    r0 = lab.produce(TOPIC, 10, "e0-", interval_ms=20)
    pre = until_fresh(lab, lab.spec.brokers, lambda x: len({max_of(x, b) for b in lab.spec.brokers}) == 1
                      and max_of(x, m) > 0 and all(epochs_of(x, b) == epochs_of(x, m) for b in slaves), 60,
                      "every broker at the master's log end with its epoch entries")
    m_epochs = epochs_of(pre, m)
    x_end = max_of(pre, m)
    if not m_epochs or m_epochs[-1][1] >= x_end:
        return Verdict(INCONCLUSIVE, why=f"the last epoch {fmt_epochs(m_epochs)} holds no byte up to {x_end}: the "
                       "slave could not record the next epoch at X (appendEntry refuses an equal start)")
    lab.note(f"{m} master at masterEpoch {e1}; {sum(r.get('status') == 'SEND_OK' for r in r0)}/10 SEND_OK; every "
             f"broker ends at {x_end} with {fmt_epochs(m_epochs)}")

    # 1. the cut armed on both candidates' HA listeners, then the failover with the producer idle
    want = first_frame_bytes(len(m_epochs) + 1)
    arm: dict[str, str] = {}
    for t in slaves:
        other = next(b for b in slaves if b != t)
        arm[t] = lab.proxy_fault("cut-stream", route=f"{t}.ha", after_bytes=want, rst=False,
                                 **{"from": t, "to": other})
    w_hs = {b: LogWatch(lab, b, HANDSHAKE_LINES) for b in slaves}
    lab.kill(m, "the first master, with the producer idle")
    el = lab.wait(lambda x: x.leader is not None and x.leader.master not in (None, m)
                  and (x.leader.master_epoch or 0) > e1, 60, "the controller electing a slave")
    assert el.leader is not None and el.leader.master is not None
    t = el.leader.master
    sl = next(b for b in slaves if b != t)
    lab.lift(arm[sl])
    e = el.leader.master_epoch or 0
    got = lab.wait(lambda x: epoch_entry(epochs_of(x, t), e) is not None, 30, f"{t}'s epoch entry {e}")
    ent = epoch_entry(epochs_of(got, t), e)
    assert ent is not None
    x_start = ent[1]
    lab.note(f"{t} elected at masterEpoch {e}, its entry ({e}, {x_start}); {sl} is the slave to cut")
    if x_start != x_end:
        return Verdict(INCONCLUSIVE, why=f"{t}'s epoch {e} starts at {x_start}, not at the common end {x_end}")

    # 2. the first connection: handshake + one empty frame, then closed
    cut1 = poll(lambda: act_line(ev, arm[t]), 90, f"{t}'s first frames to {sl} and the cut")
    w_after = LogWatch(lab, sl, HANDSHAKE_LINES)
    first_hs = handshakes(w_hs[sl].new())
    at_cut = fresh_ok(lab, [t, sl])
    lab.note(f"{t} -> {sl} cut after {cut1.get('total')} bytes (armed for {want}); {t} max {max_of(at_cut, t)}")
    pre_checks: list[str] = []
    if int(cut1.get("total") or 0) != want:
        pre_checks.append(f"the cut fell after {cut1.get('total')} bytes, not after the handshake and one frame "
                          f"({want})")
    if not first_hs or len(first_hs[0]["master"]) != len(m_epochs) + 1 or first_hs[0]["master"][-1] != (e, x_start):
        pre_checks.append(f"{sl}'s first handshake with {t} did not carry ({e}, {x_start}) as its last of "
                          f"{len(m_epochs) + 1} entries: {first_hs[0]['master'] if first_hs else 'no handshake line'}")
    if max_of(at_cut, t) != x_start:
        pre_checks.append(f"{t} wrote bytes of epoch {e} before the cut (max {max_of(at_cut, t)} > {x_start})")
    if pre_checks:
        return Verdict(INCONCLUSIVE, [f"first handshake: {short(x, 200)}" for h in first_hs[:1] for x in h["lines"]],
                       "; ".join(pre_checks))

    # 3. the reconnect's handshake, then what the epoch cache holds
    second = poll(lambda: [h for h in handshakes(w_after.new()) if h["truncate"] is not None], 60,
                  f"{sl}'s handshake after the cut")[0]
    recorded = (e, x_start) in (second["local"] or [])
    settled = until_fresh(lab, [t, sl], lambda x: x.leader is not None and x.leader.master == t
                          and in_sss(lab, x, sl), 60, f"{sl} back in {t}'s SyncStateSet")
    time.sleep(7.0)  # one more heartbeat period (5 s) and a report: a frame that would re-record e has come
    after = until_fresh(lab, [t, sl], lambda x: in_sss(lab, x, sl), 30, f"{sl} still in the SyncStateSet")
    sl_epochs = epochs_of(after, sl)
    lost = epoch_entry(sl_epochs, e) is None
    lab.note(f"{sl}'s second handshake: local entries {second['local']}, truncateOffset {second['truncate']}; "
             f"its epoch cache now {fmt_epochs(sl_epochs)}")
    evidence = [
        f"masterEpoch {e1}: {m} master, every broker at {x_end} with epoch entries {fmt_epochs(m_epochs)}",
        f"{m} SIGKILLed with the producer idle; {t} elected at masterEpoch {e}, entry ({e}, {x_start}); the "
        f"SyncStateSet {lab.sss_nodes(settled)} once {sl} was back",
        f"{sl}'s first handshake with {t}: " + " | ".join(short(x, 170) for x in first_hs[0]["lines"][:1]),
        f"proxy: {t}'s stream to {sl} closed after {cut1.get('total')} bytes = handshake "
        f"({HANDSHAKE_HEADER} + {EPOCH_ENTRY} x {len(m_epochs) + 1}) + one TRANSFER header ({TRANSFER_HEADER}); "
        f"{t}'s max offset then {max_of(at_cut, t)} (no byte of epoch {e})",
        f"{sl}'s second handshake: " + " | ".join(short(x, 170) for x in second["lines"][1:]),
        f"{sl}'s epoch cache (admin) {7}+ s later: {fmt_epochs(sl_epochs)}, max offset {max_of(after, sl)}",
    ]
    data: dict[str, Any] = {"firstMaster": m, "master": t, "slave": sl, "epoch": e, "X": x_start,
                            "cutBytes": cut1.get("total"), "secondHandshake": {k: v for k, v in second.items()
                                                                                if k != "lines"},
                            "slaveEpochsAfterReconnect": sl_epochs}
    if not recorded:
        return Verdict(NOT_REPRODUCED, evidence,
                       f"{sl} had not recorded ({e}, {x_start}) from {t}'s first frame: its second handshake's local "
                       f"entries are {second['local']}", data)
    if not lost:
        return Verdict(NOT_REPRODUCED, evidence,
                       f"{sl} recorded ({e}, {x_start}) at the first frame and holds it after the reconnect "
                       f"({fmt_epochs(sl_epochs)})", data)

    # 4. sends acknowledged with S's ack, appended under the previous epoch
    sends = lab.produce(TOPIC, 20, "e1-", interval_ms=50, timeout_ms=10_000)
    acked = [str(r.get("key")) for r in sends if r.get("status") == "SEND_OK"]
    held: Snapshot | None = None
    try:
        held = until_fresh(lab, [t, sl], lambda x: max_of(x, sl) == max_of(x, t) > x_start, 60,
                           f"{sl} at {t}'s end")
    except LabError:
        pass
    if not acked or held is None:
        statuses = [r.get("status") for r in sends][:5]
        return Verdict(INCONCLUSIVE, [*evidence, f"sends: {len(acked)} of {len(sends)} SEND_OK; {statuses}"],
                       f"the sends of epoch {e} were not acknowledged or {sl} did not reach {t}'s end", data)
    y_end = max_of(held, sl)
    sl_epochs2 = epochs_of(held, sl)
    evidence.append(f"{len(acked)}/{len(sends)} sends SEND_OK (SyncStateSet {lab.sss_nodes(held)}, "
                    f"allAckInSyncStateSet): {t} and {sl} at {y_end}; {sl}'s epoch cache {fmt_epochs(sl_epochs2)}")
    data.update({"acked": acked, "Y": y_end, "slaveEpochsHolding": sl_epochs2})
    if epoch_entry(sl_epochs2, e) is not None:
        return Verdict(NOT_REPRODUCED, evidence, f"{sl} recorded epoch {e} when its bytes came", data)

    # 5. T cut from the controller (its shrink of the SyncStateSet cannot reach it), S's HA stream closed at once:
    # S's next handshake, T killed right then, the election
    w_third = LogWatch(lab, sl, HANDSHAKE_LINES)
    lab.partition([t], list(lab.spec.controllers))
    cut2 = lab.proxy_fault("cut-stream", route=f"{t}.ha", after_bytes=0, now=True, **{"from": t, "to": sl})
    poll(lambda: act_line(ev, cut2), 30, f"the cut of {t}'s HA connection to {sl}")
    third = poll(lambda: [h for h in handshakes(w_third.new()) if h["truncate"] is not None], 60,
                 f"{sl}'s handshake after the second cut")[0]
    before_kill = lab.snap()
    local_end = third["local_end"] if third["local_end"] is not None else y_end
    truncated = third["truncate"] is not None and 0 <= third["truncate"] < local_end
    sss_at = lab.sss_nodes(before_kill)
    evidence.append(f"{t} cut from the controller at the proxy, then {sl}'s HA connection closed; {sl}'s next "
                    "handshake: " + " | ".join(short(x, 170)
                                                                           for x in third["lines"][1:]))
    evidence.append(f"the controller's SyncStateSet at that handshake (admin snapshot of "
                    f"t={(before_kill.t0 - lab.spec.created_ms) / 1000:.1f} s): {members(sss_at)}")
    data.update({"thirdHandshake": {k: v for k, v in third.items() if k != "lines"}, "sssAtTruncate": sss_at})
    if not truncated:
        return Verdict(NOT_REPRODUCED, evidence, f"{sl}'s next handshake kept its log (truncateOffset "
                       f"{third['truncate']}, its end {local_end})", data)
    if sl not in sss_at:
        return Verdict(INCONCLUSIVE, evidence, f"{sl} truncated {local_end} -> {third['truncate']} but had left "
                       f"the SyncStateSet ({members(sss_at)}) before its handshake", data)
    lab.kill(t, "right at the truncating handshake, before the slave's first report refills it")
    lab.note(f"{t} SIGKILLed; {sl} truncated {local_end} -> {third['truncate']} at its handshake")
    follows: list[str] = []
    lost_keys: list[str] = []
    try:
        new = lab.wait(lambda x: x.leader is not None and x.leader.master not in (None, t)
                       and (x.leader.master_epoch or 0) > e, 60, "a master elected after the kill")
        assert new.leader is not None and new.leader.master is not None
        nm = new.leader.master
        nm_view = lab.wait(lambda x: x.brokers.get(nm) is not None and x.brokers[nm].ok
                           and x.brokers[nm].role == "MASTER", 45, f"{nm} serving as master")
        logs = lab.files().logs
        holds = {k for msg in logs[nm].messages if msg.topic == TOPIC for k in msg.keys[:1]} if nm in logs else set()
        lost_keys = [k for k in acked if k not in holds]
        seen = lab.consume(TOPIC, 15.0)
        seen_keys = {str(x.get("key")) for x in seen}
        follows.append(f"{t} SIGKILLed; {nm} elected at masterEpoch {new.leader.master_epoch} from SyncStateSet "
                       f"{members(sss_at)}; its max offset {max_of(nm_view, nm)}, epoch cache "
                       f"{fmt_epochs(epochs_of(nm_view, nm))}")
        follows.append(f"{nm}'s commit log holds {len(holds)} messages of {TOPIC}; of the {len(acked)} acknowledged "
                       f"in epoch {e}, {len(lost_keys)} are missing (e.g. {lost_keys[:3]}); a consumer read "
                       f"{len(seen_keys)} messages, {sum(k in seen_keys for k in acked)} of those acknowledged")
        data.update({"afterMaster": nm, "lostAcked": lost_keys, "seen": sorted(seen_keys)})
    except (LabError, KeyError) as exc:
        follows.append(f"what follows the kill stopped: {exc}")
    evidence += follows
    files = lab.files()
    ef = files.epochs.get(sl)
    evidence.append(f"{sl}'s epochFileCheckpoint at the end: {fmt_epochs(ef.pairs()) if ef else '(none)'}")
    why = (f"{sl} recorded ({e}, {x_start}) from {t}'s empty first frame, lost it at the reconnect's handshake "
           f"(truncateSuffixByOffset({x_start})), appended epoch {e}'s {len(acked)} acknowledged messages under "
           f"{fmt_epochs(sl_epochs2)}, and its next handshake truncated {local_end} -> {third['truncate']} while in "
           f"the SyncStateSet {members(sss_at)}")
    if lost_keys:
        why += f"; elected after {t}'s kill, it lacks {len(lost_keys)} acknowledged messages"
    return Verdict(REPRODUCED, evidence, why, data)
