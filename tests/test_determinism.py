"""Same inputs, same trace, byte for byte, in any process; replay checks exactly that."""

import gzip
import json
import os
import subprocess
import sys

from rmqha.impl.sim.config import default_config
from rmqha.impl.sim.runner import run, run_header
from rmqha.impl.trace import parse

STEPS = 3000


def _rmqha(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "rmqha", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def test_same_seed_same_trace_in_process():
    a = run(default_config("safe"), 11, STEPS)
    b = run(default_config("safe"), 11, STEPS)
    assert a.digest == b.digest and a.text == b.text


def test_different_seeds_differ():
    assert run(default_config("safe"), 11, STEPS).digest != run(default_config("safe"), 12, STEPS).digest


def test_fresh_processes_with_different_hash_seeds_write_identical_traces(tmp_path):
    outs = []
    for hashseed in ("0", "4242"):
        path = tmp_path / f"t{hashseed}.jsonl"
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        p = _rmqha("simulate", "--seed", "5", "--steps", str(STEPS), "--trace", str(path), env=env)
        assert p.returncode in (0, 1), p.stderr
        outs.append(path.read_bytes())
    assert outs[0] == outs[1]
    assert len(outs[0]) > 10_000


def test_replay_reproduces_in_a_new_process(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    p = _rmqha("simulate", "--seed", "7", "--steps", str(STEPS), "--trace", str(path))
    assert p.returncode in (0, 1), p.stderr
    r = _rmqha("replay", str(path), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["reproduced"] and report["hash"] == report["recordedHash"]


def test_replay_rejects_a_tampered_trace(tmp_path):
    text = run(default_config("safe"), 3, STEPS).text
    lines = text.splitlines()
    step = json.loads(lines[5])
    step["t"] += 1
    lines[5] = json.dumps(step, sort_keys=True, separators=(",", ":"))
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    r = _rmqha("replay", str(path), "--json")
    assert r.returncode == 1
    assert json.loads(r.stdout)["firstDifferentLine"] == 6


def test_explicit_schedule_replays_from_its_header():
    sched = [{"t": 6000, "do": "crash", "node": "b2", "powerLoss": False}, {"t": 9000, "do": "restart", "node": "b2"}]
    first = run(default_config("safe"), 2, STEPS, schedule=sched)
    header, _, footer = parse(first.text)
    again = run_header(header)
    assert again.digest == footer["hash"] == first.digest


def test_gzip_trace_is_deterministic(tmp_path):
    paths = [tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"]
    for path in paths:
        assert _rmqha("simulate", "--seed", "4", "--steps", "500", "--trace", str(path)).returncode in (0, 1)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert gzip.decompress(paths[0].read_bytes()).startswith(b'{"bugs"')
