"""The command line: listings, and one clear line with exit 2 for every user mistake."""

import json
import subprocess
import sys

import pytest
from rmqha.impl.invariants import CATALOGUE


def _rmqha(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "rmqha", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize("args", [
    ["simulate", "--seed", "x"],
    ["simulate", "--steps", "0"],
    ["simulate", "--bug", "no-such-bug"],
    ["simulate", "--fix", "nothing"],
    ["simulate", "--profile", "nope"],
    ["simulate", "--seeds", "9-3"],
    ["simulate", "--config", "/no/such/file.toml"],
    ["replay", "/no/such/trace.jsonl"],
    ["frobnicate"],
    [],
])
def test_user_mistakes_are_one_line_exit_2(args):
    p = _rmqha(*args)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("rmqha: ")
    assert "Traceback" not in p.stderr


def test_bad_files_are_one_line_exit_2(tmp_path):
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("[store\nx=1")
    wrong_key = tmp_path / "wrong.toml"
    wrong_key.write_text("[store]\nallAckInSyncStateSet = 3\n")
    garbage = tmp_path / "g.jsonl"
    garbage.write_text("not json\n")
    not_trace = tmp_path / "n.jsonl"
    not_trace.write_text('{"hello": 1}\n')
    for args in (["simulate", "--config", str(bad_toml)], ["simulate", "--config", str(wrong_key)],
                 ["replay", str(garbage)], ["replay", str(not_trace)]):
        p = _rmqha(*args)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, (args, p.stderr)


def test_invariants_json_lists_the_catalogue():
    p = _rmqha("invariants", "--json")
    rows = json.loads(p.stdout)
    assert [r["id"] for r in rows] == [i.id for i in CATALOGUE]
    assert all(r["source"] and r["statement"] and r["tla"] for r in rows)


def test_bugs_and_findings_json():
    bugs = json.loads(_rmqha("bugs", "--json").stdout)
    assert {b["kind"] for b in bugs} == {"switch", "config", "fix", "fidelity", "upstream", "guard"}
    findings = json.loads(_rmqha("findings", "--json").stdout)
    assert findings and all(f["fix"] in {b["name"] for b in bugs} for f in findings)


def test_config_file_overrides_a_profile(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('profile = "safe"\n[cluster]\nbrokers = 2\n[faults]\nmean_interval = 5000\n')
    p = _rmqha("simulate", "--config", str(cfg), "--seed", "3", "--steps", "400", "--json", "--no-progress")
    assert p.returncode in (0, 1), p.stderr
    assert json.loads(p.stdout)["steps"] == 400  # the fault phase alone: no settle tail after it
    cfg.write_text('profile = "safe"\n[sim]\nprogress = false\n')  # a file turns the settle tail off too
    p = _rmqha("simulate", "--config", str(cfg), "--seed", "3", "--steps", "400", "--json")
    assert p.returncode in (0, 1), p.stderr
    assert json.loads(p.stdout)["steps"] == 400


def test_batch_runs_seeds_and_writes_a_summary(tmp_path):
    out = tmp_path / "out"
    p = _rmqha("simulate", "--seeds", "1-3", "--steps", "400", "--jobs", "2", "--out", str(out), "--json")
    assert p.returncode in (0, 1), p.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == 3 and [r["seed"] for r in summary["results"]] == [1, 2, 3]


def test_a_fidelity_switch_turns_its_part_on():
    """``--bug`` with a fidelity switch applies the settings of its part (here frames in pieces), so the
    deviation is reachable from the command line."""
    p = _rmqha("simulate", "--seed", "1", "--bug", "client-acks-announced-body", "--json")
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["violation"]["invariant"] == "HA-ACK-BOUND"
