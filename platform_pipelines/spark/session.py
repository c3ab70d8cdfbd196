"""The SparkSession every stream runs in: RocksDB state, changelog checkpoints, Delta, Kafka.

``SparkOptions`` holds the knobs a user may turn; ``spark_conf`` turns them into Spark settings
(pure, unit-tested) and ``build_spark_session`` starts the JVM with them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import socket
import sys
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from platform_pipelines.core.storage import on_object_store
from platform_pipelines.jvm import COMPILED, ensure_compiled, ensure_jars, require_java
from platform_pipelines.settings import (
    DEFAULT_DRIVER_MEMORY,
    DEFAULT_MIN_BATCHES_TO_RETAIN,
    DEFAULT_SPARK_BIND_ADDRESS,
    DEFAULT_SPARK_MASTER,
    DEFAULT_SPARK_UI_ENABLED,
    DEFAULT_STATE_PARTITIONS,
    PlatformSettings,
    get_settings,
)
from platform_pipelines.spark.pools import scheduler_conf
from platform_pipelines.spark.s3a import s3a_conf
from platform_pipelines.spark.short_names import bind_short_names

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# Writes checkpoint files (offsets, commits, the state stores' changelogs) through Hadoop's
# FileSystem API. Spark's default goes through FileContext, whose local rename asks for each
# path's link status, and Hadoop (3.5.0, in pyspark 4.2) answers that by starting a `readlink`
# process. Every batch renames a few files per query and per state partition: in two interleaved
# runs on 2 cores (benchmarks/bench_reaction.py --quick), an offset log write took 91-110 ms and
# a state store's commit ~290 ms (4 partitions) that way, against 26-28 ms and 23 ms this way; a
# security_alerts batch 2.8 s against 2.6 s.
# Only for checkpoints on a file system (a local or mounted disk), where a rename is atomic and
# only one query writes a checkpoint at a time (its lock: runtime.lock.locked_streams). On S3
# (s3a) Spark's default stays: a rename there that overwrites (a state file written again by a
# batch replayed after a crash) fails through the FileSystem API and is kept through FileContext.
CHECKPOINT_FILE_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)
# Delta's commits on a disk, published by a hard link (jvm/locallog): Delta's default for a
# local disk renames through FileContext too (the `readlink` processes above, every commit of
# every table and batch), after a check that another driver's commit of the same version can
# slip past. Unset when the deployment chooses its own log store.
DELTA_DISK_LOG_STORE = "spark.delta.logStore.file.impl"
LINK_LOG_STORE = "platform.locallog.LinkLogStore"
# Settings by which a deployment chooses Delta's log store for a disk itself (Delta reads each
# with and without the `spark.` prefix, and refuses a class beside a scheme's store).
DEPLOYMENT_LOG_STORE = re.compile(r"(spark\.)?delta\.logStore\.(class|file\.impl)")


@dataclass(frozen=True)
class SparkOptions:
    """What a deployment may change about the session. The defaults are ``settings``' (each
    suits a 2-core laptop); ``from_settings`` takes the deployment's values instead.

    Attributes:
        master: ``local[*]`` runs Spark in this process's JVM; any Spark master URL
            (``spark://host:7077``, ``yarn``, ``k8s://...``) runs on a cluster: the driver
            then ships the jars (``spark.jars``) and a zip of the platform's code and the stream
            modules' packages (``ship_code``) to the executors.
        app_name: shown in the Spark UI and in the cluster's application list.
        state_partitions: ``spark.sql.shuffle.partitions``. It is frozen into every checkpoint
            when the checkpoint is created: Spark restores that count on restart, so a new value
            applies only to new checkpoints (the `checkpoint` health check reports the difference).
        min_batches_to_retain: checkpoint versions (and state snapshots) kept for recovery.
        driver_memory: JVM heap of the driver (local mode: of the whole engine).
        ui_enabled: the Spark web UI on :4040 (its kill links are always off); off in tests.
        bind_address: where the driver's RPC, block manager and UI listen (loopback by default).
        driver_host: the address executors use to reach the driver (default: ``bind_address``,
            or this machine's name when binding every interface).
        extra_conf: any other Spark setting, applied last (the deployment's
            ``PLATFORM_SPARK_EXTRA_CONF``, then a run's tuning keys).
        s3a_conf: Hadoop's S3A settings (``spark.hadoop.fs.s3a.*``) when the lakehouse is on an
            S3 API; then the S3A jars (``jvm/s3``) are loaded too, and the checkpoints are
            written by Spark's default manager (``CHECKPOINT_FILE_MANAGER`` is for a disk).
    """

    master: str = DEFAULT_SPARK_MASTER
    app_name: str = "platform_pipelines"
    state_partitions: int = DEFAULT_STATE_PARTITIONS
    min_batches_to_retain: int = DEFAULT_MIN_BATCHES_TO_RETAIN
    driver_memory: str = DEFAULT_DRIVER_MEMORY
    ui_enabled: bool = DEFAULT_SPARK_UI_ENABLED
    bind_address: str = DEFAULT_SPARK_BIND_ADDRESS
    driver_host: str | None = None
    extra_conf: dict[str, str] = field(default_factory=dict)
    s3a_conf: dict[str, str] = field(default_factory=dict)

    @property
    def advertised_host(self) -> str:
        """The driver address executors connect to."""
        if self.driver_host:
            return self.driver_host
        return socket.gethostname() if self.bind_address == "0.0.0.0" else self.bind_address

    @classmethod
    def from_settings(cls, settings: PlatformSettings, **overrides: object) -> SparkOptions:
        """The deployment's options (``PLATFORM_SPARK_MASTER``, ``PLATFORM_STATE_PARTITIONS``...)."""
        values: dict[str, object] = {
            "master": settings.spark_master,
            "state_partitions": settings.state_partitions,
            "min_batches_to_retain": settings.min_batches_to_retain,
            "driver_memory": settings.driver_memory,
            "ui_enabled": settings.spark_ui_enabled,
            "bind_address": settings.spark_bind_address,
            "driver_host": settings.spark_driver_host,
            "extra_conf": dict(settings.spark_extra_conf),
            "s3a_conf": s3a_conf(settings) if on_object_store(settings.lakehouse_dir) else {},
        }
        return cls(**{**values, **overrides})  # type: ignore[arg-type]


# Spark's generated code for a wide projection (bronze's parse: a rule per field) passes
# HotSpot's 8,000-byte limit for compiling a method and would run interpreted: bronze's parse
# takes 1.5x as long then (benchmarks/bench_bronze_parse.py).
JIT_OPTIONS = "-XX:-DontCompileHugeMethods"
DELTA_CHECKPOINT_INTERVAL = 100
CODE_CACHE_ENTRIES = 2000
JVM_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


def spark_conf(options: SparkOptions, jars: list[Path]) -> dict[str, str]:
    """All Spark settings for ``options``, with ``jars`` (Delta, Kafka connector) on the classpath."""
    conf = {
        "spark.master": options.master,
        "spark.app.name": options.app_name,
        "spark.driver.memory": options.driver_memory,
        "spark.ui.enabled": str(options.ui_enabled).lower(),
        "spark.ui.killEnabled": "false",
        "spark.driver.bindAddress": options.bind_address,
        "spark.driver.host": options.advertised_host,
        "spark.jars": ",".join(str(j) for j in jars),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.shuffle.partitions": str(options.state_partitions),
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.streaming.minBatchesToRetain": str(options.min_batches_to_retain),
        # Python workers must be this interpreter (the project's .venv), not whatever is on PATH.
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        # Delta's default of 50 partitions for reading its own log costs seconds per batch locally.
        "spark.databricks.delta.snapshotPartitions": str(options.state_partitions),
        # Stop a query from waiting for its current batch forever on `query.stop()`.
        "spark.sql.streaming.stopTimeout": "60s",
        # Tables created from here on write a Delta checkpoint every 100 commits, not 10. The
        # checkpoint is written inside the 10th commit: 1.2-3.3 s against ~0.2 s for a commit,
        # so every tenth micro-batch of every table paid it (the ledger: one commit per batch
        # of every stream). Readers replay at most 100 small JSON files instead.
        "spark.databricks.delta.properties.defaults.checkpointInterval": str(
            DELTA_CHECKPOINT_INTERVAL
        ),
        # A micro-batch held in memory for its several writes (bronze: raw, quarantine, the
        # count) lives for one batch: compressing it costs more CPU than its memory is worth
        # (bronze's parse-and-hold job: ~1.3 s -> ~1.1 s per 50,000 records, 2 cores).
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # Without the stage id in the generated class's name, the same pipeline planned as
        # stage 1 in one plan and stage 2 in the next is one entry in Spark's code cache, not
        # a second compile (benchmarks/bench_codegen.py: 2.4 s of 29 s of compiling).
        "spark.sql.codegen.useIdInClassName": "false",
        # The code of the session's queries, kept compiled: Spark's default of 100 pieces is
        # fewer than the built-in streams' plans hold, and the code cache evicted and compiled
        # the same code again every few batches (0.12 s for a Kafka parse).
        "spark.sql.codegen.cache.maxEntries": str(CODE_CACHE_ENTRIES),
    }
    conf.update(scheduler_conf())  # the streams someone waits on get the cores first
    if not options.s3a_conf:  # checkpoints and tables on a disk
        conf["spark.sql.streaming.checkpointFileManagerClass"] = CHECKPOINT_FILE_MANAGER
        if not any(DEPLOYMENT_LOG_STORE.fullmatch(key) for key in options.extra_conf):
            conf[DELTA_DISK_LOG_STORE] = LINK_LOG_STORE
    conf.update(options.s3a_conf)
    conf.update(options.extra_conf)
    for key in JVM_OPTION_KEYS:  # the deployment's own options come after (they win)
        conf[key] = " ".join(filter(None, [JIT_OPTIONS, options.extra_conf.get(key)]))
    return conf


def is_local(master: str) -> bool:
    """Whether ``master`` runs every task in the driver's JVM (``local``, ``local[N]``).

    >>> is_local("local[2]"), is_local("spark://127.0.0.1:7077"), is_local("local-cluster[2,1,1024]")
    (True, False, False)
    """
    return master == "local" or master.startswith("local[")


def build_spark_session(options: SparkOptions | None = None) -> SparkSession:
    """Start (or join) the SparkSession for ``options`` (default: the deployment's, from the
    settings); resolves the JVM jars on first use.

    On a cluster master the platform's code goes to the executors with the session
    (``ship_code``); the jars go with ``spark.jars``, served by the driver.
    """
    settings = get_settings()
    options = options or SparkOptions.from_settings(settings)
    require_java()
    jars = [*ensure_jars("spark"), *(ensure_compiled(name) for name in COMPILED)]
    if options.s3a_conf:
        jars += [*ensure_jars("s3"), ensure_compiled("logstore")]
    conf = spark_conf(options, jars)
    # pyspark takes the workers' Python from this variable, not from spark.pyspark.python.
    os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # The Spark UI binds to SPARK_LOCAL_IP, else every interface (spark.driver.bindAddress does
    # not reach it); the JVM inherits this environment when it starts.
    os.environ["SPARK_LOCAL_IP"] = options.bind_address
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    with _jvm_output(settings):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(settings.spark_log_level)
    bind_short_names(spark.sparkContext._jvm)
    if not is_local(options.master):
        modules = [m.strip() for m in settings.stream_modules.split(",") if m.strip()]
        ship_code(spark, settings.local_dir / "spark" / "pyfiles", ["platform_pipelines", *modules])
    return spark


# The log file is set aside (as platform.log.1) when a JVM starts and finds it this big.
LOG_FILE_MAX_BYTES = 50 * 1024 * 1024


@contextmanager
def _jvm_output(settings: PlatformSettings) -> Iterator[None]:
    """A JVM started within writes its output (start-up banners, log4j lines, the Python
    workers' prints) to ``settings.log_file`` for its whole life: it keeps the standard error it
    starts with. With ``settings.verbose``, or when this process has its JVM already, nothing
    changes."""
    if settings.verbose or SparkContext._gateway is not None:
        yield
        return
    log = settings.log_file
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists() and log.stat().st_size > LOG_FILE_MAX_BYTES:
        log.replace(log.with_name(f"{log.name}.1"))
    saved = os.dup(2)
    try:
        with log.open("a", encoding="utf-8") as out:
            out.write(f"--- {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC, pid {os.getpid()}: Spark\n")
            out.flush()
            sys.stderr.flush()
            os.dup2(out.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def ship_code(spark: SparkSession, folder: Path, modules: Iterable[str]) -> Path:
    """Send the top-level packages of ``modules`` to every executor's Python workers, as one zip
    (``SparkContext.addPyFile``): the workers need only Python, pyspark and the project's
    dependencies, never the project itself, and always run the driver's version of it."""
    archive = code_archive(folder, {m.split(".")[0] for m in modules})
    spark.sparkContext.addPyFile(str(archive))
    return archive


def code_archive(folder: Path, packages: Iterable[str]) -> Path:
    """A zip of the packages' source files in ``folder``, named by its content (so concurrent
    drivers share one file and a changed source makes a new one)."""
    files: dict[str, bytes] = {}
    for name in sorted(packages):
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError(
                f"Cannot ship {name!r} to the executors: Python cannot import it here. Check "
                "PLATFORM_STREAM_MODULES (their packages go to the executors with the platform)."
            )
        if spec.submodule_search_locations is None:  # a single-module top level
            assert spec.origin is not None
            files[Path(spec.origin).name] = Path(spec.origin).read_bytes()
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(root.rglob("*.py")):
            files[str(path.relative_to(root.parent))] = path.read_bytes()
    digest = hashlib.sha256()
    for arcname, data in files.items():
        digest.update(arcname.encode() + b"\0" + data)
    archive = folder / f"code-{digest.hexdigest()[:16]}.zip"
    if not archive.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w") as zf:
            for arcname, data in files.items():
                info = zipfile.ZipInfo(arcname, (2020, 1, 1, 0, 0, 0))
                zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
        partial.replace(archive)
    return archive
