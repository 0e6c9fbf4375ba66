"""Cross-layer replay: TLC's unclean-election counterexample (kept in tests/data/crosslayer/, as `rmqha check
unclean_bug` wrote it) replays state for state on the model, and its environment steps, played on the
implementation's simulator by ``rmqha.models.crosslayer``, lose the same acknowledged message there; with unclean
election off the same schedule loses nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.runner import run_header
from rmqha.impl.trace import parse
from rmqha.models import crosslayer
from rmqha.spec import speccheck

from rmqha.cli.doctor import java_status

DATA = Path(__file__).resolve().parent / "data" / "crosslayer"


def _objs(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_unclean_counterexample_replays_on_the_model() -> None:
    ok, line = speccheck.replay_model_trace(_objs(DATA / "unclean_bug.trace.jsonl"))
    assert ok, line


def test_unclean_counterexample_fails_the_implementation_the_same_way() -> None:
    tr = crosslayer.translate(_objs(DATA / "unclean_bug.trace.jsonl"))
    assert tr.expect == "SYNC-NO-ACK-LOSS" and tr.enabled == ["SYNC-NO-ACK-LOSS"]
    res = crosslayer.run_on_impl(tr)
    assert res.violation is not None and res.violation.invariant == "SYNC-NO-ACK-LOSS", res.violation
    # the implementation trace replays byte for byte from its header
    header, _, footer = parse(res.text or "")
    again = run_header(header)
    assert again.digest == footer["hash"] == res.digest


def test_same_schedule_with_unclean_election_off_loses_nothing() -> None:
    objs = _objs(DATA / "unclean_bug.trace.jsonl")
    objs[0] = dict(objs[0], constants=dict(objs[0]["constants"], Unclean=False))
    tr = crosslayer.translate(objs)
    assert config_from_dict(tr.config, default_config("safe")).controller.enable_elect_unclean_master is False
    res = crosslayer.run_on_impl(tr)
    assert res.violation is None, res.violation


@pytest.mark.skipif(not java_status()[0], reason="Java 17 is needed for TLC")
def test_fresh_tlc_counterexample_goes_to_the_implementation(tmp_path: Path) -> None:
    r = speccheck.run_one_tlc("unclean_bug", speccheck.load_manifest(), workers=1, trace_dir=tmp_path)
    assert r["ok"] and r["violated"] == "SYNC_NO_ACK_LOSS", r
    res = crosslayer.run_on_impl(crosslayer.translate(_objs(Path(r["trace"]))))
    assert res.violation is not None and res.violation.invariant == "SYNC-NO-ACK-LOSS"


def test_replay_mistakes_are_one_line_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"layer": "model"}\n')
    impl_trace = tmp_path / "impl.jsonl"
    res = crosslayer.run_on_impl(crosslayer.translate(_objs(DATA / "unclean_bug.trace.jsonl")))
    impl_trace.write_text(res.text or "")
    for args in (["replay", str(bad)], ["replay", str(impl_trace), "--impl", str(tmp_path / "x.jsonl")]):
        p = subprocess.run([sys.executable, "-m", "rmqha", *args], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("rmqha: "), p.stderr


def test_replay_impl_flag_writes_a_failing_implementation_trace(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "impl.jsonl"
    p = subprocess.run([sys.executable, "-m", "rmqha", "replay", str(DATA / "unclean_bug.trace.jsonl"), "--impl",
                        str(out), "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["reproduced"] and report["impl"]["violation"]["invariant"] == "SYNC-NO-ACK-LOSS"
    again = subprocess.run([sys.executable, "-m", "rmqha", "replay", str(out)], capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
