"""``--junit FILE`` (issue 30, item 7): each command's JUnit XML validates against ``docs/junit.xsd`` (read and
interpreted by ``tests/junit_schema.py``), with a test case per seed, spec config, finding, or finding and version,
and the invariant and the trace's path in each failure. ``rmqha fuzz --junit`` runs in ``tests/test_fuzz.py`` (it needs
Spark), ``rmqha real test --junit`` in ``tests/test_real_load.py`` (a real cluster); here their suites are also built
from recorded results."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from rmqha.cli import junit, main
from rmqha.real.check import REAL_CHECKS
from rmqha.real.repro import Outcome

from .junit_schema import Invalid, Schema

SCHEMA = Schema()
DATA = Path(__file__).resolve().parent / "data" / "real" / "run-kill-before-first-write"


def cases(root: ET.Element) -> list[ET.Element]:
    return root.findall("./testsuite/testcase")


def test_the_checker_refuses_what_the_schema_does_not_allow() -> None:
    good = b'<testsuites><testsuite name="s" tests="1"><testcase name="c"/></testsuite></testsuites>'
    SCHEMA.validate(good)
    for bad, why in ((b'<testsuites><testsuite tests="1"/></testsuites>', "required attribute 'name'"),
                     (b'<testsuites><testsuite name="s" tests="-1"/></testsuites>', "below 0"),
                     (b'<testsuites><testsuite name="s" tests="x"/></testsuites>', "no xs:int"),
                     (b'<testsuites><testsuite name="s" tests="1"><testcase name="c"><oops/></testcase>'
                      b'</testsuite></testsuites>', "not allowed"),
                     (b'<testsuites><testsuite name="s" tests="1"><testcase/></testsuite></testsuites>',
                      "required attribute 'name'"),
                     (b'<testsuites><testsuite name="s" tests="1" timestamp="yesterday"/></testsuites>', "dateTime"),
                     (b'<testsuites><testsuite name="s" tests="1"><system-out/><testcase name="c"/>'
                      b'</testsuite></testsuites>', "not allowed here"),
                     (b'<report/>', "no global element")):
        with pytest.raises(Invalid, match=why):
            SCHEMA.validate(bad)


def test_simulate_a_case_per_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, path = tmp_path / "out", tmp_path / "sim.xml"
    code = main(["simulate", "--seeds", "1-3", "--steps", "3000", "--bug", "ack-local-sss-only", "--out", str(out),
                 "--junit", str(path), "--json"])
    summary = json.loads(capsys.readouterr().out)
    root = SCHEMA.validate(path.read_bytes())
    got = cases(root)
    assert [c.get("name") for c in got] == ["seed 1", "seed 2", "seed 3"]
    failed = [c for c in got if c.find("failure") is not None]
    assert len(failed) == summary["unexplained"] and code == (1 if failed else 0)
    assert root.find("testsuite").get("failures") == str(len(failed))
    for c in failed:
        f = c.find("failure")
        assert f is not None and f.get("type") == "SYNC-ACK-ALL" and f.get("message", "").startswith("SYNC-ACK-ALL")
        trace = next(line.removeprefix("trace: ") for line in (f.text or "").splitlines() if line.startswith("trace: "))
        assert Path(trace).is_file()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["bugs"] == "ack-local-sss-only" and props["core"].startswith("sha256:")


def test_simulate_one_seed_and_an_explained_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, trace = tmp_path / "one.xml", tmp_path / "t.jsonl"
    assert main(["simulate", "--seed", "8", "--bug", "ack-local-sss-only", "--trace", str(trace), "--junit",
                 str(path)]) == 1
    (c,) = cases(SCHEMA.validate(path.read_bytes()))
    f = c.find("failure")
    assert f is not None and f"trace: {trace}" in (f.text or "") and f.get("type") == "SYNC-ACK-ALL"
    explained = junit.simulate_suite("safe", [], [{"seed": 4, "wall": 1.0, "finding": "F-GAP-UNION", "violation": {
        "invariant": "SYNC-SSS-HOLDS-ACKED", "step": 10, "t": 2000, "message": "lost p1-3"}}], 1.0, None)
    (c,) = cases(SCHEMA.validate(junit.to_xml(explained)))
    assert c.find("failure") is None and "explained by F-GAP-UNION" in (c.findtext("system-out") or "")


def test_check_a_case_per_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "check.xml"
    code = main(["check", "ack_local_sss_bug", "--workers", "1", "--out", str(tmp_path / "spec"), "--junit",
                 str(path)])
    (c,) = cases(SCHEMA.validate(path.read_bytes()))
    assert c.get("name") == "ack_local_sss_bug" and (c.find("failure") is None) == (code == 0)
    wrong = junit.check_suite([{"config": "small", "ok": False, "violated": "SYNC_ACK_ALL", "status": "violated",
                                "expect": "pass", "message": "", "seconds": 3.0, "trace": "runs/spec/small.jsonl"}], 2)
    (c,) = cases(SCHEMA.validate(junit.to_xml(wrong)))
    f = c.find("failure")
    assert f is not None and f.get("type") == "SYNC_ACK_ALL" and "runs/spec/small.jsonl" in (f.text or "")


def test_fuzz_suite_a_case_per_finding() -> None:
    summary: dict[str, Any] = {"out": "runs/fuzz", "runs": 40, "violations": 3, "elapsed": 61.0, "findings": [
        {"id": "a1b2", "invariant": "SYNC-SSS-HOLDS-ACKED", "explainedBy": "F-GAP-UNION", "seed": 5, "signature": "s",
         "originalActions": 30, "shrunkActions": 4, "shrunkSteps": 200, "tracePath": "traces/a1b2.jsonl.gz"},
        {"id": "c3d4", "invariant": "HA-EPOCH-BOUNDARY", "explainedBy": None, "seed": 9, "signature": "t",
         "originalActions": 20, "shrunkActions": 3, "shrunkSteps": 150, "tracePath": "traces/c3d4.jsonl.gz"}],
        "buckets": []}
    root = SCHEMA.validate(junit.to_xml(junit.fuzz_suite(summary, "safe", [])))
    explained, unexplained = cases(root)
    assert explained.find("failure") is None
    f = unexplained.find("failure")
    assert f is not None and f.get("type") == "HA-EPOCH-BOUNDARY" and "runs/fuzz/traces/c3d4.jsonl.gz" in (f.text or "")
    clean = SCHEMA.validate(junit.to_xml(junit.fuzz_suite({"runs": 40, "violations": 0, "findings": [],
                                                           "buckets": []}, "safe", [])))
    assert [c.get("name") for c in cases(clean)] == ["campaign"]


def test_real_test_suite_of_a_recorded_run() -> None:
    """The loaded run of ``tests/data/real`` as its verdict read then (LIVE-MASTER): a case per invariant a real run
    checks, the broken one failing with its message and the run's trace."""
    excerpt = json.loads((DATA / "result-excerpt.json").read_text())
    r = {**excerpt, "profile": "safe", "recipes": ["kill-master"], "report": "runs/real-test/report.html",
         "checked": {k: "the run" for k in REAL_CHECKS}}
    root = SCHEMA.validate(junit.to_xml(junit.real_test_suite(r, "5.3.3")))
    got = {c.get("name"): c for c in cases(root)}
    assert set(got) == set(REAL_CHECKS)
    f = got["LIVE-MASTER"].find("failure")
    assert f is not None and "masterEpoch 2" in f.get("message", "") and "runs/real-test/trace.jsonl" in (f.text or "")
    assert all(c.find("failure") is None for n, c in got.items() if n != "LIVE-MASTER")
    unchecked = junit.real_test_suite({**r, "checked": {}}, "5.3.3")
    assert all(c.skipped or c.failure for c in unchecked.cases)


def test_real_repro_suite_a_case_per_finding_version_and_run() -> None:
    outcomes = [Outcome("F-GAP-UNION", "5.3.3", 1, "reproduced", "SYNC-SSS-HOLDS-ACKED", "lost p1-3", ["x"], [], 80.0,
                        "runs/real-repro/F-GAP-UNION/v5.3.3-1"),
                Outcome("F-GAP-UNION", "5.5.0", 1, "not reproduced", "SYNC-SSS-HOLDS-ACKED", "held", [], [], 75.0,
                        "runs/real-repro/F-GAP-UNION/v5.5.0-1")]
    root = SCHEMA.validate(junit.to_xml(junit.real_repro_suite(outcomes)))
    a, b = cases(root)
    assert (a.get("classname"), b.get("classname")) == ("real.repro.5.3.3", "real.repro.5.5.0")
    assert a.find("failure") is None and b.find("failure") is not None


def test_the_example_workflows_commands_parse() -> None:
    """Every ``rmqha`` command of docs/ci/github-actions.yml is a valid command line of this kit (its inputs at their
    defaults), and each job publishes the XML its command writes."""
    import re
    import shlex

    from rmqha.cli import parser

    text = (Path(__file__).resolve().parent.parent / "docs" / "ci" / "github-actions.yml").read_text()
    text = re.sub(r"\$\{\{ inputs\.\w+ \|\| '([^']*)' \}\}", r"\1", text)
    text = re.sub(r">-\n((?: {10}\S.*\n)+)", lambda m: " ".join(m.group(1).split()) + "\n", text)  # a folded run
    commands = [shlex.split(m.group(1).split(" > ")[0]) for m in re.finditer(r"\.venv/bin/rmqha (.+)", text)]
    assert {c[0] for c in commands} >= {"doctor", "fuzz", "check", "real"}
    p, _ = parser()
    for argv in commands:
        args = p.parse_args(argv)
        if getattr(args, "junit", None):
            assert f"report_paths: {args.junit}" in text, args.junit
