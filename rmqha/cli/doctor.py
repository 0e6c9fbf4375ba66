"""``rmqha doctor``: Java 17 (TLC and Spark need it) and the toolchain; says exactly how to get Java when it is
missing; for ``rmqha real`` (optional), Maven, network namespaces and the RocketMQ versions fetched. ``java_status``
is also the check ``rmqha check`` and ``rmqha fuzz`` make before they start."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from typing import Any

from rich.console import Console

from rmqha.real import maven, netns

from .common import Handler

HOW = ("install Java 17: Debian/Ubuntu `sudo apt-get install -y openjdk-17-jre-headless`, "
       "Fedora `sudo dnf install -y java-17-openjdk-headless`, macOS `brew install openjdk@17`; "
       "or set JAVA_HOME to a JDK 17+")


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


def register(sub: Any) -> dict[str, Handler]:
    sub.add_parser("doctor", help="check Java 17 and the toolchain")
    return {"doctor": cmd_doctor}


def cmd_doctor(args: argparse.Namespace, out: Console) -> int:
    ok, line = java_status()
    out.print(("[green]ok[/] " if ok else "[yellow]missing[/] ") + line, highlight=False)
    out.print(f"python {sys.version.split()[0]} at {sys.executable}", highlight=False)
    # rmqha real: Maven, network namespaces, the fetched RocketMQ versions (optional: the rest works without)
    mvn_ok, mvn_line = maven.maven_status()
    out.print(("[green]ok[/] " if mvn_ok else "[yellow]missing[/] ") + mvn_line, highlight=False)
    ns_ok, ns_line = netns.available()
    out.print(("[green]ok[/] " if ns_ok else "[yellow]missing[/] ") + ns_line + " (rmqha real)", highlight=False)
    fetched = maven.cached_versions()
    out.print(f"RocketMQ fetched: {', '.join(fetched) if fetched else 'none'} "
              f"(rmqha real fetch --version {maven.PINNED})", highlight=False)
    return 0 if ok else 1
