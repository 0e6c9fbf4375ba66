"""A run's timeline as an inline SVG, drawn from its trace's observations (the fuzz report, the cluster test's report
and the real RocketMQ run's report show it; a real run's trace carries the admin API's views, ``ctl.state`` and
``brk.state``, instead of the nodes' own observations).

A time axis in seconds (top and bottom); one lane per broker: its role over time (master, slave, no role yet, down)
labelled with the masterEpoch it took where the label fits, a bar under it while the controller holds it in the
SyncStateSet; the faults (partitions as spans from cut to heal, other actions as ticks; a label that does not fit in
its span goes with the ticks' labels into lanes, none overlapping another and none past the edge, the full text in
its tooltip); a chart of each broker's log end offset (appends, transfers, truncations) with an offset axis in bytes;
the violation as a red line; and a legend of every colour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...trace import parse
from .draw import (
    AXIS,
    FONT,
    GRID,
    INK,
    Key,
    abbreviate,
    clamp_left,
    fmt_bytes,
    fmt_seconds,
    lanes,
    legend,
    nice_step,
    text,
    text_width,
    tick_values,
)
from .fmt import partition_label
from .html import escape

COLORS = {"master": "#2e7d32", "slave": "#90caf9", "down": "#b0b0b0", "none": "#eeeeee"}
# a broker's log end line; no red (the violation's) and no orange (the SyncStateSet's)
LINE = ["#1565c0", "#6a1b9a", "#00838f", "#ad1457", "#558b2f", "#283593", "#4e342e", "#00695c", "#5d4037"]
W, LEFT, RIGHT = 1100, 90, 24


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
    crashed: set[str] = set()  # killed and not restarted since: nothing it says can be newer than its kill
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
                    crashed.discard(act["node"])
                    set_role(act["node"], t, "none", 0)
        for o in line.get("obs", ()):
            k, node = o["k"], o.get("n")
            if k == "brk.role":
                set_role(node, t, "master" if o["role"] == "MASTER" else "slave", o["masterEpoch"])
            elif k == "sim.crash" and o["node"] in role:
                crashed.add(o["node"])
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
            elif k == "brk.state" and node not in crashed:  # a real run's broker, as its admin API answered
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


# ---------------------------------------------------------------------------------------------- drawing

FAULT_FONT = 10
SSS_COLOR, PART_COLOR, TICK_COLOR, VIOLATION_COLOR = "#ff8f00", "#e57373", "#6d4c41", "#d50000"
LANE, LANE_GAP, SPAN_ROW, LABEL_ROW, CHART_H = 26, 10, 14, 13, 150
ROLE_KEYS = [Key("box", COLORS["master"], "master (mE: its masterEpoch)"), Key("box", COLORS["slave"], "slave"),
             Key("box", COLORS["none"], "no role yet"), Key("box", COLORS["down"], "down (crashed or stopped)"),
             Key("bar", SSS_COLOR, "in the controller's SyncStateSet")]
FAULT_WORDS = {"net": "lossy network", "slow-commit": "slow commits", "break-ha": "HA cut", "lose-file": "file lost",
               "admin-elect": "admin elect", "expand-queues": "more queues"}


@dataclass(frozen=True)
class Axis:
    """Simulated time (ms) to x, and the time ticks."""

    end: float
    step: float  # ms between ticks

    def x(self, t: float) -> float:
        return LEFT + (W - LEFT - RIGHT) * t / self.end

    def ticks(self) -> list[float]:
        return tick_values(self.end, self.step)


def _time_labels(ax: Axis, y: float) -> list[str]:
    """The time ticks' labels on one row (baseline ``y``): the first starts at its tick, the last ends inside."""
    out = []
    for t in ax.ticks():
        label = fmt_seconds(t, ax.step)
        half = text_width(label) / 2
        anchor = "start" if t == 0 else "end" if ax.x(t) + half > W - 2 else "middle"
        out.append(text(ax.x(t), y, label, anchor=anchor))
    return out


def _lanes_of_brokers(d: dict[str, Any], ax: Axis, y0: float) -> tuple[list[str], float]:
    """A lane per broker: its role over time (labelled with the masterEpoch where the label fits) and the
    SyncStateSet bar under it."""
    out = []
    for i, b in enumerate(d["brokers"]):
        y = y0 + i * (LANE + LANE_GAP)
        out.append(text(LEFT - 8, y + LANE / 2 + 4, b, anchor="end", bold=True))
        for t0, t1, r, epoch in d["roles"][b]:
            w = max(0.5, ax.x(t1) - ax.x(t0))
            out.append(f'<rect x="{ax.x(t0):.1f}" y="{y}" width="{w:.1f}" height="{LANE - 6}" fill="{COLORS[r]}">'
                       f'<title>{escape(b)} {r}{f" mE {epoch}" if epoch else ""} from {t0 / 1000:.3f} s</title>'
                       '</rect>')
            label = f"{r} mE{epoch}"
            if r in ("master", "slave") and text_width(label) + 6 <= w:
                out.append(text(ax.x(t0) + 3, y + 14, label, fill="#fff" if r == "master" else "#123"))
        for t0, t1 in d["sss"][b]:
            out.append(f'<rect x="{ax.x(t0):.1f}" y="{y + LANE - 5}" width="{max(0.5, ax.x(t1) - ax.x(t0)):.1f}" '
                       f'height="4" fill="{SSS_COLOR}"><title>{escape(b)} in the controller\'s SyncStateSet from '
                       f'{t0 / 1000:.3f} s to {t1 / 1000:.3f} s</title></rect>')
    return out, y0 + len(d["brokers"]) * (LANE + LANE_GAP)


def fault_label(f: dict[str, Any]) -> str:
    """A fault that is not a partition, in a few words: ``crash b1``, ``lossy network``."""
    do, node = str(f["do"]), f.get("node")
    return FAULT_WORDS.get(do, do) + (f" {node}" if node else "")


def _faults(d: dict[str, Any], ax: Axis, y0: float) -> tuple[list[str], float]:
    """The faults: partitions as spans in rows (labelled inside when the label fits), the others as ticks; every
    label that is not inside its span goes in lanes under the ticks, none overlapping another."""
    out = [text(LEFT - 8, y0 + 10, "faults", anchor="end", bold=True)]
    parts = [f for f in d["faults"] if f["do"] == "partition"]
    spans = [(ax.x(f["t"]), max(ax.x(f["t"]) + 1, ax.x(f["end"]))) for f in parts]
    rows = lanes(spans, gap=1)
    labels: list[tuple[float, str, str]] = []  # (x, label, tooltip) of the labels set in lanes
    for f, (x0, x1), row in zip(parts, spans, rows):
        full = partition_label(f["links"])
        tip = f"partition: {full}, {f['t'] / 1000:.3f} s to {f['end'] / 1000:.3f} s"
        out.append(f'<rect x="{x0:.1f}" y="{y0 + SPAN_ROW * row}" width="{x1 - x0:.1f}" height="12" '
                   f'fill="{PART_COLOR}" opacity="0.55"><title>{escape(tip)}</title></rect>')
        short = abbreviate(full, 40)
        if text_width(short, FAULT_FONT) + 4 <= x1 - x0:
            out.append(text(x0 + 2, y0 + SPAN_ROW * row + 10, short, size=FAULT_FONT, title=tip))
        else:
            labels.append((x0, short, tip))
    y = y0 + SPAN_ROW * (max(rows, default=-1) + 1)
    ticks = [f for f in d["faults"] if f["do"] != "partition"]
    for f in ticks:
        label = fault_label(f)
        tip = f"{label} at {f['t'] / 1000:.3f} s"
        out.append(f'<line x1="{ax.x(f["t"]):.1f}" y1="{y + 1}" x2="{ax.x(f["t"]):.1f}" y2="{y + 13}" '
                   f'stroke="{TICK_COLOR}" stroke-width="2"><title>{escape(tip)}</title></line>')
        labels.append((ax.x(f["t"]), label, tip))
    y += 14 if ticks else 0
    if not parts and not ticks:
        return [*out, text(LEFT + 2, y0 + 10, "none", size=FAULT_FONT)], y0 + 18
    labels.sort(key=lambda lb: (lb[0], lb[1]))
    widths = [text_width(s, FAULT_FONT) for _, s, _ in labels]
    ext = [(left, left + w) for left, w in ((clamp_left(x, w, LEFT, W - 2), w) for (x, _, _), w in zip(labels, widths))]
    rows = lanes(ext, gap=6)
    for (left, _), row, (_, s, tip) in zip(ext, rows, labels):
        out.append(text(left, y + 10 + LABEL_ROW * row, s, size=FAULT_FONT, title=tip))
    return out, y + LABEL_ROW * (max(rows, default=-1) + 1) + 4


def _log_chart(d: dict[str, Any], ax: Axis, y0: float) -> tuple[list[str], float]:
    """Each broker's log end offset over time, with an offset axis in bytes; returns the chart's bottom."""
    top = y0 + 20
    out = [text(LEFT, y0 + 11, "log end offset of each broker")]
    ends = d["ends"]
    high = max([v for b in d["brokers"] for _, v in ends[b]] + [1])
    step = nice_step(high, 4, integer=True)
    vmax = tick_values(high, step, cover=True)[-1]

    def y(v: float) -> float:
        return top + CHART_H - CHART_H * v / vmax

    for v in tick_values(vmax, step):
        out.append(f'<line class="axis" x1="{LEFT}" y1="{y(v):.1f}" x2="{W - RIGHT}" y2="{y(v):.1f}" '
                   f'stroke="{GRID}"/>')
        out.append(text(LEFT - 6, y(v) + 4, fmt_bytes(v, step, vmax), anchor="end"))
    out.append(f'<rect class="axis" x="{LEFT}" y="{top}" width="{W - LEFT - RIGHT}" height="{CHART_H}" fill="none" '
               f'stroke="{AXIS}"/>')
    for i, b in enumerate(d["brokers"]):
        pts: list[str] = []
        prev = y(0)
        for t, v in ends[b]:
            pts += [f"{ax.x(t):.1f},{prev:.1f}", f"{ax.x(t):.1f},{y(v):.1f}"]
            prev = y(v)
        pts.append(f"{ax.x(ax.end):.1f},{prev:.1f}")
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{LINE[i % len(LINE)]}" '
                   f'stroke-width="1.5"><title>{escape(b)} log end offset</title></polyline>')
    return out, top + CHART_H


def _violation(v: dict[str, Any], ax: Axis, top: float, bottom: float, y: float) -> list[str]:
    """The violation: a red line across lanes and chart, its label on a row of its own (baseline ``y``)."""
    label = f"{v['invariant']} at step {v['step']} ({v['t'] / 1000:.3f} s)"
    w = text_width(label)
    return [f'<line x1="{ax.x(v["t"]):.1f}" y1="{top}" x2="{ax.x(v["t"]):.1f}" y2="{bottom}" '
            f'stroke="{VIOLATION_COLOR}" stroke-width="2"><title>{escape(v["invariant"])}: {escape(v["message"])}'
            '</title></line>',
            text(clamp_left(ax.x(v["t"]) - w, w, 2, W - 2), y, label, fill=VIOLATION_COLOR,
                 title=f"{v['invariant']}: {v['message']}")]


def _keys(d: dict[str, Any]) -> list[Key]:
    """The legend: every colour the timeline uses, and what it means."""
    keys = list(ROLE_KEYS)
    if any(f["do"] == "partition" for f in d["faults"]):
        keys.append(Key("span", PART_COLOR, "partition (which node is cut from which)"))
    if any(f["do"] != "partition" for f in d["faults"]):
        keys.append(Key("tick", TICK_COLOR, "other fault"))
    keys += [Key("line", LINE[i % len(LINE)], f"{b} log end") for i, b in enumerate(d["brokers"])]
    if d["violation"]:
        keys.append(Key("line", VIOLATION_COLOR, "violation"))
    return keys


def timeline_svg(d: dict[str, Any]) -> str:
    """The timeline of ``timeline_data``: time axis (seconds), a lane per broker, the faults, the log ends (bytes),
    the violation, and a legend of every colour."""
    ax = Axis(d["end"], nice_step(d["end"] / 1000, 6) * 1000)
    top = 30.0
    lanes_svg, y = _lanes_of_brokers(d, ax, top)
    faults_svg, y = _faults(d, ax, y)
    chart_svg, bottom = _log_chart(d, ax, y + 4)
    y = bottom + 16
    body = [*_time_labels(ax, 16), *lanes_svg, *faults_svg, *chart_svg, *_time_labels(ax, y)]
    if d["violation"]:
        y += 16
        body += _violation(d["violation"], ax, top - 6, bottom, y)
    leg, h = legend(_keys(d), LEFT, y + 8, W - LEFT - RIGHT)
    height = round(y + 8 + h + 4)
    grid = [f'<line class="axis" x1="{ax.x(t):.1f}" y1="{top - 6}" x2="{ax.x(t):.1f}" y2="{bottom}" stroke="{GRID}"/>'
            for t in ax.ticks()]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
            f'font-family="sans-serif" font-size="{FONT}" fill="{INK}">' + "".join([*grid, *body, leg]) + "</svg>")
