"""The campaign report: one self-contained HTML file (``OUT/report.html``), plots drawn as inline SVG.

Sections: the campaign (switches, arms, runs, steps per second), the violations by bucket, each unique finding
with a **timeline** of its shrunk trace, and the **coverage curves** (abstract states against runs and against
wall time, per arm; witnesses hit per arm). Every chart has axes with units and a legend
(``rmqha.impl.sim.report.draw``).

The timelines are ``rmqha.impl.sim.report``'s (the real cluster test's report draws the same), read from each shrunk
trace's observations.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TYPE_CHECKING

from rmqha.impl.sim.report import escape, line_chart, page_head, table, timeline_data, timeline_svg
from rmqha.impl.sim.report.svg import LINE

if TYPE_CHECKING:
    from .campaign import Campaign

ARM_COLORS = {"guided": "#c62828", "unguided": "#1565c0"}


# ---------------------------------------------------------------------------------------------- page


def _unexplained(hints: list[str]) -> str:
    if not hints:
        return "UNEXPLAINED"
    return f"UNEXPLAINED (the fix of {', '.join(hints)} removes it, but that finding does not list this invariant)"


def render(c: Campaign) -> str:
    s = c.summary()
    parts = [
        page_head("rmqha fuzz report", css=".charts{display:flex;gap:24px;flex-wrap:wrap}"),
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
    colors = {n: ARM_COLORS.get(n, LINE[i % len(LINE)]) for i, n in enumerate(sorted(c.arms))}
    parts.append("<div class='charts'>" + line_chart(by_runs, colors, "runs", "abstract states")
                 + line_chart(by_time, colors, "wall time", "abstract states", x_seconds=True) + "</div>")
    witnesses = sorted({w for a in c.arms.values() for w in a.coverage.hits})
    parts.append(table(["witness", *c.arms], [[w, *(a.coverage.hits.get(w, 0) for a in c.arms.values())]
                                                for w in witnesses]))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(c: Campaign) -> str:
    path = Path(c.opts.out) / "report.html"
    path.write_text(render(c), encoding="utf-8")
    return str(path)
