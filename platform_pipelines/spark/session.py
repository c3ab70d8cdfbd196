"""The SparkSession every stream runs in: RocksDB state, changelog checkpoints, Delta, Kafka.

``SparkOptions`` holds the knobs a user may turn; ``spark_conf`` turns them into Spark settings
(pure, unit-tested) and ``build_spark_session`` starts the JVM with them.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from platform_pipelines.jvm import ensure_jars, require_java
from platform_pipelines.settings import PlatformSettings, get_settings

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


@dataclass(frozen=True)
class SparkOptions:
    """What a deployment may change about the session. Every default suits a 2-core laptop.

    Attributes:
        master: ``local[*]`` runs Spark in this process's JVM; any Spark master URL
            (``spark://host:7077``, ``yarn``, ``k8s://...``) runs on a cluster.
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
    """

    master: str = "local[*]"
    app_name: str = "platform_pipelines"
    state_partitions: int = 4
    min_batches_to_retain: int = 20
    driver_memory: str = "2g"
    ui_enabled: bool = True
    bind_address: str = "127.0.0.1"
    driver_host: str | None = None
    extra_conf: dict[str, str] = field(default_factory=dict)

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
        }
        return cls(**{**values, **overrides})  # type: ignore[arg-type]


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
    }
    conf.update(options.extra_conf)
    return conf


def build_spark_session(options: SparkOptions | None = None) -> SparkSession:
    """Start (or join) the SparkSession for ``options``; resolves the JVM jars on first use."""
    options = options or SparkOptions()
    require_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # The Spark UI binds to SPARK_LOCAL_IP, else every interface (spark.driver.bindAddress does
    # not reach it); the JVM inherits this environment when it starts.
    os.environ["SPARK_LOCAL_IP"] = options.bind_address
    builder = SparkSession.builder
    for key, value in spark_conf(options, ensure_jars("spark")).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(get_settings().spark_log_level)
    return spark
