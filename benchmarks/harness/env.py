"""Where a suite run happens: its own Kafka broker and SparkSession in a temporary folder, how a
run is timed (wall, CPU of the whole process tree, load average), and the machine's facts."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

from pyspark.sql import SparkSession

from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.broker import LocalKafkaBroker
from platform_pipelines.kafka.producer import ProducedRecord, produce
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import get_settings
from platform_pipelines.spark.session import SparkOptions, build_spark_session

REPO = Path(__file__).resolve().parents[2]
PACKAGES = (
    "pyspark",
    "delta-spark",
    "kafka-python",
    "pyarrow",
    "pandas",
    "dagster",
    "rich",
    "click",
    "matplotlib",
    "psutil",
)


@dataclass
class Env:
    """A running broker and SparkSession, and the knobs every section shares."""

    work: Path
    spark: SparkSession
    bootstrap: str
    options: SparkOptions
    partitions: int
    max_offsets: int

    def lakehouse(self, name: str) -> Lakehouse:
        return Lakehouse(self.work / name)

    def topic(self, name: str, records: Iterable[ProducedRecord]) -> float:
        """Create ``name`` and fill it with ``records`` as fast as the producer goes; the seconds."""
        create_topics(self.bootstrap, {name: self.partitions})
        return produce(self.bootstrap, name, records).elapsed_s

    def rows(self, table: Path) -> int | None:
        """Rows of a Delta table (None when it was never written)."""
        if not (table / "_delta_log").is_dir():
            return None
        return self.spark.read.format("delta").load(str(table)).count()


def spark_options(work: Path, master: str) -> SparkOptions:
    """The platform's own options (``PLATFORM_*``, so its default partitions and conf), with
    ``master``, no UI, and Spark's scratch space under ``work``."""
    extra = {
        "spark.local.dir": str(work / "spark-local"),
        "spark.sql.warehouse.dir": str(work / "spark-warehouse"),
    }
    base = SparkOptions.from_settings(get_settings())
    return replace(
        base,
        master=master,
        ui_enabled=False,
        app_name="bench_suite",
        extra_conf={**base.extra_conf, **extra},
    )


@contextlib.contextmanager
def bench_env(
    work: Path, master: str, partitions: int, max_offsets: int, say: Callable[[str], None]
) -> Iterator[Env]:
    """Start a broker (in ``work/kafka``) and Spark; stop both however the block ends."""
    work.mkdir(parents=True, exist_ok=True)
    broker = LocalKafkaBroker(work / "kafka")
    spark: SparkSession | None = None
    try:
        bootstrap = broker.start()
        say(f"Kafka broker at {bootstrap} (pid {broker.pid}), data in {broker.data_dir}")
        options = spark_options(work, master)
        spark = build_spark_session(options)
        say(f"Spark {spark.version} on {master}, {options.state_partitions} state partitions")
        yield Env(work, spark, bootstrap, options, partitions, max_offsets)
    finally:
        if spark is not None:
            with contextlib.suppress(Exception):
                for query in spark.streams.active:
                    query.stop()
                spark.stop()
        broker.stop()
        say("Kafka broker stopped")


def load() -> float:
    """The 1-minute load average."""
    return round(os.getloadavg()[0], 2)


def cpu_seconds() -> float | None:
    """CPU seconds (user + system) used so far by this process and every live descendant: the
    Python driver, the Spark JVM, its Python workers. None without psutil."""
    try:
        from benchmarks.harness.processes import tree_cpu_seconds
    except ImportError:
        return None
    return tree_cpu_seconds(os.getpid())


def timed(action: Callable[[], Any]) -> tuple[Any, dict[str, float | None]]:
    """Run ``action``; its result and the sample's wall seconds, CPU seconds and load."""
    load_before, cpu_before = load(), cpu_seconds()
    began = time.perf_counter()
    result = action()
    wall = time.perf_counter() - began
    cpu_after = cpu_seconds()
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return result, {
        "wall_seconds": round(wall, 3),
        "cpu_seconds": _round(cpu),
        "load_before": load_before,
        "load_after": load(),
    }


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def folder_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def machine_facts(spark: SparkSession | None = None) -> dict[str, Any]:
    """Cores, load, memory, versions (Python packages, Java, Spark, the Kafka broker jar) and the
    commit measured (with whether the work tree had changes)."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    versions["python"] = platform.python_version()
    versions["java"] = _first_line(["java", "-version"])
    if spark is not None:
        versions["spark_runtime"] = spark.version
    broker = sorted((get_settings().jars_dir / "kafka-broker").glob("kafka-server-*.jar"))
    versions["kafka_broker"] = broker[0].stem.removeprefix("kafka-server-") if broker else None
    return {
        "cores": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "memory_gib": _memory_gib(),
        "platform": platform.platform(),
        "versions": versions,
        "git_commit": _first_line(["git", "-C", str(REPO), "rev-parse", "HEAD"]),
        "git_changed_files": len(
            (_output(["git", "-C", str(REPO), "status", "--porcelain"]) or "").splitlines()
        ),
        "executable": sys.executable,
    }


def _memory_gib() -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    return None


def _output(command: list[str]) -> str | None:
    if shutil.which(command[0]) is None:
        return None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
        return (done.stdout + done.stderr).strip()
    return None


def _first_line(command: list[str]) -> str | None:
    text = _output(command)
    return text.splitlines()[0] if text else None


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[TextIO]:
    """Send this process's stdout and stderr (file descriptors 1 and 2, which the Spark JVM, its
    Python workers and the broker's tools inherit) to ``log``; yield a stream to the terminal."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved_out, saved_err = os.dup(1), os.dup(2)
    terminal = os.fdopen(os.dup(saved_out), "w", buffering=1)
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield terminal
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        os.close(saved_out)
        os.close(saved_err)
        terminal.close()
