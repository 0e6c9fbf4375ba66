"""F-SLAVE-FOLLOWS-DEPOSED-MASTER on a real build: after a failover a slave whose nameserver registration is answered
before the new master's is told the deposed master's HA address, connects there, and (the finding) stays there.

In controller mode a slave learns who its master is from the controller (``ReplicasManager.changeToSlave`` ->
``AutoSwitchHAService.changeToSlave``: ``destroyConnections``, ``haClient.updateMasterAddress(newMasterAddr)``,
``haClient.updateHaMasterAddress(null)``) but where to replicate from from the nameserver: every registration's
answer (``BrokerController.registerBrokerAll`` -> ``handleRegisterBrokerResult``;
``updateMasterHAServerAddrPeriodically`` is true in controller mode) sets
``messageStore.updateHaMasterAddress(haServerAddr)``, and ``RouteInfoManager.registerBroker`` answers a slave with
the HA address of the live broker it lists at id 0. ``ReplicasManager.registerBrokerWhenRoleChange`` registers every
broker at the role change; the new master's registration as id 0 replaces the deposed master there (a higher
``stateVersion``). ``AutoSwitchHAClient.run`` connects (``connectMaster``) only from READY, to the address it holds
then; ``updateHaMasterAddress`` stores a new address and wakes the loop, which in TRANSFER goes on reading the open
connection; only a failed read or write or ``haHousekeepingInterval`` without a read (``closeMaster``) sends it back
to READY. A broker serves HA connections whatever its role (``AutoSwitchHAConnection``).

The scenario (three brokers, one controller, RocketMQ's own periods for what the finding turns on: registration
every 30 s, ``haHousekeepingInterval`` 20 s, ``haSendHeartbeatInterval`` 5 s, controller heartbeat timeout 10 s),
played twice on one cluster:

* **round 1, M kept cut** (the control): the master M is cut at the proxy from the controller and from both other
  brokers, both ways, not from the nameserver. The controller elects S1; the new master's REGISTER_BROKER as
  master (``brokerId`` 0 in its header) is held 3 s at the proxy, so that S2's role-change registration is answered
  first, with M's HA address (checked on the answer's header, ``haServerAddr``). M stays cut for the whole window:
  does S2 reach S1 and rejoin the SyncStateSet?
* **round 2, M healed** (the finding's trace): the same on the set as round 1 left it (the master N of round 1 is
  the one cut), and the cut is healed as soon as S2 holds N's HA address. N learns from the controller that it is
  deposed and turns slave; S2's next connect goes to N. Over a window longer than the registration period plus the
  housekeeping interval: where does S2's HA connection go, does its held address change, does it rejoin the
  SyncStateSet?

Where S2's connection goes is read from the proxy (``events/proxy.jsonl``: every HA connection's open and close,
with its source and destination node); the address S2 holds from its HA status (``getBrokerHAStatus``:
``haClientRuntimeInfo.masterAddr`` is ``AutoSwitchHAClient.getHaMasterAddress``); the answers to its registrations
from the proxy's record of REGISTER_BROKER responses (``haServerAddr`` in their header); the SyncStateSet from the
controller; S2's store.log for the client's own lines.

Pure helpers, tested on planted lines: ``ha_events``, ``open_ha``, ``register_answers``, ``judge``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from .. import control as C
from ..lab import Lab, LabError
from ..observe import Snapshot
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro
from ..spec import HA_PORT
from .confirm_offset import ha_acks, lab_s, proxy_lines, short, sss_text, store_lines, wall_ms

REG_PERIOD_MS = 30_000  # registerNameServerPeriod: RocketMQ's default (BrokerConfig), the finding's 30 s
HOUSEKEEPING_MS = 20_000  # haHousekeepingInterval: RocketMQ's default (MessageStoreConfig)
HOLD_MS = 3_000  # the new master's REGISTER_BROKER as master, held at the proxy
WINDOW_MS = REG_PERIOD_MS + HOUSEKEEPING_MS + 20_000  # each round's observation, from the heal (or the answer)
TOPIC = "ReproFollows"
NOTIFY = "NOTIFY_BROKER_ROLE_CHANGED"
HA_CLIENT_LINES = (r"update master ha address|AutoSwitchHAClient connect to master|change state to|"
                   r"close connection with master|housekeeping|Truncate slave log|connect to master .* failed")


# --------------------------------------------------------------------------------------------- pure helpers


def ha_events(lines: list[dict[str, Any]], src: str, since_ms: float = 0.0) -> list[dict[str, Any]]:
    """The proxy's ``conn`` events of HA connections from ``src`` (routes ``NODE.ha``), at or after ``since_ms``,
    each with ``node``: the broker it goes to."""
    out = []
    for d in lines:
        route = str(d.get("route", ""))
        if (d.get("k", "conn") == "conn" and route.endswith(".ha") and d.get("src") == src
                and float(d.get("t", 0)) >= since_ms):
            out.append({**d, "node": route[: -len(".ha")]})
    return out


def open_ha(lines: list[dict[str, Any]], src: str, at_ms: float = float("inf")) -> dict[str, Any] | None:
    """``src``'s HA connection open at ``at_ms`` (the last one opened then and not closed by then), or None."""
    live: dict[Any, dict[str, Any]] = {}
    for d in ha_events(lines, src):
        if float(d.get("t", 0)) > at_ms:
            break
        if d.get("ev") == "open":
            live[d.get("conn")] = d
        elif d.get("ev") in ("close", "failed", "refused"):
            live.pop(d.get("conn"), None)
    if not live:
        return None
    return max(live.values(), key=lambda d: float(d.get("t", 0)))


def register_answers(frames: list[dict[str, Any]], node: str, ns: str = "ns") -> list[dict[str, Any]]:
    """The nameserver's answers to ``node``'s REGISTER_BROKER (the proxy's watched frames), in order, each as
    ``{"t", "ha": haServerAddr or None, "master": masterAddr or None, "code"}``."""
    out = []
    for d in frames:
        if (d.get("response") and d.get("req_name") == "REGISTER_BROKER" and d.get("from") == ns
                and d.get("to") == node):
            ext = d.get("ext") or {}
            out.append({"t": float(d.get("t", 0)), "ha": ext.get("haServerAddr"), "master": ext.get("masterAddr"),
                        "code": d.get("code")})
    return out


@dataclass
class Look:
    """What one round saw of the follower S2 at its end."""

    deposed: str  # the master cut away (M)
    new: str  # the master the controller elected (S1)
    conn_to: str | None  # where S2's open HA connection goes at the end (a node), None: none open
    conn_since: float | None  # when that connection opened (epoch ms)
    held: str | None  # the node of the HA address S2 holds at the end (its HA status)
    in_sss: bool  # S2 in the controller's SyncStateSet at the end
    right_answer_at: float | None  # the first registration answer naming the new master's HA address (epoch ms)
    end: float  # when the round ended (epoch ms)
    deposed_conns: int = 0  # HA connections S2 opened to the deposed master during the round


def judge(lk: Look, housekeeping_ms: int = HOUSEKEEPING_MS) -> tuple[str, str]:
    """A round's verdict: REPRODUCED when S2 ends replicating from the deposed master over a connection that
    outlived both the right address's arrival (by more than the housekeeping interval) and that address in its
    HA status, outside the SyncStateSet; NOT_REPRODUCED when it ends connected to the new master and back in the
    SyncStateSet; INCONCLUSIVE otherwise (e.g. it never got the right address, or is connected nowhere)."""
    if lk.conn_to == lk.deposed and lk.conn_since is not None:
        if (lk.right_answer_at is not None and lk.end - max(lk.right_answer_at, lk.conn_since) > housekeeping_ms
                and not lk.in_sss):
            return REPRODUCED, (f"S2's HA connection to the deposed {lk.deposed} stayed open "
                                f"{(lk.end - lk.conn_since) / 1000:.0f} s, "
                                f"{(lk.end - lk.right_answer_at) / 1000:.0f} s after a registration answer named "
                                f"{lk.new}'s HA address (held: {lk.held}); S2 is out of the SyncStateSet")
        return INCONCLUSIVE, (f"S2 is connected to the deposed {lk.deposed} but the round did not last past the "
                              "right address plus the housekeeping interval")
    if lk.conn_to == lk.new and lk.in_sss:
        return NOT_REPRODUCED, f"S2 ends connected to the new master {lk.new} and in its SyncStateSet"
    return INCONCLUSIVE, (f"S2 ends connected to {lk.conn_to or 'nothing'}, holding {lk.held}'s HA address, "
                          f"{'in' if lk.in_sss else 'out of'} the SyncStateSet")


# --------------------------------------------------------------------------------------------- the rounds


def ha_addr(lab: Lab, node: str) -> str:
    return f"{lab.spec.host(node).front}:{HA_PORT}"


def addr_node(lab: Lab, addr: Any) -> str | None:
    return lab.spec.node_of_addr(str(addr)) if addr else None


def held_by(s: Snapshot | None, lab: Lab, node: str) -> str | None:
    b = s.brokers.get(node) if s else None
    if b is None or not b.ok or not b.ha_client:
        return None
    return addr_node(lab, b.ha_client.get("masterAddr"))


def conn_text(lab: Lab, d: dict[str, Any]) -> str:
    extra = ""
    if d.get("ev") == "close":
        extra = f" ({d.get('why')}, {d.get('up')} bytes up, {d.get('down')} down, {d.get('age_ms', 0) / 1000:.1f} s)"
    elif d.get("why"):
        extra = f" ({d.get('why')})"
    return f"{lab_s(lab, float(d['t']))} conn {d.get('conn')} {d.get('src')}->{d['node']}.ha {d.get('ev')}{extra}"


@dataclass
class Round:
    name: str
    verdict: str
    why: str
    evidence: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Cut:
    """A round's faults in force: the partition (None once healed) and the holds not yet spent or lifted."""

    pid: str | None
    holds: dict[str, str]

    def heal(self, lab: Lab) -> float:
        if self.pid is not None:
            lab.heal(self.pid)
            self.pid = None
        return wall_ms()

    def undo(self, lab: Lab) -> None:
        self.heal(lab)
        for fid in self.holds.values():
            if lab.proxy_acts(fid) == 0:
                lab.lift(fid)
        self.holds = {}


def play_round(lab: Lab, name: str, heal: bool) -> Round:
    """One failover of the current master M with S2's registration answered first; ``heal``: M's cut is healed as
    soon as S2 holds M's HA address (else kept for the whole window). Whatever happens, the round ends with the cut
    healed and the holds lifted."""
    s = lab.whole(180)
    m = s.master
    assert m is not None and s.leader is not None
    ctl = s.leader.node
    slaves = [b for b in lab.spec.brokers if b != m]
    ev: list[str] = [f"{name}: {sss_text(lab, s)}; cut {m} from {ctl}, {', '.join(slaves)} (not from ns)"
                     + ("; healed once S2 holds its HA address" if heal else "; kept cut")]
    holds = {b: lab.proxy_fault("delay-request", code="REGISTER_BROKER", ext={"brokerId": "0"}, count=1,
                                ms=HOLD_MS, **{"from": b, "to": lab.spec.nameserver}) for b in slaves}
    t_cut = wall_ms()
    cut = Cut(lab.partition([m], [ctl, *slaves]), holds)
    try:
        return _round(lab, name, heal, m, slaves, cut, t_cut, ev)
    finally:
        cut.undo(lab)


def _round(lab: Lab, name: str, heal: bool, m: str, slaves: list[str], cut: Cut, t_cut: float,
           ev: list[str]) -> Round:
    holds = cut.holds
    el = lab.try_wait(lambda x: x.t0 > t_cut and x.master in slaves, 90)
    if el is None:
        return Round(name, INCONCLUSIVE, f"the controller did not elect another master within 90 s of {m}'s cut",
                     ev)
    n = el.master
    assert n is not None
    s2 = next(b for b in slaves if b != n)
    lab.lift(holds.pop(s2))
    ev.append(f"  elected {n} ({sss_text(lab, el)}), seen at {lab_s(lab, el.t)}; S2 = {s2}")
    end = time.monotonic() + 30
    while lab.proxy_acts(holds[n]) == 0 and time.monotonic() < end:
        time.sleep(0.2)
    held_act = next((d for d in proxy_lines(lab, "act", t_cut) if d.get("id") == holds[n]), None)
    if held_act is None:
        return Round(name, INCONCLUSIVE, f"{n}'s REGISTER_BROKER as master never reached the proxy within 30 s", ev)
    t_released = float(held_act["t"]) + HOLD_MS
    ev.append(f"  {lab_s(lab, float(held_act['t']))} {n}'s REGISTER_BROKER (brokerId 0) held {HOLD_MS} ms at the "
              f"proxy (released ~{lab_s(lab, t_released)})")
    # S2's role change: the controller's notification to it (or, without one, the held registration's arrival)
    notes = [d for d in lab.frames(t_cut) if d.get("name") == NOTIFY and not d.get("response") and d.get("to") == s2]
    t_el = min([float(held_act["t"]) - 1500, *[float(d["t"]) for d in notes[:1]]])
    answers: list[dict[str, Any]] = []
    end = time.monotonic() + 30
    while time.monotonic() < end:
        answers = [a for a in register_answers(lab.frames(t_cut), s2) if a["t"] > t_el]
        if answers:
            break
        time.sleep(0.2)
    if not answers:
        return Round(name, INCONCLUSIVE, f"no answer to a registration of {s2} within 30 s of the election", ev)
    first = answers[0]
    told = addr_node(lab, first["ha"])
    ev.append(f"  {lab_s(lab, first['t'])} ns -> {s2}: REGISTER_BROKER answer haServerAddr {first['ha']} ({told}), "
              f"masterAddr {first['master']}; "
              + (f"before {n}'s registration reached the proxy ({lab_s(lab, float(held_act['t']))}): the order was "
                 "the brokers' own, the hold did not make it" if first["t"] < float(held_act["t"])
                 else f"while {n}'s registration was held"))
    if told != m:
        return Round(name, INCONCLUSIVE, f"{s2}'s first registration after the election was answered with {told}'s "
                                         f"HA address, not the deposed {m}'s: the window was missed", ev,
                     {"deposed": m, "new": n, "follower": s2})
    # the client's own record: changeToSlave cleared its address, the answer set the deposed master's
    pat = rf"update master ha address, OLD: null NEW: {re.escape(ha_addr(lab, m))}"
    set_lines: list[str] = []
    end = time.monotonic() + 20
    while not set_lines and time.monotonic() < end:
        set_lines = store_lines(lab, s2, pat, t_cut, 1, first=True)
        time.sleep(0.5)
    if not set_lines:
        return Round(name, INCONCLUSIVE, f"{s2}'s logs never said its HA client took {m}'s HA address after the "
                                         "role change", ev, {"deposed": m, "new": n, "follower": s2})
    ev.append(f"  {s2}'s store.log: {short(set_lines[0], 200)}")
    t_heal = None
    if heal:
        t_heal = cut.heal(lab)
        ev.append(f"  {lab_s(lab, t_heal)} {m}'s cut healed")
    t0 = t_heal or first["t"]
    # the window: judged on state, bounded; a round ends early once S2 is back with the new master in the set
    deadline = time.monotonic() + WINDOW_MS / 1000
    last: Snapshot | None = None
    while time.monotonic() < deadline:
        time.sleep(2.0)
        last = lab.snap()
        lines = proxy_lines(lab, "conn", t_cut)
        cur = open_ha(lines, s2)
        sid = next((i for i, b in lab.ids().items() if b == s2), None)
        lead = last.leader
        if cur is not None and cur.get("route") == f"{n}.ha" and lead is not None and sid in lead.sss \
                and lead.master == n:
            break
    try:
        fin = lab.fresh(60, answered=[s2])
    except LabError:
        fin = last or lab.snap()
    t_end = wall_ms()
    lines = proxy_lines(lab, "conn", t_cut)
    evs = ha_events(lines, s2, t_cut)
    cur = open_ha(lines, s2)
    all_answers = [a for a in register_answers(lab.frames(t_cut), s2) if a["t"] > t_el]
    in_hold = [a for a in all_answers[1:] if float(held_act["t"]) <= a["t"] <= t_released + 500]
    if in_hold:
        ev.append(f"  the hold also covered {s2}'s registration answered at {lab_s(lab, in_hold[0]['t'])} "
                  f"(haServerAddr {in_hold[0]['ha']}): without it, that answer would have followed {n}'s registration")
    status = C.request(lab.spec.proxy_sock, {"op": "status"}, timeout=10)
    opened = {d.get("conn") for d in evs if d.get("ev") == "open"}  # a connection from before the cut may show
    live = [c for c in status.get("conns", []) if c.get("conn") in opened]  # open: its close is held at the cut
    for c in live:
        ev.append(f"  proxy at the end: conn {c.get('conn')} {s2}->{c.get('route')} {c.get('state')}, "
                  f"{c.get('age_s', 0):.0f} s old, {c.get('up')} bytes up, {c.get('down')} down")
    conns_n = ha_acks(fin, n)
    ev.append(f"  {n}'s HA status at the end: {len(conns_n)} HA connections (slaveAckOffset, inSync) {conns_n}")
    right = next((a for a in all_answers if addr_node(lab, a["ha"]) == n), None)
    lead = fin.leader
    sid = next((i for i, b in lab.ids().items() if b == s2), None)
    in_sss = bool(lead is not None and sid in lead.sss)
    lk = Look(deposed=m, new=n, conn_to=cur["node"] if cur else None,
              conn_since=float(cur["t"]) if cur else None, held=held_by(fin, lab, s2), in_sss=in_sss,
              right_answer_at=right["t"] if right else None, end=t_end,
              deposed_conns=sum(1 for d in evs if d.get("ev") == "open" and d["node"] == m))
    verdict, why = judge(lk)
    ev += [f"  {s2}'s HA connections since the cut (proxy): {len(evs)} events"]
    shown = [d for d in evs if d.get("ev") != "refused"]
    refused = [d for d in evs if d.get("ev") == "refused"]
    if refused:
        to = ", ".join(sorted({d["node"] for d in refused}))
        ev.append(f"    {len(refused)} connects to {to} refused across the cut "
                  f"(first {lab_s(lab, float(refused[0]['t']))}, last {lab_s(lab, float(refused[-1]['t']))})")
    ev += [f"    {conn_text(lab, d)}" for d in shown[:12]]
    if len(shown) > 12:
        ev.append(f"    ... {len(shown) - 12} more")
    ev.append(f"  answers to {s2}'s registrations since the election: "
              + ", ".join(f"{lab_s(lab, a['t'])} {addr_node(lab, a['ha'])}" for a in all_answers[:8]))
    ev += [f"  {s2}'s store.log: {short(x, 200)}" for x in store_lines(lab, s2, HA_CLIENT_LINES, t0, 12, first=True)]
    ev.append(f"  end ({lab_s(lab, fin.t)}): {sss_text(lab, fin)}; {s2}'s open HA connection goes to "
              f"{lk.conn_to} (since {lab_s(lab, lk.conn_since) if lk.conn_since else '-'}), its HA status holds "
              f"{lk.held}'s address; {s2} {'in' if in_sss else 'not in'} the SyncStateSet")
    data = {"deposed": m, "new": n, "follower": s2, "heal": heal, "tCut": t_cut, "tHeal": t_heal,
            "tAnswer": first["t"], "connTo": lk.conn_to, "connSince": lk.conn_since, "held": lk.held,
            "inSss": in_sss, "rightAnswerAt": lk.right_answer_at, "deposedConns": lk.deposed_conns,
            "window_s": round((t_end - t0) / 1000, 1), "orderOwn": first["t"] < float(held_act["t"]),
            "holdCovered": [a["t"] for a in in_hold]}
    if heal and lk.deposed_conns == 0 and verdict != REPRODUCED:
        return Round(name, INCONCLUSIVE, f"{s2} never connected to the deposed {m} after the heal (its next "
                                         "registration came first): the window was missed", ev, data)
    return Round(name, verdict, why.replace("S2", s2), ev, data)


@repro("F-SLAVE-FOLLOWS-DEPOSED-MASTER",
       title="A slave answered by the nameserver before the new master keeps replicating from the deposed master",
       invariant="LIVE-HA-TRANSFER (and LIVE-SSS-CATCHUP)",
       how="nameserver, controller c0, three brokers, RocketMQ's default registerNameServerPeriod (30 s), "
           "haHousekeepingInterval (20 s), haSendHeartbeatInterval (5 s) and controller heartbeat timeout (10 s); "
           "10 messages written. Round 1: the master M is cut at the proxy from c0 and both slaves, both ways (not "
           "from the nameserver); c0 elects S1; S1's REGISTER_BROKER as master (header brokerId 0) is held 3 s at "
           "the proxy, so S2's role-change registration is answered first, with M's HA address (read on the "
           "answer's header); M stays cut for 70 s (the registration period + the housekeeping interval + 20 s) "
           "and S2's HA connections (the proxy), its held HA address (getBrokerHAStatus) and the SyncStateSet are "
           "watched. Then healed; once the set is whole again, round 2 does the same to the master of round 1, "
           "but heals its cut as soon as S2 holds its HA address, and watches for 70 s from the heal",
       config={"broker": {"registerNameServerPeriod": REG_PERIOD_MS, "controllerHeartBeatTimeoutMills": 10000},
               "store": {"haSendHeartbeatInterval": 5000, "haHousekeepingInterval": HOUSEKEEPING_MS}},
       expect={"5.3.3": "present (AutoSwitchHAClient.updateHaMasterAddress stores the new address; nothing closes a "
                        "connection to a deposed master that answers)",
               "5.4.0": "not run",
               "5.5.0": "present (as 5.3.3)"},
       minutes=7.0)
def slave_follows(lab: Lab) -> Verdict:
    lab.whole(180)
    lab.create_topic(TOPIC, 1)
    warm = lab.produce(TOPIC, 10, "w-", interval_ms=20)
    lab.note(f"{sum(1 for r in warm if r.get('status') == 'SEND_OK')}/10 SEND_OK")
    rounds: list[Round] = []
    r1 = play_round(lab, "round 1 (M kept cut)", heal=False)
    rounds.append(r1)
    lab.note(f"round 1: {r1.verdict}: {r1.why}")
    try:
        r2 = play_round(lab, "round 2 (M healed)", heal=True)
    except LabError as exc:
        r2 = Round("round 2 (M healed)", INCONCLUSIVE, f"did not start: {exc}")
    rounds.append(r2)
    lab.note(f"round 2: {r2.verdict}: {r2.why}")
    evidence = [x for r in rounds for x in [*r.evidence, f"  => {r.name}: {r.verdict}: {r.why}"]]
    data = {r.name: {"verdict": r.verdict, "why": r.why, **r.data} for r in rounds}
    hit = [r for r in rounds if r.verdict == REPRODUCED]
    if hit:
        return Verdict(REPRODUCED, evidence, "; ".join(f"{r.name}: {r.why}" for r in hit), data)
    if r2.verdict == NOT_REPRODUCED:
        return Verdict(NOT_REPRODUCED, evidence, f"{r2.name}: {r2.why}; {r1.name}: {r1.verdict}: {r1.why}", data)
    return Verdict(INCONCLUSIVE, evidence, f"{r2.name}: {r2.why}; {r1.name}: {r1.verdict}: {r1.why}", data)
