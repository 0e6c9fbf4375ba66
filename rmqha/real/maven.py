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

**Hybrid releases.** Maven Central serves some releases only in part (5.3.4: store, broker, controller and namesrv;
5.5.1: store, broker, controller, common, remoting and tiered-store). Such a release is resolved as a *hybrid*: its
own jars where they are served, the nearest whole release's for the rest (``Version.base``, ``Version.borrowed``:
the manifest's per-artifact version properties, which its ``dependencyManagement`` applies to every path, direct or
transitive). ``Install.parts`` says which RocketMQ artifact came from which release; ``versions`` and every run's
result list it.

**A user's own build** (``--build DIR``): a distribution's ``lib/`` or a folder of jars. ``register_build`` checks
that the folder holds the code under test (``BrokerStartup``, ``ControllerStartup``: one line if not), names the
build ``build-<hash>`` (from the folder's path and its jars' names, sizes and times), and puts it in the cache like
a release: the folder's jars first, then, for every artifact the folder lacks (a folder of RocketMQ's own jars
without their third-party dependencies, or without the tools and client the harness drives), the jar of the
nearest release the kit knows (by the broker jar's ``Implementation-Version``; the newest otherwise). From then on
the name stands wherever a version does (``--version build-1a2b3c4d``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
JAVA_DIR = HERE / "java"
TOOL_CLASS = "rmqha.tool.RmqhaTool"

PINNED = "5.3.3"  # the version the kit's rules mirror (docs/findings: "RocketMQ 5.3.3")


# The RocketMQ artifacts of a release that the manifest pins one by one (pom.xml: ``rmq.<name>.version``).
ARTIFACTS = ("common", "remoting", "client", "srvutil", "filter", "auth", "tools", "tiered-store", "store", "broker",
             "controller", "namesrv")


@dataclass(frozen=True)
class Version:
    version: str
    why: str
    base: str | None = None  # a hybrid: the whole release the missing artifacts come from
    borrowed: tuple[str, ...] = ()  # a hybrid: the artifacts Maven Central does not serve for this release
    # a hybrid whose later jars call members the earlier ones lack: every JVM runs with the kit's agent and its
    # bridges (rmqha/real/java/agent/Compat.java), which add those members
    compat: bool = False

    def parts(self) -> dict[str, str]:
        """RocketMQ artifact -> the release its jar is taken from."""
        return {a: (self.base if a in self.borrowed and self.base else self.version) for a in ARTIFACTS}


# Oldest first. Each is a release Maven Central serves, whole or in part; ``why`` says what the kit uses it for.
KNOWN: tuple[Version, ...] = (
    Version("5.3.3", "pinned: the version the kit's reference implementation mirrors"),
    Version("5.3.4", "the first release with PR #9690 (AutoSwitchHAConnection, in the store, refreshes its transfer "
                     "epoch's end); a hybrid, as Maven Central serves only part of it. Its broker jar is served but "
                     "needs 5.3.4's common, which is not (BrokerConfig.getPopPollingMapExpireTimeSeconds and some 40 "
                     "other members), so the broker module is 5.3.3's: 5.3.4's broker-side changes (#9845, #9404) are "
                     "not in it",
            base="5.3.3", borrowed=("common", "remoting", "client", "srvutil", "filter", "auth", "tools",
                                    "tiered-store", "broker"), compat=True),
    Version("5.4.0", "the first release with PR #9897 (removeConnection shrinks the local SyncStateSet) and #9942 "
                     "(doTruncate keeps the epoch entry)"),
    Version("5.5.0", "the newest 5.x Maven Central serves whole"),
    Version("5.5.1", "the newest release (PRs #10579, #10885, #10886, #10418 among others); a hybrid, as Maven "
                     "Central serves only part of it:",
            base="5.5.0", borrowed=("client", "srvutil", "filter", "auth", "tools", "namesrv")),
)
NEWEST = KNOWN[-1].version
_VERSION_RE = re.compile(r"^5\.\d+\.\d+$")
_BUILD_RE = re.compile(r"^build-[0-9a-f]{8}$")
# The code under test: a build must hold these (the rest may come from a release the kit knows).
BUILD_NEEDS = {"org/apache/rocketmq/broker/BrokerStartup.class": "BrokerStartup (rocketmq-broker)",
               "org/apache/rocketmq/controller/ControllerStartup.class": "ControllerStartup (rocketmq-controller)"}
# Two third-party classes every RocketMQ node loads: a folder without them holds RocketMQ's jars only.
THIRD_PARTY = ("io/netty/channel/Channel.class", "com/alibaba/fastjson/JSON.class")
# What the harness runs besides: a build lacking them takes them from its base release.
HARNESS_CLASSES = ("org/apache/rocketmq/namesrv/NamesrvStartup.class",
                   "org/apache/rocketmq/tools/admin/DefaultMQAdminExt.class",
                   "org/apache/rocketmq/client/producer/DefaultMQProducer.class")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MAVEN_BOILERPLATE = ("Some problems were encountered", "The build could not read", "To see the full stack trace",
                      "Re-run Maven", "For more information about", "[Help", "The project ")


class FetchError(RuntimeError):
    """Maven, Java or the network failed; the message is one line, fit for a user."""


def check_version(version: str) -> str:
    """A 5.x release number (the harness drives controller mode, which is 5.x only), or a registered build's name."""
    if _BUILD_RE.match(version):
        if not (cache_root() / version / "build.json").exists():
            raise FetchError(f"--version {version!r}: no such build is registered (rmqha real fetch --build DIR)")
        return version
    if not _VERSION_RE.match(version):
        known = ", ".join(v.version for v in KNOWN)
        raise FetchError(f"--version {version!r}: a RocketMQ 5.x release number like {PINNED} (known: {known})")
    return version


def known(version: str) -> Version | None:
    return next((v for v in KNOWN if v.version == version), None)


def is_build(version: str) -> bool:
    return bool(_BUILD_RE.match(version))


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rmqha" / "real"


def _sources_key() -> str:
    h = hashlib.sha256(POM.read_bytes())
    for src in sorted(JAVA_DIR.glob("*.java")):
        h.update(src.name.encode())
        h.update(src.read_bytes())
    return h.hexdigest()[:16]


_JAR_RE = re.compile(r"^(?P<artifact>.+?)-(?P<version>\d[^/]*?)(?:-(?P<classifier>linux|osx|windows)[^/]*)?\.jar$")


def jar_artifact(path: str) -> tuple[str, str] | None:
    """(artifact, version) of a jar from its file name (``rocketmq-broker-5.5.1.jar``), or None."""
    m = _JAR_RE.match(os.path.basename(path))
    return (m["artifact"], m["version"]) if m else None


def rocketmq_parts(jars: tuple[str, ...]) -> dict[str, str]:
    """RocketMQ artifact (``broker``) -> the version of its jar on a classpath."""
    out: dict[str, str] = {}
    for j in jars:
        a = jar_artifact(j)
        if a and a[0].startswith("rocketmq-") and a[0][len("rocketmq-"):] in ARTIFACTS:
            out.setdefault(a[0][len("rocketmq-"):], a[1])
    return out


@dataclass(frozen=True)
class Install:
    version: str
    dir: Path  # the cache dir of this version
    jars: tuple[str, ...]  # the resolved classpath, in Maven's order
    tool_classes: Path  # the compiled Java tool
    build: dict[str, str] = field(default_factory=dict)  # a user's build: its folder, the version its jars say

    @property
    def compat(self) -> bool:
        """Whether its JVMs need the agent's bridges (``Version.compat``)."""
        v = known(self.version)
        return bool(v and v.compat)

    @property
    def parts(self) -> dict[str, str]:
        """RocketMQ artifact -> the version of its jar on the classpath; of a user's build, ``build`` for the
        artifacts its folder holds (the rest came from its base release)."""
        parts = rocketmq_parts(self.jars)
        if self.build:
            mine = rocketmq_parts(tuple(j for j in self.jars if os.path.dirname(j) == self.build["dir"]))
            parts.update({a: "build" for a in mine})
        return parts

    def describe(self) -> str:
        """One line: what this install is made of (for results and ``versions``)."""
        if self.build:
            return f"user build from {self.build['dir']} (its jars say {self.build.get('says') or 'no version'})"
        v = known(self.version)
        if v and v.borrowed:
            theirs = sorted(a for a, ver in self.parts.items() if ver != self.version)
            return f"hybrid: {', '.join(theirs)} from {v.base}; the rest {self.version}"
        return f"{self.version} from Maven Central"

    def summary(self) -> dict[str, object]:
        """What a run's result records of its RocketMQ."""
        out: dict[str, object] = {"version": self.version, "parts": self.parts, "what": self.describe()}
        if self.compat:
            out["bridged"] = "the agent's bridges (Compat.java) add the members its later jars call"
        if self.build:
            out["build"] = dict(self.build)
        return out

    @property
    def classpath(self) -> str:
        return os.pathsep.join(self.jars)

    @property
    def tool_classpath(self) -> str:
        return os.pathsep.join((str(self.tool_classes), *self.jars))


def install_dir(version: str) -> Path:
    """The cache folder of ``version`` for this kit's manifest and Java sources: one per key, so that two checkouts
    of the kit on one machine (or a run of one while the other fetches) never overwrite each other's tool."""
    v = known(version)
    pins = ",".join(f"{a}={ver}" for a, ver in sorted(v.parts().items())) if v and v.borrowed else ""
    key = _sources_key() if not pins else hashlib.sha256((_sources_key() + pins).encode()).hexdigest()[:16]
    return cache_root() / version / key


def _cached(version: str) -> Install | None:
    d = install_dir(version)
    cp = d / "classpath.txt"
    classes = d / "classes"
    if not (cp.exists() and (d / "done").exists() and classes.is_dir()):
        return None
    jars = tuple(j for j in cp.read_text().strip().split(os.pathsep) if j)
    if not jars or not all(os.path.exists(j) for j in jars):
        return None
    meta = cache_root() / version / "build.json"
    build = json.loads(meta.read_text()) if meta.exists() else {}
    return Install(version, d, jars, classes, build)


def cached(version: str) -> Install | None:
    """The install of ``version`` if it is in the cache and current, else None (nothing is fetched)."""
    return _cached(check_version(version))


def cached_versions() -> list[str]:
    root = cache_root()
    if not root.is_dir():
        return []
    out = [p.name for p in root.iterdir() if _VERSION_RE.match(p.name) and _cached(p.name)]
    return sorted(out, key=lambda v: tuple(int(x) for x in v.split(".")))


def cached_builds() -> list[Install]:
    """The user builds registered in the cache whose jars still exist."""
    root = cache_root()
    if not root.is_dir():
        return []
    return [i for p in sorted(root.iterdir()) if _BUILD_RE.match(p.name) and (i := _cached(p.name))]


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
    if is_build(version):  # the kit's Java sources changed since it was registered, or its jars are gone
        folder = json.loads((cache_root() / version / "build.json").read_text()).get("dir", "")
        again = register_build(Path(folder), quiet=quiet, timeout=timeout)
        if again.version != version:
            raise FetchError(f"{version}: the jars in {folder} changed since it was registered; it is now "
                             f"{again.version}")
        return again
    d = install_dir(version)
    d.mkdir(parents=True, exist_ok=True)
    cp_file = d / "classpath.txt"
    v = known(version)
    pins = [f"-Drmq.{a}.version={ver}" for a, ver in (v.parts() if v else {}).items() if ver != version]
    cmd = [mvn, "-B", "-f", str(POM), f"-Drocketmq.version={version}", *pins, "dependency:build-classpath",
           f"-Dmdep.outputFile={cp_file}"]
    if quiet:
        cmd.insert(2, "-q")
    what = f"RocketMQ {version}" + (f" (hybrid with {v.base})" if v and v.base else "")
    _run(cmd, f"mvn resolving {what}", timeout)
    jars = tuple(j for j in cp_file.read_text().strip().split(os.pathsep) if j)
    store = v.parts()["store"] if v else version
    if not any(f"rocketmq-store-{store}.jar" in j for j in jars):
        raise FetchError(f"mvn resolved no rocketmq-store {store} (is {version} a release on Maven Central?)")
    classes = _compile_tool(d, jars, f"RocketMQ {version}")
    (d / "done").write_text("")
    return Install(version, d, jars, classes)


def _compile_tool(d: Path, jars: tuple[str, ...], what: str) -> Path:
    javac = shutil.which("javac")
    if not javac:
        raise FetchError("javac is not on PATH: the kit compiles its Java tool with a JDK 17+ "
                         "(Debian/Ubuntu: apt-get install -y openjdk-17-jdk-headless)")
    classes = d / "classes"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir()
    sources = sorted(str(p) for p in JAVA_DIR.glob("*.java"))
    if sources:
        _run([javac, "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", os.pathsep.join(jars), *sources],
             f"javac compiling the kit's Java tool against {what}", 300)
    return classes


def _jar_names(jar: Path) -> set[str]:
    try:
        with zipfile.ZipFile(jar) as z:
            return set(z.namelist())
    except (OSError, zipfile.BadZipFile):
        return set()


def _jar_version(jar: Path) -> str:
    """The ``Implementation-Version`` of a jar's manifest, or ''."""
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return ""
    m = re.search(r"^Implementation-Version:\s*(\S+)", text, re.M)
    return m[1] if m else ""


def _nearest_release(says: str) -> str:
    """The release the kit knows that is nearest at or below ``says`` (``5.5.2-SNAPSHOT`` -> 5.5.1), else NEWEST."""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", says)
    if not m:
        return NEWEST
    want = tuple(int(x) for x in m.groups())
    below = [v.version for v in KNOWN if tuple(int(x) for x in v.version.split(".")) <= want]
    return below[-1] if below else KNOWN[0].version


def register_build(folder: Path, *, quiet: bool = True, timeout: float = 900) -> Install:
    """Put a user's RocketMQ build (a distribution's ``lib/`` or a folder of jars) in the cache; its name is the
    returned ``Install.version`` (``build-<hash>``). One line (FetchError) when the folder is not such a build."""
    folder = folder.expanduser().resolve()
    if not folder.is_dir():
        raise FetchError(f"--build {folder}: not a folder (a RocketMQ distribution's lib/ or a folder of jars)")
    jars = sorted(p for p in folder.iterdir() if p.suffix == ".jar" and p.is_file())
    if not jars:
        raise FetchError(f"--build {folder}: no .jar in it (a RocketMQ distribution's lib/ or a folder of jars)")
    names: set[str] = set()
    for j in jars:
        names |= _jar_names(j)
    missing = [what for cls, what in BUILD_NEEDS.items() if cls not in names]
    if missing:
        raise FetchError(f"--build {folder}: its jars lack {' and '.join(missing)}: not a RocketMQ 5 build")
    h = hashlib.sha256(str(folder).encode())
    for j in jars:
        st = j.stat()
        h.update(f"{j.name}:{st.st_size}:{int(st.st_mtime)}".encode())
    name = f"build-{h.hexdigest()[:8]}"
    hit = _cached(name)
    if hit:
        return hit
    broker = next(j for j in jars if "org/apache/rocketmq/broker/BrokerStartup.class" in _jar_names(j))
    says = _jar_version(broker)
    base = _nearest_release(says)
    own = {a[0] for j in jars if (a := jar_artifact(str(j)))}
    filled: list[str] = []
    if not all(cls in names for cls in (*HARNESS_CLASSES, *THIRD_PARTY)):
        # RocketMQ's own jars without their dependencies, or without what the harness drives: the base release's
        # jars for every artifact the folder lacks (a whole distribution's lib/ takes nothing)
        for dep in fetch(base, quiet=quiet, timeout=timeout).jars:
            a = jar_artifact(dep)
            if a is None or a[0] not in own:
                filled.append(dep)
    d = install_dir(name)
    d.mkdir(parents=True, exist_ok=True)
    all_jars = (*[str(j) for j in jars], *filled)
    classes = _compile_tool(d, all_jars, f"the build in {folder}")
    (d / "classpath.txt").write_text(os.pathsep.join(all_jars) + "\n")
    build = {"dir": str(folder), "says": says, "base": base if filled else "", "filled": str(len(filled))}
    (cache_root() / name / "build.json").write_text(json.dumps(build, indent=1) + "\n")
    (d / "done").write_text("")
    return Install(name, d, all_jars, classes, build)


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
