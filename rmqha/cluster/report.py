"""The HTML report of a real run (``report.html``), in the fuzz campaigns' style: the verdict, the failovers,
the violations, a timeline of roles, SyncStateSet and log ends drawn from the merged trace, the fault schedule
and each node's final state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..impl.sim.report import escape, page_head, table, timeline_data, timeline_svg
from .spec import ClusterSpec


def _ms(v: Any) -> str:
    return "-" if v is None else f"{v / 1000:.2f} s"


def render(spec: ClusterSpec, r: dict[str, Any]) -> str:
    ok = r["valid"]
    parts = [
        page_head("rmqha cluster test"),
        "<h1>rmqha cluster test: "
        f"<span class='{'ok' if ok else 'bad'}'>{'valid' if ok else 'INVALID'}</span></h1>",
        table(["profile", "switches", "faults", "duration s", "wall s", "sent", "acked", "seen", "final master"],
               [[r["profile"], ", ".join(r["bugs"]) or "none", ", ".join(r["recipes"]), r["duration"], r["wallSeconds"],
                 r["counts"].get("sent"), r["counts"].get("acked"), r["counts"].get("seen"), r["finalMaster"]]]),
        f"<p>conformance: {escape(r['conformance'])}</p>",
    ]
    if r["notes"]:
        parts.append("<ul>" + "".join(f"<li>{escape(n)}</li>" for n in r["notes"]) + "</ul>")
    parts.append("<h2>Violations</h2>")
    parts.append(table(["invariant", "message"], [[v["invariant"], v["message"]] for v in r["violations"]])
                 if r["violations"] else "<p class='ok'>none</p>")
    parts.append("<h2>Failovers</h2>")
    parts.append(table(
        ["fault", "old master", "SSS ids before", "new master", "in SSS", "elected after", "old back as",
         "consistent point", "truncated", "back in SSS after"],
        [[f["recipe"], f["oldMaster"], f["sss"], f"{f['newMaster']} (mE {f['newMasterEpoch']})" if f["newMaster"]
          else "none", f.get("newMasterInSss"), _ms(f["electedAfterMs"]), f.get("backRole"), f.get("consistentPoint"),
          f"{f['truncatedFrom']} → {f['truncatedTo']}" if f.get("truncatedFrom") is not None else "no",
          _ms(f.get("rejoinedSssAfterMs"))] for f in r["failovers"]]) if r["failovers"] else "<p>none</p>")
    trace = spec.dir / "trace.jsonl"
    if trace.exists():
        parts.append("<h2>Timeline</h2>")
        parts.append(timeline_svg(timeline_data(trace.read_text(encoding="utf-8"))))
    parts.append("<h2>Fault schedule</h2>")
    parts.append(table(["t", "action", "node / id", "links"],
                        [[_ms(f["t"]), f["do"], f.get("node") or f.get("id") or "", f.get("links", "")]
                         for f in r["faults"]]))
    parts.append("<h2>Final states</h2>")
    rows = []
    for n, st in sorted(r["final"].items()):
        st = st or {}
        rows.append([n, st.get("pid", "down"), st.get("role", "leader" if st.get("leader") else ""),
                     st.get("masterEpoch", ""), st.get("sss", st.get("sets", "")), st.get("max", ""),
                     st.get("confirm", "")])
    parts.append(table(["node", "pid", "role", "masterEpoch", "SSS", "log end", "confirmOffset"], rows))
    parts.append(f"<p>files: <code>{escape(spec.dir)}</code> (traces/, logs/, nodes/, history.jsonl, trace.jsonl)</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(spec: ClusterSpec, result: dict[str, Any]) -> str:
    path = Path(spec.dir) / "report.html"
    path.write_text(render(spec, result), encoding="utf-8")
    return str(path)
