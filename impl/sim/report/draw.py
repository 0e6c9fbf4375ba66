"""SVG pieces the reports' charts share: text and its width, axis ticks with units, labels laid out in lanes so
that none overlaps another, a legend with one entry per colour a chart uses, and a line chart (the fuzz report's
coverage curves).

Layout is computed here, before any browser sees the page, so it rests on an estimate of each label's width:
``text_width`` takes the widest advance of each character among the common sans-serif faces (Liberation Sans and
Arial, regular and bold; DejaVu Sans), so a label is never wider on screen than the room made for it.
``tests/test_report_browser.py`` checks the result in a real browser.

Conventions the browser test relies on: a legend is ``<g class="legend">`` of ``<g class="legend-entry">``, each
with a swatch in the colour it explains; axis lines and grid lines (neutral greys) carry ``class="axis"``; a
label's full text, when the label is abbreviated, is the ``<title>`` of the ``<g>`` around it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .html import escape

FONT = 11  # px, the charts' text
AXIS = "#999"  # frames and tick marks
GRID = "#e0e0e0"  # grid lines
INK = "#222"

# Advance widths (1/1000 em) of the printable ASCII characters, space to tilde: per character the widest of
# Liberation Sans regular and bold (Arial's metrics) and DejaVu Sans (measured in Chromium).
_WIDTHS = (
    318, 401, 474, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636, 636,
    636, 636, 636, 337, 337, 838, 838, 838, 611, 1015, 722, 722, 722, 770, 667, 611, 778, 752, 295, 556, 722, 611, 863,
    748, 787, 667, 787, 722, 667, 611, 732, 684, 989, 685, 667, 685, 390, 337, 390, 838, 556, 500, 613, 635, 556, 635,
    615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 556, 392, 634, 592, 818, 592, 592, 525, 636,
    337, 636, 838,
)


def text_width(s: str, size: float = FONT) -> float:
    """An upper bound of ``s``'s rendered width in px at ``size`` px (a character outside ASCII counts 1 em)."""
    return size * sum(_WIDTHS[ord(c) - 32] if 32 <= ord(c) < 127 else 1000 for c in s) / 1000


def text(x: float, y: float, s: str, *, size: float = FONT, anchor: str = "start", fill: str = "",
         bold: bool = False, title: str = "", extra: str = "") -> str:
    """A ``<text>`` at (x, y) (y: the baseline); ``title``: a tooltip (the full text of an abbreviated label)."""
    attrs = f'x="{x:.1f}" y="{y:.1f}"'
    if size != FONT:
        attrs += f' font-size="{size:g}"'
    if anchor != "start":
        attrs += f' text-anchor="{anchor}"'
    if fill:
        attrs += f' fill="{fill}"'
    if bold:
        attrs += ' font-weight="bold"'
    el = f"<text {attrs}{extra}>{escape(s)}</text>"
    return f"<g><title>{escape(title)}</title>{el}</g>" if title else el


def abbreviate(s: str, n: int) -> str:
    """``s`` cut to ``n`` characters, the cut marked with an ellipsis."""
    return s if len(s) <= n else s[: n - 1].rstrip(", ") + "…"


def clamp_left(x: float, width: float, lo: float, hi: float) -> float:
    """The left edge of a ``width``-wide label that wants to start at ``x``, kept inside [lo, hi]."""
    return max(lo, min(x, hi - width))


# ---------------------------------------------------------------------------------------------- lanes


def lanes(extents: Sequence[tuple[float, float]], gap: float = 6.0) -> list[int]:
    """A lane for each (left, right) extent, first fit in the order given, so that two extents in one lane are at
    least ``gap`` apart: the layout of labels (and spans) that must not overlap."""
    ends: list[float] = []
    out: list[int] = []
    for left, right in extents:
        lane = next((i for i, e in enumerate(ends) if e + gap <= left), len(ends))
        if lane == len(ends):
            ends.append(right)
        ends[lane] = right  # every extent already in the lane ends left of ``left``, so left of ``right``
        out.append(lane)
    return out


# ---------------------------------------------------------------------------------------------- ticks


def nice_step(vmax: float, target: int = 5, integer: bool = False) -> float:
    """A step of 1, 2, 2.5 or 5 times a power of ten that cuts [0, vmax] into about ``target`` parts (at least 1
    when ``integer``)."""
    if vmax <= 0:
        return 1.0
    raw = vmax / target
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-9))
    if integer and step != int(step):
        step = 1.0 if step < 1 else float(math.ceil(step))
    return step


def tick_values(vmax: float, step: float, cover: bool = False) -> list[float]:
    """0, step, 2 step, ... up to ``vmax`` (past it to the first tick at or above it when ``cover``)."""
    n = math.ceil(vmax / step - 1e-9) if cover else math.floor(vmax / step + 1e-9)
    return [round(i * step, 9) for i in range(max(n, 1 if cover else 0) + 1)]


def decimals(step: float) -> int:
    """The digits after the point that tick labels ``step`` apart need."""
    return next((d for d in range(7) if abs(round(step, d) - step) < 1e-9 * max(1.0, step)), 6)


def fmt_seconds(ms: float, step_ms: float) -> str:
    """A time tick: ``20 s``, ``2.5 s``."""
    return f"{ms / 1000:.{decimals(step_ms / 1000)}f} s"


def fmt_bytes(v: float, step: float, vmax: float) -> str:
    """An offset tick with its unit, in the unit the axis's top needs: ``8,000 B``, ``150 kB``, ``1.5 MB``."""
    unit, name = next(((u, n) for u, n in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")) if vmax >= 10 * u), (1.0, "B"))
    return f"{v / unit:,.{decimals(step / unit)}f} {name}"


def fmt_count(v: float, step: float) -> str:
    """A count tick: ``1,500``."""
    return f"{v:,.{decimals(step)}f}"


# ---------------------------------------------------------------------------------------------- legend


@dataclass(frozen=True)
class Key:
    """One legend entry: how the mark looks (``box``: a filled box; ``bar``: a thin bar; ``span``: a translucent
    box; ``line``: a line; ``tick``: a short vertical stroke), its colour and what it means."""

    mark: str
    color: str
    label: str


def _swatch(k: Key, x: float, y: float) -> str:
    """``k``'s mark, 16 px wide, left of a label whose baseline is ``y``."""
    if k.mark == "box":
        return f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="16" height="11" fill="{k.color}" stroke="{AXIS}" ' \
               'stroke-width="0.5"/>'
    if k.mark == "bar":
        return f'<rect x="{x:.1f}" y="{y - 6:.1f}" width="16" height="4" fill="{k.color}"/>'
    if k.mark == "span":
        return f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="16" height="11" fill="{k.color}" opacity="0.55"/>'
    if k.mark == "tick":
        return f'<line x1="{x + 8:.1f}" y1="{y - 11:.1f}" x2="{x + 8:.1f}" y2="{y + 1:.1f}" stroke="{k.color}" ' \
               'stroke-width="2"/>'
    return f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x + 16:.1f}" y2="{y - 4:.1f}" stroke="{k.color}" ' \
           'stroke-width="2"/>'


def legend(keys: Sequence[Key], x0: float, y0: float, width: float) -> tuple[str, float]:
    """The legend as a ``<g class="legend">``: entries left to right from (x0, y0), wrapped at ``width``; returns
    it and its height."""
    out = ['<g class="legend">']
    x, y, row = x0, y0 + 12.0, 18.0
    for k in keys:
        w = 22 + text_width(k.label)
        if x > x0 and x + w > x0 + width:
            x, y = x0, y + row
        out.append(f'<g class="legend-entry">{_swatch(k, x, y)}{text(x + 22, y, k.label)}</g>')
        x += w + 16
    out.append("</g>")
    return "".join(out), y - y0 + 6


# ---------------------------------------------------------------------------------------------- line chart


def line_chart(series: dict[str, list[tuple[float, float]]], colors: dict[str, str], xlabel: str, ylabel: str,
               x_seconds: bool = False) -> str:
    """Lines from (0, 0) through each series' points, one colour per series: axes with ticks (counts, or seconds
    when ``x_seconds``), the axis captions and a legend."""
    w, left, top, ph, right = 520, 76, 10, 180, 14
    pw = w - left - right
    xs = [p[0] for s in series.values() for p in s] or [1.0]
    ys = [p[1] for s in series.values() for p in s] or [1.0]
    xstep, ystep = nice_step(max(xs), 4, integer=not x_seconds), nice_step(max(ys), 4, integer=True)
    xmax, ymax = tick_values(max(xs), xstep, cover=True)[-1], tick_values(max(ys), ystep, cover=True)[-1]

    def px(v: float) -> float:
        return left + pw * v / xmax

    def py(v: float) -> float:
        return top + ph - ph * v / ymax

    out = [f'<rect class="axis" x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="{AXIS}"/>']
    for v in tick_values(xmax, xstep):
        out.append(f'<line class="axis" x1="{px(v):.1f}" y1="{top}" x2="{px(v):.1f}" y2="{top + ph}" '
                   f'stroke="{GRID}"/>')
        label = f"{v:.{decimals(xstep)}f} s" if x_seconds else fmt_count(v, xstep)
        out.append(text(px(v), top + ph + 14, label, anchor="start" if v == 0 else "middle"))  # clear of the y axis
    for v in tick_values(ymax, ystep):
        out.append(f'<line class="axis" x1="{left}" y1="{py(v):.1f}" x2="{left + pw}" y2="{py(v):.1f}" '
                   f'stroke="{GRID}"/>')
        out.append(text(left - 5, py(v) + 4, fmt_count(v, ystep), anchor="end"))
    out.append(text(left + pw / 2, top + ph + 32, xlabel, anchor="middle"))
    mid = top + ph / 2
    out.append(text(14, mid, ylabel, anchor="middle", extra=f' transform="rotate(-90 14 {mid:.0f})"'))
    keys = []
    for name, pts in sorted(series.items()):
        coords = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in [(0, 0), *pts])
        out.append(f'<polyline points="{coords}" fill="none" stroke="{colors[name]}" stroke-width="2"/>')
        keys.append(Key("line", colors[name], name))
    leg, lh = legend(keys, left, top + ph + 40, pw)
    h = round(top + ph + 40 + lh + 4)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'font-family="sans-serif" font-size="{FONT}" fill="{INK}">' + "".join(out) + leg + "</svg>")
