"""The kit's Java agent: building it per RocketMQ version, checking a version's points, talking to a running one.

The agent is the kit's own code (``rmqha/real/java/agent/*.java``, package ``rmqha.agent``): Byte Buddy advice
at the catalogue's points (``points.py``) and the fix rules. ``build(install)`` resolves Byte Buddy with Maven
from ``agent-pom.xml`` (nothing is built from it), compiles the sources with ``javac`` against Byte Buddy and the
version's RocketMQ jars, packs them with the JDK's ``jar`` (manifest ``Premain-Class: rmqha.agent.Agent``,
``Class-Path``: the Byte Buddy jar, copied beside the agent's), and keeps both in the cache
(``$XDG_CACHE_HOME/rmqha/real/agent/VERSION-KEY``, KEY the hash of the manifest and the sources: a change
rebuilds). ``check(build)`` runs the agent's ``Check`` main on the version's jars (no cluster: the class files are
read, no class is loaded) and says which points and fixes the version has.

``AgentClient`` is the run-time side: one JSON request per line on the node's Unix socket (``D/agent/NODE.sock``),
one JSON answer (``arm``, ``disarm``, ``release``, ``list``, ``status``, ``points``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import maven
from .points import POINTS

HERE = Path(__file__).resolve().parent
AGENT_POM = HERE / "agent-pom.xml"
AGENT_SOURCES = HERE / "java" / "agent"
BYTE_BUDDY = "1.18.17"
PROTOCOL = 1  # the control protocol's version: part of the agent's version string
JAR = "rmqha-agent.jar"


@dataclass(frozen=True)
class AgentOptions:
    """A run's agent: the fixes to apply (finding ids, ``points.fix_ids``) and the longest a pause may hold."""

    fixes: tuple[str, ...] = ()
    max_pause_ms: int = 120_000
    compat: bool = False  # a hybrid release's bridges (maven.Version.compat; java/agent/Compat.java)


class AgentError(RuntimeError):
    """The agent could not be built, checked or reached; one line, fit for a user."""


def sources_key() -> str:
    h = hashlib.sha256(AGENT_POM.read_bytes())
    for src in sorted(AGENT_SOURCES.glob("*.java")):
        h.update(src.name.encode())
        h.update(src.read_bytes())
    return h.hexdigest()[:12]


def catalogue_json() -> str:
    return json.dumps([p.to_json() for p in POINTS], sort_keys=True)


@dataclass(frozen=True)
class AgentBuild:
    version: str  # the RocketMQ version it was compiled against
    dir: Path
    jar: Path
    byte_buddy: Path
    key: str
    rocketmq_jars: tuple[str, ...]

    @property
    def agent_version(self) -> str:
        return f"{PROTOCOL}+{self.key}"

    @property
    def check_classpath(self) -> str:
        return os.pathsep.join((str(self.jar), str(self.byte_buddy), *self.rocketmq_jars))


def _run(cmd: list[str], what: str, timeout: float) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise AgentError(f"{what}: {cmd[0]} not found (rmqha doctor says how to install it)") from None
    except subprocess.TimeoutExpired:
        raise AgentError(f"{what}: no answer within {timeout:.0f} s") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
        errors = [ln for ln in lines if "ERROR" in ln or "error:" in ln] or lines or ["(no output)"]
        raise AgentError(f"{what} failed: {errors[0][:300]}")
    return proc.stdout


def build(install: maven.Install) -> AgentBuild:
    """The agent for ``install``'s RocketMQ version, from the cache or built now."""
    key = sources_key()
    d = maven.cache_root() / "agent" / f"{install.version}-{install.dir.name}-{key}"  # the jars it was compiled against
    jar = d / JAR
    bb = d / f"byte-buddy-{BYTE_BUDDY}.jar"
    if jar.is_file() and bb.is_file():
        return AgentBuild(install.version, d, jar, bb, key, install.jars)
    for exe in ("mvn", "javac", "jar"):
        if not shutil.which(exe):
            raise AgentError(f"no `{exe}` on PATH: the kit builds its agent with Maven and a JDK 17+ "
                             "(rmqha doctor says how to install them)")
    tmp = d.with_name(d.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "classes").mkdir(parents=True)
    cp_file = tmp / "byte-buddy.classpath"
    _run(["mvn", "-q", "-B", "-f", str(AGENT_POM), "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}"],
         f"mvn resolving Byte Buddy {BYTE_BUDDY}", 600)
    found = [j for j in cp_file.read_text().strip().split(os.pathsep) if j.endswith(f"byte-buddy-{BYTE_BUDDY}.jar")]
    if not found:
        raise AgentError(f"mvn resolved no byte-buddy-{BYTE_BUDDY}.jar")
    shutil.copyfile(found[0], tmp / bb.name)
    sources = sorted(str(p) for p in AGENT_SOURCES.glob("*.java"))
    _run(["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(tmp / "classes"), "-cp",
          os.pathsep.join((found[0], *install.jars)), *sources],
         f"javac compiling the kit's agent against RocketMQ {install.version}", 300)
    manifest = tmp / "MANIFEST.MF"
    manifest.write_text(f"Premain-Class: rmqha.agent.Agent\nClass-Path: {bb.name}\n"
                        f"Implementation-Title: rmqha-agent\nImplementation-Version: {PROTOCOL}+{key}\n",
                        encoding="utf-8")
    _run(["jar", "cfm", str(tmp / JAR), str(manifest), "-C", str(tmp / "classes"), "."], "jar packing the agent", 120)
    shutil.rmtree(d, ignore_errors=True)
    tmp.replace(d)
    return AgentBuild(install.version, d, jar, bb, key, install.jars)


@dataclass(frozen=True)
class Checked:
    points: dict[str, dict[str, Any]]  # point -> {"found": bool, "why"?: str}
    fixes: dict[str, dict[str, Any]]  # fix id -> {"found": bool, "kitSwitch", "what", "cls", "method", "why"?}


def run_spec(b: AgentBuild, opts: AgentOptions) -> dict[str, Any]:
    """What a run's layout keeps of its agent (``RealSpec.agent``): the jar, its version, the fixes asked for and
    those the version does not have the method of (``fixesAbsent``: said in the result, not a failure), the
    points the version lacks."""
    chk = check(b)
    absent = {f: str(chk.fixes.get(f, {}).get("why", "the agent has no such rule")) for f in opts.fixes
              if not chk.fixes.get(f, {}).get("found")}
    missing = {p: str(d.get("why", "")) for p, d in chk.points.items() if not d.get("found")}
    return {"jar": str(b.jar), "agentVersion": b.agent_version, "fixes": list(opts.fixes), "fixesAbsent": absent,
            "maxPauseMs": opts.max_pause_ms, "missingPoints": missing, "compat": opts.compat}


def check(b: AgentBuild) -> Checked:
    """Which points and fixes ``b``'s RocketMQ version has (its jars, read by the agent's ``Check``; cached)."""
    cat = catalogue_json()
    ckey = hashlib.sha256(cat.encode()).hexdigest()[:12]
    cache = b.dir / f"check-{ckey}.json"
    if cache.is_file():
        data = json.loads(cache.read_text(encoding="utf-8"))
    else:
        cat_file = b.dir / f"catalogue-{ckey}.json"
        cat_file.write_text(cat, encoding="utf-8")
        out = _run(["java", "-cp", b.check_classpath, "rmqha.agent.Check", str(cat_file)],
                   f"checking the points of RocketMQ {b.version}", 120)
        data = [json.loads(ln) for ln in out.splitlines() if ln.strip()]
        cache.write_text(json.dumps(data), encoding="utf-8")
    points = {str(d["point"]): d for d in data if "point" in d}
    fixes = {str(d["fix"]): d for d in data if "fix" in d}
    return Checked(points, fixes)


# ------------------------------------------------------------------------------------------------ run time


def read_events(path: Path) -> list[dict[str, Any]]:
    """The agent's event lines of a run (``events/agent.jsonl``), in file order; a torn last line is skipped."""
    out: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return out
    for ln in text.splitlines():
        try:
            d = json.loads(ln)
        except ValueError:
            continue
        if isinstance(d, dict):
            out.append(d)
    return out


def request(sock: Path, req: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """One request to the agent at ``sock``; its answer (``ok`` false with ``error`` for a refused request)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(sock))
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    except (FileNotFoundError, ConnectionRefusedError):
        raise AgentError(f"no agent answers at {sock} (is the node up, with the agent?)") from None
    except (TimeoutError, OSError) as exc:
        raise AgentError(f"{sock}: {req.get('op')}: {exc}") from None
    finally:
        s.close()
    try:
        ans = json.loads(buf)
    except ValueError:
        raise AgentError(f"{sock}: a garbled answer to {req.get('op')}") from None
    if not isinstance(ans, dict):
        raise AgentError(f"{sock}: a garbled answer to {req.get('op')}")
    return ans


class AgentClient:
    """The agent of one node."""

    def __init__(self, sock: Path, timeout: float = 10.0) -> None:
        self.sock = sock
        self.timeout = timeout

    def call(self, req: dict[str, Any]) -> dict[str, Any]:
        ans = request(self.sock, req, self.timeout)
        if not ans.get("ok"):
            raise AgentError(str(ans.get("error", "refused")))
        return ans

    def arm(self, req: dict[str, Any]) -> dict[str, Any]:
        arm: dict[str, Any] = self.call({**req, "op": "arm"})["arm"]
        return arm

    def disarm(self, arm_id: str) -> dict[str, Any]:
        return self.call({"op": "disarm", "id": arm_id})

    def release(self, arm_id: str) -> int:
        return int(self.call({"op": "release", "id": arm_id}).get("released", 0))

    def arms(self) -> list[dict[str, Any]]:
        return list(self.call({"op": "list"})["arms"])

    def status(self) -> dict[str, Any]:
        return self.call({"op": "status"})

    def points(self) -> list[dict[str, Any]]:
        return list(self.call({"op": "points"})["points"])
