"""The real RocketMQ jars: which versions the kit knows, resolving them with Maven, the classpath, the Java tool.

The manifest ``rmqha/real/pom.xml`` only names artifacts (namesrv, controller with its DLedger and JRaft
flavours, broker, tools with the client). ``fetch(version)`` runs ``mvn dependency:build-classpath`` on it with
``-Drocketmq.version=V``: Maven resolves the jars into its own repository (``~/.m2``, or wherever the user's
Maven settings say) and prints the classpath, which the kit keeps in its cache (``$XDG_CACHE_HOME/rmqha/real/V``,
default ``~/.cache/rmqha/real/V``) beside the compiled Java tool (``rmqha/real/java/*.java``: the producer,
consumer, observer and admin requests the harness runs, written against RocketMQ's own client and admin API).
No RocketMQ code is in the repository.

A cached classpath is used as long as every jar it names still exists and the manifest and the Java sources are
unchanged (their hash is part of the cache key); otherwise it is resolved again.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
JAVA_DIR = HERE / "java"
TOOL_CLASS = "rmqha.tool.RmqhaTool"

PINNED = "5.3.3"  # the version the kit's rules mirror (docs/findings: "RocketMQ 5.3.3")


@dataclass(frozen=True)
class Version:
    version: str
    why: str


# Oldest first. Each is a release Maven Central serves; ``why`` says what the kit uses it for.
KNOWN: tuple[Version, ...] = (
    Version("5.3.3", "pinned: the version the kit's reference implementation mirrors"),
    Version("5.4.0", "the first whole release with PR #9690 (AutoSwitchHAConnection refreshes its transfer epoch's "
                     "end; first shipped in 5.3.4, whose common, remoting, client and tools jars are not on Maven "
                     "Central) and the first with #9897 and #9942"),
    Version("5.5.0", "the newest 5.x Maven Central serves whole (5.5.1 has its broker and controller there, not its "
                     "namesrv, client or tools)"),
)
NEWEST = KNOWN[-1].version
_VERSION_RE = re.compile(r"^5\.\d+\.\d+$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MAVEN_BOILERPLATE = ("Some problems were encountered", "The build could not read", "To see the full stack trace",
                      "Re-run Maven", "For more information about", "[Help", "The project ")


class FetchError(RuntimeError):
    """Maven, Java or the network failed; the message is one line, fit for a user."""


def check_version(version: str) -> str:
    """A 5.x release number (the harness drives controller mode, which is 5.x only)."""
    if not _VERSION_RE.match(version):
        known = ", ".join(v.version for v in KNOWN)
        raise FetchError(f"--version {version!r}: a RocketMQ 5.x release number like {PINNED} (known: {known})")
    return version


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rmqha" / "real"


def _sources_key() -> str:
    h = hashlib.sha256(POM.read_bytes())
    for src in sorted(JAVA_DIR.glob("*.java")):
        h.update(src.name.encode())
        h.update(src.read_bytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Install:
    version: str
    dir: Path  # the cache dir of this version
    jars: tuple[str, ...]  # the resolved classpath, in Maven's order
    tool_classes: Path  # the compiled Java tool

    @property
    def classpath(self) -> str:
        return os.pathsep.join(self.jars)

    @property
    def tool_classpath(self) -> str:
        return os.pathsep.join((str(self.tool_classes), *self.jars))


def _cached(version: str) -> Install | None:
    d = cache_root() / version
    cp = d / "classpath.txt"
    key = d / "key.txt"
    classes = d / "classes"
    if not (cp.exists() and key.exists() and classes.is_dir()):
        return None
    if key.read_text().strip() != _sources_key():
        return None
    jars = tuple(j for j in cp.read_text().strip().split(os.pathsep) if j)
    if not jars or not all(os.path.exists(j) for j in jars):
        return None
    return Install(version, d, jars, classes)


def cached(version: str) -> Install | None:
    """The install of ``version`` if it is in the cache and current, else None (nothing is fetched)."""
    return _cached(check_version(version))


def cached_versions() -> list[str]:
    root = cache_root()
    if not root.is_dir():
        return []
    out = [p.name for p in root.iterdir() if _VERSION_RE.match(p.name) and _cached(p.name)]
    return sorted(out, key=lambda v: tuple(int(x) for x in v.split(".")))


def _run(cmd: list[str], what: str, timeout: float) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise FetchError(f"{what}: {cmd[0]} not found (rmqha doctor says how to install it)") from None
    except subprocess.TimeoutExpired:
        raise FetchError(f"{what}: no answer within {timeout:.0f} s") from None
    if proc.returncode != 0:
        text = [_ANSI.sub("", ln).strip() for ln in (proc.stdout + proc.stderr).splitlines()]
        errors = [ln.replace("[ERROR]", "").strip() for ln in text if "ERROR" in ln or "error:" in ln]
        useful = [e for e in errors if e and not e.startswith(_MAVEN_BOILERPLATE)] or errors or text or ["(none)"]
        raise FetchError(f"{what} failed: {useful[0][:300]}")
    return proc.stdout


def fetch(version: str = PINNED, *, quiet: bool = True, timeout: float = 900) -> Install:
    """Resolve ``version`` with Maven (into ~/.m2), compile the Java tool against it, cache both."""
    version = check_version(version)
    hit = _cached(version)
    if hit:
        return hit
    mvn = shutil.which("mvn")
    if not mvn:
        raise FetchError("Maven (mvn) is not on PATH: install it (Debian/Ubuntu: apt-get install -y maven)")
    javac = shutil.which("javac")
    if not javac:
        raise FetchError("javac is not on PATH: the kit compiles its Java tool with a JDK 17+ "
                         "(Debian/Ubuntu: apt-get install -y openjdk-17-jdk-headless)")
    d = cache_root() / version
    d.mkdir(parents=True, exist_ok=True)
    cp_file = d / "classpath.txt"
    cmd = [mvn, "-B", "-f", str(POM), f"-Drocketmq.version={version}", "dependency:build-classpath",
           f"-Dmdep.outputFile={cp_file}"]
    if quiet:
        cmd.insert(2, "-q")
    _run(cmd, f"mvn resolving RocketMQ {version}", timeout)
    jars = tuple(j for j in cp_file.read_text().strip().split(os.pathsep) if j)
    if not any(f"rocketmq-broker-{version}.jar" in j for j in jars):
        raise FetchError(f"mvn resolved no rocketmq-broker {version} (is it a release on Maven Central?)")
    classes = d / "classes"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir()
    sources = sorted(str(p) for p in JAVA_DIR.glob("*.java"))
    if sources:
        _run([javac, "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", os.pathsep.join(jars), *sources],
             f"javac compiling the kit's Java tool against RocketMQ {version}", 300)
    (d / "key.txt").write_text(_sources_key() + "\n")
    return Install(version, d, jars, classes)


def maven_status() -> tuple[bool, str]:
    """(usable, one line) for ``rmqha doctor``."""
    mvn = shutil.which("mvn")
    if not mvn:
        return False, "no mvn on PATH: install Maven 3 (Debian/Ubuntu: apt-get install -y maven); rmqha real needs it"
    try:
        out = subprocess.run([mvn, "-B", "-v"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{mvn} does not run ({exc})"
    first = _ANSI.sub("", out.strip().splitlines()[0]) if out.strip() else "Maven"
    return True, f"{first.strip()} at {mvn}"
