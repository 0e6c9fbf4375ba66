"""The kit's Java agent (``rmqha/real/agent.py``, ``points.py``, ``rmqha/real/java/agent/``) without a cluster: the
catalogue, the parsing of an arm, the fix table against the Java one, the socket client against a fake agent, the
spec's JVM command line with and without the agent, the CLI's one-line refusals; and, where Java, Maven and the
pinned version's jars are there, the agent itself in a small JVM of the kit's own (a probe that calls RocketMQ's
``EpochFileCache``): every action and trigger, a scope, a point a class lacks, ``Check`` on a version's jars."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.sim.actions import TrapPoint
from rmqha.impl.sim.config import ConfigError

from rmqha.real import agent as A
from rmqha.real import maven
from rmqha.real import points as P
from rmqha.real.spec import create, load, real_config

ROOT = Path(__file__).resolve().parent.parent
JAVA_AGENT = ROOT / "rmqha" / "real" / "java" / "agent"

# ----------------------------------------------------------------------------------------------- the catalogue


def test_the_catalogue_is_well_formed_and_names_the_simulators_points() -> None:
    names = [p.name for p in P.POINTS]
    assert len(names) == len(set(names)) and 15 <= len(names) <= 30
    trap_points = set(TrapPoint.__args__)
    for p in P.POINTS:
        assert p.kind in P.KINDS and p.at in ("enter", "exit"), p
        assert re.fullmatch(r"(org\.apache\.rocketmq|io\.openmessaging\.storage\.dledger)(\.\w+)+(\$\w+)?", p.cls), p
        assert re.fullmatch(r"[a-z]\w*", p.method), p
        assert p.inside is None or re.fullmatch(r"[\w.$]+#[a-z]\w*", p.inside), p
        assert p.method in p.what, p
        for path in p.args.values():
            assert re.fullmatch(r"(self|arg\d+)(\.\w+)*", path), (p.name, path)
        if p.sim.startswith("crash-at "):  # the simulator's crash-at point (impl/sim/actions.py: TrapPoint)
            assert p.sim.split()[1] in trap_points, p
    by_sim = {p.sim: p.name for p in P.POINTS}
    for step in (1, 2, 3):
        assert f"crash-at role-change step {step}" in by_sim
    assert by_sim["ctl-at unapplied"] == "ctl.apply" and by_sim["slow-commit"] == "ctl.dledger.commit"
    assert {p.kind for p in P.POINTS} == set(P.KINDS)


def _java_fixes() -> dict[str, tuple[str, str]]:
    """The agent's fix table (Fixes.ALL) read from its sources: finding -> (class, kit switch)."""
    table = (JAVA_AGENT / "Fixes.java").read_text()
    body = table[table.index("ALL = {"):table.index("};", table.index("ALL = {"))]
    out = {}
    for cls in re.findall(r"new (\w+)\(\)", body):
        src = (JAVA_AGENT / f"{cls}.java").read_text()
        finding = re.search(r"finding\(\) \{\s*return \"([^\"]+)\"", src)
        switch = re.search(r"kitSwitch\(\) \{\s*return \"([^\"]+)\"", src)
        assert finding and switch, cls
        out[finding.group(1)] = (cls, switch.group(1))
    return out


def test_the_fix_table_matches_the_agents_and_the_kits_switches() -> None:
    java = _java_fixes()
    assert java == {f.finding: (f.java, f.switch) for f in P.FIXES}
    for f in P.FIXES:
        assert f.switch in B.FIXES_ALL  # the same change as the Python fix switch
        assert (ROOT / "docs" / "findings" / f"{f.finding}.md").is_file()
        assert f.java == "Fix" + "".join(w.capitalize() for w in f.finding.removeprefix("F-").split("-"))


def test_fix_ids_take_all_and_refuse_an_unknown_one() -> None:
    assert P.fix_ids(["all"]) == list(P.FIX_IDS)
    assert P.fix_ids(["F-TRUNCATED-TAIL-RESURRECTS", "all"]) == list(P.FIX_IDS)
    assert P.fix_ids([]) == []
    with pytest.raises(P.ArmError, match="F-NOPE"):
        P.fix_ids(["F-NOPE"])


# ----------------------------------------------------------------------------------------------- arms


def test_an_arm_request_carries_the_trigger_and_resolves_named_arguments() -> None:
    req = P.arm_request("store.truncate", "delay", ms=300, nth=2, count=0, when=["offset>=4096", "path~commitlog"],
                        arm_id="x")
    assert req == {"op": "arm", "id": "x", "point": "store.truncate", "action": "delay", "nth": 2, "count": 0,
                   "ms": 300, "when": [{"path": "arg0", "op": ">=", "value": "4096", "text": "offset>=4096"},
                                       {"path": "self.storePath", "op": "~", "value": "commitlog",
                                        "text": "path~commitlog"}]}
    t = P.arm_request("brk.ctl.alter-sss", "throw", exception="RemotingTimeoutException", when=["arg3.x = 2"])
    assert t["exception"] == "org.apache.rocketmq.remoting.exception.RemotingTimeoutException"
    assert t["when"][0]["path"] == "arg3.x" and t["when"][0]["value"] == "2"
    assert P.arm_request("ctl.elect", "throw")["exception"] == "java.lang.RuntimeException"
    assert P.arm_request("ctl.elect", "throw", exception="java.io.EOFException")["exception"] == "java.io.EOFException"


@pytest.mark.parametrize(("kw", "msg"), [
    ({"point_name": "nope", "action": "crash"}, "no point 'nope'"),
    ({"point_name": "ctl.elect", "action": "explode"}, "--action 'explode'"),
    ({"point_name": "ctl.elect", "action": "delay"}, "needs --ms"),
    ({"point_name": "ctl.elect", "action": "crash", "ms": 5}, "takes no --ms"),
    ({"point_name": "ctl.elect", "action": "crash", "exception": "IOException"}, "goes with --action throw"),
    ({"point_name": "ctl.elect", "action": "crash", "nth": 0}, "--nth"),
    ({"point_name": "ctl.elect", "action": "crash", "count": -1}, "--count"),
    ({"point_name": "ctl.elect", "action": "crash", "when": ["brokerNam=x"]}, "not an argument of ctl.elect"),
    ({"point_name": "ctl.elect", "action": "crash", "when": ["brokerName"]}, "ARG=VALUE"),
    ({"point_name": "ctl.elect", "action": "throw", "exception": "no such"}, "a class name"),
])
def test_a_bad_arm_is_one_line(kw: dict[str, Any], msg: str) -> None:
    with pytest.raises(P.ArmError, match=re.escape(msg)) as e:
        P.arm_request(**kw)
    assert "\n" not in str(e.value)


# ----------------------------------------------------------------------------------------------- the client


class FakeAgent:
    """A Unix socket that answers like the agent: arm, list, release, disarm, status; records the requests."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.requests: list[dict[str, Any]] = []
        self.arms: dict[str, dict[str, Any]] = {}
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(4)
        self.srv.settimeout(5)
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.stop = False
        self.t.start()

    def answer(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if op == "arm":
            self.arms[req["id"]] = {**req, "when": [w["text"] for w in req.get("when", [])], "ms": req.get("ms", 0),
                                    "hits": 0, "fired": 0, "waiting": 0, "state": "armed", "installed": True}
            return {"ok": True, "arm": self.arms[req["id"]]}
        if op == "list":
            return {"ok": True, "arms": list(self.arms.values())}
        if op in ("release", "disarm"):
            if req["id"] not in self.arms:
                return {"ok": False, "error": f"no arm {req['id']}"}
            if op == "disarm":
                self.arms.pop(req["id"])
            return {"ok": True, "released": 1}
        if op == "status":
            return {"ok": True, "node": "b1", "kind": "broker"}
        return {"ok": False, "error": f"unknown op {op}"}

    def serve(self) -> None:
        while not self.stop:
            try:
                c, _ = self.srv.accept()
            except OSError:
                continue
            with c:
                buf = b""
                while not buf.endswith(b"\n"):
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    buf += chunk
                req = json.loads(buf)
                self.requests.append(req)
                c.sendall(json.dumps(self.answer(req)).encode() + b"\n")

    def close(self) -> None:
        self.stop = True
        self.srv.close()


def test_the_client_speaks_one_json_line_each_way(tmp_path: Path) -> None:
    fake = FakeAgent(tmp_path / "b1.sock")
    try:
        c = A.AgentClient(tmp_path / "b1.sock")
        arm = c.arm(P.arm_request("epoch.append", "pause", ms=500, arm_id="a1"))
        assert arm["id"] == "a1" and fake.requests[-1]["op"] == "arm" and fake.requests[-1]["ms"] == 500
        assert [a["id"] for a in c.arms()] == ["a1"]
        assert c.release("a1") == 1
        c.disarm("a1")
        with pytest.raises(A.AgentError, match="no arm a1"):
            c.release("a1")
        assert c.status()["kind"] == "broker"
    finally:
        fake.close()
    with pytest.raises(A.AgentError, match="no agent answers"):
        A.AgentClient(tmp_path / "nobody.sock").status()


def test_agent_events_are_read_line_by_line_past_a_torn_tail(tmp_path: Path) -> None:
    p = tmp_path / "agent.jsonl"
    p.write_text('{"t":1,"node":"b1","ev":"started"}\n{"t":2,"node":"b1","ev":"hit","fired":true}\n{"t":3,"no')
    assert [e["ev"] for e in A.read_events(p)] == ["started", "hit"]
    assert A.read_events(tmp_path / "none.jsonl") == []


# ----------------------------------------------------------------------------------------------- the spec


def _agent_spec() -> dict[str, Any]:
    return {"jar": "/x/rmqha-agent.jar", "agentVersion": "1+abc", "fixes": ["F-TRUNCATED-TAIL-RESURRECTS"],
            "fixesAbsent": {}, "maxPauseMs": 5000, "missingPoints": {}}


def test_a_jvm_without_the_agent_starts_exactly_as_before(tmp_path: Path) -> None:
    plain = create(tmp_path / "p", real_config("safe", {}), version="5.3.3", profile="safe", lifetime_s=60)
    argv = plain.java_argv("b1", "CP")
    assert not any("javaagent" in a for a in argv) and not (tmp_path / "p" / "agent").exists()
    assert argv[:argv.index("-cp")] == ["java", *__import__("rmqha.real.spec", fromlist=["x"]).JVM_OPTS,
                                        f"-Drocketmq.home.dir={plain.node_dir('b1')}",
                                        f"-Duser.home={plain.node_dir('b1') / 'home'}"]
    with_agent = create(tmp_path / "a", real_config("safe", {}), version="5.3.3", profile="safe", lifetime_s=60,
                        agent=_agent_spec())
    argv2 = with_agent.java_argv("b1", "CP")
    assert [a for a in argv2 if a not in argv and "tmp" not in a] == []  # only the agent and the folder differ
    agent_opt = [a for a in argv2 if a.startswith("-javaagent:")]
    assert agent_opt == [f"-javaagent:/x/rmqha-agent.jar={with_agent.agent_config_path('b1')}"]
    assert argv2.index(agent_opt[0]) < argv2.index("-cp")
    cfg = json.loads(with_agent.agent_config_path("c0").read_text())
    assert cfg["kind"] == "controller" and cfg["socket"] == str(with_agent.agent_sock("c0"))
    assert cfg["fixes"] == ["F-TRUNCATED-TAIL-RESURRECTS"] and cfg["maxPauseMs"] == 5000 and cfg["arms"] == []
    assert {p["name"] for p in cfg["points"]} == set(P.BY_NAME)
    assert load(tmp_path / "a").agent == _agent_spec() and load(tmp_path / "p").agent is None


def test_a_run_folder_too_long_for_the_agents_socket_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    with pytest.raises(ConfigError, match="too long a path for the agent's socket"):
        create(deep, real_config("safe", {}), version="5.3.3", profile="safe", lifetime_s=60, agent=_agent_spec())


# ----------------------------------------------------------------------------------------------- the CLI


def _rmqha(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rmqha", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


@pytest.mark.parametrize(("args", "msg"), [
    (["real", "up", "--fix", "F-NOPE"], "--fix 'F-NOPE'"),
    (["real", "test", "--fix", "F-NOPE"], "--fix 'F-NOPE'"),
    (["real", "repro", "F-TRUNCATED-TAIL-RESURRECTS", "--fix", "F-NOPE"], "--fix 'F-NOPE'"),
    (["real", "fault", "point", "b1", "nope", "--action", "crash"], "no point 'nope'"),
    (["real", "fault", "point", "b1", "ctl.elect", "--action", "boom"], "--action 'boom'"),
    (["real", "fault", "point", "b1", "ctl.elect"], "--action is required"),
    (["real", "fault", "point", "b1"], "name the node and one point"),
    (["real", "fault", "point", "b1", "ctl.elect", "--action", "crash", "--every", "--count", "2"], "not both"),
    (["real", "fault", "point", "b1", "store.truncate", "--action", "crash", "--when", "offst=1"],
     "not an argument of store.truncate"),
    (["real", "fault", "release"], "name the arm"),
    (["real", "fault", "netem", "b1", "--action", "crash"], "takes no --action"),
])
def test_the_cli_refuses_bad_agent_input_in_one_line(args: list[str], msg: str, tmp_path: Path) -> None:
    r = _rmqha(*args, "--dir", str(tmp_path / "none")) if args[1] != "repro" else _rmqha(*args)
    assert r.returncode == 2, r
    assert msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_point_on_a_cluster_without_the_agent_is_one_line(tmp_path: Path) -> None:
    create(tmp_path / "r", real_config("safe", {}), version="5.3.3", profile="safe", lifetime_s=60)
    r = _rmqha("real", "fault", "point", "b1", "role-change.master.1", "--action", "crash", "--dir",
               str(tmp_path / "r"))
    assert r.returncode == 2 and "runs without the agent" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _rmqha("real", "fault", "point", "c0", "role-change.master.1", "--action", "crash", "--dir",
               str(tmp_path / "r"))
    assert r.returncode == 2 and "runs without the agent" in r.stderr


# ----------------------------------------------------------------------------------------------- the agent itself

PROBE = """
package rmqha.probe;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.rocketmq.remoting.protocol.EpochEntry;
import org.apache.rocketmq.store.ha.autoswitch.EpochFileCache;

/** The kit's test probe: drives RocketMQ's EpochFileCache one stdin line at a time ("append E S", "cut S"); its
 * answers are the stdout lines that start with RMQHA (RocketMQ's logging writes there too). */
public final class Probe {
    public static void main(String[] a) throws Exception {
        EpochFileCache c = new EpochFileCache(a[0]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("RMQHA ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            long t0 = System.currentTimeMillis();
            try {
                if (w[0].equals("append")) {
                    EpochEntry e = new EpochEntry(Integer.parseInt(w[1]), Long.parseLong(w[2]));
                    System.out.println("RMQHA ok " + c.appendEntry(e) + " " + (System.currentTimeMillis() - t0));
                } else {
                    c.truncateSuffixByOffset(Long.parseLong(w[1]));
                    System.out.println("RMQHA ok cut " + (System.currentTimeMillis() - t0));
                }
            } catch (Throwable e) {
                System.out.println("RMQHA threw " + e.getClass().getName());
            }
            System.out.flush();
        }
    }
}
"""

# Points of the probe's own: the epoch append, the file flush only inside an append (a scope), one whose method
# EpochFileCache does not have, and a second point at the append's site.
PROBE_POINTS = [
    {"name": "epoch.append", "kind": "broker", "cls": P.EPOCH_CACHE, "method": "appendEntry", "at": "exit",
     "inside": None, "args": {"epoch": "arg0.epoch", "startOffset": "arg0.startOffset"}},
    {"name": "flush-in-append", "kind": "broker", "cls": P.EPOCH_CACHE, "method": "flush", "at": "enter",
     "inside": f"{P.EPOCH_CACHE}#appendEntry", "args": {}},
    {"name": "no-such", "kind": "broker", "cls": P.EPOCH_CACHE, "method": "noSuchMethod", "at": "enter",
     "inside": None, "args": {}},
    # a second point at epoch.append's site (as role-change.master.2 is): each call is still one hit of each
    {"name": "append-again", "kind": "broker", "cls": P.EPOCH_CACHE, "method": "appendEntry", "at": "exit",
     "inside": f"{P.EPOCH_CACHE}#appendEntry", "args": {}},
]


@pytest.fixture(scope="module")
def built() -> A.AgentBuild:
    if not all(shutil.which(x) for x in ("java", "javac", "jar", "mvn")):
        pytest.skip("no JDK or Maven: the agent cannot be built here")
    try:
        return A.build(maven.fetch(maven.PINNED))
    except (A.AgentError, maven.FetchError) as exc:
        pytest.skip(f"the agent could not be built: {exc}")


class Probe:
    def __init__(self, built: A.AgentBuild, tmp: Path, arms: list[dict[str, Any]] | None = None) -> None:
        src = tmp / "src" / "Probe.java"
        src.parent.mkdir(parents=True)
        src.write_text(PROBE)
        classes = tmp / "classes"
        subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", ":".join(built.rocketmq_jars), str(src)],
                       check=True, capture_output=True, timeout=120)
        self.sock = tmp / "p.sock"
        self.events = tmp / "agent.jsonl"
        cfg = tmp / "agent.json"
        cfg.write_text(json.dumps({"node": "p1", "kind": "broker", "socket": str(self.sock), "events": str(self.events),
                                   "version": built.version, "agentVersion": built.agent_version, "maxPauseMs": 3000,
                                   "fixes": [], "points": PROBE_POINTS, "arms": arms or []}))
        self.proc = subprocess.Popen(["java", "-Xmx64m", f"-javaagent:{built.jar}={cfg}", "-cp",
                                      ":".join((str(classes), *built.rocketmq_jars)), "rmqha.probe.Probe",
                                      str(tmp / "epochFile")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.read() == "ready"
        self.client = A.AgentClient(self.sock)

    def read(self) -> str:
        """The probe's next answer (its RMQHA lines; "" at its end)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("RMQHA "):
                return line[6:].strip()
        return ""

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def say(self, line: str) -> str:
        self.send(line)
        return self.read()

    def ev(self, ev: str) -> list[dict[str, Any]]:
        return [e for e in A.read_events(self.events) if e["ev"] == ev]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def test_the_agent_acts_at_its_points_in_a_jvm(built: A.AgentBuild, tmp_path: Path) -> None:
    p = Probe(built, tmp_path)
    try:
        st = p.client.status()
        assert st["node"] == "p1" and st["agentVersion"] == built.agent_version and st["rocketmq"] == built.version
        assert st["missing"] == {"no-such": f"{P.EPOCH_CACHE} has no method noSuchMethod"}
        assert [e["point"] for e in p.ev("missing")] == ["no-such"]
        assert p.say("append 1 0").startswith("ok true")  # nothing armed: RocketMQ's own behaviour
        # throw, only when the condition on the argument holds, from the 2nd matching hit, once
        p.client.arm(P.arm_request("epoch.append", "throw", exception="IOException", when=["epoch>=3"], nth=2,
                                   arm_id="t"))
        assert p.say("append 2 10").startswith("ok true")  # epoch 2: the condition does not hold
        assert p.say("append 3 20").startswith("ok true")  # the 1st matching hit
        assert p.say("append 4 30") == "threw java.io.IOException"  # the 2nd: thrown (after the append: at exit)
        assert p.say("append 5 40").startswith("ok true")  # count 1: spent
        hits = [e for e in p.ev("hit") if e["id"] == "t"]
        assert [(e["n"], e["fired"], e["args"]["epoch"]) for e in hits] == [(1, False, 3), (2, True, 4), (3, False, 5)]
        p.client.disarm("t")
        p.client.arm({"id": "g", "point": "append-again", "action": "delay", "ms": 1, "count": 0, "when": []})
        p.say("append 6 45")
        assert [e["n"] for e in p.ev("hit") if e["id"] == "g"] == [1]
        p.client.disarm("g")
        # delay, every hit, inside a scope: flush() counts only when called from appendEntry
        p.client.arm({"id": "d", "point": "flush-in-append", "action": "delay", "ms": 400, "nth": 1, "count": 0,
                      "when": []})
        cut = p.say("cut 35")  # truncateSuffixByOffset flushes too, outside an append: no hit
        assert cut.startswith("ok cut")
        slow = p.say("append 7 50")
        assert slow.startswith("ok true") and int(slow.split()[-1]) >= 380, slow
        assert [e["point"] for e in p.ev("hit") if e["id"] == "d"] == ["flush-in-append"]
        assert p.ev("done")[-1]["action"] == "delay"
        p.client.disarm("d")
        # pause until released
        p.client.arm(P.arm_request("epoch.append", "pause", ms=10_000, arm_id="p"))
        p.send("append 8 60")
        deadline = time.monotonic() + 10
        while not [a for a in p.client.arms() if a["id"] == "p" and a["waiting"] == 1]:
            assert time.monotonic() < deadline, "the thread never paused"
            time.sleep(0.05)
        assert p.client.release("p") == 1
        assert p.read().startswith("ok true")
        assert p.ev("done")[-1]["action"] == "pause" and p.ev("done")[-1]["timedOut"] is False
        p.client.disarm("p")
        # crash: the hit's line first, then Runtime.halt
        p.client.arm(P.arm_request("epoch.append", "crash", arm_id="c"))
        p.send("append 9 70")
        assert p.proc.wait(20) == P.HALT_STATUS
        last = A.read_events(p.events)[-1]
        assert last["ev"] == "hit" and last["id"] == "c" and last["fired"] and last["args"] == {"epoch": 9,
                                                                                             "startOffset": 70}
        with pytest.raises(A.AgentError):
            p.client.status()
    finally:
        p.close()


def test_check_reads_a_versions_jars_without_starting_it(built: A.AgentBuild) -> None:
    chk = A.check(built)
    assert set(chk.points) == set(P.BY_NAME)
    assert all(d["found"] for d in chk.points.values()), {k: d for k, d in chk.points.items() if not d["found"]}
    assert chk.fixes["F-TRUNCATED-TAIL-RESURRECTS"]["found"]
    # a point whose method (or scope, or class) a version lacks says so
    cat = [*PROBE_POINTS, {"name": "gone", "kind": "broker", "cls": "org.apache.rocketmq.store.NoSuchClass",
                           "method": "x", "inside": None},
           {"name": "scope-gone", "kind": "broker", "cls": P.EPOCH_CACHE, "method": "flush",
            "inside": f"{P.EPOCH_CACHE}#noSuchScope"}]
    f = built.dir / "test-catalogue.json"
    f.write_text(json.dumps(cat))
    out = subprocess.run(["java", "-cp", built.check_classpath, "rmqha.agent.Check", str(f)], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    got = {d["point"]: d for d in map(json.loads, out.splitlines()) if "point" in d}
    assert got["epoch.append"]["found"] and got["flush-in-append"]["found"]
    assert not got["no-such"]["found"] and "has no method noSuchMethod" in got["no-such"]["why"]
    assert not got["gone"]["found"] and "no class" in got["gone"]["why"]
    assert not got["scope-gone"]["found"] and "its scope" in got["scope-gone"]["why"]


def test_the_docs_points_table_is_the_catalogue() -> None:
    doc = (ROOT / "docs" / "real.md").read_text()
    begin = doc.index("<!-- points:begin")
    body = doc[doc.index("\n", begin) + 1:doc.index("<!-- points:end -->")]
    assert body == P.markdown()


def test_a_fix_the_version_has_no_method_for_is_said_in_the_spec_not_a_failure(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    b = A.AgentBuild("9.9.9", tmp_path, tmp_path / "rmqha-agent.jar", tmp_path / "bb.jar", "k", ())
    monkeypatch.setattr(A, "check", lambda _b: A.Checked(
        {"ctl.apply": {"found": False, "why": "no class X in this version's jars"}, "ctl.elect": {"found": True}},
        {"F-TRUNCATED-TAIL-RESURRECTS": {"found": False, "why": "CommitLog has no method truncateDirtyFiles"}}))
    s = A.run_spec(b, A.AgentOptions(fixes=("F-TRUNCATED-TAIL-RESURRECTS",)))
    assert s["fixes"] == ["F-TRUNCATED-TAIL-RESURRECTS"] and s["agentVersion"] == f"{A.PROTOCOL}+k"
    assert s["fixesAbsent"] == {"F-TRUNCATED-TAIL-RESURRECTS": "CommitLog has no method truncateDirtyFiles"}
    assert s["missingPoints"] == {"ctl.apply": "no class X in this version's jars"}


def test_real_points_lists_each_point_per_version(built: A.AgentBuild) -> None:
    r = _rmqha("real", "points", "--version", built.version, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [p["point"] for p in out["points"]] == [p.name for p in P.POINTS]
    assert all(p["versions"][built.version]["found"] for p in out["points"])
    assert out["points"][1]["java"] == "AutoSwitchHAService.changeToMaster"
    assert out["fixes"][0]["fix"] == "F-TRUNCATED-TAIL-RESURRECTS" and out["fixes"][0]["versions"][built.version]
    text = _rmqha("real", "points", "--version", built.version).stdout
    assert re.search(r"role-change.master.2 +broker +EpochFileCache.appendEntry \(exit\) inside AutoSwitchHAService",
                     text)


def test_arms_in_the_config_are_set_at_start_and_a_pause_is_bounded(built: A.AgentBuild, tmp_path: Path) -> None:
    """``Lab.arm_at_start``'s way: an arm in the node's config is set before RocketMQ's classes load; a pause with
    no bound of its own ends at the harness's ``maxPauseMs`` (3 s here) and says it timed out."""
    p = Probe(built, tmp_path, arms=[P.arm_request("epoch.append", "pause", arm_id="s")])
    try:
        assert [e["id"] for e in p.ev("armed")] == ["s"]
        t0 = time.monotonic()
        assert p.say("append 1 0").startswith("ok true")
        assert time.monotonic() - t0 >= 2.9
        done = p.ev("done")
        assert len(done) == 1 and done[0]["timedOut"] is True and done[0]["waitedMs"] >= 2900
    finally:
        p.close()


def test_the_cli_arms_releases_and_disarms_through_the_nodes_agent(tmp_path: Path) -> None:
    """``rmqha real fault point`` / ``release`` / ``disarm`` / ``arms`` as the CLI does them, against a fake agent
    at the node's socket (the live path is test_real_agent_live.py's)."""
    import argparse

    from rich.console import Console

    from rmqha.cli import real as R

    spec = create(tmp_path / "r", real_config("safe", {}), version="5.3.3", profile="safe", lifetime_s=60,
                  agent=_agent_spec())
    fake = FakeAgent(spec.agent_sock("b2"))
    out = Console(record=True, width=200)
    base = {"node": None, "netem": [], "action": None, "ms": None, "nth": None, "count": None, "every": False,
            "when": None, "exception": None, "id": None, "code": None, "src": None, "to": None, "duration": None,
            "after_bytes": None}
    try:
        args = argparse.Namespace(**{**base, "kind": "point", "node": "b2", "netem": ["store.truncate"],
                                     "action": "delay", "ms": 250, "every": True, "when": ["offset>=100"],
                                     "id": "x1"})
        R._fault_options(args)
        assert R._agent_fault(spec, args, out) == 0
        req = fake.requests[-1]
        assert req == {"op": "arm", "id": "x1", "point": "store.truncate", "action": "delay", "nth": 1, "count": 0,
                       "ms": 250, "when": [{"path": "arg0", "op": ">=", "value": "100", "text": "offset>=100"}]}
        assert "x1: store.truncate on b2 (MappedFileQueue.truncateDirtyFiles) armed: delay 250 ms" in out.export_text()
        wrong = argparse.Namespace(**{**base, "kind": "point", "node": "c0", "netem": ["store.truncate"],
                                      "action": "crash"})
        R._fault_options(wrong)
        with pytest.raises(R.UserError, match="sits in a broker JVM; c0 is a controller"):
            R._agent_fault(spec, wrong, out)
        for kind in ("release", "disarm"):
            assert R._agent_fault(spec, argparse.Namespace(**{**base, "kind": kind, "node": "x1"}), out) == 0
        assert [r["op"] for r in fake.requests if r["op"] != "list"][-2:] == ["release", "disarm"]
        with pytest.raises(R.UserError, match="no arm 'x1' on any running node"):
            R._agent_fault(spec, argparse.Namespace(**{**base, "kind": "release", "node": "x1"}), out)
    finally:
        fake.close()
