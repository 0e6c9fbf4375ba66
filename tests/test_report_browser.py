"""The three reports (fuzz campaign, cluster test, real run) as a person sees them: in a real headless browser
(Debian's ``chromium``) at 1400 px.

Each report is built from small real data: the fuzz report from a campaign journal whose findings carry two shrunk
traces of ``docs/findings/traces/``; the cluster report from a captured ``rmqha cluster test`` (kill-master and
partition-master, ``tests/data/reports/``); the real run's report from its own merged trace of admin-API snapshots.
A copy of each page gets a script that measures every text of every SVG and of the page, every mark's colour and
every legend entry, and writes them into the page as JSON (``<pre id="layout-report">``); ``chromium --dump-dom``
hands the page back and the checks read it: no two labels overlap, no label is outside its SVG, every SVG has a
legend with an entry for each colour it uses (axes in grey need none), no text overflows its box, no horizontal
scrolling at 1400 px, and no Python repr (``{'``, ``['``, ``True``, ``False``, ``None``) in the visible text. A
page made to break every rule shows that each check fails when it should. Full-page screenshots are left in the
test's tmp dir.

Without chromium the tests skip locally and fail in CI (``CI`` or ``RMQHA_REQUIRE_BROWSER`` set; ``.ci/run``
installs it).
"""

from __future__ import annotations

import gzip
import html
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl.sim.config import default_config
from rmqha.impl.trace import parse
from rmqha.spark_fuzz.campaign import Campaign, options_from
from rmqha.spark_fuzz.findings import bucket, finding_id
from rmqha.spark_fuzz.journal import Journal
from rmqha.spark_fuzz.report import render as render_fuzz

from rmqha.cluster.report import render as render_cluster
from rmqha.cluster.spec import ClusterSpec
from rmqha.real.check import History
from rmqha.real.observe import BrokerView, ControllerView, Snapshot
from rmqha.real.report import merged_trace
from rmqha.real.report import render as render_real
from rmqha.real.spec import RealSpec

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "reports"
TRACES = ROOT / "docs" / "findings" / "traces"
WIDTH = 1400
REPR = re.compile(r"\{'|\['|\bTrue\b|\bFalse\b|\bNone\b")

# Runs in the page after it is laid out: measures and writes the result into the page.
LAYOUT_JS = r"""
(function () {
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const colours = el => {
    const cs = getComputedStyle(el), out = [];
    if (el.tagName !== 'line' && cs.fill !== 'none') out.push(cs.fill);
    if (cs.stroke !== 'none') out.push(cs.stroke);
    return out;
  };
  const marks = 'rect, line, polyline, polygon, path, circle, ellipse';
  const r = {width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
             height: document.documentElement.scrollHeight, text: document.body.innerText, svgs: [], boxes: []};
  document.querySelectorAll('svg').forEach(svg => {
    const s = {box: box(svg), texts: [], marks: [], axis: [], legend: []};
    svg.querySelectorAll('text').forEach(t => s.texts.push({text: t.textContent, box: box(t)}));
    svg.querySelectorAll(marks).forEach(el => {
      if (el.closest('.legend')) return;
      (el.classList.contains('axis') ? s.axis : s.marks).push(...colours(el));
    });
    svg.querySelectorAll('.legend .legend-entry').forEach(e => {
      const cs = [];
      e.querySelectorAll(marks).forEach(el => cs.push(...colours(el)));
      s.legend.push({label: e.textContent, colours: cs});
    });
    r.svgs.push(s);
  });
  document.querySelectorAll('body *:not(svg):not(svg *):not(script)').forEach(el => {
    if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1)
      r.boxes.push({tag: el.tagName, text: el.textContent.slice(0, 80), scroll: el.scrollWidth,
                    client: el.clientWidth});
  });
  const pre = document.createElement('pre');
  pre.id = 'layout-report';
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
})();
"""


# ---------------------------------------------------------------------------------------------- browser


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        why = "chromium is not installed (apt-get install -y chromium)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes") or os.environ.get("RMQHA_REQUIRE_BROWSER"):
            pytest.fail(why + "; CI needs it for the report checks")
        pytest.skip(why)
    return path


def _run(args: list[str]) -> str:
    p = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--no-first-run", "--disable-extensions", *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def layout(page: Path) -> dict[str, Any]:
    """What the browser measured on ``page`` at 1400 px (a copy of it with the script is what it loads)."""
    copy = page.with_name(page.stem + ".layout.html")
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", f"<script>{LAYOUT_JS}</script></body>"),
                    encoding="utf-8")
    dom = _run([f"--window-size={WIDTH},1000", "--dump-dom", copy.as_uri()])
    m = re.search(r'<pre id="layout-report">(.*?)</pre>', dom, re.S)
    assert m, "the layout script did not run"
    return json.loads(html.unescape(m.group(1)))


def screenshot(page: Path, height: int) -> Path:
    png = page.with_suffix(".png")
    _run([f"--window-size={WIDTH},{height}", f"--screenshot={png}", page.as_uri()])
    return png


# ---------------------------------------------------------------------------------------------- checks


def _overlap(a: list[float], b: list[float]) -> float:
    """How far two boxes (left, top, right, bottom) overlap: the smaller of the two overlaps along the axes."""
    return min(min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1]))


def problems(lay: dict[str, Any]) -> list[str]:
    """Everything a reader would trip on, one line each."""
    out = []
    if lay["scrollWidth"] > lay["width"]:
        out.append(f"horizontal overflow: the page is {lay['scrollWidth']} px wide at {lay['width']} px")
    for m in REPR.finditer(lay["text"]):
        out.append(f"Python repr in the text: {lay['text'][max(0, m.start() - 30):m.end() + 30]!r}")
    for b in lay["boxes"]:
        out.append(f"text overflows its {b['tag']} ({b['scroll']} > {b['client']} px): {b['text']!r}")
    for i, s in enumerate(lay["svgs"]):
        out += _svg_problems(i, s)
    return out


def _svg_problems(i: int, s: dict[str, Any]) -> list[str]:
    out = []
    texts = [t for t in s["texts"] if t["text"].strip()]
    for k, a in enumerate(texts):
        if _overlap(a["box"], s["box"]) < 0 or any(a["box"][j] < s["box"][j] - 0.5 for j in (0, 1)) \
                or any(a["box"][j] > s["box"][j] + 0.5 for j in (2, 3)):
            out.append(f"svg {i}: label {a['text']!r} is clipped (box {a['box']}, svg {s['box']})")
        for b in texts[k + 1:]:
            if _overlap(a["box"], b["box"]) > 1:
                out.append(f"svg {i}: labels {a['text']!r} and {b['text']!r} overlap")
    if not s["legend"]:
        out.append(f"svg {i}: no legend")
    explained = {c for e in s["legend"] for c in e["colours"]}
    for c in sorted(set(s["marks"]) - explained):
        out.append(f"svg {i}: colour {c} has no legend entry")
    for c in sorted(set(s["axis"])):
        rgb = re.findall(r"\d+", c)[:3]
        if len(set(rgb)) != 1:
            out.append(f"svg {i}: axis colour {c} is not a grey (colours need a legend entry)")
    return out


# ---------------------------------------------------------------------------------------------- inputs


def fuzz_report(out: Path) -> Path:
    """A guided campaign's journal: three runs, two violations each shrunk to a finding whose trace is one of
    docs/findings/traces/, one of them unexplained with a fix hint; the campaign is read back as on a resume."""
    opts = options_from(str(out), default_config("safe").to_dict(), None)
    j = Journal(str(out))
    j.append({"type": "start", "identity": opts.identity()})
    rows, shrunk = [], []
    for k, name in enumerate(["F-GAP-UNION-expand", "F-CONFIRM-LOCAL-SHORTCUT"]):
        blob = (TRACES / f"{name}.jsonl.gz").read_bytes()
        header, lines, footer = parse(gzip.decompress(blob).decode())
        v = footer["violation"]
        explained = name if k == 0 else None
        rows.append({"id": f"g0.{k}", "arm": "guided", "seed": header["seed"], "newStates": [f"s{k}a", f"s{k}b"],
                     "witnesses": {"election": 2, "truncate": k}, "steps": footer["steps"], "simMs": footer["t"],
                     "violation": {"invariant": v["invariant"], "message": v["message"], "step": v["step"]},
                     "explainedBy": explained, "fixHints": [] if explained else ["F-GAP-UNION"],
                     "header": header})
        sig = f"signature of {name}"
        (out / "traces").mkdir(exist_ok=True)
        (out / "traces" / f"{finding_id(v['invariant'], sig)}.jsonl.gz").write_bytes(blob)
        shrunk.append({"rep": f"g0.{k}", "bucket": bucket(v["invariant"], explained), "invariant": v["invariant"],
                       "signature": sig, "message": v["message"], "explainedBy": explained, "seed": header["seed"],
                       "shrunkActions": len([ln for ln in lines if ln.get("ev") == "act"]), "originalActions": 40,
                       "shrunkSteps": footer["steps"], "originalSteps": 20000, "replays": True,
                       "conforms": "yes" if k == 0 else "diverges", "divergence": None if k == 0 else "step 12"})
    rows.append({"id": "g0.2", "arm": "guided", "seed": 3, "newStates": ["s3"], "witnesses": {"election": 1},
                 "steps": 20000, "simMs": 300000, "violation": None, "explainedBy": None, "header": {}})
    j.append({"type": "plan", "batch": 0, "items": [{"kind": "runs", "inputs": [{"id": r["id"], "arm": "guided",
                                                                                  "seed": r["seed"]} for r in rows]}]})
    j.append({"type": "merged", "batch": 0, "elapsed": 12.5, "rows": rows})
    for row in shrunk:
        j.append({"type": "shrunk", "elapsed": 30.0, "row": row})
    c = Campaign(None, opts)
    c._resume()
    page = out / "report.html"
    page.write_text(render_fuzz(c), encoding="utf-8")
    return page


def cluster_report(out: Path) -> Path:
    """The report of a captured ``rmqha cluster test --faults kill-master,partition-master``."""
    r = json.loads((DATA / "cluster-result.json").read_text())
    (out / "trace.jsonl").write_bytes(gzip.decompress((DATA / "cluster-trace.jsonl.gz").read_bytes()))
    spec = ClusterSpec(out, default_config("safe").to_dict(), 1, [], ["ns", "ctl", "b1", "b2", "b3", "p1", "c1"],
                       ["ctl"], ["b1", "b2", "b3"], "ns", {}, 0, 0.0, 600)
    page = out / "report.html"
    page.write_text(render_cluster(spec, r), encoding="utf-8")
    return page


def _snap(t: int, master: str, epoch: int, sss: list[int], ends: dict[str, int | None]) -> Snapshot:
    ids = {1: "b1", 2: "b2", 3: "b3"}
    ctl = ControllerView("ctl", True, is_leader=True, leader="ctl", master=master, master_epoch=epoch, sss_epoch=epoch,
                         sss=sss, ids=ids)
    brokers = {b: BrokerView(b, end is not None, "" if end is not None else "connection refused", broker_id=i,
                             role="MASTER" if b == master else "SLAVE", max_offset=end,
                             epochs=[(1, 0, -1)] + ([(epoch, 4000, -1)] if epoch > 1 else []))
               for i, (b, end) in enumerate(sorted(ends.items()), 1)}
    return Snapshot(t, {"ctl": ctl}, brokers)


def real_report(out: Path) -> Path:
    """A real run's report from its merged trace: b1 master, killed, b2 elected from the set, b1 back as a slave,
    a partition of b3."""
    spec = RealSpec(out, "r1", "5.3.3", "DLedger", ["ctl"], ["b1", "b2", "b3"], default_config("safe").to_dict(),
                    "safe", 600, 0)
    snaps = [_snap(1000, "b1", 1, [1, 2, 3], {"b1": 0, "b2": 0, "b3": 0}),
             _snap(5000, "b1", 1, [1, 2, 3], {"b1": 4000, "b2": 4000, "b3": 4000}),
             _snap(9000, "b2", 2, [2, 3], {"b1": None, "b2": 4000, "b3": 4000}),
             _snap(14000, "b2", 2, [2, 3], {"b1": 4000, "b2": 9000, "b3": 9000}),
             _snap(20000, "b2", 2, [1, 2, 3], {"b1": 12000, "b2": 12000, "b3": 12000})]
    links = [["b3", n] for n in ("ns", "ctl", "b1", "b2")] + [[n, "b3"] for n in ("ns", "ctl", "b1", "b2")]
    faults = [{"t": 6000, "do": "crash", "node": "b1"}, {"t": 12000, "do": "restart", "node": "b1"},
              {"t": 15000, "do": "partition", "id": "n1", "links": links}, {"t": 18000, "do": "heal", "id": "n1"}]
    result: dict[str, Any] = {
        "valid": True, "profile": "safe", "recipes": ["kill-master", "isolate"], "duration": 20, "wallSeconds": 41.2,
        "counts": {"sent": 60, "acked": 58, "errors": 2, "seen": 58}, "finalMaster": "b2", "notes": [],
        "violations": [], "faults": faults, "statuses": {"PUT_OK": 58, "FLUSH_SLAVE_TIMEOUT": 2},
        "failovers": [{"recipe": "kill-master", "at": 6000, "oldMaster": "b1", "oldSss": ["b3", "b1", "b2"],
                       "newMaster": "b2", "newMasterInSss": True, "electedAfterMs": 2950, "firstWriteAfterMs": None}],
        "checked": {"acked messages are read": "58 of 58", "one master per epoch": "epochs 1, 2"}}
    sends = [{"k": "client.send", "n": "p1", "t": 1000 + 300 * i, "key": f"k{i}"} for i in range(60)]
    h = History(sends, [], [])
    page = out / "report.html"
    page.write_text(render_real(spec, result, merged_trace(spec, result, h, snaps)), encoding="utf-8")
    return page


BUILDERS = {"fuzz": fuzz_report, "cluster": cluster_report, "real": real_report}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Path, dict[str, Any]]]]:
    chromium()
    out = {}
    for name, build in BUILDERS.items():
        d = tmp_path_factory.mktemp(name)
        page = build(d)
        out[name] = (page, layout(page))
    yield out


# ---------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", list(BUILDERS))
def test_report_reads_in_a_browser(pages: dict[str, tuple[Path, dict[str, Any]]], name: str) -> None:
    page, lay = pages[name]
    assert lay["width"] == WIDTH
    assert lay["svgs"], "no chart"
    assert problems(lay) == []
    png = screenshot(page, min(int(lay["height"]) + 40, 8000))
    assert png.stat().st_size > 10_000  # a page, not a blank


def test_every_timeline_legend_explains_roles_and_faults(pages: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    for name, (_, lay) in pages.items():
        labels = {e["label"] for s in lay["svgs"] for e in s["legend"]}
        assert {"slave", "no role yet", "down (crashed or stopped)", "in the controller's SyncStateSet"} <= labels, name
        assert any(lb.startswith("partition") for lb in labels), name
        assert {"b1 log end", "b2 log end", "b3 log end"} <= labels, name


def test_axes_carry_units(pages: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    for name, (_, lay) in pages.items():
        texts = [t["text"] for s in lay["svgs"] for t in s["texts"]]
        assert sum(bool(re.fullmatch(r"\d+(\.\d+)? s", t)) for t in texts) >= 6, name  # time ticks, both rows
        assert sum(bool(re.fullmatch(r"[\d,.]+ k?B", t)) for t in texts) >= 3, name  # offset ticks, not only the max


def test_the_checker_catches_each_kind_of_flaw(tmp_path: Path) -> None:
    """A page that breaks every rule: each check names its flaw."""
    chromium()
    page = tmp_path / "bad.html"
    page.write_text(
        "<!doctype html><html><body style='margin:0'>"
        "<svg xmlns='http://www.w3.org/2000/svg' width='300' height='60' font-family='sans-serif' font-size='11'>"
        "<rect x='0' y='0' width='50' height='10' fill='#2e7d32'/>"
        "<line class='axis' x1='0' y1='50' x2='300' y2='50' stroke='#ff0000'/>"
        "<text x='10' y='30'>crash b1</text><text x='20' y='32'>restart b1</text>"
        "<text x='280' y='30'>clipped label</text></svg>"
        "<p>SSS {'broker-a': [1, 2]} in sync: True</p>"
        "<div style='width:200px;overflow:hidden;white-space:nowrap'>a long unbreakable text in a narrow box</div>"
        "<div style='width:2000px'>wide</div></body></html>", encoding="utf-8")
    found = "\n".join(problems(layout(page)))
    assert "labels 'crash b1' and 'restart b1' overlap" in found
    assert "label 'clipped label' is clipped" in found
    assert "svg 0: no legend" in found and "colour rgb(46, 125, 50) has no legend entry" in found
    assert "axis colour rgb(255, 0, 0) is not a grey" in found
    assert "Python repr in the text" in found and "True" in found
    assert "text overflows its DIV" in found
    assert "horizontal overflow" in found


def test_the_reports_are_deterministic(tmp_path: Path) -> None:
    """Same input, same bytes (the cluster and real reports; the fuzz report shows the wall time)."""
    for name in ("cluster", "real"):
        a, b = tmp_path / f"{name}-a", tmp_path / f"{name}-b"
        a.mkdir()
        b.mkdir()
        pa, pb = BUILDERS[name](a), BUILDERS[name](b)
        assert pa.read_text().replace(str(a), "") == pb.read_text().replace(str(b), "")
