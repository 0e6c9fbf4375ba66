"""Java 17 detection (TLC and Spark need it); says exactly how to get it when it is missing."""

from __future__ import annotations

import re
import shutil
import subprocess

HOW = ("install Java 17: Debian/Ubuntu `sudo apt-get install -y openjdk-17-jre-headless`, "
       "Fedora `sudo dnf install -y java-17-openjdk-headless`, macOS `brew install openjdk@17`; "
       "or set JAVA_HOME to a JDK 17+")


def java_status() -> tuple[bool, str]:
    """(usable, one line). Usable means a ``java`` of major version >= 17 on PATH or in JAVA_HOME."""
    import os

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
