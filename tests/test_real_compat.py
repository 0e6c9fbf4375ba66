"""The agent's bridges of a hybrid release (rmqha/real/java/agent/Compat.java): in a JVM on 5.3.3's common jar, the
members 5.3.4's jars call are missing; with the agent's bridges they are there and do what the later release
means by them. A probe JVM of the kit's own calls them by reflection (it is compiled against 5.3.3, which lacks
them) with and without the bridges."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rmqha.real import agent as A
from rmqha.real import maven

PROBE = """
package rmqha.probe;

import java.lang.reflect.Method;
import java.nio.file.Path;

/** Calls the members a 5.3.4 jar calls on 5.3.3's common, by reflection; one line per call. */
public final class Bridged {
    static void call(String cls, String name, Class<?>[] types, Object self, Object... args) {
        try {
            Class<?> c = Class.forName(cls);
            Method m = c.getMethod(name, types);
            Object target = self == null ? null : self;
            System.out.println("RMQHA " + name + " " + m.invoke(target, args));
        } catch (NoSuchMethodException e) {
            System.out.println("RMQHA " + name + " missing");
        } catch (Throwable e) {
            System.out.println("RMQHA " + name + " threw " + e);
        }
    }

    public static void main(String[] a) throws Exception {
        call("org.apache.rocketmq.common.MixAll", "fsyncDirectory", new Class<?>[] {Path.class}, null, Path.of(a[0]));
        call("org.apache.rocketmq.common.MixAll", "adjustConfigForPlatform", new Class<?>[] {String.class}, null,
            "a\\\\b=c");
        for (String ip : new String[] {"[::1]", "fe80::1%eth0", "2001:db8::7334", "10.77.0.11", "::zz", ""}) {
            call("org.apache.rocketmq.common.utils.NetworkUtil", "validCommonInet6Address",
                new Class<?>[] {String.class}, null, ip);
        }
        Class<?> sm = Class.forName("org.apache.rocketmq.common.statistics.StatisticsManager");
        Object manager = sm.getConstructor().newInstance();
        call(sm.getName(), "shutdown", new Class<?>[0], manager);
    }
}
"""


@pytest.fixture(scope="module")
def built() -> A.AgentBuild:
    if not all(shutil.which(x) for x in ("java", "javac", "jar", "mvn")):
        pytest.skip("no JDK or Maven: the agent cannot be built here")
    try:
        return A.build(maven.fetch(maven.PINNED))
    except (A.AgentError, maven.FetchError) as exc:
        pytest.skip(f"the agent could not be built: {exc}")


def _run(built: A.AgentBuild, tmp: Path, compat: bool) -> tuple[list[str], list[dict[str, object]]]:
    src = tmp / "src" / "Bridged.java"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(PROBE)
    classes = tmp / "classes"
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", ":".join(built.rocketmq_jars), str(src)],
                   check=True, capture_output=True, timeout=120)
    events = tmp / f"agent-{compat}.jsonl"
    cfg = tmp / f"agent-{compat}.json"
    cfg.write_text(json.dumps({"node": "p1", "kind": "broker", "socket": str(tmp / f"p{int(compat)}.sock"),
                               "events": str(events), "version": built.version, "agentVersion": built.agent_version,
                               "maxPauseMs": 1000, "fixes": [], "points": [], "arms": [], "compat": compat}))
    (tmp / "dir").mkdir(exist_ok=True)
    out = subprocess.run(["java", "-Xmx64m", f"-javaagent:{built.jar}={cfg}", "-cp",
                          ":".join((str(classes), *built.rocketmq_jars)), "rmqha.probe.Bridged", str(tmp / "dir")],
                         capture_output=True, text=True, timeout=120)
    lines = [ln[6:].strip() for ln in out.stdout.splitlines() if ln.startswith("RMQHA ")]
    return lines, [e for e in A.read_events(events) if e.get("ev") == "compat.added"]


def test_without_the_bridges_5_3_3s_common_lacks_what_5_3_4_calls(built: A.AgentBuild, tmp_path: Path) -> None:
    lines, added = _run(built, tmp_path, compat=False)
    assert lines == ["fsyncDirectory missing", "adjustConfigForPlatform missing"] + \
        ["validCommonInet6Address missing"] * 6 + ["shutdown missing"], lines
    assert added == []


def test_the_bridges_add_each_member_with_its_meaning(built: A.AgentBuild, tmp_path: Path) -> None:
    lines, added = _run(built, tmp_path, compat=True)
    assert lines == ["fsyncDirectory null", "adjustConfigForPlatform a\\b=c",  # as it was: Linux
                     "validCommonInet6Address true", "validCommonInet6Address true", "validCommonInet6Address true",
                     "validCommonInet6Address false", "validCommonInet6Address false", "validCommonInet6Address false",
                     "shutdown null"], lines
    assert sorted(str(e["member"]) for e in added) == ["adjustConfigForPlatform(String)", "fsyncDirectory(Path)",
                                                       "shutdown()", "validCommonInet6Address(String)"]


def test_5_3_4_runs_with_the_bridges_and_whole_releases_without() -> None:
    assert maven.known("5.3.4").compat  # type: ignore[union-attr]  # a known version
    assert not any(v.compat for v in maven.KNOWN if v.version != "5.3.4")
