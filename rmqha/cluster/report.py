"""The HTML report of a cluster test (``report.html``; real processes over TCP), in the fuzz campaigns' style:
the verdict, the failovers, the violations, a timeline of roles, SyncStateSet and log ends drawn from the merged
trace (with its legend), the fault schedule and each node's final state.

A node's state in words (``node_cells``) is shared with ``rmqha cluster status``: brokers by name (a SyncStateSet is
``{b1, b2}``, not broker ids), a controller's view of each broker group in the same columns, a missing value as a
dash, and a node without a process as ``down``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..impl.sim.report import (
    DASH,
    escape,
    members,
    offset,
    page_head,
    partition_label,
    seconds,
    table,
    timeline_data,
    timeline_svg,
)
from .spec import ClusterSpec

ROLES = {"MASTER": "master", "SLAVE": "slave"}
SSS_NOTE = ("SyncStateSet: a master's own, and the controller's for each broker group (with the master it names); a "
            "slave keeps none (—).")


@dataclass(frozen=True)
class NodeCells:
    """One node's state as table cells (every one a plain string)."""

    role: str
    ident: str
    epoch: str
    sss: str
    log_end: str
    confirm: str


def broker_names(states: dict[str, dict[str, Any] | None]) -> dict[int, str]:
    """Broker id -> broker node, from the brokers' states (each says its id)."""
    return {int(st["id"]): n for n, st in sorted(states.items()) if st and st.get("id") is not None}


def broker_name(i: int | None, names: dict[int, str]) -> str:
    """A broker id as its node's name (an id no broker claims: ``id 4``)."""
    return DASH if i is None else names.get(i, f"id {i}")


def sss_names(ids: list[int] | None, names: dict[int, str]) -> str:
    """A SyncStateSet of broker ids as broker names, ``{b1, b2}``."""
    return DASH if ids is None else members(sorted(broker_name(i, names) for i in ids))


def node_cells(spec: ClusterSpec, node: str, st: dict[str, Any] | None, names: dict[int, str]) -> NodeCells:
    """``node``'s state (its status reply, ``None`` when it gave none) in words."""
    if not st:
        return NodeCells(DASH, DASH, DASH, DASH, DASH, DASH)
    if node in spec.controllers or "sets" in st:
        sets: dict[str, dict[str, Any]] = st.get("sets") or {}
        epochs = ", ".join(str(s.get("masterEpoch", DASH)) for s in sets.values()) or DASH
        views = [f"{sss_names(s.get('sss'), names)}, master {broker_name(s.get('master'), names)}"
                 for s in sets.values()]
        sss = "; ".join(f"{g}: {v}" for g, v in zip(sets, views)) if len(sets) > 1 else (views[0] if views else DASH)
        return NodeCells("leader" if st.get("leader") else "follower", DASH, epochs, sss, DASH, DASH)
    if node in spec.brokers:
        role = ROLES.get(st.get("role") or "", st.get("role") or DASH)
        sss = sss_names(st.get("sss"), names) if role == "master" else DASH
        return NodeCells(role, str(st.get("id", DASH)), str(st.get("masterEpoch", DASH)), sss,
                         offset(st.get("max")), offset(st.get("confirm")))
    kind = "nameserver" if node == spec.nameserver else "client"
    return NodeCells(kind, DASH, DASH, DASH, DASH, DASH)


def process_cell(pid: int | None, state: str = "up") -> str:
    """The process column: ``pid 1234`` (with its state when not up), or ``down (no process)``."""
    if pid is None or state == "down":
        return "down (no process)"
    return f"pid {pid}" + ("" if state == "up" else f", {state}")


def truncation(f: dict[str, Any]) -> str:
    """What a failover truncated on the old master: ``6,634 → 5,000``, ``nothing (at 6,634)``, or a dash."""
    frm, to = f.get("truncatedFrom"), f.get("truncatedTo")
    if frm is None:
        return DASH
    return f"nothing (at {offset(frm)})" if frm == to else f"{offset(frm)} → {offset(to)}"


def _failovers(r: dict[str, Any], names: dict[int, str]) -> str:
    if not r["failovers"]:
        return "<p>none</p>"
    return table(
        ["fault", "at", "old master", "SyncStateSet before", "new master", "from the SyncStateSet", "elected after",
         "old master back as", "consistent point", "truncated", "back in the SyncStateSet after"],
        [[f["recipe"], seconds(f.get("faultAt")), f["oldMaster"], sss_names(f.get("sss"), names),
          f"{f['newMaster']} (mE {f['newMasterEpoch']})" if f["newMaster"] else "none", f.get("newMasterInSss"),
          seconds(f["electedAfterMs"]), ROLES.get(f.get("backRole") or "", f.get("backRole")),
          offset(f.get("consistentPoint")), truncation(f), seconds(f.get("rejoinedSssAfterMs"))]
         for f in r["failovers"]])


def fault_detail(f: dict[str, Any]) -> str:
    """What a scheduled fault did, in words: a partition's cut, or why the kit did it."""
    if f.get("links"):
        return partition_label(f["links"])
    return str(f.get("why") or DASH)


def _final_states(spec: ClusterSpec, final: dict[str, dict[str, Any] | None], names: dict[int, str]) -> str:
    rows = []
    for n, st in sorted(final.items()):
        c = node_cells(spec, n, st, names)
        rows.append([n, process_cell(st.get("pid") if st else None), c.role, c.epoch, c.sss, c.log_end, c.confirm])
    return (table(["node", "process", "role", "masterEpoch", "SyncStateSet", "log end", "confirmOffset"], rows)
            + f"<p class='note'>{escape(SSS_NOTE)}</p>")


def render(spec: ClusterSpec, r: dict[str, Any]) -> str:
    ok = r["valid"]
    names = broker_names(r["final"])
    parts = [
        page_head("rmqha cluster test"),
        "<h1>rmqha cluster test: "
        f"<span class='{'ok' if ok else 'bad'}'>{'valid' if ok else 'INVALID'}</span></h1>",
        table(["profile", "switches", "faults", "duration s", "wall s", "sent", "acked", "seen", "final master"],
               [[r["profile"], ", ".join(r["bugs"]) or "none", ", ".join(r["recipes"]) or "none", r["duration"],
                 r["wallSeconds"], r["counts"].get("sent"), r["counts"].get("acked"), r["counts"].get("seen"),
                 r["finalMaster"] or "none"]]),
        f"<p>conformance: {escape(r['conformance'])}</p>",
    ]
    if r["notes"]:
        parts.append("<ul>" + "".join(f"<li>{escape(n)}</li>" for n in r["notes"]) + "</ul>")
    parts.append("<h2>Violations</h2>")
    parts.append(table(["invariant", "message"], [[v["invariant"], v["message"]] for v in r["violations"]])
                 if r["violations"] else "<p class='ok'>none</p>")
    parts.append("<h2>Failovers</h2>")
    parts.append(_failovers(r, names))
    trace = spec.dir / "trace.jsonl"
    if trace.exists():
        parts.append("<h2>Timeline</h2>")
        parts.append(timeline_svg(timeline_data(trace.read_text(encoding="utf-8"))))
    parts.append("<h2>Fault schedule</h2>")
    parts.append(table(["t", "action", "node / id", "detail"],
                        [[seconds(f["t"]), f["do"], f.get("node") or f.get("id"), fault_detail(f)]
                         for f in r["faults"]]) if r["faults"] else "<p>none</p>")
    parts.append("<h2>Final states</h2>")
    parts.append(_final_states(spec, r["final"], names))
    parts.append(f"<p>files: <code>{escape(spec.dir)}</code> (traces/, logs/, nodes/, history.jsonl, trace.jsonl)</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(spec: ClusterSpec, result: dict[str, Any]) -> str:
    path = Path(spec.dir) / "report.html"
    path.write_text(render(spec, result), encoding="utf-8")
    return str(path)
