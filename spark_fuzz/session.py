"""The Spark session of a campaign, and the kit shipped to its executors.

``spark_session(master)`` starts (or reuses) a session: the embedded ``local[*,4]`` by default (every core, and a
task is retried up to 4 times, as on a cluster; ``local[N]`` becomes ``local[N,4]`` too), or any master URL
(``spark://host:7077``, ``yarn``, ...). Python workers run this interpreter (``PYSPARK_PYTHON``: otherwise Spark
takes ``python3`` from PATH); a local master binds to 127.0.0.1; the driver JVM runs with C1 only (``DRIVER_JVM``).
The kit itself goes to the executors as a zip (``kit_zip``): every ``rmqha`` subpackage, read from where it is
installed and laid out as the ``rmqha`` package, added with ``addPyFile``, so executors need only Python 3.11+ and
no install of the kit. Under ``spark-submit`` the session it made is reused the same way.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import rmqha

SUBPACKAGES = ("impl", "models", "spark_fuzz", "symbolic")
EMBEDDED = "local[*,4]"
# The driver JVM only schedules tasks and moves bytes here: C1 alone and the serial collector spare the cores the ~25
# CPU-seconds of C2 compilation it otherwise spends in its first half minute (the Python runs need them).
DRIVER_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Spark's own log lines at ERROR only, from the first one (setLogLevel comes too late for the startup chatter)
LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
"""
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


def spark_session(master: str | None = None, app: str = "rmqha-fuzz") -> Any:
    """A Spark session on ``master`` (default: the embedded ``local[*,4]``) with the kit shipped to executors."""
    from pyspark.sql import SparkSession  # lazy: pyspark (490 MB, a JVM) loads only when a campaign starts

    url = with_retries(master or EMBEDDED)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if url.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = Path(tempfile.mkdtemp(prefix="rmqha-spark-")) / "log4j2.properties"
    log4j.write_text(LOG4J)
    builder = SparkSession.builder.appName(app)
    if master is not None or "PYSPARK_GATEWAY_PORT" not in os.environ:  # spark-submit: keep its --master
        builder = builder.master(url)
    spark = (builder.config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.python.unix.domain.socket.enabled", "true" if url.startswith("local") else "false")
             .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.extraJavaOptions", f"{DRIVER_JVM} -Dlog4j2.configurationFile={log4j.as_uri()}")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    sc = spark.sparkContext
    if not getattr(sc, "_rmqha_kit", None):
        sc.addPyFile(kit_zip())
        sc._rmqha_kit = True  # type: ignore[attr-defined]  # the kit's marker on Spark's context: shipped once
    return spark


def parallelism(spark: Any) -> int:
    return max(1, int(spark.sparkContext.defaultParallelism))
