"""The Spark session of a campaign, and the kit shipped to its executors.

``spark_session(master)`` starts (or reuses) a session: the embedded ``local[*,4]`` by default (every core, and a
task is retried up to 4 times, as on a cluster; ``local[N]`` becomes ``local[N,4]`` too), or any master URL
(``spark://host:7077``, ``yarn``, ...). Python workers run this interpreter (``PYSPARK_PYTHON``: otherwise Spark
takes ``python3`` from PATH); a local master binds to 127.0.0.1; the driver JVM runs with C1 only (``DRIVER_JVM``).
The kit itself goes to the executors as a zip (``kit_zip``): every ``rmqha`` subpackage, read from where it is
installed and laid out as the ``rmqha`` package, added with ``addPyFile``, so executors need only Python 3.11+ and
no install of the kit. Under ``spark-submit`` the session it made is reused the same way.

**What a session leaves behind: nothing.** Every file of a session the kit starts is under one scratch directory
of its own (``rmqha-spark-*`` in the temp dir: the log configuration, the kit zip, the driver JVM's
``java.io.tmpdir`` and, on a local master, ``spark.local.dir``, so Spark's ``spark-*``, ``blockmgr-*`` and
``pyspark-*`` directories too). The driver JVM runs in a session of its own (a signal to the kit's process group
reaches the kit alone, which then stops Spark in order), with a watchdog beside it (``watchdog.py``) that, once the
kit is gone, however it went (SIGKILL too), ends what is left of the JVM and of Spark's Python workers and removes
the scratch directory. ``stop_session`` ends the JVM, waits for the watchdog and removes the directory: a campaign's
command returns with no process and no temporary directory of its own left.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rmqha

from .watchdog import GRACE, MARK, children, marked, wait_gone

SUBPACKAGES = ("impl", "models", "spark_fuzz", "symbolic")
EMBEDDED = "local[*,4]"
# The driver JVM only schedules tasks and moves bytes here: C1 alone and the serial collector spare the cores the ~25
# CPU-seconds of C2 compilation it otherwise spends in its first half minute (the Python runs need them).
DRIVER_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"  # and no hsperfdata file to leave in /tmp
# Spark's own log lines at ERROR only, from the first one (setLogLevel comes too late for the startup chatter; the
# gateway's logger at the same level too: Spark takes it for a shell's and prints that it sets the level to WARN)
LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""
# Spark's Python sockets (local masters) are "<dir>/.<uuid>.sock" in the scratch directory: with a long temp dir
# that passes the 107 bytes of a Unix socket path, and the workers talk TCP on 127.0.0.1 instead
SOCKET_NAME, SOCKET_PATH_MAX = 43, 100
RETRIES = 4  # a local master retries a failed task this many times, as a cluster does (spark.task.maxFailures)


def with_retries(url: str) -> str:
    """``local`` / ``local[N]`` / ``local[*]`` as ``local[N,4]``: local mode only retries tasks when told in the URL."""
    m = re.fullmatch(r"local(?:\[(\d+|\*)\])?", url)
    return f"local[{m.group(1) or 1},{RETRIES}]" if m else url


def kit_zip(dest: str | None = None) -> str:
    """Zip the installed ``rmqha`` (all subpackages, however they are mapped on disk) into ``rmqha-kit.zip``."""
    path = Path(dest or tempfile.mkdtemp(prefix="rmqha-kit-")) / "rmqha-kit.zip"
    roots = [("rmqha", Path(rmqha.__file__).parent)]
    for sub in SUBPACKAGES:
        try:
            mod = importlib.import_module(f"rmqha.{sub}")
        except ImportError:  # pragma: no cover - a partial install
            continue
        assert mod.__file__ is not None  # a package of files, not a namespace
        roots.append((f"rmqha/{sub}", Path(mod.__file__).parent))
    subroots = [r for _, r in roots[1:]]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, root in roots:
            for f in sorted(root.rglob("*.py")):
                if "__pycache__" in f.parts or (arc == "rmqha" and any(r in f.parents for r in subroots)):
                    continue  # a regular install nests the subpackages inside rmqha/: zipped once, below
                zf.write(f, f"{arc}/{f.relative_to(root).as_posix()}")
    return str(path)


@dataclass
class Owned:
    """What the kit started for a session, and ends with it: the scratch directory, the watchdog, the driver JVM
    (``gateway.proc``; None under ``spark-submit``, whose JVM is not the kit's)."""

    scratch: Path
    watchdog: subprocess.Popen[bytes] | None = None
    jvm: subprocess.Popen[bytes] | None = None

    def watch(self, pid: int) -> None:
        """Tell the watchdog the JVM's pid (it notes its start time now)."""
        if self.watchdog is not None and self.watchdog.stdin is not None:
            self.watchdog.stdin.write(f"pid {pid}\n".encode())
            self.watchdog.stdin.flush()

    def end_workers(self) -> None:
        """End Spark's Python daemon on this machine (it hangs up its workers) before Spark closes their sockets: an
        idle worker whose socket closes first prints a ``BrokenPipeError`` traceback on its way out."""
        if self.jvm is None:
            return
        workers = marked(str(self.scratch))
        for pid in children(self.jvm.pid, workers):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:  # pragma: no cover - already gone
                pass
        wait_gone(workers)

    def end(self) -> None:
        """End the JVM (its stdin closes: Spark's gateway server exits; killed after ``GRACE`` s), let the watchdog
        end the Python workers, and remove the scratch directory."""
        if self.jvm is not None:
            _close(self.jvm)
            try:
                self.jvm.wait(timeout=GRACE)
            except subprocess.TimeoutExpired:
                _kill_group(self.jvm.pid)
                self.jvm.wait()
        if self.watchdog is not None:
            _close(self.watchdog)
            try:
                self.watchdog.wait(timeout=3 * GRACE)
            except subprocess.TimeoutExpired:  # pragma: no cover - it ends by itself, and removes the directory
                pass
        shutil.rmtree(self.scratch, ignore_errors=True)


def _close(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:  # pragma: no cover - already gone
            pass


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:  # pragma: no cover - already gone
        pass


def start_watchdog(scratch: Path) -> subprocess.Popen[bytes]:
    """The watchdog of ``scratch`` (``watchdog.py``), in a session of its own; the kit holds its stdin."""
    return subprocess.Popen([sys.executable, "-m", "rmqha.spark_fuzz.watchdog", str(scratch)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, start_new_session=True)


def _java_opt(name: str, value: str) -> str:
    """``-Dname=value`` for Spark's option string (quoted: a temp dir may hold spaces)."""
    return f'-D{name}="{value}"' if " " in value else f"-D{name}={value}"


def session_conf(url: str | None, app: str, scratch: Path) -> dict[str, str]:
    """The Spark settings of a session the kit starts (``url`` None: spark-submit's master stays)."""
    local = url is not None and url.startswith("local")
    tmp = scratch / "tmp"
    tmp.mkdir(exist_ok=True)
    log4j = scratch / "log4j2.properties"
    log4j.write_text(LOG4J)
    uds = local and len(str(scratch)) + SOCKET_NAME <= SOCKET_PATH_MAX  # else the workers' sockets are TCP, loopback
    conf = {"spark.app.name": app, "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.python.unix.domain.socket.enabled": "true" if uds else "false",
            "spark.python.unix.domain.socket.dir": str(scratch),
            "spark.pyspark.python": os.environ["PYSPARK_PYTHON"], "spark.sql.session.timeZone": "UTC",
            "spark.driver.extraJavaOptions": f"{DRIVER_JVM} {_java_opt('java.io.tmpdir', str(tmp))} "
                                             f"-Dlog4j2.configurationFile={log4j.as_uri()}",
            f"spark.executorEnv.{MARK}": str(scratch)}
    if url is not None:
        conf["spark.master"] = url
    if local:  # executors are this machine's: their files go to the scratch directory too
        conf["spark.local.dir"] = str(scratch / "local")
        conf["spark.executorEnv.TMPDIR"] = str(tmp)
    return conf


def spark_session(master: str | None = None, app: str = "rmqha-fuzz") -> Any:
    """A Spark session on ``master`` (default: the embedded ``local[*,4]``) with the kit shipped to executors.

    A session already active in this process (an embedding caller's, a test's) is reused as it is; otherwise the
    kit starts one it owns (``stop_session`` ends it; see the module doc)."""
    from pyspark import SparkConf, SparkContext  # lazy: pyspark (490 MB, a JVM) loads only when a campaign starts
    from pyspark.java_gateway import launch_gateway  # lazy: as above
    from pyspark.sql import SparkSession  # lazy: as above

    url = with_retries(master or EMBEDDED)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if url.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if SparkContext._active_spark_context is not None:
        return _ship(SparkSession.builder.getOrCreate(), None)
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit: its JVM, its --master
    owned = Owned(Path(tempfile.mkdtemp(prefix="rmqha-spark-")))
    try:
        conf = SparkConf()
        for k, v in session_conf(url if master is not None or not submitted else None, app, owned.scratch).items():
            conf.set(k, v)
        gateway = None
        if not submitted and SparkContext._gateway is None:  # the kit starts the JVM: in a session of its own
            owned.watchdog = start_watchdog(owned.scratch)
            gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})  # type: ignore[no-untyped-call]
            owned.jvm = gateway.proc
            owned.watch(gateway.proc.pid)
        sc = SparkContext(conf=conf, gateway=gateway)
        sc.setLogLevel("ERROR")
        return _ship(SparkSession.builder.getOrCreate(), owned)
    except BaseException:  # interrupted while starting (or Spark failed to): end what was started
        _end(SparkContext, owned)
        raise


def _ship(spark: Any, owned: Owned | None) -> Any:
    """Ship the kit to the executors once per context; mark a context the kit owns."""
    sc = spark.sparkContext
    if owned is not None:
        sc._rmqha_owned = owned  # the kit's marker on Spark's context: what stop_session ends
    if not getattr(sc, "_rmqha_kit", None):
        scratch = owned.scratch if owned is not None else Path(tempfile.mkdtemp(prefix="rmqha-kit-"))
        sc.addPyFile(kit_zip(str(scratch)))
        sc._rmqha_kit = True  # the kit's marker on Spark's context: shipped once
    return spark


def _end(context_class: Any, owned: Owned) -> None:
    """End the JVM the kit started (and forget its gateway, so that a later session starts another), the watchdog
    and the scratch directory."""
    if owned.jvm is not None and context_class._gateway is not None:
        try:
            context_class._gateway.shutdown()
        except Exception:  # the JVM may be gone already; it is being ended either way
            pass
        context_class._gateway = None
        context_class._jvm = None
    owned.end()


def stop_session(spark: Any) -> None:
    """Stop ``spark``; for a session the kit started, also end its JVM, watchdog and scratch directory."""
    from pyspark import SparkContext  # lazy: as in spark_session

    owned = getattr(spark.sparkContext, "_rmqha_owned", None)
    if owned is not None:
        owned.end_workers()
    spark.stop()
    if owned is not None:
        _end(SparkContext, owned)


def parallelism(spark: Any) -> int:
    return max(1, int(spark.sparkContext.defaultParallelism))
