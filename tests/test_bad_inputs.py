"""The bad-input sweep: every subcommand, every kind of option, answered with one line and exit status 2.

Each case runs in process through ``rmqha.cli.main(argv)``, in a fresh folder that is its working directory (its
``HOME`` too), and must: exit 2; print exactly one line on stderr, starting ``rmqha: ``, and nothing on stdout; show
no traceback; write nothing (the folder is the same before and after, and no output path it names appears); and
start nothing: ``subprocess.Popen``, ``os.fork`` / ``posix_spawn`` / ``exec*``, ``_posixsubprocess.fork_exec``
(under ``multiprocessing`` and ``ProcessPoolExecutor``), the Spark session and the import of pyspark all fail the
test if reached (``sealed``): no Spark, TLC, Java, cluster or network namespace starts before validation is done.
A Hypothesis property draws a subcommand, an option and a bad value for it; a few runs of the installed ``rmqha``
command check the same from the outside.
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import json
import os
import re
import shutil
import string
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import rmqha.spark_fuzz.session as spark_session_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rmqha.impl.bugs import BUGS
from rmqha.impl.sim.config import PROFILES, default_config
from rmqha.impl.sim.runner import run
from rmqha.spec.speccheck import load_manifest

import rmqha.cli.fuzz as cli_fuzz
from rmqha.cli import main
from rmqha.cli.cluster import CLUSTER_PROFILES, RECIPES
from rmqha.cli.common import MAX_JOBS, MAX_LIFETIME, MAX_SECONDS, MAX_SEED, MAX_STEPS
from rmqha.cli.fuzz import FUZZ_PROFILES
from rmqha.real.spec import REAL_PROFILES

SPEC_CONFIGS = set(load_manifest()["configs"])


class Started(BaseException):
    """Something a bad input must never reach (a process, Spark) was reached: no ``except Exception`` hides it."""


def _refuse(what: str) -> object:
    def start(*args: object, **kwargs: object) -> None:
        raise Started(f"{what} reached by a bad input: {args[:2]!r}")

    return start


@pytest.fixture
def sealed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything starts a process or Spark."""
    monkeypatch.setattr(subprocess, "Popen", _refuse("subprocess.Popen"))
    monkeypatch.setattr(_posixsubprocess, "fork_exec", _refuse("_posixsubprocess.fork_exec"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execvpe", "system"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(f"os.{name}"))
    monkeypatch.setattr(spark_session_module, "spark_session", _refuse("the Spark session"))
    monkeypatch.setattr(cli_fuzz, "spark_session", _refuse("the Spark session"))
    for mod in ("pyspark", "pyspark.sql"):
        monkeypatch.setitem(sys.modules, mod, None)  # `import pyspark` fails: ImportError, not a campaign


# ------------------------------------------------------------------------------------------------ the folder

CLUSTER_JSON = {"config": {}, "seed": 1, "bugs": [], "nodes": ["ns", "ctl", "b1", "b2", "b3", "p1", "c1"],
                "controllers": ["ctl"], "brokers": ["b1", "b2", "b3"], "nameserver": "ns",
                "ports": {n: {"rpc": 1, "rpc_in": 2} for n in ("ns", "ctl", "b1", "b2", "b3", "p1", "c1")},
                "proxyPort": 3, "clockBase": 0.0, "maxLifetime": 60}
REAL_JSON = {"run": "abcdef", "version": "5.3.3", "controllerType": "DLedger", "controllers": ["c0"],
             "brokers": ["b1", "b2", "b3"], "config": {}, "profile": "safe", "lifetimeS": 60, "createdMs": 0}
LONG = "x" * 5000  # longer than any file name may be
SMALL_TRACE = run(default_config("safe"), 1, 40).text or ""  # a real trace of 40 steps (show, recheck, conform)
PROC = "/proc/rmqha-no-such"  # passes "can it be created" as root (every path looks writable), refuses every write


def populate(d: Path) -> None:
    """What the cases name, made before the folder's snapshot."""
    (d / "home").mkdir()
    (d / "afile.txt").write_text("x\n")
    (d / "adir").mkdir()
    (d / "bad.toml").write_text("[store\nx = 1\n")
    (d / "unknown.toml").write_text("[store]\nnoSuchSetting = 1\n")
    (d / "badvalue.toml").write_text("[store]\nallAckInSyncStateSet = 3\n")
    (d / "nan.toml").write_text("[network]\ndrop = nan\n")
    (d / "infweight.toml").write_text("[faults.weights]\ncrash-broker = inf\n")
    (d / "notable.toml").write_text("store = 3\n")
    (d / "listprofile.toml").write_text("profile = [1]\n")
    (d / "legacy.toml").write_text('profile = "legacy-sync"\n')
    (d / "fidelity.toml").write_text('profile = "fidelity"\n')
    (d / "badfuzz.toml").write_text("[fuzz]\nnoSuchKnob = 1\n")
    (d / "fuzznotable.toml").write_text("fuzz = 3\n")
    (d / "binary.toml").write_bytes(b"\xff\xfe\x00garbage")
    (d / "garbage.jsonl").write_text("not json\n")
    (d / "notrace.jsonl").write_text('{"hello": 1}\n')
    (d / "empty.jsonl").write_text("")
    (d / "broken.jsonl.gz").write_bytes(b"\x1f\x8b\x08garbage")
    (d / "binary.jsonl").write_bytes(b"\xff\xfe\xfd")
    os.mkfifo(d / "fifo")
    (d / "loop").symlink_to("loop")
    (d / "dangling").symlink_to("no-such-target")
    (d / "cluster").mkdir()
    (d / "cluster" / "cluster.json").write_text(json.dumps(CLUSTER_JSON))
    (d / "tornspec").mkdir()
    (d / "tornspec" / "cluster.json").write_text("{not json")
    (d / "oldrun").mkdir()
    (d / "oldrun" / "cluster.json").write_text(json.dumps(CLUSTER_JSON))
    (d / "oldrun" / "history.jsonl").write_text('{"k": "client.send"}\n')
    (d / "oldrun" / "nodes").mkdir()
    (d / "notarun").mkdir()
    (d / "notarun" / "notes.txt").write_text("mine\n")
    (d / "mixed").mkdir()
    (d / "mixed" / "cluster.json").write_text(json.dumps(CLUSTER_JSON))
    (d / "mixed" / "notes.txt").write_text("mine\n")
    (d / "realold").mkdir()
    (d / "realold" / "real.json").write_text(json.dumps(REAL_JSON))
    (d / "realold" / "nodes").mkdir()
    (d / "realmixed").mkdir()
    (d / "realmixed" / "real.json").write_text(json.dumps(REAL_JSON))
    (d / "realmixed" / "thesis.tex").write_text("mine\n")
    (d / "campaign").mkdir()
    (d / "campaign" / "journal.jsonl").write_text(json.dumps({"type": "start", "identity": {"config": {}}}) + "\n")
    (d / "notjournal").mkdir()
    (d / "notjournal" / "journal.jsonl").write_text(json.dumps({"type": "plan", "batch": 0}) + "\n")
    (d / "small.jsonl").write_text(SMALL_TRACE)
    head, _, foot = SMALL_TRACE.partition("\n")[0], None, SMALL_TRACE.splitlines()[-1]
    bad = json.loads(head)
    bad["config"]["store"]["noSuchSetting"] = 1
    (d / "badheader.jsonl").write_text(json.dumps(bad) + "\n" + foot + "\n")
    (d / "emptydir").mkdir()


def snapshot(d: Path) -> dict[str, tuple[str, int, int]]:
    """Every path under ``d`` with its kind, size and modification time."""
    out = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = Path(root) / name
            st_ = p.lstat()
            kind = "link" if p.is_symlink() else "dir" if p.is_dir() else "file"
            out[str(p.relative_to(d))] = (kind, st_.st_size if kind == "file" else 0, st_.st_mtime_ns)
    return out


OUTPUT_OPTIONS = ("--out", "--trace", "--impl", "--dir", "--junit")


def outputs_named(argv: list[str]) -> list[str]:
    """The output paths a command line names (``--out X`` and ``--out=X``)."""
    named = []
    for i, a in enumerate(argv):
        flag, eq, value = a.partition("=")
        if flag in OUTPUT_OPTIONS:
            if eq:
                named.append(value)
            elif i + 1 < len(argv):
                named.append(argv[i + 1])
    return [n for n in named if n and "\x00" not in n]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sealed: None) -> Path:
    d = tmp_path / "cwd"
    d.mkdir()
    populate(d)
    monkeypatch.chdir(d)
    monkeypatch.setenv("HOME", str(d / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(d / "home" / ".cache"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    return d


def _exists(path: str) -> bool:
    try:
        return os.path.lexists(path)
    except (ValueError, OSError):
        return False


def assert_refused(argv: list[str], d: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``argv`` in ``d``; assert the rules of the sweep; return the line."""
    before = snapshot(d)
    new_outputs = [o for o in outputs_named(argv) if not _exists(o)]
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, code, out, err)
    assert out == "", (argv, out)
    assert err.startswith("rmqha: ") and err.endswith("\n") and err.count("\n") == 1, (argv, err)
    assert "Traceback" not in err and "Exception" not in err, (argv, err)
    assert snapshot(d) == before, (argv, "wrote in the folder", set(snapshot(d)) ^ set(before))
    for o in new_outputs:
        assert not _exists(o), (argv, f"{o} appeared")
    return err


# ------------------------------------------------------------------------------------------------ the cases

BAD_INT = ["nan", "inf", "-1", "1.5", "1e3", "", "garbage", "0x10", "9" * 40]
BAD_COUNT = ["0", *BAD_INT]
BAD_FLOAT = ["nan", "inf", "-inf", "NaN", "-1", "0", "1e309", "", "garbage", "1e12"]

# (subcommand words, option) -> the bad values it gets (options that also refuse 0 take BAD_COUNT)
NUMBERS: dict[tuple[tuple[str, ...], str], list[str]] = {
    (("simulate",), "--seed"): BAD_INT,
    (("simulate",), "--steps"): BAD_COUNT,
    (("simulate",), "--max-time"): BAD_FLOAT,
    (("simulate", "--seeds", "1-2"), "--jobs"): BAD_COUNT,
    (("show", "garbage.jsonl"), "--around"): BAD_INT,
    (("show", "garbage.jsonl", "--around", "5"), "--window"): BAD_COUNT,
    (("check",), "--workers"): BAD_COUNT,
    (("conform", "--seeds", "1-2"), "--steps"): ["0", "-1", "nan"],
    (("conform", "--seeds", "1-2"), "--jobs"): ["0", "-1", "inf"],
    (("prove",), "--brokers"): ["0", "-1", "17", "nan"],
    (("fuzz",), "--budget"): BAD_FLOAT,
    (("fuzz",), "--seeds"): ["0", "-1", "nan", "", "garbage", "5-2", "1-2-3", "0-99999999", "2000000"],
    (("fuzz",), "--seed-start"): ["-1", "nan", "", "1.5", str(2**70)],
    (("fuzz",), "--steps"): ["0", "-1", "inf", "10000000000"],
    (("cluster", "up"), "--lifetime"): ["0", "-1", "nan", "100000000"],
    (("cluster", "up"), "--seed"): ["-1", "nan"],
    (("cluster", "status", "--dir", "cluster"), "--watch"): ["-1", "0", "nan", "inf", "garbage"],
    (("cluster", "test"), "--duration"): ["0", "-1", "nan", "inf"],
    (("cluster", "test"), "--down"): ["0", "nan"],
    (("cluster", "test"), "--settle"): ["-1", "inf"],
    (("real", "up"), "--lifetime"): ["0", "-1", "nan"],
    (("real", "up"), "--brokers"): ["0", "-1", "6", "9", "10", "nan"],
    (("real", "up"), "--controllers"): ["2", "0", "nan"],
    (("real", "status", "--dir", "realold"), "--watch"): ["-1", "nan", "inf"],
    (("real", "fault", "drop-response", "--code", "1", "--dir", "realold"), "--count"): ["0", "-1", "nan"],
    (("real", "fault", "drop-response", "--code", "1", "--dir", "realold"), "--for"): ["0", "nan", "inf"],
    (("real", "fault", "delay-response", "--code", "1", "--dir", "realold"), "--ms"): ["0", "-5", "nan"],
    (("real", "fault", "cut-stream", "b1", "--dir", "realold"), "--after-bytes"): ["-1", "nan"],
    (("real", "repro", "F-TRUNCATED-TAIL-RESURRECTS"), "--repeat"): ["0", "-1", "nan"],
    (("real", "test"), "--duration"): ["0", "nan", "inf"],
    (("real", "test"), "--settle"): ["-1"],
}

# option -> (subcommand words, bad paths): inputs that are not readable files, outputs that cannot be written
MISSING_FILE = ["missing.toml", "adir", "fifo", "loop", "dangling", "afile.txt/sub", "", LONG]
INPUT_FILES: list[tuple[tuple[str, ...], list[str]]] = [
    (("simulate", "--config"), MISSING_FILE),
    (("fuzz", "--config"), MISSING_FILE),
    (("cluster", "up", "--config"), ["missing.toml", "adir", "fifo"]),
    (("cluster", "test", "--config"), ["missing.toml", "adir"]),
    (("real", "up", "--config"), ["missing.toml", "adir"]),
    (("real", "test", "--config"), ["missing.toml", "loop"]),
    (("replay",), ["missing.jsonl", "adir", "fifo", "loop", "", LONG]),
    (("show",), ["missing.jsonl", "adir", "fifo", "dangling"]),
    (("conform",), ["missing.jsonl", "fifo", "loop", "adir", "notarun"]),
]
OUTPUT_PATHS: list[tuple[tuple[str, ...], list[str]]] = [
    (("simulate", "--seeds", "1-2", "--out"), ["afile.txt", "afile.txt/sub", "", LONG]),
    (("simulate", "--seed", "1", "--trace"), ["adir", "afile.txt/t.jsonl", "", "new/"]),
    (("fuzz", "--out"), ["afile.txt", "afile.txt/sub", "", "loop"]),
    (("check", "unclean_bug", "--out"), ["afile.txt", "afile.txt/deeper/x", ""]),
    (("replay", "garbage.jsonl", "--impl"), ["adir", "afile.txt/x.jsonl"]),
    (("cluster", "up", "--dir"), ["afile.txt", "afile.txt/c", ""]),
    (("cluster", "test", "--dir"), ["afile.txt", "afile.txt/c"]),
    (("cluster", "status", "--dir"), ["afile.txt", "missing-dir", ""]),
    (("cluster", "down", "--dir"), ["afile.txt", "missing-dir"]),
    (("cluster", "kill", "b1", "--dir"), ["afile.txt", "missing-dir"]),
    (("real", "up", "--dir"), ["afile.txt", "afile.txt/r"]),
    (("real", "test", "--dir"), ["afile.txt"]),
    (("real", "status", "--dir"), ["afile.txt", "missing-dir"]),
    (("real", "down", "--dir"), ["missing-dir"]),
    (("real", "repro", "F-TRUNCATED-TAIL-RESURRECTS", "--dir"), ["afile.txt"]),
    # paths only a write can refuse (issue 30): each claimed (made, or a probe written) before any work starts
    *[(words, [PROC, f"{PROC}/deeper"]) for words in (
        ("cluster", "up", "--dir"), ("cluster", "test", "--dir"), ("real", "up", "--dir"), ("real", "test", "--dir"),
        ("real", "repro", "F-TRUNCATED-TAIL-RESURRECTS", "--dir"), ("check", "unclean_bug", "--out"),
        ("simulate", "--seeds", "1-2", "--out"), ("fuzz", "--seeds", "1", "--out"))],
    (("simulate", "--seed", "1", "--trace"), [f"{PROC}.jsonl", f"{PROC}/t.jsonl.gz"]),
    (("real", "up", "--dir"), ["/proc"]),
    *[(words, ["adir", "afile.txt/j.xml", "", f"{PROC}.xml"]) for words in (
        ("simulate", "--seed", "1", "--junit"), ("simulate", "--seeds", "1-2", "--junit"), ("fuzz", "--junit"),
        ("check", "unclean_bug", "--junit"), ("real", "test", "--junit"),
        ("real", "repro", "F-TRUNCATED-TAIL-RESURRECTS", "--junit"))],
]

# whole command lines: unknown names, bad files' contents, conflicting options, run folders, cluster state
LINES: list[list[str]] = [
    [], ["frobnicate"], ["--frobnicate"], ["simulate", "--frobnicate"], ["invariants", "extra"], ["doctor", "--x"],
    # unknown names
    ["simulate", "--profile", "nope"], ["simulate", "--profile", ""], ["simulate", "--bug", "no-such-bug"],
    ["simulate", "--fix", "nothing"], ["simulate", "--bug", ""], ["fuzz", "--profile", "legacy-sync"],
    ["fuzz", "--profile", "nope"], ["fuzz", "--bug", "nope"], ["fuzz", "--fix", "nope"],
    ["conform", "--seeds", "1-2", "--profile", "legacy-async"], ["conform", "--seeds", "1-2", "--bug", "nope"],
    ["check", "nosuchconfig"], ["check", "nosuchconfig.cfg", "--workers", "2"], ["model-check", "--config", "nope"],
    ["model-check"], ["prove", "--bug", "nope"], ["prove", "--bug", "ack-local-sss-only"],
    ["cluster", "up", "--profile", "fidelity"], ["cluster", "up", "--profile", "legacy-sync"],
    ["cluster", "test", "--profile", "large-logs"], ["cluster", "up", "--bug", "nope"],
    ["cluster", "test", "--faults", "nope"], ["cluster", "test", "--faults", ""],
    ["cluster", "test", "--faults", "kill-master,,pause-master"], ["cluster", "kill", "b1", "--signal", "HUP"],
    ["cluster", "frobnicate"], ["cluster"],
    ["real", "up", "--profile", "fidelity"], ["real", "up", "--version", "4.9.7"], ["real", "up", "--version", ""],
    ["real", "fetch", "--version", "garbage"], ["real", "fetch", "--version", "5.3.3\n"],
    ["real", "test", "--faults", "nope"], ["real", "test", "--faults", ""], ["real", "test", "--profile", "legacy"],
    ["real", "up", "--controller-type", "raft"], ["real", "fault", "explode", "--dir", "realold"],
    ["real", "repro", "F-NOPE"], ["real", "repro"], ["real", "repro", "--version", "6.0.0"],
    ["real", "kill", "b1", "--signal", "USR1", "--dir", "realold"],
    # seed ranges
    ["simulate", "--seeds", ""], ["simulate", "--seeds", "9-3"], ["simulate", "--seeds", "x"],
    ["simulate", "--seeds", "-5"], ["simulate", "--seeds", "1-"], ["simulate", "--seeds", "0-2000000"],
    ["simulate", "--seeds", "1.5-3"], ["conform", "--seeds", ""], ["conform", "--seeds", "3-1"],
    # Spark master URLs
    *[["fuzz", "--master", m] for m in ("garbage", "local[0]", "local[-1]", "local[]", "local[x]", "local[2,0]",
                                        "local[*,]", "local[99999]", "spark://", "spark://host", "spark://host:0",
                                        "spark://host:99999", "spark://h:7077,", "yarn-client", "k8s://", "",
                                        "LOCAL", " local", "mesos:/x")],
    # bad config files
    *[[*cmd, "--config", f] for cmd in (["simulate"], ["fuzz"], ["cluster", "up"], ["cluster", "test"],
                                         ["real", "up"], ["real", "test"])
      for f in ("bad.toml", "unknown.toml", "badvalue.toml", "notable.toml", "listprofile.toml", "binary.toml")],
    ["simulate", "--config", "nan.toml"], ["simulate", "--config", "infweight.toml"],
    ["fuzz", "--config", "nan.toml"], ["fuzz", "--config", "legacy.toml"], ["fuzz", "--config", "badfuzz.toml"],
    ["fuzz", "--config", "fuzznotable.toml"], ["cluster", "up", "--config", "legacy.toml"],
    ["cluster", "test", "--config", "fidelity.toml"], ["real", "up", "--config", "fidelity.toml"],
    ["cluster", "up", "--config", "nan.toml"],
    # bad trace files
    ["replay", "garbage.jsonl"], ["replay", "notrace.jsonl"], ["replay", "empty.jsonl"], ["replay", "afile.txt"],
    ["replay", "broken.jsonl.gz"], ["replay", "binary.jsonl"], ["show", "garbage.jsonl"], ["show", "empty.jsonl"],
    ["show", "broken.jsonl.gz"], ["conform", "garbage.jsonl"], ["conform", "notrace.jsonl"],
    ["conform", "binary.jsonl"], ["conform"], ["replay", "notrace.jsonl", "--impl", "out.jsonl"],
    # conflicting or ignored options
    ["simulate", "--seed", "1", "--out", "newout"], ["simulate", "--seed", "1", "--jobs", "2"],
    ["simulate", "--no-triage"], ["simulate", "--seeds", "1-2", "--trace", "t.jsonl"],
    ["simulate", "--seed", "1", "--seeds", "1-2"], ["fuzz", "--budget", "5", "--seeds", "3"],
    ["fuzz", "--seeds", "1-5", "--seed-start", "3"], ["fuzz", "--guided", "--unguided"],
    ["fuzz", "--compare", "--unguided"], ["check", "--ci", "small"], ["show", "garbage.jsonl", "--window", "3"],
    ["conform", "--steps", "100", "garbage.jsonl"], ["conform", "--profile", "safe", "garbage.jsonl"],
    ["conform", "--fix", "all", "garbage.jsonl"], ["cluster", "status", "--dir", "cluster", "--watch", "1", "--json"],
    ["real", "fault", "clear", "--code", "1", "--dir", "realold"], ["real", "fault", "cut-stream", "--dir", "realold"],
    ["real", "fault", "cut-stream", "b1", "--from", "b2", "--dir", "realold"],
    ["real", "fault", "cut-stream", "b1", "--for", "3", "--dir", "realold"],
    ["real", "fault", "netem", "b1", "--dir", "realold"], ["real", "fault", "drop-response", "--dir", "realold"],
    ["real", "fault", "delay-response", "--code", "1", "--dir", "realold"],
    ["real", "fault", "drop-request", "--code", "1", "--ms", "5", "--dir", "realold"],
    ["real", "fault", "status", "b1", "--dir", "realold"],
    # run folders: another run's files, not a run's files, a torn description, a different campaign
    ["cluster", "test", "--dir", "oldrun"], ["cluster", "up", "--dir", "oldrun"],
    ["cluster", "test", "--dir", "notarun"], ["cluster", "test", "--dir", "notarun", "--fresh"],
    ["cluster", "up", "--dir", "mixed", "--fresh"], ["cluster", "up", "--dir", "adir/../notarun", "--fresh"],
    ["cluster", "test", "--dir", "realold", "--fresh"], ["cluster", "status", "--dir", "tornspec"],
    ["cluster", "status", "--dir", "adir"], ["real", "up", "--dir", "realold"], ["real", "test", "--dir", "realold"],
    ["real", "up", "--dir", "notarun", "--fresh"], ["real", "test", "--dir", "realmixed", "--fresh"],
    ["real", "up", "--dir", "oldrun", "--fresh"], ["real", "status", "--dir", "adir"],
    ["fuzz", "--out", "campaign"], ["fuzz", "--out", "notjournal"],
    # nodes a cluster does not have, or a cluster that is not up
    ["cluster", "restart", "b9", "--dir", "cluster"], ["cluster", "kill", "b9", "--dir", "cluster"],
    ["cluster", "kill", "b1", "--dir", "cluster"], ["cluster", "partition", "b9", "--dir", "cluster"],
    ["cluster", "partition", "b1", "--from", "b1", "--dir", "cluster"],
    ["cluster", "partition", "", "--dir", "cluster"], ["cluster", "partition", ",", "--dir", "cluster"],
    ["cluster", "partition", "b1", "--from", "b1,nope", "--dir", "cluster"],
    ["cluster", "restart", "", "--dir", "cluster"], ["cluster", "heal", "--id", "", "--dir", "cluster"],
    ["real", "kill", "b1", "--dir", "realold"], ["real", "restart", "b9", "--dir", "realold"],
    ["real", "partition", "b1", "--dir", "realold"], ["real", "down", "--dir", "adir"],
    # issue 30's hidden classes: a step past the end, a list of an unknown finding, a node cut from itself, a code
    # no request has, a header that cannot run (as replay says it), the catalogue's and recheck's own inputs
    ["show", "small.jsonl", "--around", "999999"], ["real", "repro", "--list", "F-NOSUCH"],
    ["real", "repro", "--list", "F-TRUNCATED-TAIL-RESURRECTS", "F-NOSUCH"],
    ["real", "partition", "b1", "--from", "b1", "--dir", "realold"],
    ["real", "partition", "b1,b2", "--from", "b2,b3", "--dir", "realold"],
    ["cluster", "partition", "b1,b2", "--from", "b2,b3", "--dir", "cluster"],
    ["real", "fault", "drop-response", "--code", "99999", "--dir", "realold"],
    ["real", "fault", "delay-response", "--code", "NO_SUCH_CODE", "--ms", "5", "--dir", "realold"],
    ["real", "fault", "netem", "b1", "--bogus", "--dir", "realold", "--", "loss", "3%"],
    ["conform", "badheader.jsonl"], ["replay", "badheader.jsonl"], ["recheck", "badheader.jsonl"],
    ["recheck"], ["recheck", "garbage.jsonl"], ["recheck", "emptydir"], ["recheck", "small.jsonl", "missing.jsonl"],
    ["invariants", "NO-SUCH-ID"], ["invariants", "CTL-CLEAN-ELECTION", "--long"],
]


def _cases() -> list[tuple[str, list[str]]]:
    cases: list[tuple[str, list[str]]] = []
    for (words, opt), values in NUMBERS.items():
        cases += [(f"{' '.join(words)} {opt}={v!r}", [*words, f"{opt}={v}"]) for v in values]
    for words, paths in INPUT_FILES:
        cases += [(f"{' '.join(words)} {p[:20]!r}", [*words, p]) for p in paths]
    for words, paths in OUTPUT_PATHS:
        cases += [(f"{' '.join(words)} {p[:20]!r}", [*words, p]) for p in paths]
    cases += [(" ".join(map(repr, line))[:80] or "(nothing)", line) for line in LINES]
    return cases


CASES = _cases()


def test_the_sweep_is_large() -> None:
    assert len(CASES) >= 200, len(CASES)
    assert len({tuple(c[1]) for c in CASES}) == len(CASES), "a case twice"


@pytest.mark.parametrize("argv", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_input_is_one_line_and_exit_2(argv: list[str], folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_refused(argv, folder, capsys)


def test_an_unreadable_file_is_one_line(folder: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    secret = folder / "secret.toml"
    secret.write_text("[store]\n")
    secret.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make the check see what a user would
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p).endswith("secret.toml")
                            else real_access(p, mode, **kw))
    for cmd in (["simulate"], ["fuzz"], ["cluster", "up"], ["real", "test"]):
        line = assert_refused([*cmd, "--config", "secret.toml"], folder, capsys)
        assert "permission denied" in line


def test_the_lines_name_the_option_and_what_it_allows(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's cases, each with the words a user needs."""
    expect = {
        ("simulate", "--max-time", "nan"): "--max-time: must be a number above 0",
        ("simulate", "--seeds", "1-2", "--jobs", "-1"): "--jobs: must be a whole number from 1",
        ("simulate", "--jobs=0", "--seeds", "1-2"): "--jobs: must be a whole number from 1",
        ("check", "--workers=-1", "--ci"): "--workers: must be a whole number from 1",
        ("check", "--workers", "0"): "--workers",
        ("check", "unclean_bug", "--out", "afile.txt"): "--out: must be a folder (this is a file)",
        ("fuzz", "--master", "garbage"): "--master: must be a Spark master URL (local, local[N]",
        ("fuzz", "--master", "local[0]"): "--master: must be a Spark master URL",
        ("cluster", "up", "--dir", "afile.txt"): "--dir: must be a folder (this is a file)",
        ("simulate", "--seeds", ""): "--seeds: must be a seed range like 1-200",
        ("simulate", "--max-time", "-1"): "--max-time",
        ("simulate", "--seed", "1", "--out", "d"): "--out applies only with a batch",
        ("fuzz", "--budget", "nan"): "--budget: must be a number above 0",
        ("fuzz", "--budget", "inf"): "--budget: must be a number above 0",
        ("cluster", "restart", "b9", "--dir", "cluster"): "no node 'b9'",
        ("cluster", "status", "--watch=-1", "--dir", "cluster"): "--watch: must be a number above 0",
        ("cluster", "test", "--dir", "oldrun"): "--fresh to wipe it",
        ("cluster", "up", "--dir", "oldrun"): "--fresh to wipe it",
        ("real", "up", "--dir", "realold"): "--fresh to wipe it",
        ("cluster", "test", "--dir", "notarun", "--fresh"): "holds no cluster run",
        ("fuzz", "--out", "campaign"): "holds a different campaign",
        ("fuzz", "--seeds", "1-5", "--seed-start", "3"): "--seeds A-B names the first seed",
    }
    for argv, words in expect.items():
        line = assert_refused(list(argv), folder, capsys)
        assert words in line, (argv, line)


def test_cluster_profiles_in_the_help_are_the_ones_it_takes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["cluster", "up", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert set(CLUSTER_PROFILES) == {"safe", "defaults", "unclean", "power-loss", "jraft", "jraft-ops", "ctl"}
    listed = help_text.split("--profile PROFILE")[-1].split("(default safe")[0]
    assert {p for p in PROFILES if p in listed.replace(",", " ").split()} == set(CLUSTER_PROFILES)


# ------------------------------------------------------------------------------------------------ property

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)  # what a shell can pass (no surrogates)


def _not_a_number(t: str) -> bool:
    try:
        float(t)
    except ValueError:
        return True
    return False


# (subcommand words, option, lowest allowed, highest allowed)
INT_OPTIONS = [(("simulate",), "--steps", 1, MAX_STEPS), (("simulate", "--seeds", "1-2"), "--jobs", 1, MAX_JOBS),
               (("check",), "--workers", 1, MAX_JOBS), (("fuzz",), "--steps", 1, MAX_STEPS),
               (("fuzz",), "--seed-start", 0, MAX_SEED), (("simulate",), "--seed", 0, MAX_SEED),
               (("cluster", "up"), "--lifetime", 1, MAX_LIFETIME), (("real", "up"), "--brokers", 1, 9),
               (("prove",), "--brokers", 1, 16), (("show", "garbage.jsonl", "--around", "1"), "--window", 1, MAX_STEPS)]
FLOAT_OPTIONS = [(("simulate",), "--max-time", 1e9), (("fuzz",), "--budget", MAX_SECONDS),
                 (("cluster", "test"), "--duration", MAX_SECONDS), (("cluster", "status"), "--watch", MAX_SECONDS),
                 (("real", "test"), "--settle", MAX_SECONDS), (("real", "status"), "--watch", MAX_SECONDS)]
# (subcommand words, option, the names it takes: a drawn value among them is not a bad one)
NAME_OPTIONS: list[tuple[tuple[str, ...], str, Callable[[str], bool]]] = [
    (("simulate",), "--profile", lambda v: v in PROFILES),
    (("fuzz",), "--profile", lambda v: v in FUZZ_PROFILES),
    (("cluster", "up"), "--profile", lambda v: v in CLUSTER_PROFILES),
    (("real", "up"), "--profile", lambda v: v in REAL_PROFILES),
    (("simulate", "--steps", "1"), "--bug", lambda v: v in BUGS),
    (("fuzz",), "--fix", lambda v: v == "all" or v in BUGS or f"fix-{v}" in BUGS),
    (("cluster", "test"), "--faults", lambda v: v.strip() == "none" or all(f.strip() in RECIPES for f in v.split(","))),
    (("real", "fetch"), "--version", lambda v: re.fullmatch(r"5\.\d+\.\d+", v) is not None),
    (("model-check",), "--config", lambda v: Path(v).name.removesuffix(".cfg") in SPEC_CONFIGS),
]


def bad_int(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.one_of(st.integers(max_value=lo - 1).map(str), st.integers(min_value=hi + 1).map(str),
                     st.floats().map(repr), TEXT.filter(_not_a_number),
                     st.sampled_from(["nan", "inf", "", " ", "1e3", "0x1"]))


def bad_seconds(hi: float) -> st.SearchStrategy[str]:
    return st.one_of(st.floats(max_value=0.0).map(repr), st.floats(min_value=hi, exclude_min=True).map(repr),
                     st.sampled_from(["nan", "inf", "-inf", "NaN", "", "1e999"]), TEXT.filter(_not_a_number))


BAD_SEEDS = st.one_of(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)).filter(lambda t: t[1] < t[0])
                      .map(lambda t: f"{t[0]}-{t[1]}"), st.integers(max_value=-1).map(str),
                      st.integers(min_value=MAX_SEED + 1).map(str),
                      TEXT.filter(lambda t: not t.strip().isdigit()))
BAD_MASTER = st.one_of(st.integers(max_value=0).map(lambda n: f"local[{n}]"),
                       st.integers(min_value=MAX_JOBS + 1).map(lambda n: f"local[{n}]"),
                       st.integers().filter(lambda p: not 1 <= p <= 65535).map(lambda p: f"spark://h:{p}"),
                       st.text(string.ascii_letters + "[]*:/", max_size=10).filter(
                           lambda t: t not in ("local", "yarn", "local[*]") and not t.startswith(("k8s://", "mesos://"))))

BAD_ARGV = st.one_of(
    st.sampled_from(INT_OPTIONS).flatmap(lambda o: bad_int(o[2], o[3]).map(lambda v: [*o[0], f"{o[1]}={v}"])),
    st.sampled_from(FLOAT_OPTIONS).flatmap(lambda o: bad_seconds(o[2]).map(lambda v: [*o[0], f"{o[1]}={v}"])),
    st.sampled_from(NAME_OPTIONS).flatmap(
        lambda o: TEXT.filter(lambda v: not o[2](v)).map(lambda v: [*o[0], f"{o[1]}={v}"])),
    st.sampled_from([("simulate",), ("conform",), ("fuzz",)]).flatmap(
        lambda w: BAD_SEEDS.map(lambda v: [*w, f"--seeds={v}"])),
    BAD_MASTER.map(lambda v: ["fuzz", f"--master={v}"]),
)


@contextlib.contextmanager
def fresh_folder() -> Iterator[Path]:
    """A new empty working directory for one example (Hypothesis runs many in one test)."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="rmqha-bad-") as tmp:
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(here)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=BAD_ARGV)
def test_any_bad_value_of_any_option_is_one_line_and_exit_2(argv: list[str], sealed: None,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    with fresh_folder() as d:
        assert_refused(argv, d, capsys)


# ------------------------------------------------------------------------------------------------ from outside

OUTSIDE = [["simulate", "--max-time", "nan"], ["check", "--workers", "-1", "--ci"], ["fuzz", "--master", "local[0]"],
           ["cluster", "up", "--dir", "afile.txt"], ["simulate", "--seeds", "1-2", "--jobs", "-1", "--out", "o"]]


@pytest.mark.parametrize("argv", OUTSIDE, ids=[" ".join(a) for a in OUTSIDE])
def test_the_installed_command_says_the_same(argv: list[str], tmp_path: Path) -> None:
    exe = shutil.which("rmqha", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "rmqha"]
    (tmp_path / "afile.txt").write_text("x\n")
    before = snapshot(tmp_path)
    p = subprocess.run([*cmd, *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env=dict(os.environ, HOME=str(tmp_path)))
    assert p.returncode == 2, (argv, p.stdout, p.stderr)
    assert p.stdout == "" and p.stderr.startswith("rmqha: ") and p.stderr.count("\n") == 1, (argv, p.stderr)
    assert "Traceback" not in p.stderr
    assert snapshot(tmp_path) == before
