"""``rmqha real fault netem`` as docs/real.md writes it, and netem's absence said at once (issue 30, item 5). The
machine's own netem is never needed: ``netns.netem_status`` is replaced by what each test needs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from rich.console import Console

import rmqha.cli.real as cli_real
from rmqha.cli import main
from rmqha.cli.doctor import check_netem
from rmqha.real import netns

REAL_JSON = {"run": "abcdef", "version": "5.3.3", "controllerType": "DLedger", "controllers": ["c0"],
             "brokers": ["b1", "b2", "b3"], "config": {}, "profile": "safe", "lifetimeS": 60, "createdMs": 0}


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "r"
    d.mkdir()
    (d / "real.json").write_text(json.dumps(REAL_JSON))
    monkeypatch.chdir(tmp_path)
    return d


def _netem(monkeypatch: pytest.MonkeyPatch, ok: bool) -> None:
    line = "tc netem works" if ok else "`tc qdisc add ... netem` fails: Error: Specified qdisc kind is unknown."
    monkeypatch.setattr(netns, "netem_status", lambda: (ok, line))


@pytest.mark.parametrize("argv", [
    ["real", "fault", "netem", "b2", "--to", "c0", "--dir", "r", "--", "delay", "200ms", "50ms"],  # docs/real.md
    ["real", "fault", "netem", "--to", "c0", "b2", "--dir", "r", "--", "delay", "200ms", "50ms"],
    ["real", "fault", "netem", "--dir", "r", "--to", "c0", "b2", "delay", "200ms", "50ms"],
    ["real", "fault", "--to", "c0", "netem", "b2", "--dir", "r", "--", "delay", "200ms", "50ms"],
])
def test_netem_parses_in_every_order(argv: list[str], run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _netem(monkeypatch, True)
    seen: list[argparse.Namespace] = []

    def dispatch(args: argparse.Namespace, out: Console) -> int:
        cli_real._fault_options(args)
        seen.append(args)
        return 0

    monkeypatch.setattr(cli_real, "_dispatch", dispatch)
    assert main(argv) == 0
    (args,) = seen
    assert (args.kind, args.node, args.to) == ("netem", "b2", "c0")
    assert [a for a in args.netem if a != "--"] == ["delay", "200ms", "50ms"]


def test_an_unknown_option_among_them_is_one_line(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["real", "fault", "netem", "b2", "--bogus", "--dir", "r", "--", "loss", "3%"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--bogus" in err


@pytest.mark.parametrize("argv", [
    ["real", "fault", "netem", "b2", "--dir", "r", "--", "loss", "30%"],
    ["real", "test", "--faults", "kill-master,net-loss-master", "--dir", "new"],
])
def test_without_netem_a_netem_fault_is_refused_at_once(argv: list[str], run_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    _netem(monkeypatch, False)
    monkeypatch.setattr("subprocess.Popen", lambda *a, **k: pytest.fail(f"started {a[:1]}"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs tc netem, which this machine lacks" in err and "qdisc" in err, err
    assert not (run_dir.parent / "new").exists()


def test_doctor_says_what_netems_absence_disables(monkeypatch: pytest.MonkeyPatch) -> None:
    _netem(monkeypatch, False)
    c = check_netem()
    assert not c.ok and not c.needed  # the main job does not need it
    assert "net-loss-master" in c.detail and "real fault netem" in c.detail and "sch_netem" in c.fix
    _netem(monkeypatch, True)
    assert check_netem().ok


def test_netem_status_on_this_machine_is_one_line() -> None:
    netns.netem_status.cache_clear()
    ok, line = netns.netem_status()
    assert isinstance(ok, bool) and line and "\n" not in line
