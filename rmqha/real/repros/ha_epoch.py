"""The HA epoch family on a real build: an HA connection that outlives a change of its master's epochs.

* F-TRANSFER-EPOCH-STALE (apache/rocketmq#9689, fixed by PR #9690, first shipped in 5.3.4): a master elected again
  while it is master keeps its HA connections, which go on labelling the new epoch's bytes with the old epoch; the
  slaves never record the new epoch (HA-EPOCH-BOUNDARY).
* F-TRANSFER-NEGATIVE-BATCH (the hole in #9690): a deposed master, now a slave, serves a connection past its own
  truncation point; with #9690's re-read the connection computes a negative batch (HA-EPOCH-BOUNDARY).
* F-EPOCH-EQ-SPLICE: a new master whose last epoch holds no bytes cannot record its own epoch
  (``EpochFileCache.appendEntry`` refuses an equal start), so it and the deposed master write different bytes under
  one (epoch, start) (HA-LOG-MATCHING), and the chain ends with an acknowledged message lost.

Each scenario is built from the mechanism (the finding's page, ``docs/findings/<ID>.md``) with the harness's means:
partitions at the proxy (bytes held), the admin snapshots, the proxy's connection and frame events, RocketMQ's own
store and broker logs, and the files after the run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import netns
from ..check import log_bytes
from ..clients import Tail
from ..lab import Lab, LabError
from ..observe import Snapshot
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro

# --------------------------------------------------------------------------------------------- helpers


@dataclass
class HaConn:
    """One HA connection through the proxy: ``client`` (the slave side) to ``server``'s HA listener."""

    conn: int
    server: str
    client: str
    opened: int  # ms since the run was created
    closed: int | None = None
    why: str = ""

    def open_at(self, t: int) -> bool:
        return self.opened <= t and (self.closed is None or self.closed > t)


class ProxyEvents:
    """The proxy's event lines (``events/proxy.jsonl``), read incrementally; ``t`` relative to the run's creation."""

    def __init__(self, lab: Lab) -> None:
        self.created = lab.spec.created_ms
        self.tail = Tail(lab.spec.dir / "events" / "proxy.jsonl")
        self.lines: list[dict[str, Any]] = []

    def update(self) -> list[dict[str, Any]]:
        for d in self.tail.read():
            if "t" in d:
                d = {**d, "t": int(d["t"]) - self.created}
            self.lines.append(d)
        return self.lines


def ha_conns(lines: list[dict[str, Any]]) -> list[HaConn]:
    """Every HA connection the proxy carried (route ``NODE.ha``), with when it opened and closed."""
    out: dict[int, HaConn] = {}
    for d in lines:
        if d.get("k") != "conn":
            continue
        cid = d.get("conn")
        if not isinstance(cid, int):
            continue
        if d.get("ev") == "open" and str(d.get("route", "")).endswith(".ha"):
            out[cid] = HaConn(cid, str(d.get("dst")), str(d.get("src")), int(d.get("t", 0)))
        elif d.get("ev") == "close" and cid in out:
            out[cid].closed = int(d.get("t", 0))
            out[cid].why = str(d.get("why", ""))
    return sorted(out.values(), key=lambda c: c.conn)


def open_ha(lines: list[dict[str, Any]], server: str, t: int) -> dict[str, int]:
    """client -> connection id of the HA connections to ``server`` open at ``t`` (the latest one per client)."""
    out: dict[str, int] = {}
    for c in ha_conns(lines):
        if c.server == server and c.open_at(t):
            out[c.client] = c.conn
    return out


def frames(lines: list[dict[str, Any]], name: str, *, frm: str | None = None, after: int = 0) -> list[dict[str, Any]]:
    """The recorded controller-protocol requests named ``name`` (and their responses: ``req_name``)."""
    return [d for d in lines if d.get("k") == "frame" and (d.get("name") == name or d.get("req_name") == name)
            and (frm is None or d.get("from") == frm) and int(d.get("t", 0)) >= after]


def answered_ok(lines: list[dict[str, Any]], name: str, frm: str, after: int,
                ext: Callable[[dict[str, Any]], bool] = lambda e: True) -> dict[str, Any] | None:
    """The first request ``name`` from ``frm`` after ``after`` (whose header passes ``ext``) answered with code 0."""
    reqs = {(d.get("conn"), d.get("opaque")): d for d in frames(lines, name, frm=frm, after=after)
            if not d.get("response") and ext(d.get("ext") or {})}
    for d in frames(lines, name, after=after):
        if d.get("response") and d.get("to") == frm and d.get("code") == 0 and (d.get("conn"), d.get("opaque")) in reqs:
            return reqs[(d.get("conn"), d.get("opaque"))]
    return None


def epoch_entry(epochs: list[tuple[int, int, int]], epoch: int) -> tuple[int, int, int] | None:
    return next((e for e in epochs if e[0] == epoch), None)


def last_epoch(epochs: list[tuple[int, int, int]]) -> int | None:
    return max((e for e, _, _ in epochs), default=None)


def fmt_epochs(epochs: list[tuple[int, int, int]] | list[tuple[int, int]]) -> str:
    return "[" + ", ".join(f"({e[0]}, {e[1]})" for e in epochs) + "]"


def first_difference(a: bytes, b: bytes) -> int | None:
    """The first index where ``a`` and ``b`` differ over their common length (None: one is a prefix of the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)


def poll(fn: Callable[[], Any], timeout: float, what: str, every: float = 0.5) -> Any:
    """Call ``fn`` until it returns something truthy; ``LabError`` after ``timeout`` s."""
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() >= end:
            raise LabError(f"waited {timeout:.0f} s for {what}")
        time.sleep(every)


class LogWatch:
    """New lines of a node's RocketMQ logs matching a pattern, counted from when the watch was made."""

    def __init__(self, lab: Lab, node: str, pattern: str) -> None:
        self.lab, self.node, self.pattern = lab, node, pattern
        self.skip = len(lab.broker_log(node, pattern))

    def new(self) -> list[str]:
        return self.lab.broker_log(self.node, self.pattern)[self.skip:]


def short(line: str, n: int = 220) -> str:
    line = line.strip()
    return line if len(line) <= n else line[:n] + "..."


def master_id(s: Snapshot, node: str) -> int | None:
    lead = s.leader
    if lead is None:
        return None
    return next((i for i, b in lead.ids.items() if b == node), None)


def max_of(s: Snapshot, node: str) -> int:
    b = s.brokers.get(node)
    return (b.max_offset or 0) if b is not None and b.ok else 0


def fresh_ok(lab: Lab, nodes: list[str], timeout: float = 90) -> Snapshot:
    """A snapshot taken after this call in which every broker of ``nodes`` answered (on a loaded machine an admin
    call can time out, and a broker that did not answer reads as offset 0 with no epochs): the second such one, as
    ``Lab.fresh`` takes the second (the first may hold answers to calls made before)."""
    t = int(time.time() * 1000)
    seen: list[Snapshot] = []

    def good(x: Snapshot) -> bool:
        if x.t0 >= t and x not in seen and all(x.brokers.get(b) is not None and x.brokers[b].ok for b in nodes):
            seen.append(x)
        return len(seen) >= 2

    return lab.wait(good, timeout, f"an admin snapshot with {', '.join(nodes)} answering")


_CALL = """
import json, socket, sys
from rmqha.real import remoting as R
host, port, code, body = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].encode()
s = socket.create_connection((host, port), timeout=10)
s.settimeout(10)
s.sendall(R.encode(code, opaque=7, body=body))
dec = R.FrameDecoder()
while True:
    data = s.recv(65536)
    if not data:
        break
    for f in dec.feed(data):
        if f.is_response and f.opaque == 7:
            print(json.dumps({"code": f.code, "remark": f.remark}))
            sys.exit(0)
print(json.dumps({"code": None, "remark": "connection closed without an answer"}))
"""

UPDATE_BROKER_CONFIG = 25  # RequestCode.UPDATE_BROKER_CONFIG: AdminBrokerProcessor.updateBrokerConfig
DELETE_EXPIRED_COMMITLOG = 329  # RequestCode.DELETE_EXPIRED_COMMITLOG: MessageStore.executeDeleteFilesManually


def broker_call(lab: Lab, node: str, code: int, body: str = "") -> dict[str, Any]:
    """One admin request to a broker's remoting port (through the proxy, from the run's hub namespace, as the Java
    tool's calls go), encoded with the kit's own frame codec; the answer's code and remark."""
    host, port = lab.spec.front_addr(node).rsplit(":", 1)
    argv = [*netns.exec_prefix(lab.spec.run, "hub"), sys.executable, "-c", _CALL, host, port, str(code), body]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("{")), "")
    if not line:
        raise LabError(f"request {code} to {node}: no answer ({(proc.stderr.strip().splitlines() or ['?'])[-1][:160]})")
    ans: dict[str, Any] = json.loads(line)
    lab.note(f"request {code} to {node}: code {ans.get('code')} {ans.get('remark') or ''}".rstrip())
    return ans


def epochs_of(s: Snapshot, node: str) -> list[tuple[int, int, int]]:
    b = s.brokers.get(node)
    return list(b.epochs) if b is not None and b.ok else []


# -------------------------------------------------------------------------------------- F-TRANSFER-EPOCH-STALE

STALE_TOPIC = "ReproStale"


@repro("F-TRANSFER-EPOCH-STALE",
       title="A master elected again while it is master keeps its HA connections, which ship the new epoch's bytes "
             "under the old epoch",
       invariant="HA-EPOCH-BOUNDARY",
       how="a producer writes to the master M (send timeout 400 ms); M is cut at the proxy from the two slaves until "
           "the controller's SyncStateSet is {M}; M is then cut from the controller and the slaves' links healed, so "
           "the slaves reconnect and catch up while M's requests to widen the SyncStateSet wait in the cut; the "
           "controller, without M's heartbeats and with no other SyncStateSet member, records 'no master' (a higher "
           "masterEpoch); the cut heals and M is elected again at a higher epoch while its slaves' HA connections "
           "stay open (checked at the proxy); the producer goes on; each slave's epoch cache (admin "
           "getBrokerEpochCache) is compared with M's new epoch entry; then one slave's HA stream is cut at the proxy "
           "to show what its next handshake does; last, the old epoch's entry is made to leave M's cache as when its "
           "files expire (1 MiB commit-log files; fileReservedTime=0 on M through UPDATE_BROKER_CONFIG; M written "
           "into its second file; DELETE_EXPIRED_COMMITLOG) and M's and the other slave's logs are read",
       config={"store": {"mappedFileSizeCommitLog": 1024 * 1024}},
       expect={"5.3.3": "present (apache/rocketmq#9689)", "5.4.0": "fixed (PR #9690)", "5.5.0": "fixed (PR #9690)"},
       minutes=4.0)
def transfer_epoch_stale(lab: Lab) -> Verdict:
    ev = ProxyEvents(lab)
    s = lab.whole()
    m = s.master
    assert m is not None and s.leader is not None
    slaves = [b for b in lab.spec.brokers if b != m]
    mid = master_id(s, m)
    e0 = s.leader.master_epoch or 0
    lab.create_topic(STALE_TOPIC, 1)
    lab.start_producer(STALE_TOPIC, "s-", interval_ms=100, timeout_ms=400)
    lab.wait(lambda x: max_of(x, m) > 2000, 60, "the first writes")

    # 1. the SyncStateSet down to M alone
    p_sl = lab.partition([m], slaves)
    lab.wait(lambda x: x.leader is not None and x.leader.sss == [mid], 45,
             f"the SyncStateSet shrinking to {m} alone")
    lab.note(f"SyncStateSet is [{mid}] ({m} alone)")
    # 2. M cut from the controller first, then its slaves back: they catch up, M cannot widen the set
    p_ctl = lab.partition([m], list(lab.spec.controllers))
    lab.heal(p_sl)
    none = lab.wait(lambda x: x.leader is not None and x.leader.master is None
                    and (x.leader.master_epoch or 0) > e0, 45, "the controller recording no master")
    assert none.leader is not None
    e_none = none.leader.master_epoch or 0
    lab.note(f"the controller records no master at masterEpoch {e_none}")
    poll(lambda: set(open_ha(ev.update(), m, lab.now())) >= set(slaves), 40,
         f"both slaves connected to {m}'s HA listener")
    caught = lab.try_wait(lambda x: all(max_of(x, b) >= max_of(x, m) - 2000 for b in slaves), 20)
    before = open_ha(ev.update(), m, lab.now())
    lab.note(f"HA connections to {m} before the re-election: "
             + ", ".join(f"{b} conn {c}" for b, c in sorted(before.items()))
             + ("" if caught else " (slaves not yet caught up)"))

    # 3. the heal: M is elected again at a higher epoch, its connections untouched
    w_last = LogWatch(lab, m, r"Change ha to master success, last role is master")
    w_full = LogWatch(lab, m, r"Change ha to master success, newMasterEpoch")
    w_upd = LogWatch(lab, m, r"Update currentTransferEpochEndOffset from -1 to")
    w_same = {b: LogWatch(lab, b, r"master doesn't change") for b in slaves}
    t_heal = lab.now()
    lab.heal(p_ctl)
    again = lab.wait(lambda x: x.leader is not None and x.leader.master is not None
                     and (x.leader.master_epoch or 0) > e_none, 45, "a master elected after the heal")
    assert again.leader is not None
    if again.leader.master != m:
        return Verdict(INCONCLUSIVE, why=f"{again.leader.master} was elected after the heal, not {m} again")
    e2 = again.leader.master_epoch or 0
    got = lab.wait(lambda x: epoch_entry(epochs_of(x, m), e2) is not None, 30,
                   f"{m}'s epoch cache holding epoch {e2}")
    entry = epoch_entry(epochs_of(got, m), e2)
    assert entry is not None
    start = entry[1]
    lab.note(f"{m} elected again at masterEpoch {e2}; its epoch entry ({e2}, {start})")
    lab.wait(lambda x: all(max_of(x, b) > start + 2000 for b in slaves), 60,
             f"the slaves holding bytes past {start}")
    fin = fresh_ok(lab, lab.spec.brokers)
    after = open_ha(ev.update(), m, lab.now())
    kept = [b for b in slaves if b in before and after.get(b) == before[b]]
    m_epochs = epochs_of(fin, m)
    slave_epochs = {b: epochs_of(fin, b) for b in slaves}
    slave_max = {b: max_of(fin, b) for b in slaves}
    stale = [b for b in kept if epoch_entry(slave_epochs[b], e2) is None and slave_max[b] > start]
    upd = w_upd.new()
    path_last = w_last.new()
    path_full = w_full.new()

    # 4. what a reconnect does with the stale cache: cut one kept slave's HA stream at the proxy
    reconnect: list[str] = []
    if kept:  # evidence only: the verdict is already decided, so a step that does not happen here is said, not fatal
        sl = kept[0]
        try:
            w_trunc = LogWatch(lab, sl, r"truncateOffset is|Truncate slave log to|no need to truncate")
            had = max_of(fresh_ok(lab, [sl]), sl)
            lab.proxy_fault("cut-stream", route=f"{m}.ha", **{"from": m, "to": sl}, after_bytes=0)
            lines = poll(lambda: [x for x in w_trunc.new() if "truncateOffset is" in x], 60,
                         f"{sl}'s handshake after its HA stream was cut")
            later = lab.try_wait(lambda x: epoch_entry(epochs_of(x, sl), e2) is not None, 90) or fresh_ok(lab, [sl])
            reconnect = [f"{sl}'s HA stream to {m} cut at the proxy while {sl} held bytes to {had}; its next "
                         "handshake: " + " | ".join(short(x, 160) for x in w_trunc.new())]
            reconnect.append(f"{sl}'s epoch cache after that handshake (admin): {fmt_epochs(epochs_of(later, sl))}")
            found = re.search(r"truncateOffset is (\d+)", lines[0])
            if found and int(found.group(1)) < had:
                reconnect.append(f"{sl} truncated {had} -> {found.group(1)} and fetches again bytes it already held")
        except LabError as exc:
            reconnect = [f"the reconnect step was not reached: {exc}"]
    sends = lab.stop_producer()

    # 5. the old epoch's entry out of M's cache, as when its commit-log files expire
    old = max((e for e, _, _ in m_epochs if e < e2), default=None)
    expiry: list[str] = []
    if old is not None and kept:
        try:
            expiry, more = expire_old_epoch(lab, m, old, [b for b in kept if b != kept[0]])
            sends += more
        except LabError as exc:
            expiry = [f"the old epoch's expiry was not reached: {exc}"]
    files = lab.files()

    ok = sum(1 for r in sends if r.get("status") == "SEND_OK")
    evidence = [
        f"masterEpoch {e0}: {m} master; SyncStateSet shrunk to [{mid}] while {m} was cut from its slaves",
        f"{m} cut from the controller: the controller recorded no master (masterEpoch {e_none}); heal at "
        f"t={t_heal / 1000:.1f} s; {m} elected again at masterEpoch {e2}",
        f"{m}'s role change: " + (short(path_last[-1]) if path_last else
                                  (short(path_full[-1]) + " (the full changeToMaster: connections destroyed)")
                                  if path_full else "no 'Change ha to master' line"),
        *[f"{b}'s role change: "
          + (short(w_same[b].new()[-1]) if w_same[b].new() else "no 'master doesn't change' line") for b in slaves],
        "HA connections to " + m + ": before " + ", ".join(f"{b}={c}" for b, c in sorted(before.items()))
        + "; after " + ", ".join(f"{b}={c}" for b, c in sorted(after.items()))
        + f" (kept: {', '.join(kept) or 'none'})",
        f"{m}'s epoch cache (admin): {fmt_epochs(m_epochs)}",
        *[f"{b}'s epoch cache (admin): {fmt_epochs(slave_epochs[b])}, max offset {slave_max[b]} "
          f"({'past' if slave_max[b] > start else 'not past'} {start})" for b in slaves],
        f"{m}'s store log, #9690's re-read: " + (" | ".join(short(x, 140) for x in upd[:2]) if upd else "none"),
        *reconnect,
        *expiry,
        "epoch files at the end: " + "; ".join(
            f"{b} {fmt_epochs(ef.pairs()) if ef else '(none)'}" for b, ef in sorted(files.epochs.items())),
        f"producer: {len(sends)} sends, {ok} SEND_OK",
    ]
    data = {"master": m, "slaves": slaves, "epochBefore": e0, "epochNoMaster": e_none, "epochAgain": e2,
            "newEpochStart": start, "kept": kept, "stale": stale, "slaveEpochs": slave_epochs,
            "masterEpochs": m_epochs, "slaveMax": slave_max, "reread": upd[:3]}
    if not path_last:
        return Verdict(INCONCLUSIVE, evidence, f"{m} did not take changeToMasterWhenLastRoleIsMaster", data)
    if not kept:
        return Verdict(INCONCLUSIVE, evidence, f"no slave kept its HA connection to {m} through the re-election", data)
    if stale:
        return Verdict(REPRODUCED, evidence,
                       f"{', '.join(stale)} kept {'its' if len(stale) == 1 else 'their'} HA connection through "
                       f"{m}'s re-election at masterEpoch {e2} and hold{'s' if len(stale) == 1 else ''} bytes past "
                       f"its start {start} without epoch {e2} in the epoch cache", data)
    return Verdict(NOT_REPRODUCED, evidence,
                   f"{', '.join(kept)} kept the HA connection and recorded ({e2}, {start}) for the bytes past it", data)


def expire_old_epoch(lab: Lab, m: str, old: int, stale: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """Make ``m``'s commit-log file holding epoch ``old`` expire, as ``CleanCommitLogService`` does when the file's
    retention ends (``fileReservedTime`` set to 0 on ``m`` through UPDATE_BROKER_CONFIG, ``m``'s log written into its
    second file, then DELETE_EXPIRED_COMMITLOG): ``DefaultMessageStore`` then drops the epoch entries that end before
    the new min offset (``truncateEpochFilePrefix``). What ``m`` and the ``stale`` slaves log next."""
    size = lab.spec.cfg.store.mapped_file_size_commit_log
    w_fail = LogWatch(lab, m, r"Failed to find epochEntry with epoch")
    pat = (r"State not matched|Failed to find a consistent point|truncate log failed|master pushed offset not equal"
           r"|Error when ha client|^java\.lang\.\w+(Exception|Error)")
    w_sl = {b: LogWatch(lab, b, pat) for b in stale}
    w_re = {b: LogWatch(lab, b, r"AutoSwitchHAClient connect to master|Failed to find a consistent point")
            for b in stale}
    before = fresh_ok(lab, [m, *stale])
    ans = broker_call(lab, m, UPDATE_BROKER_CONFIG, "fileReservedTime=0\n")
    if ans.get("code") != 0:
        raise LabError(f"updateBrokerConfig fileReservedTime=0 on {m}: {ans}")
    lab.start_producer(STALE_TOPIC, "big-", interval_ms=10, size=16 * 1024, timeout_ms=3000)
    lab.wait(lambda x: max_of(x, m) > size + 64 * 1024, 180, f"{m}'s log running into its second file")
    ans = broker_call(lab, m, DELETE_EXPIRED_COMMITLOG)
    gone = lab.wait(lambda x: bool(epochs_of(x, m)) and epoch_entry(epochs_of(x, m), old) is None, 90,
                    f"epoch {old} leaving {m}'s epoch cache")
    lab.note(f"epoch {old} is out of {m}'s cache: {fmt_epochs(epochs_of(gone, m))}")
    time.sleep(6.0)  # the producer goes on: the stale connections' next batches
    after = fresh_ok(lab, [m, *stale])
    if any(w_sl[b].new() for b in stale):  # then: what the slave that misread the stream does next (60 s at most)
        end = time.monotonic() + 60
        while time.monotonic() < end and not all(
                any("consistent point" in x for x in w_re[b].new()) for b in stale if w_sl[b].new()):
            time.sleep(2.0)
    more = lab.stop_producer()
    fail = w_fail.new()
    out = [f"{m}'s first commit-log file deleted (fileReservedTime=0, DELETE_EXPIRED_COMMITLOG): its epoch cache "
           f"{fmt_epochs(epochs_of(gone, m))}",
           f"{m}'s store log then: " + (f"{len(fail)} x " + short(fail[0], 160) if fail else "no 'Failed to find "
                                                                                              "epochEntry' line")]
    for b in stale:
        got = w_sl[b].new()
        out.append(f"{b} (its connection kept from epoch {old}): max offset {max_of(before, b)} -> {max_of(after, b)} "
                   f"while {m} went {max_of(before, m)} -> {max_of(after, m)}; its store log: "
                   + (f"{len(got)} lines, e.g. " + " | ".join(short(x, 150) for x in got[:3]) if got else "nothing"))
        re_lines = w_re[b].new()
        if re_lines:
            out.append(f"{b} next: {len(re_lines)} lines, e.g. " + " | ".join(short(x, 200) for x in re_lines[-2:]))
    return out, more


# ------------------------------------------------------------------------------------ F-TRANSFER-NEGATIVE-BATCH

NEG_TOPIC = "ReproNegative"


@repro("F-TRANSFER-NEGATIVE-BATCH",
       title="A deposed master, now a slave, serves a connection past its own truncation point: with #9690 the batch "
             "size is negative",
       invariant="HA-EPOCH-BOUNDARY",
       how="a producer writes to the master D (send timeout 400 ms); the slave S is cut at the proxy from the "
           "controller and the nameserver (it hears of no election and keeps D's HA address); D is cut from the "
           "controller and from the other slave N; the controller elects N; the producer follows the route to N; "
           "D's unreplicated tail (to Y) stays on D and S; D's link to the controller heals (N's stays cut): D becomes "
           "N's slave, which closes S's connection, and S reconnects to D (still at Y, not truncated: its own HA "
           "client cannot reach N); then D's link to N heals: D's handshake truncates it to N's epoch start X < Y and "
           "it refills from N past Y; what D's connection to S sends next is read in D's and S's store logs and in S's "
           "files",
       expect={"5.3.3": "absent (no #9690: the connection ships N's bytes under the old epoch instead)",
               "5.4.0": "present (PR #9690)", "5.5.0": "present (PR #9690)"},
       minutes=3.5)
def transfer_negative_batch(lab: Lab) -> Verdict:
    ev = ProxyEvents(lab)
    s = lab.whole()
    d = s.master
    assert d is not None and s.leader is not None
    n, sl = sorted(b for b in lab.spec.brokers if b != d)
    ctl = list(lab.spec.controllers)
    e1 = s.leader.master_epoch or 0
    lab.create_topic(NEG_TOPIC, 1)
    lab.start_producer(NEG_TOPIC, "n-", interval_ms=50, timeout_ms=400)
    lab.wait(lambda x: max_of(x, d) > 3000, 60, "the first writes")

    # 1. S hears nothing from the controller and the nameserver; D is cut from the controller and from N
    lab.partition([sl], [*ctl, lab.spec.nameserver])
    p_dc = lab.partition([d], ctl)
    p_dn = lab.partition([d], [n])
    el = lab.wait(lambda x: x.leader is not None and x.leader.master is not None
                  and (x.leader.master_epoch or 0) > e1, 45, "the controller electing a new master")
    assert el.leader is not None
    if el.leader.master != n:
        return Verdict(INCONCLUSIVE, why=f"the controller elected {el.leader.master}, not {n}")
    e2 = el.leader.master_epoch or 0
    got = lab.wait(lambda x: epoch_entry(epochs_of(x, n), e2) is not None, 30, f"{n}'s epoch entry {e2}")
    ent = epoch_entry(epochs_of(got, n), e2)
    assert ent is not None
    x_start = ent[1]
    lab.wait(lambda x: max_of(x, n) > x_start + 1500, 60, f"the producer following the route to {n}")
    now = fresh_ok(lab, lab.spec.brokers)
    y_end = max_of(now, d)
    d_old = last_epoch(epochs_of(now, d))  # the epoch D's tail is in (its cache's, not the controller's number)
    lab.note(f"{n} master at masterEpoch {e2} from {x_start}; {d} holds bytes to {y_end}, {sl} to {max_of(now, sl)}")
    if y_end <= x_start:
        return Verdict(INCONCLUSIVE, why=f"{d} ends at {y_end}, not past {n}'s epoch start {x_start}")

    # 2. D becomes N's slave (its HA client cannot reach N yet); S reconnects to D
    w_slave = LogWatch(lab, d, r"Change ha to slave success")
    w_hs = LogWatch(lab, sl, r"Receive handshake, masterMaxPosition")
    w_serve = LogWatch(lab, d, r"Master transfer data to slave")
    lab.heal(p_dc)
    poll(w_slave.new, 40, f"{d} becoming a slave")
    t_slave = lab.now()
    lab.note(f"{d} became {n}'s slave")
    conn = poll(lambda: next((c for c in ha_conns(ev.update()) if c.server == d and c.client == sl
                              and c.opened >= t_slave - 500 and c.closed is None), None), 40,
                f"{sl} reconnecting to {d}'s HA listener")
    hs = poll(w_hs.new, 30, f"{sl}'s handshake with {d}")
    serve = poll(w_serve.new, 30, f"{d} serving {sl}'s connection")
    mid = fresh_ok(lab, [d])
    d_epochs_mid = epochs_of(mid, d)
    if max_of(mid, d) != y_end or epoch_entry(d_epochs_mid, e2) is not None:
        return Verdict(INCONCLUSIVE, why=f"{d} changed before {sl}'s connection ran: max {max_of(mid, d)} (was "
                                         f"{y_end}), epochs {fmt_epochs(d_epochs_mid)}")
    lab.note(f"{sl} connected to {d} (conn {conn.conn}) at {y_end}, {d} untruncated")

    # 3. D reaches N: truncation to X, refill past Y under N's epoch
    w_trunc = LogWatch(lab, d, r"truncateOffset is")
    w_upd = LogWatch(lab, d, r"Update currentTransferEpochEndOffset from -1 to")
    w_neg = LogWatch(lab, sl, r"NegativeArraySizeException")
    w_err = LogWatch(lab, sl, r"Error when ha client process read request|master pushed offset not equal")
    lab.heal(p_dn)
    trunc = poll(w_trunc.new, 40, f"{d}'s handshake with {n}")
    lab.wait(lambda x: epoch_entry(epochs_of(x, d), e2) is not None and max_of(x, d) > y_end + 1000, 60,
             f"{d} refilled from {n} past {y_end}")
    time.sleep(4.0)
    fin = fresh_ok(lab, lab.spec.brokers)
    conn_now = next((c for c in ha_conns(ev.update()) if c.conn == conn.conn), conn)
    upd, neg, err = w_upd.new(), w_neg.new(), w_err.new()
    s_max, s_epochs = max_of(fin, sl), epochs_of(fin, sl)
    d_epochs = epochs_of(fin, d)
    recovery: list[str] = []
    if neg:  # what follows: how long S stays stuck on that connection (the producer still writes to N)
        t_neg = lab.now()
        w_again = LogWatch(lab, sl, r"truncateOffset is")
        back = lab.try_wait(lambda x: max_of(x, sl) > y_end, 90)
        closed = next((c for c in ha_conns(ev.update()) if c.conn == conn.conn), conn)
        shut = (f"closed ({closed.why}) {(closed.closed - t_neg) / 1000:.0f} s after the negative batch was seen"
                if closed.closed else "still open")
        again = (f"{sl} replicates again ({max_of(back, sl)} > {y_end}; its next handshake: "
                 + " | ".join(short(x, 90) for x in w_again.new()[:1]) + ")" if back
                 else f"{sl} still at {y_end} 90 s later")
        recovery.append(f"then: {sl}'s connection {conn.conn} to {d} {shut}; {again}")
    sends = lab.stop_producer()
    files = lab.files()
    s_log, n_log = files.raw.get(sl), files.raw.get(n)
    splice: list[str] = []
    spliced = False
    if s_log is not None and n_log is not None and s_max > y_end:
        lo, hi = x_start, min(s_max, n_log.end_offset, s_log.end_offset if s_log.stop.reason.clean else s_max)
        sb, nb = log_bytes(s_log, lo, hi), log_bytes(n_log, lo, hi)
        diff = first_difference(sb, nb)
        tail_same = log_bytes(s_log, y_end, hi) == log_bytes(n_log, y_end, hi) if hi > y_end else False
        spliced = diff is not None and diff + lo < y_end and tail_same
        splice.append(f"{sl}'s commit log vs {n}'s over [{lo}, {hi}): first difference at "
                      f"{'none' if diff is None else diff + lo}; [{y_end}, {hi}) identical: {tail_same}")
        splice.append(f"{sl}'s log read as messages stops at {s_log.stop.offset} ({s_log.stop.reason.value}: "
                      f"{short(s_log.stop.detail, 100)})")
        status = {str(r.get("key")): str(r.get("status")) for r in sends}
        s_keys = [k for m in s_log.messages if x_start <= m.physical_offset < y_end for k in m.keys[:1]]
        n_keys = [k for m in n_log.messages if x_start <= m.physical_offset < y_end for k in m.keys[:1]]
        only_s, only_n = [k for k in s_keys if k not in n_keys], [k for k in n_keys if k not in s_keys]
        said = ", ".join(sorted({status.get(k, "?") for k in only_s})) or "none"
        splice.append(f"in [{x_start}, {y_end}) {sl} holds {len(s_keys)} messages, {len(only_s)} of them not on {n} "
                      f"(producer: {said}), and lacks {len(only_n)} of {n}'s "
                      f"(producer: {sum(1 for k in only_n if status.get(k) == 'SEND_OK')} of them SEND_OK), e.g. "
                      f"{only_s[:2]} instead of {only_n[:2]}")
    ok = sum(1 for r in sends if r.get("status") == "SEND_OK")
    evidence = [
        f"masterEpoch {e1}: {d} master; {sl} cut from the controller and the nameserver; {d} cut from the controller "
        f"and {n}",
        f"{n} elected at masterEpoch {e2}, its epoch starting at X = {x_start}; {d} holds its epoch-{d_old} tail to "
        f"Y = {y_end}",
        f"{d} became {n}'s slave (its link to {n} still cut); {sl} reconnected to {d}'s HA listener (proxy conn "
        f"{conn.conn}, open at the end: {conn_now.closed is None}); {sl}: {short(hs[-1], 160)}",
        f"{d} serving it: {short(serve[-1], 200)}",
        f"{d}'s handshake with {n} after the heal: {short(trunc[-1], 120)}",
        f"{d}'s epoch cache (admin) at the end: {fmt_epochs(d_epochs)}, max offset {max_of(fin, d)}",
        f"{d}'s store log, #9690's re-read on the connection it serves: "
        + (" | ".join(short(x, 140) for x in upd[:3]) if upd else "none"),
        f"{sl}'s store log: " + (" | ".join(short(x, 200) for x in (neg or err)[:3]) if (neg or err) else "no error"),
        f"{sl}'s epoch cache (admin): {fmt_epochs(s_epochs)}, max offset {s_max} (Y = {y_end})",
        *splice,
        *recovery,
        f"producer: {len(sends)} sends, {ok} SEND_OK",
    ]
    data = {"deposed": d, "newMaster": n, "slave": sl, "X": x_start, "Y": y_end, "epochNew": e2,
            "slaveMax": s_max, "slaveEpochs": s_epochs, "deposedEpochs": d_epochs, "reread": upd[:3],
            "negative": neg[:3], "errors": err[:3], "spliced": spliced}
    if neg:
        size = re.search(r"NegativeArraySizeException:?\s*(-?\d+)", " ".join(neg))
        return Verdict(REPRODUCED, evidence,
                       f"{d}, a slave truncated to {x_start} under the connection it served at {y_end}, re-read epoch "
                       f"{d_old}'s end ({x_start}) and sent a batch of size "
                       f"{size.group(1) if size else x_start - y_end}; {sl} failed on it "
                       "(NegativeArraySizeException)", data)
    if s_max > y_end and epoch_entry(s_epochs, e2) is None:
        return Verdict(NOT_REPRODUCED, evidence,
                       f"no negative batch: the connection kept epoch {d_old} open-ended (no #9690 re-read) and "
                       f"shipped {n}'s bytes from {y_end} under epoch {d_old}; {sl} appended them after its own "
                       f"divergent tail "
                       f"[{x_start}, {y_end})" + (" (its log is spliced)" if spliced else ""), data)
    return Verdict(NOT_REPRODUCED, evidence,
                   f"no negative batch and no mislabelled one: {sl} ends at {s_max} with epochs {fmt_epochs(s_epochs)}",
                   data)


def send_one(lab: Lab, topic: str, prefix: str, size: int, tries: int = 3) -> list[dict[str, Any]]:
    """One message through a new producer (a fresh route from the nameserver), again while the send never reached a
    broker (no ``addr``: on a loaded machine the route request to the nameserver can time out)."""
    res: list[dict[str, Any]] = []
    for _ in range(tries):
        res = lab.produce(topic, 1, prefix, size=size)
        if res and res[0].get("addr") and "sendSelectImpl call timeout" not in str(res[0].get("error", "")):
            break  # sent (whatever the answer); "sendSelectImpl call timeout": the time ran out before the send
        time.sleep(2.0)
    return res


# ------------------------------------------------------------------------------------------- F-EPOCH-EQ-SPLICE

EQ_TOPIC = "ReproEqSplice"


@repro("F-EPOCH-EQ-SPLICE",
       title="A new master whose last epoch holds no bytes writes under that epoch, as the deposed master does",
       invariant="HA-LOG-MATCHING",
       how="a fresh cluster, nothing written: the slaves record the master D's epoch (e, 0) from its heartbeats; "
           "both slaves are cut at the proxy from the nameserver (so no new master can register there and the "
           "route keeps naming D, as a producer's 30 s route cache would) and D from the controller; the controller "
           "elects a slave N, whose epoch cache cannot take (e+1, 0); a new producer sends p1 (200 B) on the "
           "route, to D, which appends it unacknowledged (send timeout 10 s, for a loaded machine); N's link to the "
           "nameserver heals and N registers; a new producer sends p2 (1000 B) to N, acknowledged; D's and N's "
           "epoch caches and commit logs are compared. "
           "Then what follows: D's link to the controller heals, D becomes N's slave and, once it is in N's "
           "SyncStateSet, N is SIGKILLed; the consumer reads the topic on the new master",
       config={"workload": {"send_timeout": 10_000}},
       expect={"5.3.3": "present", "5.4.0": "present (EpochFileCache.appendEntry unchanged)",
               "5.5.0": "present (EpochFileCache.appendEntry unchanged)"},
       minutes=3.0)
def epoch_eq_splice(lab: Lab) -> Verdict:
    ev = ProxyEvents(lab)
    s = lab.whole()
    d = s.master
    assert d is not None and s.leader is not None
    slaves = sorted(b for b in lab.spec.brokers if b != d)
    e1 = s.leader.master_epoch or 0
    lab.create_topic(EQ_TOPIC, 1)
    pre = lab.wait(lambda x: all(epochs_of(x, b)[-1:] == epochs_of(x, d)[-1:] and epochs_of(x, b)
                                 for b in slaves), 30, "the slaves recording the master's epoch")
    d_ep = epochs_of(pre, d)
    if any(max_of(pre, b) != d_ep[-1][1] for b in lab.spec.brokers):
        return Verdict(INCONCLUSIVE, why="the last epoch already holds bytes: "
                       + ", ".join(f"{b} max {max_of(pre, b)}" for b in lab.spec.brokers)
                       + f", {d}'s epochs {fmt_epochs(d_ep)}")
    lab.note(f"{d} master at masterEpoch {e1}; every broker holds {fmt_epochs(d_ep)} and no byte past it")

    # 1. the route kept on D, D cut from the controller; a slave N elected
    w_master = {b: LogWatch(lab, b, r"Change ha to master success, newMasterEpoch") for b in slaves}
    w_refused = {b: LogWatch(lab, b, r"append failed") for b in slaves}
    p_ns = {b: lab.partition([b], [lab.spec.nameserver]) for b in slaves}
    p_dc = lab.partition([d], list(lab.spec.controllers))
    el = lab.wait(lambda x: x.leader is not None and x.leader.master not in (None, d), 45,
                  "the controller electing a slave")
    assert el.leader is not None and el.leader.master is not None
    n = el.leader.master
    other = next(b for b in slaves if b != n)
    e2 = el.leader.master_epoch or 0
    changed = poll(w_master[n].new, 30, f"{n} changing to master")
    after_el = lab.wait(lambda x: x.brokers.get(n) is not None and x.brokers[n].role == "MASTER", 30,
                        f"{n}'s HA status saying master")
    n_ep = epochs_of(after_el, n)
    refused = epoch_entry(n_ep, e2) is None
    lab.note(f"{n} elected at masterEpoch {e2}; its epoch cache {fmt_epochs(n_ep)}")
    if not refused:
        return Verdict(NOT_REPRODUCED, [f"{n}: {short(changed[-1])}", f"{n}'s epoch cache {fmt_epochs(n_ep)}"],
                       f"{n} recorded its epoch {e2} (appendEntry took the equal start)")

    # 2. p1 on D (the route still names it), unacknowledged
    r1 = send_one(lab, EQ_TOPIC, "p1-", 200)
    d_front = lab.spec.host(d).front
    if not r1 or not str(r1[0].get("addr", "")).startswith(d_front):
        return Verdict(INCONCLUSIVE, why=f"p1 did not go to {d}: {r1[:1]}")
    # 3. N registers with the nameserver; p2 on N, acknowledged
    t_heal = lab.now()
    lab.heal(p_ns[n])
    poll(lambda: answered_ok(ev.update(), "REGISTER_BROKER", n, t_heal, lambda e: str(e.get("brokerId")) == "0"),
         40, f"{n} registering with the nameserver as master")
    r2 = send_one(lab, EQ_TOPIC, "p2-", 1000)
    if not r2 or r2[0].get("status") != "SEND_OK" or not str(r2[0].get("addr", "")).startswith(
            lab.spec.host(n).front):
        return Verdict(INCONCLUSIVE, why=f"p2 was not acknowledged by {n}: {r2[:1]}")
    now = fresh_ok(lab, [d, n])
    l1, l2 = max_of(now, d), max_of(now, n)
    d_ep, n_ep = epochs_of(now, d), epochs_of(now, n)
    files = lab.files()
    dl, nl = files.logs.get(d), files.logs.get(n)
    shared = [(e, st) for e, st, _ in d_ep if (e, st) in {(e2_, st2) for e2_, st2, _ in n_ep}]
    diff_at: int | None = None
    if dl is not None and nl is not None and shared:
        st = shared[-1][1]
        hi = min(l1, l2)
        diff = first_difference(log_bytes(dl, st, hi), log_bytes(nl, st, hi))
        diff_at = None if diff is None else st + diff
    key_at = {b: [(m.physical_offset, m.keys[0] if m.keys else "?") for m in v.messages if m.topic == EQ_TOPIC]
              for b, v in files.logs.items()}
    evidence = [
        f"masterEpoch {e1}: {d} master; every broker's epoch cache {fmt_epochs(epochs_of(pre, d))}, no bytes",
        f"{d} cut from the controller; {n} elected at masterEpoch {e2}: {short(changed[-1], 160)}",
        f"{n}'s epoch cache right after (admin): {fmt_epochs(epochs_of(after_el, n))} (no entry for epoch {e2}); its "
        "store log: " + (short(w_refused[n].new()[0], 260) if w_refused[n].new() else "no 'append failed' line"),
        f"p1 -> {r1[0].get('addr')}: {r1[0].get('status')} {str(r1[0].get('error', ''))[:60]}",
        f"p2 -> {r2[0].get('addr')}: {r2[0].get('status')} at commit-log offset {r2[0].get('commitLogOffset')}",
        f"{d}: epochs {fmt_epochs(d_ep)}, log to {l1}, messages {key_at.get(d)}",
        f"{n}: epochs {fmt_epochs(n_ep)}, log to {l2}, messages {key_at.get(n)}",
        f"shared epoch entries {shared}; their bytes first differ at {diff_at}",
    ]
    data: dict[str, Any] = {"deposed": d, "newMaster": n, "epochNew": e2, "deposedEpochs": d_ep,
                            "newEpochs": n_ep, "L1": l1, "L2": l2, "differAt": diff_at, "p1": r1[0], "p2": r2[0]}
    if not shared or diff_at is None:
        return Verdict(NOT_REPRODUCED, evidence, f"{d} and {n} share no epoch entry with different bytes", data)
    why = (f"{d} and {n} both hold epoch entry {shared[-1]} and differ at byte {diff_at}: {d} wrote p1 and {n} "
           f"wrote p2 (acknowledged) under the same (epoch, start)")

    # 4. what follows: D rejoins as N's slave; N dies; the consumer reads the topic
    follows: list[str] = []
    try:
        w_dt = LogWatch(lab, d, r"truncateOffset is|no need to truncate")
        did = master_id(now, d)
        lab.heal(p_dc)
        lab.wait(lambda x: x.leader is not None and did in x.leader.sss and x.leader.master == n, 60,
                 f"{d} in {n}'s SyncStateSet")
        insync = fresh_ok(lab, [d, n])
        follows.append(f"{d} rejoined as {n}'s slave: {' | '.join(short(x, 100) for x in w_dt.new()[-2:])}; "
                       f"SyncStateSet {lab.sss_nodes(insync)}; {d} max {max_of(insync, d)}, {n} max "
                       f"{max_of(insync, n)}")
        raw_d = lab.files().raw.get(d)
        if raw_d is not None:
            follows.append(f"{d}'s log read as messages stops at {raw_d.stop.offset} ({raw_d.stop.reason.value})")
        w_cut = LogWatch(lab, d, r"Truncate commitLog to|TruncateOffset is")
        lab.kill(n, "after the deposed master joined its SyncStateSet")
        new = lab.wait(lambda x: x.leader is not None and x.leader.master not in (None, n), 45,
                       "a master elected after the kill")
        assert new.leader is not None
        nm = new.leader.master
        assert nm is not None
        lab.wait(lambda x: x.brokers.get(nm) is not None and x.brokers[nm].role == "MASTER", 30,
                 f"{nm} serving as master")
        time.sleep(2.0)
        seen: list[dict[str, Any]] = []
        for _ in range(2):  # a consumer JVM slow to start on a loaded machine may read nothing: once more
            seen = lab.consume(EQ_TOPIC, 20.0)
            if seen:
                break
        keys = sorted({str(x.get("key")) for x in seen})
        lost = r2[0].get("key") not in keys
        end = fresh_ok(lab, [nm])
        logs = lab.files().logs
        held = [m.keys[0] if m.keys else "?" for m in logs[nm].messages if m.topic == EQ_TOPIC] if nm in logs else []
        read = "LOST" if lost and seen else "present" if not lost else "not read (the consumer read nothing)"
        if nm == d and w_cut.new():
            follows.append(f"{d} on becoming master: " + " | ".join(short(x, 120) for x in w_cut.new()[:2]))
        follows.append(f"{n} SIGKILLed; {nm} elected (masterEpoch {new.leader.master_epoch}); {nm}'s log to its "
                       f"max offset {max_of(end, nm)} holds {held}; the consumer reads {keys}: acknowledged p2 {read}")
        data.update({"afterMaster": nm, "seen": keys, "afterMasterHolds": held,
                     "ackedLost": r2[0].get("key") not in held})
    except LabError as exc:
        follows.append(f"what follows stopped: {exc}")
    evidence += follows
    others = f"; the third broker {other} stayed cut from the nameserver (no master's HA address)"
    return Verdict(REPRODUCED, evidence, why + others, data)
