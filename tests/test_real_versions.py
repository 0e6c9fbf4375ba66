"""The RocketMQ versions and builds the real harness runs (rmqha/real/maven.py): hybrid releases (5.3.4, 5.5.1:
the release's own jars where Maven Central serves them, the nearest whole release's for the rest) and a user's own
build (``--build DIR``), validated at the edge; and, on a real cluster, a build that starts and elects a new master
after a kill."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rmqha.real import maven
from rmqha.real.lab import Lab
from rmqha.real.spec import real_config

from .real_repro import require_real


def test_hybrids_name_what_they_borrow_and_whole_releases_borrow_nothing() -> None:
    by = {v.version: v for v in maven.KNOWN}
    assert list(by) == ["5.3.3", "5.3.4", "5.4.0", "5.5.0", "5.5.1"]
    for whole in ("5.3.3", "5.4.0", "5.5.0"):
        assert by[whole].base is None and by[whole].borrowed == ()
    p534, p551 = by["5.3.4"].parts(), by["5.5.1"].parts()
    # 5.3.4: its store (PR #9690), controller and namesrv; its broker needs 5.3.4's common, which is not served
    assert {a for a, v in p534.items() if v == "5.3.4"} == {"store", "controller", "namesrv"}
    assert p534["broker"] == p534["common"] == p534["client"] == "5.3.3"
    assert {a for a, v in p551.items() if v == "5.5.1"} == {"store", "broker", "controller", "common", "remoting",
                                                             "tiered-store"}
    assert p551["namesrv"] == p551["tools"] == p551["client"] == "5.5.0"


def test_jar_names_give_artifact_and_version() -> None:
    assert maven.jar_artifact("/m2/rocketmq-broker-5.5.1.jar") == ("rocketmq-broker", "5.5.1")
    assert maven.jar_artifact("rocketmq-store-5.5.2-SNAPSHOT.jar") == ("rocketmq-store", "5.5.2-SNAPSHOT")
    assert maven.jar_artifact("netty-transport-native-epoll-4.1.114.Final-linux-x86_64.jar") == \
        ("netty-transport-native-epoll", "4.1.114.Final")
    assert maven.jar_artifact("README.jar") is None
    jars = ("/a/rocketmq-broker-5.5.1.jar", "/a/rocketmq-client-5.5.0.jar", "/a/rocketmq-proto-2.1.2.jar",
            "/a/guava-32.0.1-jre.jar")
    assert maven.rocketmq_parts(jars) == {"broker": "5.5.1", "client": "5.5.0"}


def test_a_build_takes_its_base_from_the_nearest_release_at_or_below_it() -> None:
    assert maven._nearest_release("5.5.2-SNAPSHOT") == "5.5.1"
    assert maven._nearest_release("5.4.1") == "5.4.0"
    assert maven._nearest_release("5.3.3") == "5.3.3"
    assert maven._nearest_release("5.1.0") == "5.3.3"  # older than the kit knows: its oldest
    assert maven._nearest_release("") == maven.NEWEST


def _jar(path: Path, entries: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)


def test_a_folder_that_is_not_a_build_is_refused_in_one_line(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(maven.FetchError, match=r"no \.jar in it"):
        maven.register_build(empty)
    with pytest.raises(maven.FetchError, match="not a folder"):
        maven.register_build(tmp_path / "nowhere")
    half = tmp_path / "half"
    half.mkdir()
    _jar(half / "rocketmq-broker-5.5.2-SNAPSHOT.jar",
         {"org/apache/rocketmq/broker/BrokerStartup.class": b"\xca\xfe\xba\xbe"})
    _jar(half / "broken.jar", {})
    (half / "broken.jar").write_bytes(b"not a zip")
    with pytest.raises(maven.FetchError, match=r"lack ControllerStartup \(rocketmq-controller\)"):
        maven.register_build(half)
    with pytest.raises(maven.FetchError, match="no such build is registered"):
        maven.check_version("build-0123abcd")


@pytest.mark.parametrize("argv", [["real", "fetch", "--build", "/nonexistent-rmqha-build"],
                                  ["real", "up", "--build", "/nonexistent-rmqha-build", "--dir", "/tmp/x"],
                                  ["real", "fetch", "--version", "build-0123abcd"]])
def test_bad_builds_are_one_line_and_exit_2(argv: list[str], tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "100"}
    p = subprocess.run([sys.executable, "-m", "rmqha", *argv], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr


# ------------------------------------------------------------------------------------------- real runs


LINKAGE = ("NoSuchMethodError", "NoClassDefFoundError", "AbstractMethodError", "IncompatibleClassChangeError",
           "NoSuchFieldError")


def linkage_errors(folder: Path) -> list[str]:
    """The lines of a run's JVM output and RocketMQ logs that say a class or member was missing: a hybrid whose
    parts do not fit together (a later jar calling what the earlier one lacks)."""
    out: list[str] = []
    for f in [*folder.glob("logs/*.out"), *folder.glob("nodes/*/home/logs/rocketmqlogs/*.log")]:
        for ln in f.read_text(errors="replace").splitlines():
            if any(e in ln for e in LINKAGE):
                out.append(f"{f.name}: {ln.strip()[:200]}")
    return out


def _kill_master_and_elect(folder: Path, version: str) -> dict[str, object]:
    """Start the cluster, write, kill the master; a new master from the SyncStateSet takes writes."""
    cfg = real_config("safe", {})
    with Lab(folder, cfg, version, profile="safe", say=lambda m: print(m, file=sys.stderr)) as lab:
        first = lab.whole()
        old = first.master
        assert old is not None
        lab.create_topic("RmqhaVersions", 2)
        before = lab.produce("RmqhaVersions", 20, "v1")
        # a send may time out on a loaded machine: what is shown is that the set takes writes, before and after
        assert any(d.get("status") == "SEND_OK" for d in before), before[-3:]
        sss = set(lab.sss_nodes(first))
        lab.kill(old, "the test's failover")
        s = lab.wait(lambda s: s.master not in (None, old), 60, "a new master")
        assert s.master in sss, (s.master, sss)
        after = lab.produce("RmqhaVersions", 10, "v2")
        assert any(d.get("status") == "SEND_OK" for d in after), after[-3:]
        # the admin API's view of every live broker (runtime stats included) answers
        lab.fresh(timeout=30, answered=[n for n in lab.spec.brokers if n != old])
    errors = linkage_errors(folder)
    assert errors == [], errors[:5]
    return {"old": old, "new": s.master}


@pytest.mark.slow
@pytest.mark.parametrize("version", ["5.3.4", "5.5.1"])
def test_a_hybrid_release_elects_a_new_master_after_a_kill(version: str, tmp_path: Path) -> None:
    require_real()
    inst = maven.fetch(version)
    assert inst.parts == maven.known(version).parts()  # type: ignore[union-attr]  # a known version
    folder = tmp_path / f"v{version}"
    _kill_master_and_elect(folder, version)
    assert maven.rocketmq_parts(tuple(Path(folder / "classpath.txt").read_text().strip().split(":"))) == inst.parts


def test_a_build_folder_of_jars_runs_and_elects_a_new_master(tmp_path: Path) -> None:
    """A folder holding only RocketMQ's own jars (as a module build leaves them): the rest comes from the nearest
    release; the run's result says which jar came from where."""
    require_real()
    base = maven.fetch("5.5.1")
    folder = tmp_path / "build"
    folder.mkdir()
    for j in base.jars:
        a = maven.jar_artifact(j)
        if a and a[0] in ("rocketmq-broker", "rocketmq-store", "rocketmq-controller", "rocketmq-common",
                          "rocketmq-remoting"):
            shutil.copy(j, folder)
    inst = maven.register_build(folder)
    assert inst.version.startswith("build-") and maven.register_build(folder).version == inst.version
    assert inst.parts["broker"] == "build" and inst.parts["tools"] == "5.5.0", inst.parts
    run = tmp_path / "run"
    _kill_master_and_elect(run, inst.version)
    got = json_of(run / "rocketmq.json")
    assert got["version"] == inst.version and got["build"]["dir"] == str(folder.resolve()), got


def json_of(path: Path) -> dict[str, object]:
    out = json.loads(path.read_text())
    assert isinstance(out, dict)
    return out
