"""The verdict of a real run: the catalogue's client-visible invariants on the recorded history and final files.

Inputs: every node's trace (``traces/*.jsonl``: what the core observed, with the cluster clock), the nemesis's
``faults.jsonl``, the controller's final state and each broker's files after the run. Checked, with the
catalogue's ids (``impl/invariants/``):

* ``SYNC-NO-ACK-LOSS``: every message a producer got PUT_OK for is in the final master's log;
* ``SYNC-SEEN-NO-LOSS``: every message a consumer received is in the final master's log (nothing seen then
  truncated);
* ``QUEUE-OFFSET-GAPLESS``: in the final master's log, each queue's offsets run 0, 1, 2, ... in log order;
* ``CLI-QUEUE-POSITION-STABLE``: no queue position was read as two different messages;
* ``CTL-ONE-MASTER-PER-EPOCH``: no two brokers took the master role at the same masterEpoch;
* ``SYNC-VISIBLE-BOUND``: no broker dispatched past its confirmOffset;
* the progress invariants, on the nodes' final states once the run has settled (every fault undone, then the
  probe: the producer back for a few seconds): ``LIVE-MASTER`` (the controller's master holds the role at its
  masterEpoch, RUNNING, unfenced; no other master), ``LIVE-SSS-NO-DEAD`` (every SyncStateSet member answers),
  ``LIVE-SSS-CATCHUP`` (every other broker follows the master, holds its log to the master's confirmOffset, and is in
  both SyncStateSets), ``LIVE-HA-TRANSFER`` (each slave's HA client and the master's end of its connection in
  TRANSFER, to the master's HA address; not the loop window, the run being too short to show one), ``LIVE-PUTS``
  (the last probe send acknowledged), ``LIVE-TASKS`` (every periodic task of every node ran within its period and
  the longest run allowed). Their settle bounds are the simulator's; here the checks run at the end, whenever the
  settle ended.

The simulator checks the whole catalogue after every step; a real run has no global step, so what needs one
(the controller's and the brokers' states at one instant) is left to the layers that have it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..impl.invariants.progress import task_overdue
from ..impl.invariants.settle import periodic_allowance
from ..impl.sim.provenance import provenance
from ..impl.sim.report import members
from ..impl.sim.settle import timeouts
from ..impl.store.commitlog import CommitLog
from ..impl.trace import TraceRecorder
from .persist import BrokerFiles
from .spec import ClusterSpec

LIVE = ("LIVE-MASTER", "LIVE-SSS-NO-DEAD", "LIVE-SSS-CATCHUP", "LIVE-HA-TRANSFER", "LIVE-PUTS", "LIVE-TASKS")
CHECKED = ("SYNC-NO-ACK-LOSS", "SYNC-SEEN-NO-LOSS", "QUEUE-OFFSET-GAPLESS", "CLI-QUEUE-POSITION-STABLE",
           "CTL-ONE-MASTER-PER-EPOCH", "SYNC-VISIBLE-BOUND", "QUEUE-ACKED-READABLE", *LIVE)


@dataclass
class Verdict:
    violations: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    final_master: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.violations and self.final_master is not None

    def fail(self, inv: str, message: str, **data: Any) -> None:
        self.violations.append({"invariant": inv, "message": message, **data})


def read_events(spec: ClusterSpec) -> list[dict[str, Any]]:
    """Every node's observations, merged by time (node name breaks ties: the order within a node is kept)."""
    out: list[dict[str, Any]] = []
    for path in sorted((spec.dir / "traces").glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by SIGKILL
                ev["_i"] = i
                out.append(ev)
    out.sort(key=lambda e: (e["t"], e["n"], e["_i"]))
    for e in out:
        del e["_i"]
    return out


def broker_logs(spec: ClusterSpec) -> dict[str, CommitLog]:
    return {b: CommitLog(BrokerFiles(spec.node_dir(b)).load(), track_queues=True) for b in spec.brokers}


def check(spec: ClusterSpec, events: list[dict[str, Any]], final: dict[str, dict[str, Any] | None],
          settled: bool = False, probe_from: int | None = None) -> Verdict:
    """The verdict; the progress invariants too when the run ``settled`` (``probe_from``: the probe's start)."""
    v = Verdict()
    acked = [e["key"] for e in events if e["k"] == "client.send-result" and e["status"] == "PUT_OK"]
    seen = [e for e in events if e["k"] == "client.seen"]
    v.counts = {"sent": sum(1 for e in events if e["k"] == "client.send"), "acked": len(acked),
                "seen": len({e["key"] for e in seen}), "events": len(events)}
    # the final master: the controller's, confirmed by the broker's own status
    ctl = next((final.get(c) for c in spec.controllers if (final.get(c) or {}).get("leader")), None)
    info = ((ctl or {}).get("sets") or {}).get(spec.cfg.broker.broker_name) or {}
    for b in spec.brokers:
        st = final.get(b) or {}
        if info.get("master") is not None and st.get("id") == info["master"] and st.get("role") == "MASTER":
            v.final_master = b
    logs = broker_logs(spec)
    if v.final_master is None:
        said = "unreachable" if not info else f"master id {info.get('master')} at masterEpoch {info.get('masterEpoch')}"
        v.notes.append(f"no master at the end (controller: {said}): the loss checks need one")
    else:
        log = logs[v.final_master]
        keys = log.keys
        lost = [k for k in acked if k not in keys]
        if lost:
            v.fail("SYNC-NO-ACK-LOSS", f"{len(lost)} of {len(acked)} messages acknowledged PUT_OK are not in the "
                   f"final master {v.final_master}'s log (first: {', '.join(lost[:5])})", lost=lost)
        gone = sorted({e["key"] for e in seen if e["key"] not in keys})
        if gone:
            v.fail("SYNC-SEEN-NO-LOSS", f"{len(gone)} messages a consumer received are not in the final master "
                   f"{v.final_master}'s log (first: {', '.join(gone[:5])})", lost=gone)
        if log.queue_anomalies:
            pos, qid, qoff, expected = log.queue_anomalies[0]
            v.fail("QUEUE-OFFSET-GAPLESS", f"{v.final_master}: the message at {pos} has queue {qid} offset {qoff}, "
                   f"expected {expected} ({len(log.queue_anomalies)} such places)")
        v.counts["finalLogMessages"] = len(log.records)
        if spec.cfg.workload.topic_config:
            _check_queues_readable(v, events, set(acked))
    where: dict[tuple[int, int], str] = {}
    for e in seen:
        if "queueId" not in e:
            continue
        position = (e["queueId"], e["queueOffset"])
        had = where.setdefault(position, e["key"])
        if had != e["key"]:
            v.fail("CLI-QUEUE-POSITION-STABLE", f"queue {position[0]} offset {position[1]} was read as {had} and as "
                   f"{e['key']}", t=e["t"])
            break
    masters: dict[int, str] = {}
    for e in events:
        if e["k"] == "brk.role" and e["role"] == "MASTER":
            had = masters.setdefault(e["masterEpoch"], e["n"])
            if had != e["n"]:
                v.fail("CTL-ONE-MASTER-PER-EPOCH", f"{had} and {e['n']} both became master at masterEpoch "
                       f"{e['masterEpoch']}", t=e["t"])
        elif e["k"] == "store.dispatch" and e["upto"] > e["confirm"]:
            v.fail("SYNC-VISIBLE-BOUND", f"{e['n']} dispatched up to {e['upto']} with confirmOffset {e['confirm']}",
                   t=e["t"])
    if settled:
        check_progress(v, spec, events, final, probe_from)
    else:
        v.notes.append("not settled: the progress invariants (LIVE-*) were not checked")
    return v


def check_progress(v: Verdict, spec: ClusterSpec, events: list[dict[str, Any]],
                   final: dict[str, dict[str, Any] | None], probe_from: int | None) -> None:
    """The LIVE-* invariants on the final states of a settled run (``probe_from``: when the probe sends began, None:
    no probe ran)."""
    ctl = next((final.get(c) for c in spec.controllers if (final.get(c) or {}).get("leader")), None)
    name = spec.cfg.broker.broker_name
    info = ((ctl or {}).get("sets") or {}).get(name)
    brokers = {b: final.get(b) for b in spec.brokers}
    up = {b: st for b, st in brokers.items() if st}
    by_id = {st["id"]: b for b, st in up.items() if st.get("id") is not None}
    master = by_id.get(info["master"]) if info and info.get("master") is not None else None
    mst = up.get(master or "")
    def names(ids: list[int] | None) -> str:  # broker ids as the nodes that hold them: {b1, b2}
        return members(sorted(by_id.get(i, f"id {i}") for i in ids or []))

    if info is None or mst is None:
        said = "without a leader" if info is None else (
            f"names master id {info.get('master')} at masterEpoch {info.get('masterEpoch')}, SyncStateSet "
            f"{names(info.get('sss'))}, and no broker that answers holds that id")
        v.fail("LIVE-MASTER", f"at the end no master: the controller {said}")
        return
    if mst.get("role") != "MASTER" or mst.get("masterEpoch") != info["masterEpoch"] or mst.get("fenced") \
            or mst.get("state") != "RUNNING":
        v.fail("LIVE-MASTER", f"the controller names {master} master at masterEpoch {info['masterEpoch']}; {master} "
               f"is {mst.get('role')} at {mst.get('masterEpoch')}, {mst.get('state')}, fenced {mst.get('fenced')}")
    for b, st in up.items():
        if b != master and st.get("role") == "MASTER" and not st.get("fenced"):
            v.fail("LIVE-MASTER", f"{b} still acts as master (masterEpoch {st.get('masterEpoch')}) beside {master}")
    dead = [i for i in [*info["sss"], *mst.get("sss", [])] if i not in by_id]
    if dead:
        v.fail("LIVE-SSS-NO-DEAD", f"the SyncStateSets (controller {names(info['sss'])}, master "
               f"{names(mst.get('sss'))}) hold broker ids {', '.join(map(str, sorted(set(dead))))}, which no broker "
               "that answers holds")
    master_ha = f"{master}:10912"
    for b, st in sorted(up.items()):
        if b == master:
            continue
        if st.get("role") != "SLAVE" or st.get("master") != info["master"] \
                or st.get("masterEpoch") != info["masterEpoch"] or (st.get("max") or 0) < (mst.get("confirm") or 0) \
                or st.get("id") not in info["sss"] or st.get("id") not in mst.get("sss", []):
            v.fail("LIVE-SSS-CATCHUP", f"{b} ({st.get('role')} of {by_id.get(st.get('master'), st.get('master'))} "
                   f"at masterEpoch {st.get('masterEpoch')}, max {st.get('max')}) has not caught up with {master} "
                   f"(confirm {mst.get('confirm')}) into the SyncStateSets (controller {names(info['sss'])}, master "
                   f"{names(mst.get('sss'))})")
        client = st.get("haClient") or {}
        side = [c for c in mst.get("haConnections", []) if c["slave"] == st.get("id") and c["state"] == "TRANSFER"]
        if client.get("state") != "TRANSFER" or client.get("address") != master_ha or not side:
            conns = ", ".join(f"{by_id.get(c['slave'], c['slave'])} {c['state']}"
                              for c in mst.get("haConnections", [])) or "none"
            v.fail("LIVE-HA-TRANSFER", f"{b}'s HA client is {client.get('state')} to {client.get('address')}; "
                   f"{master}'s HA connections: {conns}")
    if probe_from is not None:
        probes = [e for e in events if e["k"] == "client.send-result" and e["t"] >= probe_from]
        if not probes or probes[-1]["status"] != "PUT_OK":
            said = ", ".join(f"{e['key']} {e['status']}" for e in probes[-5:]) or "none"
            v.fail("LIVE-PUTS", f"the probe sends after the settle (the last five): {said}")
    allowance = periodic_allowance(timeouts(spec.cfg))
    for node, state in sorted(final.items()):
        for task in (state or {}).get("tasks", []):
            if task["cancelled"] or state is None:
                continue
            due = task_overdue(task["created"], task["initial"], task["period"], task["lastStart"], state["t"],
                               allowance)
            if due is not None:
                v.fail("LIVE-TASKS", f"{node}'s periodic task {task['name']} has not run since {due} ms (last "
                       f"{task['lastStart']}; suppressed {task['suppressed']})")


def _check_queues_readable(v: Verdict, events: list[dict[str, Any]], acked: set[str]) -> None:
    """QUEUE-ACKED-READABLE, at the end: the final master's topic config (its last ``brk.topic``) covers every
    queue an acknowledged message was appended to (the simulator checks it after every step)."""
    queue: dict[str, int] = {}
    read: int | None = None
    for e in events:
        if e["k"] == "brk.append" and "queueId" in e:
            queue.setdefault(e["key"], e["queueId"])
        elif e["k"] == "brk.topic" and e["n"] == v.final_master:
            read = e["read"]
    top = max((queue.get(k, -1) for k in acked), default=-1)
    if read is not None and top >= read:
        v.fail("QUEUE-ACKED-READABLE", f"the final master {v.final_master} serves {read} read queues, but a message "
               f"was acknowledged PUT_OK in queue {top}")


def failovers(spec: ClusterSpec, events: list[dict[str, Any]], context: list[dict[str, Any]],
              faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each fault on a master: who took over, when, whether it was in the SyncStateSet, and how the old
    master came back (its handshake's consistent point, any truncation, and its return to the SyncStateSet).

    Each recipe owns the window from its start to the next recipe's: its fault is the action it recorded as taking
    the master away (``faultAt``, ``nemesis.py``; a context from before it: the first kill or pause of the old
    master in the window, else its first cut), the new master the first broker to become master at a higher
    masterEpoch in the window, the way back the old master's restart or resume in the window, else the heal."""
    out = []
    for i, ctx in enumerate(context):
        t0 = ctx["t"]
        old = ctx["master"]
        end = context[i + 1]["t"] if i + 1 < len(context) else float("inf")
        window = [f for f in faults if t0 <= f["t"] < end]
        t_fault = ctx.get("faultAt")
        if t_fault is None:
            crash = next((f for f in window if f["do"] in ("crash", "pause") and f.get("node") == old), None) or \
                next((f for f in window if f["do"] == "partition"), None)
            t_fault = crash["t"] if crash else t0
        new = next((e for e in events if t_fault <= e["t"] < end and e["k"] == "brk.role" and e["role"] == "MASTER"
                    and e["masterEpoch"] > ctx["masterEpoch"]), None)
        sss = ctx.get("sssAtCrash") or ctx["sss"]
        row: dict[str, Any] = {"recipe": ctx["recipe"], "oldMaster": old, "sss": sss, "faultAt": t_fault,
                               "newMaster": new["n"] if new else None,
                               "electedAfterMs": new["t"] - t_fault if new else None,
                               "newMasterEpoch": new["masterEpoch"] if new else None}
        if new is not None:
            new_id = next((e["brokerId"] for e in reversed(events) if e["k"] == "brk.identity" and e["n"] == new["n"]
                           and e["t"] <= new["t"]), None)
            row["newMasterInSss"] = new_id in sss if new_id is not None else None
        later = [f for f in window if f["t"] >= t_fault]
        restart = next((f for f in later if f["do"] in ("restart", "resume") and f.get("node") == old), None) or \
            next((f for f in later if f["do"] == "heal"), None)
        if restart is not None:
            after = [e for e in events if e["t"] >= restart["t"] and e["n"] == old]
            hs = next((e for e in after if e["k"] == "ha.handshake-done"), None)
            tr = next((e for e in after if e["k"] == "ha.truncate"), None)
            role = next((e for e in after if e["k"] == "brk.role"), None)
            row.update(backAt=restart["t"], backRole=role["role"] if role else None,
                       consistentPoint=hs["point"] if hs else None, truncatedFrom=tr["before"] if tr else None,
                       truncatedTo=tr["point"] if tr else None)
            old_id = ctx["id"]
            rejoin = next((e for e in events if e["t"] >= restart["t"] and e["k"] == "brk.sss"
                           and old_id in e["syncStateSet"] and e["n"] != old), None)
            row["rejoinedSssAfterMs"] = rejoin["t"] - restart["t"] if rejoin else None
        out.append(row)
    return out


def merged_trace(spec: ClusterSpec, events: list[dict[str, Any]], faults: list[dict[str, Any]],
                 verdict: Verdict) -> str:
    """The run in the kit's trace shape (``docs/trace-format.md``): fault actions as ``act`` lines, each node's
    observations as ``real`` lines. It is a record, not a replayable run: its header says ``"mode": "real"``."""
    rec = TraceRecorder({**provenance(), "seed": spec.seed, "maxSteps": 0, "maxTime": None, "bugs": spec.bugs,
                         "profile": "cluster", "config": spec.config, "faults": {"mode": "real", "events": faults}})
    merged: list[tuple[int, int, dict[str, Any]]] = [(f["t"], 0, {"ev": "act", "act": f}) for f in faults] + \
             [(e["t"], 1, {"ev": "real", "node": e["n"], "obs": [_obs(e)]}) for e in events]
    merged.sort(key=lambda x: (x[0], x[1]))
    for i, (t, _, line) in enumerate(merged, 1):
        obs = line.pop("obs", [])
        if line["ev"] == "act" and line["act"]["do"] == "crash":
            obs = [{"k": "sim.crash", "node": line["act"]["node"], "powerLoss": False, "lostBytes": 0}]
        rec.step(i, t, line, obs)
    first = verdict.violations[0] if verdict.violations else None
    rec.footer = {"end": True, "steps": len(merged), "t": merged[-1][0] if merged else 0,
                  "violation": None if first is None else {"invariant": first["invariant"], "step": len(merged),
                                                           "t": merged[-1][0] if merged else 0,
                                                           "message": first["message"], "state": {}},
                  "hash": rec.digest()}
    return rec.text() + json.dumps(rec.footer, sort_keys=True, separators=(",", ":")) + "\n"


def _obs(e: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in e.items() if k not in ("t", "inc")}


def write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=1, sort_keys=True, default=str), encoding="utf-8")
