"""``rmqha fuzz`` stopped by a signal leaves nothing behind (issue 22, item 4).

Each test starts ``rmqha fuzz --budget 600`` in a process group of its own, with a temp dir of its own (``TMPDIR``:
every process the kit starts inherits it, and every file the campaign's Spark writes goes under it), waits for the
first progress line, notes the kit's processes (its descendants: the driver JVM, Spark's Python daemon and workers,
the watchdog) and sends a signal.

* SIGINT, SIGTERM and SIGHUP: the campaign stops (SIGTERM and SIGHUP as on SIGINT): exit status 128 + the signal,
  one line after the progress lines (the resume hint: the same command with the same ``--out``), no Spark error
  noise.
* SIGKILL of the kit, and of its whole process group: nothing the kit can do; the driver JVM exits when its stdin
  (a pipe from the kit) closes, Spark's daemon when the JVM's pipe closes, and the watchdog ends what is left and
  removes the scratch directory.

"Left" means: a live process among the ones noted, or any live process whose environment or command line names
the test's temp dir; any entry in that temp dir; a JVM perf-data file of the noted JVM in /tmp. The waits below are
bounded waits for a condition, never assertions on time.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rmqha.cli.doctor import java_status

if not java_status()[0]:
    pytest.skip("Spark needs Java 17 (rmqha doctor)", allow_module_level=True)
if not Path("/proc/self/environ").exists():
    pytest.skip("the checks read /proc", allow_module_level=True)

START_WAIT = 240.0  # Spark's start-up and the first progress line, on a loaded machine
END_WAIT = 60.0


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time) of a live process, None when it is gone (or a zombie)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return None if fields[0] == "Z" else (int(fields[1]), fields[19])


def _all() -> dict[int, tuple[int, str]]:
    out = {}
    for d in Path("/proc").glob("[0-9]*"):
        st = _stat(int(d.name))
        if st is not None:
            out[int(d.name)] = st
    return out


def _descendants(root: int) -> dict[int, str]:
    """``root`` and every live process under it, with start times (a pid is reused once its process is gone)."""
    procs = _all()
    out = {root: procs[root][1]} if root in procs else {}
    grew = True
    while grew:
        grew = False
        for pid, (ppid, started) in procs.items():
            if ppid in out and pid not in out:
                out[pid] = started
                grew = True
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _naming(marker: str) -> list[int]:
    """Live processes whose environment or command line names ``marker`` (this test's temp dir)."""
    want = marker.encode()
    out = []
    for pid in _all():
        try:
            blob = Path(f"/proc/{pid}/environ").read_bytes() + Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if want in blob and pid != os.getpid():
            out.append(pid)
    return out


def _left(noted: dict[int, str], tmp: Path) -> list[str]:
    alive = [f"{pid} {_cmdline(pid)[:120]}" for pid, started in noted.items() if (_stat(pid) or (0, ""))[1] == started]
    named = [f"{pid} {_cmdline(pid)[:120]}" for pid in _naming(str(tmp)) if pid not in noted]
    files = [str(p) for p in tmp.iterdir()]
    perf = [str(p) for pid in noted for p in Path("/tmp").glob(f"hsperfdata_*/{pid}")]
    return alive + named + files + perf


def _wait_until(cond, limit: float) -> bool:
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _start(tmp_path: Path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    errf = tmp_path / "stderr"
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONUNBUFFERED="1")
    env.pop("PYSPARK_GATEWAY_PORT", None)
    args = [sys.executable, "-m", "rmqha", "fuzz", "--budget", "600", "--steps", "3000", "--out", str(tmp_path / "out")]
    with open(errf, "wb") as err:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                cwd=tmp_path, start_new_session=True)

    def running() -> bool:
        tree = _descendants(proc.pid)
        return proc.poll() is not None or (
            any(line.startswith("fuzz ") for line in errf.read_text().splitlines())
            and any("pyspark.daemon" in _cmdline(p) for p in tree) and any("java" in _cmdline(p) for p in tree))

    if not _wait_until(running, START_WAIT) or proc.poll() is not None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"rmqha fuzz did not start running: {errf.read_text()[-2000:]}")
    noted = _descendants(proc.pid)
    kinds = " ".join(_cmdline(p) for p in noted)
    assert "java" in kinds and "pyspark.daemon" in kinds and "rmqha.spark_fuzz.watchdog" in kinds, kinds
    assert any(tmp.iterdir()), "the campaign has no scratch directory under TMPDIR"
    return proc, noted, tmp, errf, tmp_path / "out"


# SIGTERM in the default run; SIGINT (handled before issue 22) and SIGHUP (SIGTERM's handler) with -m slow
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.slow), signal.SIGTERM,
                                 pytest.param(signal.SIGHUP, marks=pytest.mark.slow)], ids=lambda s: s.name)
def test_sigint_sigterm_and_sighup_stop_the_campaign_cleanly(tmp_path, sig):
    proc, noted, tmp, errf, out = _start(tmp_path)
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=END_WAIT * 2)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"rmqha fuzz did not stop on {sig.name}: {errf.read_text()[-2000:]}")
    assert code == 128 + sig, errf.read_text()[-2000:]
    lines = errf.read_text().splitlines()
    # a progress line in a log is "fuzz ..." with its overflow on indented lines (at most 80 columns)
    last_progress = max(i for i, line in enumerate(lines) if line.startswith(("fuzz ", "    ")))
    after = lines[last_progress + 1:]
    assert after == [f"rmqha: interrupted ({sig.name}); the same command (same --out) resumes the campaign from "
                     f"{out} (and writes the tables)"], "\n".join(lines[-30:])
    assert (out / "journal.jsonl").exists()
    assert _wait_until(lambda: not _left(noted, tmp), END_WAIT), _left(noted, tmp)


@pytest.mark.parametrize("target", ["kit", "group"])
def test_sigkill_leaves_no_process_and_no_temp_dir(tmp_path, target):
    proc, noted, tmp, _errf, _out = _start(tmp_path)
    if target == "kit":
        proc.kill()
    else:
        os.killpg(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=END_WAIT) == -signal.SIGKILL
    assert _wait_until(lambda: not _left(noted, tmp), END_WAIT), _left(noted, tmp)
