"""The verdict of a real run: the catalogue's invariants, checked on what a real RocketMQ cluster let the kit see.

A real run has no global step: the kit sees the clients' history, the admin API's snapshots (twice a second),
the fault actions, and after the run the files every node left. Each invariant below is checked where those
observations support it (``REAL_CHECKS`` says from which; ``rmqha invariants`` prints it), with the same id and
the same meaning as in the simulator (``docs/invariants.md``); what needs the state of every node at one instant
stays with the simulator.

* Client history (``clients/producer.jsonl``, ``consumer.jsonl``: the Java tool's lines, RocketMQ's own
  ``SendResult`` and ``PullResult``): ``SYNC-NO-ACK-LOSS``, ``SYNC-SEEN-NO-LOSS``, ``CLI-QUEUE-POSITION-STABLE``,
  ``CLI-NO-SKIP``; a send is acknowledged when its status is ``SEND_OK`` (the broker's ``PUT_OK``).
* The controller's committed event log (the DLedger store of every controller node, read by ``files.py``),
  replayed through the kit's own ``ReplicasInfoManager.apply_event`` to get the state before and after each
  event: ``CTL-EPOCH-MONO``, ``CTL-ONE-MASTER-PER-EPOCH``, ``CTL-MASTER-IN-SSS``, ``CTL-SSS-REGISTERED``,
  ``CTL-CLEAN-ELECTION`` (the SyncStateSet half: liveness at the election is not in the log), ``CTL-ALTER-FENCED``
  (the new set keeps the master: the request's epochs are not in the log), ``CTL-ID-UNIQUE``, and with three
  controllers ``CTL-APPLY-PREFIX`` (the nodes' logs agree entry by entry up to the shortest).
* The files (commit logs, epoch files, topic config): ``STORE-WHOLE-MESSAGES``, ``STORE-NO-SPAN-FILE``,
  ``EPOCH-FILE-WF``, ``QUEUE-OFFSET-GAPLESS``, ``HA-LOG-MATCHING`` (byte by byte across replicas, per shared epoch
  entry), and at the end of a settled run ``HA-TRUNCATE-PREFIX`` (every replica's log is a prefix of the final
  master's), ``SYNC-SSS-HOLDS-ACKED`` (every member of the final SyncStateSet holds every acknowledged message),
  ``QUEUE-ACKED-READABLE`` (the final master's ``topics.json``).
* The progress invariants the admin snapshot the settle converged on shows (``check_live``; ``converge.py``: the
  settle's last snapshot when nothing moved): ``LIVE-MASTER`` (the leading controller names a master, that broker's
  HA status says master and its epoch file's last epoch is the controller's masterEpoch, or RocketMQ refused that
  epoch's entry, its store.log says: ``EpochRefusals``; no other broker is master), ``LIVE-SSS-NO-DEAD`` (every
  SyncStateSet member answers the admin API and the controller holds it alive), ``LIVE-SSS-CATCHUP`` (every other
  broker that answers is in the SyncStateSet with its commit log at least to the master's confirmOffset), and from
  the client history
  ``LIVE-PUTS`` in a weaker form: the producer stops when the settle begins, so no probe follows it; the workload's
  last send, once every fault had been undone, was acknowledged.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..impl.controller.jraft import RaftLiveTable, execute
from ..impl.controller.replicas_info import ReplicasInfoManager, RequestEntry, entry_from_dict, event_from_dict
from ..impl.sim.report import members
from . import files as F
from . import maven
from .clients import Tail
from .observe import BrokerView, Snapshot, rounds
from .spec import RealSpec

TOPIC = "RmqhaTopic"

REAL_CHECKS: dict[str, str] = {
    "SYNC-NO-ACK-LOSS": "client history (SEND_OK) + the final master's commit log",
    "SYNC-SEEN-NO-LOSS": "client history (pulled messages) + the final master's commit log",
    "CLI-QUEUE-POSITION-STABLE": "client history (queue, queue offset) + the final master's commit log",
    "CLI-NO-SKIP": "client history: the offsets pulled per queue",
    "CTL-EPOCH-MONO": "the controller's committed event log, replayed",
    "CTL-ONE-MASTER-PER-EPOCH": "the controller's committed event log, replayed; the admin API's snapshots",
    "CTL-MASTER-IN-SSS": "the controller's committed event log, replayed",
    "CTL-SSS-REGISTERED": "the controller's committed event log, replayed",
    "CTL-CLEAN-ELECTION": "the controller's committed event log (SyncStateSet membership; not liveness)",
    "CTL-ALTER-FENCED": "the controller's committed event log (the new set keeps the master; not the epochs)",
    "CTL-ID-UNIQUE": "the controller's committed event log (ApplyBrokerId)",
    "CTL-APPLY-PREFIX": "every controller node's DLedger log, entry by entry (3 controllers)",
    "STORE-WHOLE-MESSAGES": "each broker's commit log files",
    "STORE-NO-SPAN-FILE": "each broker's commit log files",
    "EPOCH-FILE-WF": "each broker's epochFileCheckpoint",
    "QUEUE-OFFSET-GAPLESS": "each broker's commit log files",
    "HA-LOG-MATCHING": "each pair of brokers' commit logs and epoch files, byte by byte",
    "HA-TRUNCATE-PREFIX": "at the end of a settled run: each replica's log against the final master's",
    "SYNC-SSS-HOLDS-ACKED": "at the end: client history + the logs of the final SyncStateSet's members",
    "QUEUE-ACKED-READABLE": "at the end: client history + the final master's topics.json",
    "LIVE-MASTER": "the admin snapshot the settle converged on, or its last when nothing moved (controller, the "
                   "master's HA status and epoch cache)",
    "LIVE-SSS-NO-DEAD": "the admin snapshot the settle converged on, or its last when nothing moved (every "
                        "SyncStateSet member answers)",
    "LIVE-SSS-CATCHUP": "the admin snapshot the settle converged on, or its last when nothing moved (members, max and "
                        "confirm offsets)",
    "LIVE-PUTS": "client history: the workload's last send after the last fault was undone (no probe after the "
                 "settle: the producer stops when it begins)",
}

STATUS = {"SEND_OK": "PUT_OK"}  # the producer's SendStatus for the broker's PutMessageStatus.PUT_OK


@dataclass
class Verdict:
    violations: list[dict[str, Any]] = field(default_factory=list)
    checked: dict[str, str] = field(default_factory=dict)  # id -> what was checked (or why not)
    notes: list[str] = field(default_factory=list)

    def fail(self, inv: str, message: str, **data: Any) -> None:
        self.violations.append({"invariant": inv, "message": message, **data})

    def ran(self, inv: str, what: str) -> None:
        self.checked.setdefault(inv, what)

    def first(self, inv: str) -> bool:
        """True until ``inv`` has failed once (one violation per id is enough to say what broke)."""
        return not any(v["invariant"] == inv for v in self.violations)


# --------------------------------------------------------------------------------------------- inputs


def _lines(path: Path) -> list[dict[str, Any]]:
    return Tail(path).read()


@dataclass
class History:
    sends: list[dict[str, Any]]  # kit vocabulary: client.send
    results: list[dict[str, Any]]  # client.send-result
    seen: list[dict[str, Any]]  # client.seen

    @property
    def acked(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r["status"] == "PUT_OK"]


def read_history(spec: RealSpec) -> History:
    t0 = spec.created_ms
    sends, results, seen = [], [], []
    for d in _lines(spec.dir / "clients" / "producer.jsonl"):
        if d.get("k") == "send":
            sends.append({"k": "client.send", "n": "p1", "t": int(d["t"]) - t0, "key": d["key"]})
        elif d.get("k") == "send-result":
            raw = str(d.get("status"))
            r = {"k": "client.send-result", "n": "p1", "t": int(d["t"]) - t0, "key": d["key"],
                 "status": STATUS.get(raw, raw if raw != "error" else "ERROR"), "rocketmqStatus": raw}
            for src, dst in (("queue", "queue"), ("queueOffset", "queueOffset"), ("commitLogOffset", "offset"),
                             ("addr", "addr"), ("error", "error"), ("code", "code"), ("rtMs", "rtMs")):
                if d.get(src) is not None:
                    r[dst] = d[src]
            if d.get("addr"):
                r["broker"] = spec.node_of_addr(str(d["addr"]))
            results.append(r)
    for d in _lines(spec.dir / "clients" / "consumer.jsonl"):
        if d.get("k") == "seen":
            s = {"k": "client.seen", "n": "c1", "t": int(d["t"]) - t0, "key": d.get("key"),
                 "queue": d.get("queue"), "queueOffset": d.get("queueOffset"), "offset": d.get("commitLogOffset")}
            if d.get("storeHost"):
                s["broker"] = spec.node_of_addr(str(d["storeHost"]))
            seen.append(s)
    return History(sends, results, seen)


def read_snapshots(spec: RealSpec) -> list[Snapshot]:
    return rounds(spec, _lines(spec.dir / "clients" / "observe.jsonl"))


@dataclass
class Files:
    logs: dict[str, F.CommitLogView]  # each broker's log up to its logical end (``bound``)
    raw: dict[str, F.CommitLogView]  # what its files hold, to the first zero
    epochs: dict[str, F.EpochFile | None]
    topics: dict[str, dict[str, Any]]
    controller: dict[str, list[CtlEntry]]  # per controller node, its committed entries
    errors: list[str]
    stale: dict[str, dict[str, int]] = field(default_factory=dict)  # broker -> bytes past its logical end
    confirm: dict[str, int] = field(default_factory=dict)  # broker -> its checkpoint's confirmPhyOffset (persisted)


def bound(view: F.CommitLogView, end: int) -> F.CommitLogView:
    """The log as the broker sees it: the messages that end by ``end`` (its commit log's max offset). RocketMQ
    truncates by moving a mapped file's write position (``MappedFileQueue.truncateDirtyFiles``), not by zeroing,
    so whole messages from before a truncation can follow the logical end in the files."""
    return dataclasses.replace(view, messages=[m for m in view.messages if m.end_offset <= end],
                               end_offset=min(end, view.end_offset))


def read_files(spec: RealSpec, ends: dict[str, int | None]) -> Files:
    """Every node's files; ``ends``: each broker's last commit-log max offset the admin API reported (None:
    unknown, the files' own end is taken)."""
    size = spec.cfg.store.mapped_file_size_commit_log
    out = Files({}, {}, {}, {}, {}, [])
    for b in spec.brokers:
        store = spec.store_dir(b)
        try:
            raw = F.read_commitlog(store / "commitlog", mapped_file_size=size)
        except F.RealFileError as exc:
            out.errors.append(f"{b} commit log: {exc}")
        else:
            out.raw[b] = raw
            end = ends.get(b)
            out.logs[b] = raw if end is None else bound(raw, end)
            if end is None:
                out.errors.append(f"{b}: no commit-log end from the admin API at the end; its files' end is taken")
            elif raw.end_offset > end:
                past = [m for m in raw.messages if m.physical_offset >= end]
                out.stale[b] = {"logicalEnd": end, "filesEnd": raw.end_offset, "messagesPast": len(past)}
        if (store / "checkpoint").is_file():
            try:
                out.confirm[b] = F.read_store_checkpoint(store / "checkpoint").confirm_phy_offset
            except F.RealFileError as exc:
                out.errors.append(f"{b} checkpoint: {exc}")
        try:
            out.epochs[b] = F.load_epoch_file(store)
        except F.RealFileError as exc:
            out.errors.append(f"{b} epoch file: {exc}")
        topics = store / "config" / "topics.json"
        if topics.is_file():
            try:
                out.topics[b] = json.loads(topics.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:
                out.errors.append(f"{b} topics.json: {exc}")
    unclean = spec.cfg.controller.enable_elect_unclean_master
    for c in spec.controllers:
        try:
            if spec.controller_type == "DLedger":
                out.controller[c] = dledger_entries(F.read_dledger_log(spec.store_dir(c)))
            else:
                out.controller[c] = jraft_entries(dump_jraft(spec, c), unclean)
        except (F.RealFileError, RuntimeError) as exc:
            out.errors.append(f"{c} controller log: {exc}")
    return out


def dump_jraft(spec: RealSpec, node: str) -> list[F.JraftEntry]:
    """A stopped JRaft controller's log, through ``JraftDump`` (RocksDB, read-only)."""
    inst = maven.fetch(spec.version)
    cmd = F.jraft_dump_command("java", inst.classpath, inst.tool_classes, spec.store_dir(node))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"JraftDump failed: {(proc.stderr.strip().splitlines() or ['?'])[-1][:200]}")
    return F.parse_jraft_dump(proc.stdout, f"{node}'s JRaft log")


def log_bytes(view: F.CommitLogView, start: int, end: int) -> bytes:
    """The bytes of a commit log between two absolute offsets, across its mapped files."""
    out = bytearray()
    pos = start
    for mf in view.files:
        lo, hi = mf.start_offset, mf.start_offset + mf.length
        if hi <= pos or lo >= end:
            continue
        a, b = max(pos, lo), min(end, hi)
        with open(mf.path, "rb") as f:
            f.seek(a - lo)
            out += f.read(b - a)
        pos = b
    return bytes(out)


# --------------------------------------------------------------------------------------------- checks


def check_history(v: Verdict, h: History, final_master: str | None, files: Files) -> None:
    # CLI-QUEUE-POSITION-STABLE: a (queue, offset) is one message for every reader
    at: dict[tuple[int, int], str] = {}
    for s in h.seen:
        if s["queue"] is None or s["queueOffset"] is None:
            continue
        pos = (int(s["queue"]), int(s["queueOffset"]))
        had = at.setdefault(pos, s["key"])
        if had != s["key"] and v.first("CLI-QUEUE-POSITION-STABLE"):
            v.fail("CLI-QUEUE-POSITION-STABLE", f"queue {pos[0]} offset {pos[1]} was read as {had} and as {s['key']}",
                   queue=pos[0], queueOffset=pos[1], keys=[had, s["key"]], t=s["t"])
    v.ran("CLI-QUEUE-POSITION-STABLE", f"{len(at)} queue positions read")
    # CLI-NO-SKIP: per queue, what was read is 0..max without a hole
    per_q: dict[int, set[int]] = defaultdict(set)
    for q, o in at:
        per_q[q].add(o)
    for q, offs in sorted(per_q.items()):
        holes = sorted(set(range(max(offs) + 1)) - offs)
        if holes and v.first("CLI-NO-SKIP"):
            v.fail("CLI-NO-SKIP", f"queue {q}: read up to offset {max(offs)} but never offsets "
                   f"{', '.join(map(str, holes[:10]))}{', ...' if len(holes) > 10 else ''}",
                   queue=q, missing=holes[:50])
    v.ran("CLI-NO-SKIP", f"{len(per_q)} queues")
    if final_master is None or final_master not in files.logs:
        v.notes.append("no final master whose log could be read: the loss checks did not run")
        return
    log = files.logs[final_master]
    keys = {k for m in log.messages if m.topic == TOPIC for k in m.keys}
    lost = [r["key"] for r in h.acked if r["key"] not in keys]
    if lost:
        v.fail("SYNC-NO-ACK-LOSS", f"{len(lost)} of {len(h.acked)} acknowledged messages are not in the final "
               f"master {final_master}'s log", lost=lost, master=final_master)
    v.ran("SYNC-NO-ACK-LOSS", f"{len(h.acked)} acknowledged messages against {final_master}'s log")
    gone = sorted({s["key"] for s in h.seen} - keys)
    if gone:
        v.fail("SYNC-SEEN-NO-LOSS", f"{len(gone)} messages a consumer read are not in the final master "
               f"{final_master}'s log", lost=gone, master=final_master)
    v.ran("SYNC-SEEN-NO-LOSS", f"{len({s['key'] for s in h.seen})} messages read, against {final_master}'s log")
    # the final master's binding of each read queue position
    bound = {(m.queue_id, m.queue_offset): m.keys[0] if m.keys else "" for m in log.messages if m.topic == TOPIC}
    for pos, key in sorted(at.items()):
        if pos in bound and bound[pos] != key and v.first("CLI-QUEUE-POSITION-STABLE"):
            v.fail("CLI-QUEUE-POSITION-STABLE", f"queue {pos[0]} offset {pos[1]} was read as {key}; the final master "
                   f"{final_master} holds {bound[pos]} there", queue=pos[0], queueOffset=pos[1])


@dataclass(frozen=True)
class CtlEntry:
    """One committed entry of a controller node's log, flavour-neutral: ``key`` is what two nodes must agree on
    at an index (DLedger: term and body; JRaft: term and data), ``events`` the controller events it applied."""

    index: int
    term: int
    key: bytes
    events: tuple[dict[str, Any], ...]


def dledger_entries(lg: F.DLedgerLog) -> list[CtlEntry]:
    return [CtlEntry(e.index, e.term, e.body, tuple(ev.to_kit() for ev in e.events
                                                    if not isinstance(ev, F.UnknownEvent)))
            for e in lg.committed_entries()]


def jraft_entries(entries: list[F.JraftEntry], unclean: bool) -> list[CtlEntry]:
    """A JRaft log holds the requests; the events are what each did when it applied, on the applied state.
    The kit's JRaft state machine (``impl/controller/jraft.py: execute``, liveness at each request's own time)
    runs them to find out; ``tests/test_real_files.py`` shows it reproduces the controller's answers."""
    rim, live = ReplicasInfoManager(enable_elect_unclean_master=unclean), RaftLiveTable()
    out = []
    for e in entries:
        events: tuple[dict[str, Any], ...] = ()
        if e.request is not None and e.request.in_kit:
            req = entry_from_dict(e.request.to_kit())
            assert isinstance(req, RequestEntry)
            res = execute(rim, live, req, now=req.stamp)
            events = tuple(dict[str, Any](ev.to_dict()) for ev in (res.events if res is not None else []))
        out.append(CtlEntry(e.index, e.term, e.data, events))
    return out


def check_controller(v: Verdict, spec: RealSpec, files: Files) -> list[dict[str, Any]]:
    """Replay the committed event log; returns the ``ctl.apply`` observations (kit shape, no time)."""
    logs = files.controller
    if not logs:
        for inv in ("CTL-EPOCH-MONO", "CTL-MASTER-IN-SSS", "CTL-SSS-REGISTERED", "CTL-CLEAN-ELECTION"):
            v.checked.setdefault(inv, "not checked: no controller log could be read")
        return []
    # CTL-APPLY-PREFIX: the nodes agree, entry by entry, up to the shortest log
    if len(logs) > 1:
        by_index: dict[int, tuple[int, bytes, str]] = {}
        for node, entries in sorted(logs.items()):
            for e in entries:
                had = by_index.setdefault(e.index, (e.term, e.key, node))
                if (had[0], had[1]) != (e.term, e.key) and v.first("CTL-APPLY-PREFIX"):
                    v.fail("CTL-APPLY-PREFIX", f"{node} holds at index {e.index} an entry of term {e.term} other than "
                           f"{had[2]}'s (term {had[0]})", index=e.index)
        v.ran("CTL-APPLY-PREFIX", f"{len(by_index)} indexes over {len(logs)} nodes")
    lnode, entries = max(logs.items(), key=lambda kv: len(kv[1]))
    unclean = spec.cfg.controller.enable_elect_unclean_master
    rim = ReplicasInfoManager(enable_elect_unclean_master=unclean)
    applied: list[dict[str, Any]] = []
    epoch_master: dict[tuple[str, int, int], int | None] = {}
    incarnation: dict[str, int] = defaultdict(int)
    ids: dict[tuple[str, int], str] = {}
    for e in entries:
        for kit in e.events:
            name = kit["brokerName"]
            before = rim.snapshot().get(name)
            rim.apply_event(event_from_dict(kit))
            after = rim.snapshot().get(name)
            obs = {"k": "ctl.apply", "n": lnode, "index": e.index,
                   "term": e.term, "event": kit, "before": before, "after": after}
            applied.append(obs)
            names = {i: spec.node_of_addr(a) or f"id {i}" for (n, i), a in ids.items() if n == name}
            _check_event(v, obs, unclean, epoch_master, incarnation, ids, names)
            _check_state(v, rim, name, e.index, names)
    how = "replayed" if spec.controller_type == "DLedger" else "derived by running the JRaft log's requests"
    for inv in ("CTL-EPOCH-MONO", "CTL-ONE-MASTER-PER-EPOCH", "CTL-MASTER-IN-SSS", "CTL-SSS-REGISTERED",
                "CTL-ID-UNIQUE", "CTL-ALTER-FENCED", "CTL-CLEAN-ELECTION"):
        v.ran(inv, f"{len(applied)} committed events {how}")
    return applied


def id_set(ids: Any, names: dict[int, str]) -> str:
    """Broker ids as the nodes that hold them, ``{b1, b2}`` (an id no broker was given: ``id 4``)."""
    return members(names.get(int(i), f"id {i}") for i in sorted(ids or []))


def _check_event(v: Verdict, obs: dict[str, Any], unclean: bool, epoch_master: dict[tuple[str, int, int], int | None],
                 incarnation: dict[str, int], ids: dict[tuple[str, int], str], names: dict[int, str]) -> None:
    ev, before, after = obs["event"], obs["before"], obs["after"]
    kind, name = ev["type"], ev["brokerName"]
    if before is None or before.get("masterEpoch") is None:
        incarnation[name] += 1
    if before and after and before.get("masterEpoch") is not None and after.get("masterEpoch") is not None:
        dme = after["masterEpoch"] - before["masterEpoch"]
        dse = after["syncStateSetEpoch"] - before["syncStateSetEpoch"]
        want_me = 1 if kind == "ElectMaster" else 0
        want_se = 1 if (kind == "ElectMaster" and ev["newMasterElected"]) or kind == "AlterSyncStateSet" else 0
        if (dme, dse) != (want_me, want_se) and v.first("CTL-EPOCH-MONO"):
            v.fail("CTL-EPOCH-MONO", f"{kind} at index {obs['index']} moved mE by {dme} and sE by {dse} (expected "
                   f"{want_me}, {want_se})", event=ev, before=before, after=after)
    if kind == "ElectMaster" and after and after.get("masterEpoch") is not None:
        key = (name, incarnation[name], after["masterEpoch"])
        if key in epoch_master and epoch_master[key] != after["master"] and v.first("CTL-ONE-MASTER-PER-EPOCH"):
            was_m, now_m = epoch_master[key], after["master"]
            v.fail("CTL-ONE-MASTER-PER-EPOCH", f"masterEpoch {after['masterEpoch']} of {name} had master "
                   f"{names.get(was_m, was_m) if was_m is not None else 'none'}, then "
                   f"{names.get(now_m, now_m) if now_m is not None else 'none'}", event=ev)
        epoch_master[key] = after["master"]
        if ev["newMasterElected"] and before and (before.get("masterEpoch") or 0) > 0 and not unclean:
            new = ev["newMasterBrokerId"]
            if new not in (before.get("syncStateSet") or []) and v.first("CTL-CLEAN-ELECTION"):
                v.fail("CTL-CLEAN-ELECTION", f"{names.get(new, f'broker id {new}')} was elected at index "
                       f"{obs['index']} from outside the SyncStateSet {id_set(before.get('syncStateSet'), names)} "
                       "with unclean election off", event=ev, before=before)
    if kind == "AlterSyncStateSet" and before and before.get("master") is not None:
        if before["master"] not in ev["newSyncStateSet"] and v.first("CTL-ALTER-FENCED"):
            v.fail("CTL-ALTER-FENCED", f"the new SyncStateSet {id_set(ev['newSyncStateSet'], names)} at index "
                   f"{obs['index']} drops the master {names.get(before['master'], before['master'])}", event=ev,
                   before=before)
    if kind == "ApplyBrokerId":
        key2 = (name, int(ev["newBrokerId"]))
        addr = str(ev.get("brokerAddress"))
        had = ids.get(key2)
        if had is not None and had != addr and v.first("CTL-ID-UNIQUE"):
            v.fail("CTL-ID-UNIQUE", f"broker id {key2[1]} of {name} applied to {addr} while {had} holds it", event=ev)
        ids[key2] = addr
    if kind == "CleanBrokerData":
        gone = ev.get("brokerIdSetToClean")
        for k in [k for k in ids if k[0] == name and (gone is None or k[1] in gone)]:
            del ids[k]


def _check_state(v: Verdict, rim: ReplicasInfoManager, name: str, index: int, names: dict[int, str]) -> None:
    st = rim.snapshot().get(name)
    if not st or st.get("syncStateSet") is None:
        return
    sss = set(st["syncStateSet"])
    if st["master"] is not None and st["master"] not in sss and v.first("CTL-MASTER-IN-SSS"):
        v.fail("CTL-MASTER-IN-SSS", f"after index {index} the master {names.get(st['master'], st['master'])} is not "
               f"in the SyncStateSet {id_set(sss, names)}", state=st)
    registered = {int(i) for i in (st.get("replicas") or {})}
    if not sss <= registered and v.first("CTL-SSS-REGISTERED"):
        v.fail("CTL-SSS-REGISTERED", f"after index {index} the SyncStateSet {id_set(sss, names)} holds unregistered "
               f"ids {', '.join(map(str, sorted(sss - registered)))} (registered: {id_set(registered, names)})",
               state=st)


def check_snapshots(v: Verdict, snaps: list[Snapshot]) -> None:
    seen: dict[int, str] = {}
    for s in snaps:
        lead = s.leader
        if lead is None or lead.master_epoch is None or lead.master is None:
            continue
        had = seen.setdefault(lead.master_epoch, lead.master)
        if had != lead.master and v.first("CTL-ONE-MASTER-PER-EPOCH"):
            v.fail("CTL-ONE-MASTER-PER-EPOCH", f"the controller named {had} and then {lead.master} master at "
                   f"masterEpoch {lead.master_epoch}", t=s.t)
    if snaps:
        v.ran("CTL-ONE-MASTER-PER-EPOCH", f"{len(snaps)} admin snapshots")


def check_files(v: Verdict, spec: RealSpec, files: Files, final_max: dict[str, int | None]) -> None:
    size = spec.cfg.store.mapped_file_size_commit_log
    for b, log in sorted(files.logs.items()):
        if not log.stop.reason.clean:
            written = final_max.get(b)
            if written is None or log.stop.offset < written:  # a broken record inside what the broker holds
                v.fail("STORE-WHOLE-MESSAGES", f"{b}'s commit log stops at {log.stop.offset} on a "
                       f"{log.stop.reason.value} record ({log.stop.detail}) before its end {written}", broker=b)
        for m in log.messages:
            if m.physical_offset // size != (m.end_offset - 1) // size and v.first("STORE-NO-SPAN-FILE"):
                v.fail("STORE-NO-SPAN-FILE", f"{b}: the message at {m.physical_offset} ({m.size} bytes) crosses the "
                       f"file boundary at {(m.end_offset - 1) // size * size}", broker=b)
        nxt: dict[tuple[str, int], int] = {}
        for m in log.messages:
            key = (m.topic, m.queue_id)
            want = nxt.get(key, 0 if log.min_offset == 0 else m.queue_offset)
            if m.queue_offset != want and v.first("QUEUE-OFFSET-GAPLESS"):
                v.fail("QUEUE-OFFSET-GAPLESS", f"{b}: {m.topic} queue {m.queue_id} has offset {m.queue_offset} at "
                       f"{m.physical_offset} where {want} comes next", broker=b)
            nxt[key] = m.queue_offset + 1
    v.ran("STORE-WHOLE-MESSAGES", f"{len(files.logs)} commit logs")
    v.ran("STORE-NO-SPAN-FILE", f"{sum(len(lg.messages) for lg in files.logs.values())} messages")
    v.ran("QUEUE-OFFSET-GAPLESS", f"{len(files.logs)} commit logs, every topic")
    for b, ef in sorted(files.epochs.items()):
        if ef is None:
            continue
        pairs = ef.pairs()
        for (e1, s1), (e2, s2) in itertools.pairwise(pairs):
            if not (e2 > e1 and s2 >= s1) and v.first("EPOCH-FILE-WF"):
                v.fail("EPOCH-FILE-WF", f"{b}'s epoch file has {e1}@{s1} then {e2}@{s2}", broker=b, entries=pairs)
    v.ran("EPOCH-FILE-WF", f"{sum(1 for e in files.epochs.values() if e)} epoch files")
    # HA-LOG-MATCHING: a shared epoch entry means the same bytes to the smaller end of that epoch
    brokers = sorted(b for b in files.logs if files.epochs.get(b))
    pairs_checked = 0
    for i, a in enumerate(brokers):
        for b in brokers[i + 1:]:
            ea, eb = files.epochs[a], files.epochs[b]
            assert ea is not None and eb is not None
            ends_a = {(e.epoch, e.start_offset): e.end_offset for e in ea.entries}
            for e in eb.entries:
                entry = (e.epoch, e.start_offset)
                if entry not in ends_a:
                    continue
                end_a = min(x for x in (ends_a[entry], files.logs[a].end_offset) if x is not None)
                end_b = min(x for x in (e.end_offset, files.logs[b].end_offset) if x is not None)
                end = min(end_a, end_b)
                if end <= e.start_offset:
                    continue
                pairs_checked += 1
                ba, bb = log_bytes(files.logs[a], e.start_offset, end), log_bytes(files.logs[b], e.start_offset, end)
                if ba != bb and v.first("HA-LOG-MATCHING"):
                    at = next(i for i, (x, y) in enumerate(zip(ba, bb)) if x != y) if len(ba) == len(bb) else 0
                    v.fail("HA-LOG-MATCHING", f"{a} and {b} share epoch {e.epoch} from {e.start_offset} but their "
                           f"logs differ at {e.start_offset + at}", brokers=[a, b], epoch=e.epoch)
    v.ran("HA-LOG-MATCHING", f"{pairs_checked} shared epoch ranges")


def check_end(v: Verdict, spec: RealSpec, files: Files, h: History, final: Snapshot | None, settled: bool) -> None:
    lead = final.leader if final else None
    master = lead.master if lead else None
    if master is None or master not in files.logs:
        return
    mlog = files.logs[master]
    if settled:
        for b, log in sorted(files.logs.items()):
            if b == master:
                continue
            end = min(log.end_offset, mlog.end_offset)
            if log_bytes(log, log.min_offset, end) != log_bytes(mlog, log.min_offset, end) \
                    and v.first("HA-TRUNCATE-PREFIX"):
                v.fail("HA-TRUNCATE-PREFIX", f"{b}'s log is not a prefix of the final master {master}'s", broker=b)
        v.ran("HA-TRUNCATE-PREFIX", f"{len(files.logs) - 1} replicas against {master} at the end")
    if lead is not None:
        members = [lead.ids.get(i) for i in lead.sss]
        for b in [m for m in members if m in files.logs]:
            keys = {k for m in files.logs[b].messages if m.topic == TOPIC for k in m.keys}
            missing = [r["key"] for r in h.acked if r["key"] not in keys]
            if missing and v.first("SYNC-SSS-HOLDS-ACKED"):
                v.fail("SYNC-SSS-HOLDS-ACKED", f"{b}, in the final SyncStateSet, lacks {len(missing)} acknowledged "
                       "messages", broker=b, lost=missing[:50])
        v.ran("SYNC-SSS-HOLDS-ACKED", f"the final SyncStateSet {members}")
    tc = (files.topics.get(master) or {}).get("topicConfigTable", {}).get(TOPIC)
    queues = {int(r["queue"]) for r in h.acked if r.get("queue") is not None}
    if queues:
        if tc is None:
            v.fail("QUEUE-ACKED-READABLE", f"the final master {master} has no config for {TOPIC}", master=master)
        elif int(tc.get("readQueueNums", 0)) <= max(queues):
            v.fail("QUEUE-ACKED-READABLE", f"the final master {master} reads {tc.get('readQueueNums')} queues of "
                   f"{TOPIC}; acknowledged messages went to queue {max(queues)}", master=master)
        v.ran("QUEUE-ACKED-READABLE", f"{TOPIC} on {master}")


LIVE_SNAPSHOT = ("LIVE-MASTER", "LIVE-SSS-NO-DEAD", "LIVE-SSS-CATCHUP")
"""The progress invariants one admin snapshot shows (``live_problems``); the settle waits until they all hold."""

EPOCH_REFUSED = re.compile(r"The appending entry's .*?EpochEntry\{epoch=(\d+), startOffset=(\d+).*append failed")
"""``EpochFileCache.appendEntry``'s error line: the entry it refused (an entry must have a higher epoch *and* a
higher start offset than the last one)."""


class EpochRefusals:
    """The epoch entries each broker's ``EpochFileCache.appendEntry`` refused, read from its ``store.log`` as the
    file grows. A broker that becomes master where its last epoch began (no message written since: a master killed
    before the first write) asks ``AutoSwitchHAService.changeToMaster`` to append (masterEpoch, maxPhyOffset); the
    start offset is not past the last entry's, the append fails, and the new master writes under its old last epoch:
    its epoch cache never shows the controller's masterEpoch. LIVE-MASTER takes that as RocketMQ's own outcome."""

    def __init__(self, spec: RealSpec) -> None:
        self.spec = spec
        self.pos: dict[str, int] = {}
        self.rest: dict[str, bytes] = {}
        self.refused: dict[str, set[int]] = {}

    def read(self) -> dict[str, set[int]]:
        for b in self.spec.brokers:
            path = self.spec.rocketmq_log_dir(b) / "store.log"
            try:
                with open(path, "rb") as f:
                    f.seek(self.pos.get(b, 0))
                    data = f.read()
            except OSError:
                continue
            self.pos[b] = self.pos.get(b, 0) + len(data)
            lines = (self.rest.get(b, b"") + data).split(b"\n")
            self.rest[b] = lines.pop()
            for ln in lines:
                m = EPOCH_REFUSED.search(ln.decode("utf-8", "replace"))
                if m is not None:
                    self.refused.setdefault(b, set()).add(int(m.group(1)))
        return self.refused


def live_problems(final: Snapshot | None,
                  refused: dict[str, set[int]] | None = None) -> dict[str, list[str]]:
    """What keeps the progress invariants of ``LIVE_SNAPSHOT`` from holding on one admin snapshot: id -> messages;
    an id whose list is empty holds. LIVE-MASTER: the leading controller names a master whose HA status says
    MASTER and whose epoch cache ends at the controller's masterEpoch (or whose entry for it RocketMQ refused:
    ``refused``, ``EpochRefusals``), and no other broker that answers is master; LIVE-SSS-NO-DEAD: every
    SyncStateSet member answers and the controller holds it alive; LIVE-SSS-CATCHUP: every other broker that answers
    is in the SyncStateSet, its max offset at least the master's confirmOffset."""
    out: dict[str, list[str]] = {i: [] for i in LIVE_SNAPSHOT}
    lead = final.leader if final else None
    if final is None or lead is None or lead.master is None or lead.master_id is None:
        out["LIVE-MASTER"].append(f"no controller names a master ({'no leader' if lead is None else 'none'})")
        return out
    name = lead.master

    def names(ids: list[int]) -> str:
        return members(lead.ids.get(i, f"id {i}") for i in ids)

    mv = final.brokers.get(name)
    last_epoch = mv.epochs[-1][0] if mv is not None and mv.epochs else None
    epoch_ok = last_epoch is None or last_epoch == lead.master_epoch or \
        lead.master_epoch in (refused or {}).get(name, set())
    if mv is None or not mv.ok or mv.role != "MASTER" or not epoch_ok:
        said = "does not answer" if mv is None or not mv.ok else \
            f"its HA status says {mv.role}, last epoch {last_epoch}"
        out["LIVE-MASTER"].append(f"the controller names {name} master at masterEpoch {lead.master_epoch}; {said}")
    for b, bv in sorted(final.brokers.items()):
        if b != name and bv.ok and bv.role == "MASTER":
            out["LIVE-MASTER"].append(f"{b} is master too, beside {name}")
    dead = [i for i in lead.sss if not lead.alive.get(i, False) or not (final.brokers.get(lead.ids.get(i, "")) or
                                                                         BrokerView("", False)).ok]
    if dead:
        out["LIVE-SSS-NO-DEAD"].append(f"the SyncStateSet {names(lead.sss)} holds {names(dead)}, which do not answer "
                                       "or the controller holds dead")
    confirm = mv.confirm_offset if mv is not None else None
    for b, bv in sorted(final.brokers.items()):
        if b == name or not bv.ok:
            continue
        behind = confirm is not None and bv.max_offset is not None and bv.max_offset < confirm
        if bv.broker_id not in lead.sss or behind:
            out["LIVE-SSS-CATCHUP"].append(f"{b} (id {bv.broker_id}, max {bv.max_offset}) is not caught up with "
                                           f"{name} (confirm {confirm}) in the SyncStateSet {names(lead.sss)}")
    return out


def check_live(v: Verdict, final: Snapshot | None, h: History, faults: list[dict[str, Any]],
               where: str = "the last snapshot", refused: dict[str, set[int]] | None = None) -> None:
    """The progress invariants on the snapshot the settle ended on (``where`` says which) and the client history
    (see the module)."""
    problems = live_problems(final, refused)
    lead = final.leader if final else None
    if lead is not None and lead.master is not None and lead.master_epoch in (refused or {}).get(lead.master, set()):
        mv = final.brokers.get(lead.master) if final else None
        last = mv.epochs[-1][0] if mv is not None and mv.epochs else None
        if last != lead.master_epoch:
            v.notes.append(f"{lead.master}'s epoch cache ends at epoch {last}, not the controller's masterEpoch "
                           f"{lead.master_epoch}: RocketMQ refused that entry (EpochFileCache.appendEntry: it started "
                           f"where epoch {last} starts, no message between; its store.log says so), and it writes "
                           f"under epoch {last}")
    for inv in LIVE_SNAPSHOT:
        for message in problems[inv]:
            v.fail(inv, message if inv != "LIVE-MASTER" or (lead is not None and lead.master is not None)
                   else f"at the end {message}")
    if lead is None or lead.master is None or final is None:
        return
    n_up = sum(1 for bv in final.brokers.values() if bv.ok) - 1
    v.ran("LIVE-MASTER", f"{where}: {lead.master} at masterEpoch {lead.master_epoch}")
    v.ran("LIVE-SSS-NO-DEAD", f"{where}: the SyncStateSet {members(lead.ids.get(i, str(i)) for i in lead.sss)}")
    v.ran("LIVE-SSS-CATCHUP", f"{where}: {n_up} brokers against {lead.master}")
    undone = max((f["t"] for f in faults if f.get("do") != "stop-producer"), default=0)
    after = [r for r in h.results if r["t"] > undone]
    if after:
        if after[-1]["status"] != "PUT_OK":
            v.fail("LIVE-PUTS", f"the workload's last send after the last fault ({after[-1]['key']}) ended "
                   f"{after[-1]['rocketmqStatus']}")
        v.ran("LIVE-PUTS", f"{len(after)} sends after the last fault, the last one")
    else:
        v.notes.append("no send after the last fault was undone: LIVE-PUTS not checked")


# --------------------------------------------------------------------------------------------- the whole


def read_frames(spec: RealSpec) -> list[dict[str, Any]]:
    """The controller protocol's requests and responses the proxy recorded (``control.WATCH``), ``t`` relative."""
    out = []
    for d in _lines(spec.dir / "events" / "proxy.jsonl"):
        if d.get("k") == "frame":
            out.append({**d, "t": int(d["t"]) - spec.created_ms})
    return out


def failovers(spec: RealSpec, faults: list[dict[str, Any]], context: list[dict[str, Any]], snaps: list[Snapshot],
              h: History, frames: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per recipe that took the master away: how long until another master was named, and until it took a write.
    The election's time is the controller's first NOTIFY_BROKER_ROLE_CHANGED of a higher masterEpoch as the proxy
    saw it (to the ms); without one, the first admin snapshot naming the new master (up to a round late)."""
    out = []
    notify = [f for f in frames or () if not f["response"] and f.get("name") == "NOTIFY_BROKER_ROLE_CHANGED"]
    for ctx in context:
        if ctx.get("tDown") is None:  # the recipe never took the master away (a controller kill, a net fault)
            continue
        t0 = ctx["tDown"]
        rel = [(s.t - spec.created_ms, s) for s in snaps]
        new = next(((t, s) for t, s in rel if t > t0 and s.leader is not None and s.leader.master_epoch is not None
                    and s.leader.master_epoch > (ctx["masterEpoch"] or 0) and s.master is not None), None)
        row = {"recipe": ctx["recipe"], "at": t0, "oldMaster": ctx["master"], "oldSss": ctx["sss"],
               "newMaster": None, "electedAfterMs": None, "electedSeenBy": None, "firstWriteAfterMs": None,
               "newMasterInSss": None}
        if new is not None:
            t_new, s = new
            row.update(newMaster=s.master, electedAfterMs=t_new - t0, electedSeenBy="admin snapshot",
                       newMasterInSss=s.master in ctx["sss"])
            note = next((f for f in notify if f["t"] > t0 and int(f["ext"].get("masterEpoch", 0) or 0)
                         > (ctx["masterEpoch"] or 0) and spec.node_of_addr(str(f["ext"].get("masterAddress", "")))
                         == s.master), None)
            if note is not None and note["t"] - t0 <= t_new - t0:
                row.update(electedAfterMs=note["t"] - t0, electedSeenBy="NOTIFY_BROKER_ROLE_CHANGED at the proxy")
            w = next((r for r in h.acked if r["t"] > t0 and r.get("broker") == s.master), None)
            if w is not None:
                row["firstWriteAfterMs"] = w["t"] - t0
        out.append(row)
    return out


def evaluate(spec: RealSpec, faults: list[dict[str, Any]], context: list[dict[str, Any]],
             notes: list[str], live: Snapshot | None = None, judge_live: bool = True,
             live_where: str = "the last snapshot") -> dict[str, Any]:
    """The verdict on a finished run. The progress invariants are judged on ``live`` (the snapshot the settle ended
    on, ``live_where`` says which: ``converge.py``), else on the last snapshot; not at all when ``judge_live`` is off
    (the run was still converging when the settle's cap came)."""
    v = Verdict(notes=list(notes))
    h = read_history(spec)
    snaps = read_snapshots(spec)
    final = snaps[-1] if snaps else None
    final_max = {b: (final.brokers[b].max_offset if final and b in final.brokers and final.brokers[b].ok else None)
                 for b in spec.brokers}
    files = read_files(spec, final_max)
    v.notes += files.errors
    settled = not any(n.startswith("not settled") for n in notes)
    final_master = final.master if final else None
    check_history(v, h, final_master, files)
    applied = check_controller(v, spec, files)
    check_snapshots(v, snaps)
    check_files(v, spec, files, final_max)
    check_end(v, spec, files, h, final, settled)
    if judge_live:
        check_live(v, live or final, h, faults, live_where if live is not None else "the last snapshot",
                   EpochRefusals(spec).read())
    else:
        v.notes.append("still converging: the progress invariants (LIVE-*) were not judged")
    if final_master is None:
        v.notes.append("no master at the end of the run")
    counts = {"sent": len(h.sends), "acked": len(h.acked),
              "errors": sum(1 for r in h.results if r["status"] == "ERROR"), "seen": len({s["key"] for s in h.seen}),
              "snapshots": len(snaps), "controllerEvents": len(applied)}
    statuses: dict[str, int] = defaultdict(int)
    for r in h.results:
        statuses[r["rocketmqStatus"] if r["status"] != "ERROR" else f"error: {str(r.get('error'))[:60]}"] += 1
    return {"valid": not v.violations and final_master is not None, "violations": v.violations,
            "checked": v.checked, "notes": v.notes, "counts": counts, "statuses": dict(statuses),
            "finalMaster": final_master, "settled": settled,
            "failovers": failovers(spec, faults, context, snaps, h, read_frames(spec)), "faults": faults,
            "controllerLog": applied, "history": h, "snapshots": snaps, "files": files}
