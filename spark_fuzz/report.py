"""The campaign report: one self-contained HTML file (``OUT/report.html``), plots drawn as inline SVG.

Sections: the campaign (switches, arms, runs, steps per second), the violations by bucket, each unique finding
with a **timeline** of its shrunk trace, and the **coverage curves** (abstract states against runs and against
wall time, per arm; witnesses hit per arm).

The timelines are ``rmqha.impl.sim.report``'s (the real cluster test's report draws the same), read from each shrunk
trace's observations.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TYPE_CHECKING

from rmqha.impl.sim.report import escape, page_head, table, timeline_data, timeline_svg
from rmqha.impl.sim.report.svg import LINE

if TYPE_CHECKING:
    from .campaign import Campaign

ARM_COLORS = {"guided": "#c62828", "unguided": "#1565c0"}


# ---------------------------------------------------------------------------------------------- curves


def curve_svg(series: dict[str, list[tuple[float, float]]], xlabel: str, ylabel: str) -> str:
    w, h, left, bottom = 520, 240, 56, 34
    xs = [p[0] for s in series.values() for p in s] or [1]
    ys = [p[1] for s in series.values() for p in s] or [1]
    xmax, ymax = max(max(xs), 1), max(max(ys), 1)

    def px(v: float) -> float:
        return left + (w - left - 10) * v / xmax

    def py(v: float) -> float:
        return h - bottom - (h - bottom - 10) * v / ymax

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect x="{left}" y="10" width="{w - left - 10}" height="{h - bottom - 10}" fill="none" stroke="#999"/>']
    for k in range(5):
        xv, yv = xmax * k / 4, ymax * k / 4
        out.append(f'<text x="{px(xv):.1f}" y="{h - bottom + 14}" text-anchor="middle">{xv:.0f}</text>')
        out.append(f'<text x="{left - 4}" y="{py(yv) + 4:.1f}" text-anchor="end">{yv:.0f}</text>')
    out.append(f'<text x="{(w + left) / 2:.0f}" y="{h - 4}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text x="12" y="{(h - bottom) / 2:.0f}" transform="rotate(-90 12 {(h - bottom) / 2:.0f})" '
               f'text-anchor="middle">{escape(ylabel)}</text>')
    for i, (name, pts) in enumerate(sorted(series.items())):
        color = ARM_COLORS.get(name, LINE[i % len(LINE)])
        coords = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in [(0, 0), *pts])
        out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{left + 8}" y="{24 + 14 * i}" fill="{color}">{escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------- page


def _unexplained(hints: list[str]) -> str:
    if not hints:
        return "UNEXPLAINED"
    return f"UNEXPLAINED (the fix of {', '.join(hints)} removes it, but that finding does not list this invariant)"


def render(c: Campaign) -> str:
    s = c.summary()
    parts = [
        page_head("rmqha fuzz report"),
        "<h1>rmqha fuzz campaign</h1>",
        table(["arms", "switches", "profile", "runs", "steps", "simulated s", "wall s", "steps/s", "violations"],
               [[", ".join(s["arms"]), ", ".join(s["bugs"]) or "none", s["profile"], s["runs"], f"{s['steps']:,}",
                 s["simSeconds"], s["elapsed"], f"{s['stepsPerSecond']:,}", s["violations"]]]),
        "<h2>Violations by bucket</h2>",
        table(["invariant", "explained by", "runs", "first after (s)", "seeds"],
               [[b["invariant"], b["explainedBy"] or _unexplained(b["fixHints"]), b["count"], round(b["firstAt"], 1),
                 " ".join(map(str, b["seeds"][:12]))] for b in s["buckets"]]) if s["buckets"] else "<p>none</p>",
        "<h2>Unique findings</h2>",
    ]
    out = Path(c.opts.out)
    if not c.findings:
        parts.append("<p>none</p>")
    for f in c.findings.values():
        parts.append(f"<h3 id='{escape(f['id'])}'>{escape(f['id'])}: {escape(f['invariant'])} "
                     f"<span class='{'ok' if f.get('explainedBy') else 'bad'}'>"
                     f"({escape(f.get('explainedBy') or 'unexplained')})</span></h3>")
        parts.append(f"<p>{escape(f['message'])}</p>")
        parts.append(table(
            ["seed", "faults (shrunk / original)", "steps (shrunk / original)", "replays", "conforms", "trace"],
            [[f["seed"], f"{f['shrunkActions']} / {f['originalActions']}", f"{f['shrunkSteps']} / {f['originalSteps']}",
              "yes" if f["replays"] else "NO", f["conforms"] + (f" ({f['divergence']})" if f.get("divergence") else ""),
              f["tracePath"]]]))
        parts.append(f"<p>signature: <code>{escape(f['signature'])}</code><br>"
                     f"replay: <code>rmqha replay {escape(out / f['tracePath'])}</code></p>")
        path = out / f["tracePath"]
        if path.exists():
            parts.append(timeline_svg(timeline_data(gzip.decompress(path.read_bytes()).decode())))
    parts.append("<h2>Coverage</h2>")
    by_runs = {n: [(float(r), float(st)) for r, st, _el in c.curve(n)] for n in c.arms}
    by_time = {n: [(float(el), float(st)) for _r, st, el in c.curve(n)] for n in c.arms}
    parts.append(curve_svg(by_runs, "runs", "abstract states") + " " + curve_svg(by_time, "wall s", "abstract states"))
    witnesses = sorted({w for a in c.arms.values() for w in a.coverage.hits})
    parts.append(table(["witness", *c.arms], [[w, *(a.coverage.hits.get(w, 0) for a in c.arms.values())]
                                                for w in witnesses]))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(c: Campaign) -> str:
    path = Path(c.opts.out) / "report.html"
    path.write_text(render(c), encoding="utf-8")
    return str(path)
