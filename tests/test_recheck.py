"""Provenance and recheck (issue 30, item 1): a trace names the kit and the core that recorded it; ``rmqha replay``
says in one line when another core recorded it (exit 3 when today's run differs); ``rmqha recheck`` re-runs a trace
on today's kit and says whether its violation still happens."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rmqha.impl.findings import FINDINGS
from rmqha.impl.sim import provenance
from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.runner import run, run_header
from rmqha.impl.sim.tracefile import read_text
from rmqha.impl.trace import parse
from rmqha.models.recheck import recheck

import rmqha

ROOT = Path(__file__).resolve().parent.parent
OLD = ROOT / "tests" / "data" / "traces" / "before-provenance-ack-local-sss-only-8.jsonl.gz"
FINDING = ROOT / "docs" / "findings" / "traces" / "F-GAP-UNION.jsonl.gz"


def _rmqha(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "rmqha", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


def test_a_new_trace_names_the_kit_and_the_core():
    header, _, _ = parse(run(default_config("safe"), 5, 300).text)
    assert header["kit"] == rmqha.__version__ == provenance.kit_version()
    assert header["core"] == provenance.fingerprint()
    assert header["core"].startswith("sha256:") and len(header["core"]) == len("sha256:") + 16


def test_the_fingerprint_covers_the_core_and_the_model_not_the_reports():
    paths = [p for p, _ in provenance.core_files()]
    assert "rmqha.impl/sim/world.py" in paths and "rmqha.impl/controller/replicas_info.py" in paths
    assert "rmqha.models/conform.py" in paths
    assert not any(p.startswith("rmqha.impl/sim/report/") for p in paths)
    assert not any("__pycache__" in p for p in paths)
    files = provenance.core_files()
    changed = [(p, d + b"\n# a comment\n") if p == "rmqha.impl/sim/world.py" else (p, d) for p, d in files]
    assert provenance.digest(changed) != provenance.digest(files)


def test_the_fingerprint_is_the_same_from_the_zip_spark_executors_import(tmp_path):
    from rmqha.spark_fuzz.session import kit_zip

    z = kit_zip(str(tmp_path))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import rmqha.impl.sim.provenance as p; "
            "import rmqha.impl; assert rmqha.impl.__file__.startswith(sys.argv[1]), rmqha.impl.__file__; "
            "print(p.fingerprint())")
    # -S: no site-packages, so the editable install's finder cannot supply rmqha; the zip alone does
    out = subprocess.run([sys.executable, "-S", "-c", code, z], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == provenance.fingerprint()


def test_a_trace_before_provenance_that_replays_identically_says_so_in_one_line():
    p = _rmqha("replay", str(FINDING))
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("reproduced")
    said = [x for x in lines if "did not record its core" in x]
    assert len(said) == 1 and "runs it the same" in said[0] and provenance.fingerprint() in said[0]


def test_a_trace_before_provenance_whose_run_changed_exits_3_and_points_at_recheck():
    p = _rmqha("replay", str(OLD))
    assert p.returncode == 3, p.stdout + p.stderr
    said = [x for x in p.stdout.splitlines() if "did not record its core" in x]
    assert len(said) == 1 and "exit 3" in said[0] and f"rmqha recheck {OLD}" in said[0]
    j = json.loads(_rmqha("replay", str(OLD), "--json").stdout)
    assert j["exit"] == 3 and not j["reproduced"] and not j["sameCore"]
    assert j["recordedBy"] == {"kit": None, "core": None} and j["firstDifferentLine"] > 1


def test_recheck_says_the_old_traces_violation_still_fails():
    p = _rmqha("recheck", str(OLD))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "still fails: SYNC-ACK-ALL at step" in p.stdout and "1 of 1 as recorded" in p.stdout
    j = json.loads(_rmqha("recheck", str(OLD), "--json").stdout)
    (t,) = j["traces"]
    assert j["asRecorded"] and t["verdict"] == "still-fails" and t["by"] == "seed" and not t["identical"]
    assert t["now"]["invariant"] == t["recorded"]["invariant"] == "SYNC-ACK-ALL"


def test_a_trace_of_another_core_whose_run_is_the_same_exits_0_with_one_line(tmp_path):
    header, _, _ = parse(run(default_config("safe"), 4, 400).text)
    text = run_header(dict(header, kit="0.0.9", core="sha256:0123456789abcdef")).text
    path = tmp_path / "other.jsonl"
    path.write_text(text)
    p = _rmqha("replay", str(path))
    assert p.returncode == 0, p.stdout + p.stderr
    said = [x for x in p.stdout.splitlines() if "recorded by" in x]
    assert said == [f"recorded by kit 0.0.9, core sha256:0123456789abcdef; today's core {provenance.fingerprint()} "
                    "runs it the same"]


def test_a_run_of_todays_core_that_differs_still_exits_1(tmp_path):
    lines = run(default_config("safe"), 3, 400).text.splitlines()
    step = json.loads(lines[5])
    step["t"] += 1
    lines[5] = json.dumps(step, sort_keys=True, separators=(",", ":"))
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    p = _rmqha("replay", str(path))
    assert p.returncode == 1 and "recorded by" not in p.stdout


def test_recheck_verdicts():
    text = read_text(str(OLD))
    header, lines, footer = parse(text)
    # the seed draws other faults, the recorded ones still break it (seed 102: measured, see the README of the data)
    r = recheck(dict(header, seed=102), lines, footer, text)
    assert r.verdict == "still-fails" and r.by == "recorded faults" and r.as_recorded
    ftext = read_text(str(FINDING))
    fh, fl, ff = parse(ftext)
    fixed = dict(fh, bugs=sorted([*fh["bugs"], FINDINGS["F-GAP-UNION"].fix]))
    gone = recheck(fixed, fl, ff, ftext)
    assert gone.verdict == "no-longer-fails" and not gone.as_recorded and gone.now is None
    other = dict(ff, violation=dict(ff["violation"], invariant="NOT-" + ff["violation"]["invariant"]))
    assert recheck(fh, fl, other, ftext).verdict == "fails-differently"
    assert recheck(fh, fl, ff, ftext).identical
    clean_text = run(default_config("safe"), 6, 300).text
    ch, cl, cf = parse(clean_text)
    assert cf["violation"] is None
    r = recheck(ch, cl, cf, clean_text)
    assert r.verdict == "still-clean" and r.identical and r.same_core
    assert recheck(ch, cl, dict(cf, violation=ff["violation"]), clean_text).verdict == "no-longer-fails"
    assert recheck(fh, fl, dict(ff, violation=None), ftext).verdict == "now-fails"


def test_recheck_of_a_folder_and_its_exit_status(tmp_path):
    ftext = read_text(str(FINDING))
    fh, _, ff = parse(ftext)
    (tmp_path / "a.jsonl").write_text(ftext)
    fixed = run_header(dict(fh, bugs=sorted([*fh["bugs"], FINDINGS["F-GAP-UNION"].fix])))
    # a trace that records the violation, whose header now has the fix on: the violation is gone
    footer = json.dumps(dict(ff, hash=fixed.digest), sort_keys=True, separators=(",", ":"))
    broken = [*fixed.text.splitlines()[:-1], footer]
    (tmp_path / "b.jsonl").write_text("\n".join(broken) + "\n")
    (tmp_path / "notes.txt").write_text("not a trace")
    p = _rmqha("recheck", str(tmp_path))
    assert p.returncode == 1, p.stdout + p.stderr
    out = p.stdout.splitlines()
    assert out[0].startswith(f"{tmp_path / 'a.jsonl'}: still fails: SYNC-SSS-HOLDS-ACKED")
    assert out[1].startswith(f"{tmp_path / 'b.jsonl'}: no longer fails (recorded SYNC-SSS-HOLDS-ACKED)")
    assert out[-1] == "1 of 2 as recorded"


@pytest.mark.parametrize("make, says", [
    (lambda d: d / "empty", "no trace in this folder"),
    (lambda d: ROOT / "tests" / "data" / "crosslayer" / "unclean_bug.trace.jsonl", "a model trace"),
])
def test_recheck_refuses_what_it_cannot_rerun(tmp_path, make, says):
    (tmp_path / "empty").mkdir()
    p = _rmqha("recheck", str(make(tmp_path)))
    assert p.returncode == 2 and says in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr


def test_recheck_refuses_a_real_runs_record(tmp_path):
    header, _, _ = parse(run(default_config("safe"), 4, 100).text)
    rec = dict(header, faults={"mode": "real", "events": []})
    path = tmp_path / "real.jsonl"
    footer = {"end": True, "steps": 0, "t": 0, "violation": None, "hash": "sha256:0"}
    path.write_text(json.dumps(rec) + "\n" + json.dumps(footer) + "\n")
    p = _rmqha("recheck", str(path))
    assert p.returncode == 2 and "a record of a real run" in p.stderr and len(p.stderr.splitlines()) == 1
    assert os.path.exists(path)
