"""A run's timeline as an inline SVG, drawn from its trace's observations (the fuzz report, the cluster test's report
and the real RocketMQ run's report show it; a real run's trace carries the admin API's views, ``ctl.state`` and
``brk.state``, instead of the nodes' own observations).

One lane per broker: its role over simulated time (master, slave, no role yet, down) labelled with the masterEpoch it
took, a bar under it while the controller holds it in the SyncStateSet; a lane of faults (partitions as spans from
cut to heal, other actions as ticks); a chart of each broker's log end offset (appends, transfers, truncations); and
the violation as a red line.
"""

from __future__ import annotations

from typing import Any

from ...trace import parse
from .html import escape

COLORS = {"master": "#2e7d32", "slave": "#90caf9", "down": "#b0b0b0", "none": "#eeeeee"}
LINE = ["#1565c0", "#c62828", "#6a1b9a", "#ef6c00", "#00838f", "#558b2f", "#4e342e", "#ad1457", "#283593"]
W, LEFT, RIGHT = 1100, 90, 20


def timeline_data(text: str) -> dict[str, Any]:
    """Roles, epochs, SSS membership, log ends and faults over time, from a trace's observations."""
    header, lines, footer = parse(text)
    n = int(header["config"]["cluster"]["brokers"])
    brokers = [f"b{i + 1}" for i in range(n)]
    role = {b: ("none", 0) for b in brokers}
    segs: dict[str, list[list[Any]]] = {b: [[0, None, "none", 0]] for b in brokers}
    ids: dict[int, str] = {}
    sss: set[str] = set()
    sss_segs: dict[str, list[list[Any]]] = {b: [] for b in brokers}
    ends: dict[str, list[tuple[int, int]]] = {b: [(0, 0)] for b in brokers}
    faults: list[dict[str, Any]] = []
    open_parts: dict[str, dict[str, Any]] = {}
    last_t = 0

    def set_role(b: str, t: int, r: str, epoch: int) -> None:
        if b not in segs or role[b] == (r, epoch):
            return
        segs[b][-1][1] = t
        segs[b].append([t, None, r, epoch])
        role[b] = (r, epoch)

    def set_end(b: str, t: int, v: int) -> None:
        if b in ends and ends[b][-1][1] != v:
            ends[b].append((t, v))

    def set_sss(t: int, members: set[str]) -> None:
        nonlocal sss
        for b in brokers:
            if b in members and b not in sss:
                sss_segs[b].append([t, None])
            elif b not in members and b in sss:
                sss_segs[b][-1][1] = t
        sss = set(members)

    for line in lines:
        t = line["t"]
        last_t = t
        act = line.get("act")
        if act is not None:
            do = act["do"]
            if do == "partition":
                open_parts[act["id"]] = {"t": t, "end": None, "do": "partition", "links": act["links"]}
                faults.append(open_parts[act["id"]])
            elif do == "heal" and act["id"] in open_parts:
                open_parts.pop(act["id"])["end"] = t
            else:
                faults.append({"t": t, "do": do, "node": act.get("node"), "extra": act})
                if do == "restart" and act.get("node") in role:
                    set_role(act["node"], t, "none", 0)
        for o in line.get("obs", ()):
            k, node = o["k"], o.get("n")
            if k == "brk.role":
                set_role(node, t, "master" if o["role"] == "MASTER" else "slave", o["masterEpoch"])
            elif k == "sim.crash" and o["node"] in role:
                set_role(o["node"], t, "down", 0)
            elif k == "brk.append":
                set_end(node, t, o["offset"] + o["size"])
            elif k == "ha.slave-append":
                set_end(node, t, o["offset"] + o["size"])
            elif k == "ha.truncate":
                set_end(node, t, o["point"])
            elif k == "store.truncate-invalid":
                set_end(node, t, o["at"])
            elif k == "ctl.state":  # a real run: the admin API's view of the set (rmqha/real/report.py)
                set_sss(t, set(o["sss"]))
            elif k == "brk.state":
                set_role(node, t, "master" if o["role"] == "MASTER" else "slave", o["masterEpoch"])
                if o.get("maxOffset") is not None:
                    set_end(node, t, o["maxOffset"])
            elif k == "ctl.apply":
                ev, after = o["event"], o.get("after") or {}
                if ev["type"] == "ApplyBrokerId":
                    ids[int(ev["newBrokerId"])] = ev["brokerAddress"].split(":")[0]
                if "syncStateSet" in after:
                    set_sss(t, {ids[i] for i in after.get("syncStateSet") or [] if i in ids})
    end_t = max(footer.get("t") or last_t, 1)
    end_t = int(end_t * 1.02) + 1  # a little room right of the violation
    for b in brokers:
        segs[b][-1][1] = end_t
        if sss_segs[b] and sss_segs[b][-1][1] is None:
            sss_segs[b][-1][1] = end_t
    for f in faults:
        if f["do"] == "partition" and f["end"] is None:
            f["end"] = end_t
    return {"brokers": brokers, "roles": segs, "sss": sss_segs, "ends": ends, "faults": faults, "end": end_t,
            "violation": footer.get("violation")}


def _part_label(links: list[list[str]]) -> str:
    common = set(links[0]).intersection(*map(set, links[1:])) if links else set()
    if len(common) == 1:
        (x,) = common
        others = sorted({n for link in links for n in link} - {x})
        one_way = len(links) == len(others) and (all(a == x for a, _ in links) or all(b == x for _, b in links))
        return f"{x} cut from {'/'.join(others)}" + (" (one way)" if one_way else "")
    return "cut " + ", ".join(sorted({f"{a}>{b}" for a, b in links}))[:60]


def _rows(spans: list[dict[str, Any]]) -> list[int]:
    """A row for each span so that spans in one row do not overlap."""
    ends: list[int] = []
    out = []
    for f in spans:
        row = next((i for i, e in enumerate(ends) if e <= f["t"]), len(ends))
        if row == len(ends):
            ends.append(0)
        ends[row] = f["end"]
        out.append(row)
    return out


def timeline_svg(d: dict[str, Any]) -> str:
    brokers = d["brokers"]
    end: int = d["end"]
    lane, gap = 26, 10
    top = 24
    parts = [f for f in d["faults"] if f["do"] == "partition"]
    rows = _rows(parts)
    n_rows = max(rows, default=-1) + 1
    faults_y = top + len(brokers) * (lane + gap)
    ticks_y = faults_y + 14 * n_rows + 4
    chart_y = ticks_y + 56
    chart_h = 150
    height = chart_y + chart_h + 36

    def x(t: float) -> float:
        return LEFT + (W - LEFT - RIGHT) * t / end

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="sans-serif" '
           f'font-size="11">']
    for k in range(6):  # time axis
        t = end * k / 5
        out.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{chart_y + chart_h}" stroke="#ddd"/>')
        out.append(f'<text x="{x(t):.1f}" y="{top - 9}" text-anchor="middle">{t / 1000:.1f} s</text>')
    for i, b in enumerate(brokers):
        y = top + i * (lane + gap)
        out.append(f'<text x="{LEFT - 8}" y="{y + lane / 2 + 4}" text-anchor="end" font-weight="bold">'
                   f'{escape(b)}</text>')
        for t0, t1, r, epoch in d["roles"][b]:
            w = max(0.5, x(t1) - x(t0))
            out.append(f'<rect x="{x(t0):.1f}" y="{y}" width="{w:.1f}" height="{lane - 6}" fill="{COLORS[r]}">'
                       f'<title>{escape(b)} {r}{f" mE {epoch}" if epoch else ""} from {t0 / 1000:.3f}s</title></rect>')
            if r in ("master", "slave") and w > 34:
                color = "#fff" if r == "master" else "#123"
                out.append(f'<text x="{x(t0) + 3:.1f}" y="{y + 13}" fill="{color}">{r} mE{epoch}</text>')
        for t0, t1 in d["sss"][b]:
            out.append(f'<rect x="{x(t0):.1f}" y="{y + lane - 5}" width="{max(0.5, x(t1) - x(t0)):.1f}" height="4" '
                       f'fill="#ff8f00"><title>in the controller SSS</title></rect>')
    out.append(f'<text x="{LEFT - 8}" y="{faults_y + 10}" text-anchor="end" font-weight="bold">faults</text>')
    for f, row in zip(parts, rows):
        y = faults_y + 14 * row
        label = _part_label(f["links"])
        w = max(1.0, x(f["end"]) - x(f["t"]))
        out.append(f'<rect x="{x(f["t"]):.1f}" y="{y}" width="{w:.1f}" height="12" fill="#e57373" opacity="0.55">'
                   f'<title>{escape(label)} {f["t"] / 1000:.3f}s-{f["end"] / 1000:.3f}s</title></rect>')
        if w > 60:
            out.append(f'<text x="{x(f["t"]) + 2:.1f}" y="{y + 10}" font-size="9">{escape(label)}</text>')
    label_ends = [0.0, 0.0, 0.0]  # three rows of tick labels; a label that fits in none is left to the tooltip
    for f in d["faults"]:
        if f["do"] != "partition":
            label = f["do"] + (f" {f['node']}" if f.get("node") else "")
            out.append(f'<line x1="{x(f["t"]):.1f}" y1="{ticks_y}" x2="{x(f["t"]):.1f}" y2="{ticks_y + 18}" '
                       f'stroke="#6d4c41" stroke-width="2"><title>{escape(label)} at {f["t"] / 1000:.3f}s</title>'
                       '</line>')
            slot = next((r for r, label_end in enumerate(label_ends) if label_end < x(f["t"])), None)
            if slot is not None:
                label_ends[slot] = x(f["t"]) + 5 * len(label) + 4
                anchor = "end" if x(f["t"]) + 5 * len(label) > W else "start"
                out.append(f'<text x="{x(f["t"]) + 2:.1f}" y="{ticks_y + 26 + 10 * slot}" font-size="9" '
                           f'text-anchor="{anchor}">{escape(label)}</text>')
    top_end = max([v for b in brokers for _, v in d["ends"][b]] + [1])
    out.append(f'<text x="{LEFT - 8}" y="{chart_y + 10}" text-anchor="end">log end</text>')
    out.append(f'<text x="{LEFT - 8}" y="{chart_y + 22}" text-anchor="end">{top_end:,} B</text>')
    out.append(f'<rect x="{LEFT}" y="{chart_y}" width="{W - LEFT - RIGHT}" height="{chart_h}" fill="none" '
               f'stroke="#999"/>')
    for i, b in enumerate(brokers):
        pts = []
        prev = None
        for t, v in d["ends"][b]:
            yv = chart_y + chart_h - chart_h * v / top_end
            if prev is not None:
                pts.append(f"{x(t):.1f},{prev:.1f}")
            pts.append(f"{x(t):.1f},{yv:.1f}")
            prev = yv
        pts.append(f"{x(end):.1f},{prev:.1f}")
        color = LINE[i % len(LINE)]
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        out.append(f'<text x="{LEFT + 6 + 40 * i}" y="{chart_y + chart_h + 14}" fill="{color}">{escape(b)}</text>')
    v = d["violation"]
    if v:
        out.append(f'<line x1="{x(v["t"]):.1f}" y1="{top - 6}" x2="{x(v["t"]):.1f}" y2="{chart_y + chart_h}" '
                   f'stroke="#d50000" stroke-width="2"><title>{escape(v["invariant"])}: {escape(v["message"])}'
                   '</title></line>')
        out.append(f'<text x="{x(v["t"]):.1f}" y="{chart_y + chart_h + 28}" fill="#d50000" text-anchor="end">'
                   f'{escape(v["invariant"])} at step {v["step"]}</text>')
    out.append("</svg>")
    return "".join(out)
