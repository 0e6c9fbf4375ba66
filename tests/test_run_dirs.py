"""One run per folder: ``cluster up``, ``cluster test``, ``real up`` and ``real test`` refuse a folder that holds
another run's files (``--fresh`` wipes it: only a run's own files, never a folder that is not a run's), and never
touch a cluster that is running. Nothing here starts a process: the step after the folder check is replaced by one
that stops the test."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from rmqha.impl.sim.config import PROFILES

from rmqha.cli import main
from rmqha.cluster import control as CC
from rmqha.cluster import rundir
from rmqha.cluster.run import RunOptions, run_test
from rmqha.cluster.spec import local_config
from rmqha.real import control as RC

CLUSTER_JSON = {"config": {}, "seed": 1, "bugs": [], "nodes": ["ns", "ctl", "b1"], "controllers": ["ctl"],
                "brokers": ["b1"], "nameserver": "ns", "ports": {}, "proxyPort": 1, "clockBase": 0.0,
                "maxLifetime": 60}


class Reached(BaseException):
    """The step after the folder check (creating the run) was reached."""


def _stop(*args: object, **kwargs: object) -> None:
    raise Reached


@pytest.fixture(autouse=True)
def no_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "Popen", _stop)


def earlier_cluster_run(d: Path) -> Path:
    """A folder as ``rmqha cluster test`` leaves it."""
    d.mkdir()
    (d / "cluster.json").write_text(json.dumps(CLUSTER_JSON))
    for sub in ("nodes/b1", "traces", "logs"):
        (d / sub).mkdir(parents=True)
    (d / "nodes" / "b1" / "commitlog").write_bytes(b"old run")
    for name in ("history.jsonl", "trace.jsonl", "result.json", "report.html", "pids.json", "faults.jsonl"):
        (d / name).write_text("{}\n")
    return d


# ------------------------------------------------------------------------------------------------ the check


def test_a_new_or_empty_folder_is_taken_as_is(tmp_path: Path) -> None:
    assert rundir.earlier_run(tmp_path / "new", "cluster.json", CC.RUN_ENTRIES, fresh=False, what="cluster") == []
    (tmp_path / "empty").mkdir()
    assert rundir.earlier_run(tmp_path / "empty", "cluster.json", CC.RUN_ENTRIES, fresh=True, what="cluster") == []


def test_an_earlier_run_is_refused_without_fresh_and_wiped_with_it(tmp_path: Path) -> None:
    d = earlier_cluster_run(tmp_path / "run")
    with pytest.raises(rundir.RunDirError, match="holds an earlier cluster run: give another --dir, or --fresh"):
        rundir.earlier_run(d, "cluster.json", CC.RUN_ENTRIES, fresh=False, what="cluster")
    assert (d / "history.jsonl").exists()
    rundir.wipe(rundir.earlier_run(d, "cluster.json", CC.RUN_ENTRIES, fresh=True, what="cluster"))
    assert d.is_dir() and list(d.iterdir()) == []


@pytest.mark.parametrize("fresh", [False, True])
def test_a_folder_that_is_not_a_run_is_never_wiped(tmp_path: Path, fresh: bool) -> None:
    d = tmp_path / "mine"
    d.mkdir()
    (d / "thesis.tex").write_text("years of work")
    (d / "logs").mkdir()
    with pytest.raises(rundir.RunDirError, match="holds no cluster run"):
        rundir.earlier_run(d, "cluster.json", CC.RUN_ENTRIES, fresh=fresh, what="cluster")
    mixed = earlier_cluster_run(tmp_path / "mixed")
    (mixed / "thesis.tex").write_text("years of work")
    with pytest.raises(rundir.RunDirError, match=r"files it did not write \(thesis.tex\): not wiping it"):
        rundir.earlier_run(mixed, "cluster.json", CC.RUN_ENTRIES, fresh=fresh, what="cluster")
    assert (d / "thesis.tex").exists() and (mixed / "thesis.tex").exists() and (mixed / "history.jsonl").exists()


def test_a_file_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(rundir.RunDirError, match="a file, not a folder"):
        rundir.earlier_run(tmp_path / "f", "cluster.json", CC.RUN_ENTRIES, fresh=True, what="cluster")


# ------------------------------------------------------------------------------------------------ rmqha cluster


def test_cluster_test_twice_in_one_folder_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """The bug: a second run in the same folder read both runs' histories as one, and said "valid"."""
    d = earlier_cluster_run(tmp_path / "run")
    with pytest.raises(CC.ClusterError, match="--fresh"):
        run_test(RunOptions(d, local_config(PROFILES["safe"]), "safe"))
    assert (d / "history.jsonl").read_text() == "{}\n"


def test_cluster_up_fresh_wipes_only_the_earlier_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    d = earlier_cluster_run(tmp_path / "run")
    assert main(["cluster", "up", "--dir", str(d)]) == 2
    assert "--fresh to wipe it" in capsys.readouterr().err
    assert (d / "nodes" / "b1" / "commitlog").exists()
    monkeypatch.setattr(CC, "create", _stop)  # what comes after the folder check: the new run's layout
    with pytest.raises(Reached):
        main(["cluster", "up", "--dir", str(d), "--fresh"])
    assert list(d.iterdir()) == []


def test_cluster_test_fresh_goes_on_to_start_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = earlier_cluster_run(tmp_path / "run")
    monkeypatch.setattr(CC, "create", _stop)
    with pytest.raises(Reached):
        main(["cluster", "test", "--dir", str(d), "--fresh", "--duration", "1"])
    assert list(d.iterdir()) == []


def test_a_running_cluster_is_never_wiped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    d = earlier_cluster_run(tmp_path / "run")
    (d / "running").write_text(str(os.getpid()))
    (d / "pids.json").write_text(json.dumps({"b1": os.getpid()}))
    monkeypatch.setattr(CC, "alive", lambda pid: pid == os.getpid())
    assert main(["cluster", "up", "--dir", str(d), "--fresh"]) == 2
    assert "already running" in capsys.readouterr().err
    assert (d / "history.jsonl").exists()


# ------------------------------------------------------------------------------------------------ rmqha real


def earlier_real_run(d: Path) -> Path:
    d.mkdir()
    (d / "real.json").write_text("{}")  # torn: an earlier run all the same
    for sub in ("nodes/b1", "logs", "events", "clients"):
        (d / sub).mkdir(parents=True)
    for name in ("proxy.json", "classpath.txt", "history.jsonl", "result.json", "report.html"):
        (d / name).write_text("{}\n")
    return d


@pytest.mark.parametrize("cmd", [["real", "up"], ["real", "test"]])
def test_real_runs_own_their_folder_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str], cmd: list[str]) -> None:
    d = earlier_real_run(tmp_path / "run")
    downs: list[Path] = []
    monkeypatch.setattr(RC, "down", lambda folder, **kw: downs.append(folder) or [])
    monkeypatch.setattr(RC, "preflight", _stop)  # what comes after the folder check: root, namespaces, java
    assert main([*cmd, "--dir", str(d)]) == 2
    assert "--fresh to wipe it" in capsys.readouterr().err and downs == []
    (d / "thesis.tex").write_text("mine")
    assert main([*cmd, "--dir", str(d), "--fresh"]) == 2
    assert "not wiping it" in capsys.readouterr().err and (d / "history.jsonl").exists() and downs == []
    (d / "thesis.tex").unlink()
    with pytest.raises(Reached):
        main([*cmd, "--dir", str(d), "--fresh"])
    assert downs == [d.resolve()] and list(d.iterdir()) == []


def test_real_fresh_refuses_a_folder_that_is_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "home"
    d.mkdir()
    (d / ".bashrc").write_text("mine")
    assert main(["real", "up", "--dir", str(d), "--fresh"]) == 2  # it used to rmtree the folder, whatever it held
    assert "holds no real cluster run" in capsys.readouterr().err and (d / ".bashrc").exists()
