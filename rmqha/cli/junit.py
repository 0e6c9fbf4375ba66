"""``--junit FILE``: a command's results as JUnit XML, the format CI servers publish (Jenkins, GitLab, GitHub
Actions' test reporters; RocketMQ's own CI publishes its Maven Surefire reports in it).

Rules:

* One ``<testsuites>`` holding one ``<testsuite>`` per command run, named ``rmqha COMMAND``, with the run's settings
  as ``<properties>`` (profile, switches, RocketMQ version, the kit's version and core fingerprint); ``docs/junit.xsd``
  is the schema (the Jenkins / Ant JUnit format, written from its public description) and ``tests/test_junit.py``
  validates every command's output against it.
* The test cases: ``simulate``, one per seed (``classname`` ``simulate.PROFILE``); ``fuzz``, one per finding (its
  invariant and signature), or one for the campaign when it found none; ``check``, one per spec config;
  ``real test``, one per invariant the run checked (``classname`` ``real.test.VERSION``); ``real repro``, one per
  finding, version and run (``classname`` ``real.repro.VERSION``).
* A case fails (``<failure>``) exactly when the command's exit status counts it against the run: a violation no
  documented finding explains, a config whose outcome is not the manifest's, an invariant a real run broke, a
  reproduction that did not reproduce. ``message`` is one line (the invariant and where), ``type`` the invariant id
  (or the outcome), the text the message, the trace's path and how to replay it. A violation a documented finding
  explains passes, saying so in ``<system-out>``; a real run's invariant that was not checked is ``<skipped>``.
* The file is written atomically at the end (the path was claimed before the work began: ``common.claim_file``).
"""

from __future__ import annotations

import datetime
import os
import socket
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rmqha import __version__
from rmqha.impl.sim.provenance import fingerprint
from rmqha.real.check import REAL_CHECKS

from .files import UserError


@dataclass
class Case:
    """One ``<testcase>``."""

    name: str
    classname: str
    seconds: float = 0.0
    failure: tuple[str, str, str] | None = None  # (message, type, text)
    skipped: str | None = None
    out: str | None = None


@dataclass
class Suite:
    name: str
    cases: list[Case] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def _clean(text: str) -> str:
    """Text XML 1.0 can carry (control characters other than tab and newline dropped)."""
    return "".join(c for c in text if c in "\t\n\r" or ord(c) >= 0x20)


def one_line(text: str) -> str:
    return " ".join(_clean(text).split())


def to_xml(suite: Suite) -> bytes:
    """The suite as a JUnit XML document."""
    failures = sum(1 for c in suite.cases if c.failure is not None)
    skipped = sum(1 for c in suite.cases if c.skipped is not None)
    top = ET.Element("testsuites", name="rmqha", tests=str(len(suite.cases)), failures=str(failures), errors="0",
                     time=f"{suite.seconds:.3f}")
    s = ET.SubElement(top, "testsuite", name=suite.name, tests=str(len(suite.cases)), failures=str(failures),
                      errors="0", skipped=str(skipped), time=f"{suite.seconds:.3f}",
                      timestamp=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S"),
                      hostname=socket.gethostname() or "localhost")
    props = ET.SubElement(s, "properties")
    for k, v in {"kit": __version__, "core": fingerprint(), **suite.properties}.items():
        ET.SubElement(props, "property", name=k, value=_clean(str(v)))
    for c in suite.cases:
        tc = ET.SubElement(s, "testcase", name=_clean(c.name), classname=_clean(c.classname),
                           time=f"{max(c.seconds, 0.0):.3f}")
        if c.skipped is not None:
            ET.SubElement(tc, "skipped", message=one_line(c.skipped))
        if c.failure is not None:
            msg, kind, text = c.failure
            f = ET.SubElement(tc, "failure", message=one_line(msg), type=one_line(kind))
            f.text = _clean(text)
        if c.out:
            ET.SubElement(tc, "system-out").text = _clean(c.out)
    ET.indent(top)
    doc: bytes = ET.tostring(top, encoding="utf-8", xml_declaration=True)
    return doc + b"\n"


def write(path: str, suite: Suite) -> None:
    """Write ``suite`` to ``path`` atomically."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(to_xml(suite))
        os.replace(tmp, path)
    except OSError as exc:
        raise UserError(f"--junit {path}: cannot write it ({exc.strerror or exc})") from None


# ------------------------------------------------------------------------------------------ per command


def _violation_text(v: Mapping[str, Any], trace: str | None, replay: str) -> str:
    where = f"step {v.get('step')}" + (f", t={int(v['t']) / 1000:.1f}s" if v.get("t") is not None else "")
    lines = [f"{v['invariant']} at {where}: {v.get('message', '')}"]
    if trace:
        lines += [f"trace: {trace}", f"replay: rmqha replay {trace}; read: rmqha show {trace}"]
    elif replay:
        lines.append(f"reproduce: {replay}")
    return "\n".join(lines)


def simulate_suite(profile: str, bugs: Sequence[str], results: Sequence[Mapping[str, Any]], seconds: float,
                   out_dir: str | None, one_trace: str | None = None, rerun: str = "") -> Suite:
    """``rmqha simulate``: one case per seed (``results``: the batch's rows, or the one seed's as one row)."""
    s = Suite("rmqha simulate", properties={"profile": profile, "bugs": " ".join(bugs) or "none"}, seconds=seconds)
    for r in results:
        case = Case(f"seed {r['seed']}", f"simulate.{profile}", float(r.get("wall", 0.0)))
        v = r.get("violation")
        if v is not None:
            trace = one_trace or (os.path.join(out_dir, str(r["trace"])) if out_dir and r.get("trace") else None)
            text = _violation_text(v, trace, rerun.format(seed=r["seed"]))
            if r.get("finding"):
                case.out = f"explained by {r['finding']} (docs/findings/): {text}"
            else:
                case.failure = (f"{v['invariant']} at step {v.get('step')}: {v.get('message', '')}", v["invariant"],
                                text)
        s.cases.append(case)
    return s


def fuzz_suite(summary: Mapping[str, Any], profile: str, bugs: Sequence[str]) -> Suite:
    """``rmqha fuzz``: one case per finding (a shrunk, de-duplicated violation); the campaign as one case when it
    found none."""
    s = Suite("rmqha fuzz", properties={"profile": profile, "bugs": " ".join(bugs) or "none",
                                        "runs": str(summary.get("runs", 0)), "out": str(summary.get("out", ""))},
              seconds=float(summary.get("elapsed", 0.0)))
    findings = list(summary.get("findings") or [])
    for f in findings:
        case = Case(f"{f['invariant']} {f['id']}", f"fuzz.{profile}")
        trace = os.path.join(str(summary.get("out", "")), str(f["tracePath"])) if f.get("tracePath") else None
        text = (f"{f['invariant']}: shrunk from {f.get('originalActions')} to {f.get('shrunkActions')} fault actions, "
                f"{f.get('shrunkSteps')} steps (seed {f.get('seed')}); signature {f.get('signature')}")
        if trace:
            text += f"\ntrace: {trace}\nreplay: rmqha replay {trace}; read: rmqha show {trace}"
        if f.get("explainedBy"):
            case.out = f"explained by {f['explainedBy']}: {text}"
        else:
            case.failure = (f"{f['invariant']}: no documented finding explains it (seed {f.get('seed')})",
                            str(f["invariant"]), text)
        s.cases.append(case)
    unexplained_buckets = [b for b in summary.get("buckets") or [] if not b.get("explainedBy")]
    if not findings:
        case = Case("campaign", f"fuzz.{profile}", float(summary.get("elapsed", 0.0)),
                    out=f"{summary.get('runs', 0)} runs, {summary.get('violations', 0)} violations")
        if unexplained_buckets:
            b = unexplained_buckets[0]
            case.failure = (f"{b['invariant']}: no documented finding explains it", str(b["invariant"]),
                            f"{b['count']} runs, seeds {b.get('seeds')}")
        s.cases.append(case)
    return s


def check_suite(results: Sequence[Mapping[str, Any]], workers: int) -> Suite:
    """``rmqha check``: one case per spec config."""
    s = Suite("rmqha check", properties={"workers": str(workers)},
              seconds=sum(float(r.get("seconds") or 0) for r in results))
    for r in results:
        case = Case(str(r["config"]), "check.tlc", float(r.get("seconds") or 0))
        got = r.get("violated") or r.get("status")
        if not r["ok"]:
            text = f"TLC: {got}, the manifest expects {r['expect']}" + (f"; {r['message']}" if r.get("message") else "")
            if isinstance(r.get("trace"), str):
                text += f"\ntrace: {r['trace']}\nreplay: rmqha replay {r['trace']}"
            case.failure = (f"{r['config']}: {got}, expected {r['expect']}", str(got), text)
        else:
            case.out = f"{got} as the manifest expects; {r.get('distinct') or 0:,} distinct states"
        s.cases.append(case)
    return s


def real_test_suite(r: Mapping[str, Any], version: str) -> Suite:
    """``rmqha real test``: one case per invariant of the catalogue a real run can check (``REAL_CHECKS``)."""
    s = Suite("rmqha real test", properties={"version": version, "profile": str(r.get("profile")),
                                             "faults": ",".join(r.get("recipes") or []) or "none",
                                             "report": str(r.get("report", ""))},
              seconds=float(r.get("wallSeconds") or 0))
    trace = os.path.join(os.path.dirname(str(r.get("report", ""))), "trace.jsonl") if r.get("report") else None
    broken: dict[str, list[Mapping[str, Any]]] = {}
    for v in r.get("violations") or []:
        broken.setdefault(str(v["invariant"]), []).append(v)
    for inv in sorted(set(REAL_CHECKS) | set(broken)):
        case = Case(inv, f"real.test.{version}")
        if inv in broken:
            first = broken[inv][0]
            text = "\n".join(one_line(str(v.get("message", ""))) for v in broken[inv])
            if trace:
                text += f"\ntrace: {trace} (rmqha show {trace}); report: {r.get('report')}"
            case.failure = (f"{inv}: {first.get('message', '')}", inv, text)
        elif inv in (r.get("checked") or {}):
            case.out = f"checked on {r['checked'][inv]}"
        else:
            case.skipped = "not checked in this run" + (f" ({'; '.join(r.get('notes') or [])})"
                                                        if r.get("notes") else "")
        s.cases.append(case)
    return s


def real_repro_suite(outcomes: Sequence[Any]) -> Suite:
    """``rmqha real repro``: one case per finding, version and run (a ``repro.Outcome`` each)."""
    s = Suite("rmqha real repro", seconds=sum(float(o.seconds) for o in outcomes))
    for o in outcomes:
        case = Case(f"{o.finding} run {o.run}", f"real.repro.{o.version}", float(o.seconds))
        text = "\n".join([f"{o.verdict}: {o.why}", *map(str, o.evidence), f"files: {o.folder}"])
        if o.verdict == "reproduced":
            case.out = text
        else:
            case.failure = (f"{o.finding} ({o.invariant}) on RocketMQ {o.version}: {o.verdict}: {o.why}",
                            str(o.verdict), text)
        s.cases.append(case)
    return s
