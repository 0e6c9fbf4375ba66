"""The outputs of a real run: ``result.json``, ``history.jsonl``, ``controller-log.jsonl``, ``trace.jsonl`` and
``report.html`` (the verdict, what each invariant was checked on, the failovers, a timeline of roles,
SyncStateSet and log ends drawn from the trace with the kit's other reports' timeline, the schedule, the final
states).

The trace is the run in the kit's trace shape (``docs/trace-format.md``): a header whose ``faults`` say
``"mode": "real"`` (a record, not a replayable run), then one line per thing seen, merged by time (ms since the
run was created): the fault actions as ``act`` lines, and ``real`` lines whose observations are the client
history (``client.send``, ``client.send-result``, ``client.seen``), a crash (``sim.crash``: the kit's kind for a
process that died), and what the admin API showed when it changed, at the time its answer came: ``ctl.state`` (the
leading controller's view of the set: master, masterEpoch, syncStateSetEpoch, SyncStateSet as node names; also each
role notification the controller sent, as the proxy passed it on), ``brk.state`` (a broker's own role from its
HA status, its epoch entries and commit-log end) and, with the kit's agent, ``agent.event`` (each line the agent wrote
from inside a JVM: an armed point's hit and its action, a fix rule's application; a crash at a point also a
``sim.crash`` at the hit's time).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..impl.observations import AgentEvent, BrkState, CtlState, RealObservation
from ..impl.sim.provenance import provenance
from ..impl.sim.report import (
    DASH,
    escape,
    members,
    page_head,
    partition_label,
    seconds,
    table,
    timeline_data,
    timeline_svg,
)
from ..impl.trace import TraceRecorder
from .agent import read_events
from .check import Files, History, read_frames
from .observe import Snapshot
from .spec import RealSpec


def _ctl_view(lead: Any, node: str, master: str | None, master_epoch: int | None, sss_epoch: int | None,
              sss: list[str]) -> CtlState:
    return {"k": "ctl.state", "n": node, "leader": lead, "master": master, "masterEpoch": master_epoch,
            "syncStateSetEpoch": sss_epoch, "sss": sss}


def state_events(spec: RealSpec, snaps: list[Snapshot],
                 frames: list[dict[str, Any]] | None = None) -> list[tuple[int, RealObservation]]:
    """``ctl.state`` and ``brk.state`` observations (``impl/observations.py``), each when what it says was seen, with
    its time (ms since the run was created), in time order:

    * the leading controller's view from the admin API, at the time its answer came, when it changed;
    * the controller's ``NOTIFY_BROKER_ROLE_CHANGED`` as the proxy passed it on (``frames``, ``check.read_frames``:
      the new master, its epochs and SyncStateSet, to the ms), when it changed what the last view said;
    * each broker's own view from the admin API (its HA status's role, its epoch cache, its commit-log end, its HA
      connections) at the time its answers came, when it changed. A killed broker answers nothing after its kill,
      so no view of it comes after its ``sim.crash``; a round of the admin API's calls may take seconds when a
      call waits on a dead node, which is why the time is each answer's, not the round's."""
    names: dict[int, str] = {}
    for s in snaps:
        if s.leader is not None:
            names.update(s.leader.ids)
    timed: list[tuple[int, int, RealObservation]] = []
    for s in snaps:
        lead = s.leader
        if lead is not None:
            t = (lead.t if lead.t is not None else s.t0) - spec.created_ms
            timed.append((t, 0, _ctl_view(lead.node, lead.node, lead.master, lead.master_epoch, lead.sss_epoch,
                                          [lead.ids.get(i, str(i)) for i in lead.sss])))
        for b, bv in sorted(s.brokers.items()):
            if not bv.ok:
                continue
            t = (bv.t if bv.t is not None else s.t0) - spec.created_ms
            master = bv.role == "MASTER"
            bview: BrkState = {
                "k": "brk.state", "n": b, "role": "MASTER" if master else "SLAVE",
                "masterEpoch": bv.epochs[-1][0] if bv.epochs else 0, "maxOffset": bv.max_offset,
                "epochs": [[e, st] for e, st, _ in bv.epochs],
                "haSlaves": sorted([c.get("addr"), c.get("slaveAckOffset"), c.get("inSync")]
                                   for c in bv.ha_connections),
                "haMaster": None if master else (bv.ha_client or {}).get("masterAddr")}
            timed.append((t, 1, bview))
    for f in frames or ():
        if f.get("response") or f.get("name") != "NOTIFY_BROKER_ROLE_CHANGED":
            continue
        ext, body = f.get("ext") or {}, f.get("body") or {}
        try:
            me, se = int(ext["masterEpoch"]), int(ext["syncStateSetEpoch"])
        except (KeyError, TypeError, ValueError):
            continue
        ids = body.get("syncStateSet") if isinstance(body, dict) else None
        sss = [names.get(int(i), str(i)) for i in ids] if isinstance(ids, list) else []
        src = str(f.get("from") or "")
        timed.append((int(f["t"]), 0, _ctl_view(src, src, spec.node_of_addr(str(ext.get("masterAddress", ""))),
                                                me, se, sss)))
    timed.sort(key=lambda x: (x[0], x[1]))
    out: list[tuple[int, RealObservation]] = []
    last_ctl: dict[str, Any] | None = None
    last_brk: dict[str, dict[str, Any]] = {}
    for t, _, o in timed:
        key = {k: v for k, v in o.items() if k not in ("n", "leader")} if o["k"] == "ctl.state" else dict(o)
        if o["k"] == "ctl.state":
            if key == last_ctl:
                continue
            last_ctl = key
        else:
            if last_brk.get(o["n"]) == key:
                continue
            last_brk[o["n"]] = key
        out.append((t, o))
    return out


def agent_events(spec: RealSpec) -> list[tuple[int, list[dict[str, Any]]]]:
    """The agent's lines as observations, each with its time (ms since the run was created)."""
    out: list[tuple[int, list[dict[str, Any]]]] = []
    for e in read_events(spec.agent_events):
        rest = {k: v for k, v in e.items() if k not in ("t", "node", "ev", "point", "id", "action")}
        o: AgentEvent = {"k": "agent.event", "n": str(e.get("node")), "ev": str(e.get("ev")),
                         "point": e.get("point"), "id": e.get("id"), "action": e.get("action"), "data": rest}
        obs: list[dict[str, Any]] = [dict(o)]
        if e.get("ev") == "hit" and e.get("fired") and e.get("action") == "crash":
            obs.append({"k": "sim.crash", "node": str(e.get("node")), "powerLoss": False, "lostBytes": 0,
                        "at": str(e.get("point"))})
        out.append((int(e.get("t", 0)) - spec.created_ms, obs))
    return out


def merged_trace(spec: RealSpec, result: dict[str, Any], h: History, snaps: list[Snapshot],
                 frames: list[dict[str, Any]] | None = None) -> str:
    rec = TraceRecorder({**provenance(), "seed": 0, "maxSteps": 0, "maxTime": None, "bugs": [], "profile": spec.profile,
                         "config": spec.config, "faults": {"mode": "real", "events": result["faults"],
                                                           "rocketmq": spec.version}})
    merged: list[tuple[int, int, dict[str, Any], list[dict[str, Any]]]] = []
    for f in result["faults"]:
        obs = [{"k": "sim.crash", "node": f["node"], "powerLoss": False, "lostBytes": 0}] if f["do"] == "crash" else []
        merged.append((int(f["t"]), 0, {"ev": "act", "act": f}, obs))
    for e in [*h.sends, *h.results, *h.seen]:
        o = {k: v for k, v in e.items() if k != "t"}
        merged.append((int(e["t"]), 1, {"ev": "real", "node": e["n"]}, [o]))
    for t, s in state_events(spec, snaps, frames):
        merged.append((t, 1, {"ev": "real", "node": s["n"]}, [dict(s)]))
    for t, obs in agent_events(spec):
        merged.append((t, 1, {"ev": "real", "node": obs[0]["n"]}, obs))
    merged.sort(key=lambda x: (x[0], x[1]))
    for i, (t, _, line, obs) in enumerate(merged, 1):
        rec.step(i, t, line, obs)
    first = result["violations"][0] if result["violations"] else None
    end_t = merged[-1][0] if merged else 0
    rec.footer = {"end": True, "steps": len(merged), "t": end_t,
                  "violation": None if first is None else {"invariant": first["invariant"], "step": len(merged),
                                                           "t": end_t, "message": first["message"], "state": {}},
                  "hash": rec.digest()}
    return rec.text() + json.dumps(rec.footer, sort_keys=True, separators=(",", ":")) + "\n"


def fault_detail(f: dict[str, Any]) -> str:
    """What a scheduled fault did, in words: why the kit did it, a partition's cut, or the netem settings."""
    if f.get("why"):
        return str(f["why"])
    if f.get("links"):
        return partition_label(f["links"])
    return " ".join(f.get("netem") or []) or DASH


def render(spec: RealSpec, r: dict[str, Any], trace_text: str) -> str:
    ok = r["valid"]
    c = r["counts"]
    parts = [
        page_head("rmqha real test", css="body{max-width:1400px}"),
        f"<h1>rmqha real test: <span class='{'ok' if ok else 'bad'}'>{'valid' if ok else 'INVALID'}</span></h1>",
        f"<p>Apache RocketMQ {escape(spec.version)} (Maven Central), {len(spec.controllers)} "
        f"{escape(spec.controller_type)} controller(s), {len(spec.brokers)} brokers, "
        f"profile {escape(r['profile'])}.</p>",
        table(["faults", "duration s", "wall s", "sent", "acknowledged", "errors", "read", "final master"],
               [[", ".join(r["recipes"]) or "none", r["duration"], r["wallSeconds"], c["sent"], c["acked"],
                 c["errors"], c["seen"], r["finalMaster"] or "none"]]),
    ]
    if r["notes"]:
        parts.append("<ul>" + "".join(f"<li>{escape(n)}</li>" for n in r["notes"]) + "</ul>")
    parts.append("<h2>Violations</h2>")
    parts.append(table(["invariant", "message"], [[v["invariant"], v["message"]] for v in r["violations"]])
                 if r["violations"] else "<p class='ok'>none</p>")
    parts.append("<h2>Failovers</h2>")
    parts.append(table(["fault", "at", "old master", "SyncStateSet before", "new master", "from the SyncStateSet",
                         "elected after", "first write after"],
                        [[f["recipe"], seconds(f["at"]), f["oldMaster"], members(sorted(f["oldSss"])),
                          f["newMaster"] or "none", f["newMasterInSss"], seconds(f["electedAfterMs"]),
                          seconds(f["firstWriteAfterMs"])] for f in r["failovers"]])
                 if r["failovers"] else "<p>none</p>")
    parts.append("<h2>Timeline</h2>")
    parts.append(timeline_svg(timeline_data(trace_text)))
    parts.append("<h2>What was checked</h2>")
    parts.append(table(["invariant", "checked on"], [[k, w] for k, w in sorted(r["checked"].items())]))
    parts.append("<h2>Send statuses</h2>")
    parts.append(table(["status", "count"], [[k, n] for k, n in sorted(r["statuses"].items())]))
    parts.append("<h2>Fault schedule</h2>")
    parts.append(table(["t", "action", "node / id", "detail"],
                        [[seconds(f["t"]), f["do"], f.get("node") or f.get("id"), fault_detail(f)]
                         for f in r["faults"]]) if r["faults"] else "<p>none</p>")
    parts.append(f"<p>files: <code>{escape(spec.dir)}</code> (nodes/, logs/, clients/, events/, history.jsonl, "
                 "trace.jsonl, controller-log.jsonl, result.json)</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_outputs(spec: RealSpec, result: dict[str, Any]) -> str:
    """Write every output; returns the report's path. ``result`` loses its in-memory parts on the way."""
    h: History = result.pop("history")
    snaps: list[Snapshot] = result.pop("snapshots")
    files: Files = result.pop("files")
    applied = result.pop("controllerLog")
    d = Path(spec.dir)
    with open(d / "history.jsonl", "w", encoding="utf-8") as f:
        for e in sorted([*h.sends, *h.results, *h.seen], key=lambda e: e["t"]):
            f.write(json.dumps(e, sort_keys=True) + "\n")
    with open(d / "controller-log.jsonl", "w", encoding="utf-8") as f:
        for e in applied:
            f.write(json.dumps(e, sort_keys=True) + "\n")
    result["controllerEvents"] = len(applied)
    result["files"] = {"commitLogEnds": {b: lg.end_offset for b, lg in files.logs.items()},
                       "epochs": {b: (ef.pairs() if ef else []) for b, ef in files.epochs.items()},
                       "stale": files.stale, "checkpointConfirmOffsets": files.confirm}
    for v in result["violations"]:  # the full lists are in the history; the result keeps a sample
        if len(v.get("lost", ())) > 50:
            v["lost"] = v["lost"][:50]
    trace_text = merged_trace(spec, result, h, snaps, read_frames(spec))
    (d / "trace.jsonl").write_text(trace_text, encoding="utf-8")
    (d / "result.json").write_text(json.dumps(result, indent=1, sort_keys=True, default=str), encoding="utf-8")
    path = d / "report.html"
    path.write_text(render(spec, result, trace_text), encoding="utf-8")
    return str(path)
