"""Which Spark settings a run's launch config may change: tuning only.

Anyone who reaches the Dagster launchpad can submit run config. A Spark setting there could run
code as the platform (JVM options, jars, class paths, listeners, a Python executable), move its
files (warehouse, checkpoint, local dirs) or open it to the network (bind addresses, the UI). So
run config takes only the tuning keys below; everything else belongs to the deployment
(``PLATFORM_SPARK_EXTRA_CONF`` and the other ``PLATFORM_*`` variables), which only the operator
controls. Each refusal names the setting to use instead.

Example:
    >>> run_conf_problems({"spark.sql.shuffle.partitions": "8"})
    []
    >>> run_conf_problems({"spark.driver.extraJavaOptions": "-javaagent:/tmp/x.jar"})  # doctest: +ELLIPSIS
    ["spark_conf: 'spark.driver.extraJavaOptions' is refused: JVM options run code in the driver; ...]
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Keys a run may tune: sizes, counts and switches that change speed, never what runs or where.
TUNING_KEYS = frozenset(
    {
        "spark.default.parallelism",
        "spark.sql.shuffle.partitions",
        "spark.sql.files.maxPartitionBytes",
        "spark.sql.autoBroadcastJoinThreshold",
        "spark.sql.execution.arrow.maxRecordsPerBatch",
        "spark.sql.execution.arrow.pyspark.enabled",
        "spark.sql.streaming.stateStore.maintenanceInterval",
        "spark.sql.streaming.stopTimeout",
        "spark.databricks.delta.snapshotPartitions",
        "spark.databricks.delta.optimizeWrite.enabled",
        "spark.databricks.delta.autoCompact.enabled",
        "spark.executor.memory",
        "spark.executor.cores",
        "spark.executor.instances",
        "spark.cores.max",
        "spark.memory.fraction",
        "spark.memory.storageFraction",
        "spark.python.worker.memory",
        "spark.python.worker.reuse",
        "spark.task.maxFailures",
    }
)
# RocksDB state store sizing (spark.sql.streaming.stateStore.rocksdb.<one of these>).
_ROCKSDB_TUNING = frozenset(
    {
        "blockCacheSizeMB",
        "writeBufferSizeMB",
        "maxWriteBufferNumber",
        "boundedMemoryUsage",
        "maxMemoryUsageMB",
        "writeBufferCacheRatio",
        "highPriorityPoolRatio",
        "compactOnCommit",
        "trackTotalNumberOfRows",
        "maxOpenFiles",
    }
)
_ROCKSDB = "spark.sql.streaming.stateStore.rocksdb."

_DEPLOYMENT = "set it for the deployment in PLATFORM_SPARK_EXTRA_CONF (a JSON object)"
# (pattern, why it is refused, what to use instead), first match wins.
_REFUSED: tuple[tuple[str, str, str], ...] = (
    (
        r"JavaOptions$|extraClassPath$|extraLibraryPath$|userClassPathFirst$",
        "JVM options run code in the driver",
        _DEPLOYMENT,
    ),
    (
        r"^spark\.(jars|files|archives|submit\.pyFiles|plugins|extraListeners)|^spark\.sql\."
        r"(extensions|catalog|queryExecutionListeners|streaming\.streamingQueryListeners)",
        "it loads code into the platform",
        "the platform's jars come from `platform setup` (jvm/*/pom.xml); " + _DEPLOYMENT,
    ),
    (
        r"^spark\.(pyspark|executorEnv|yarn\.appMasterEnv|kubernetes\.driverEnv)",
        "it chooses the Python executable or the process environment",
        "the platform runs its own .venv interpreter; " + _DEPLOYMENT,
    ),
    (
        r"^spark\.(master|submit\.deployMode)$",
        "it chooses the cluster",
        "set PLATFORM_SPARK_MASTER for the deployment",
    ),
    (
        r"^spark\.(sql\.warehouse\.dir|local\.dir|checkpoint|sql\.streaming\.checkpointLocation|"
        r"eventLog|history|hadoop\.)|Dir$|\.dir$|\.path$",
        "it is a file-system root",
        "tables and checkpoints live under PLATFORM_LAKEHOUSE_DIR (else PLATFORM_LOCAL_DIR)",
    ),
    (
        r"^spark\.(driver\.(bindAddress|host|port)|blockManager|ui\.|port\.|network\.|authenticate|"
        r"ssl|redaction)",
        "it concerns the network, the Spark UI or secret redaction",
        "set PLATFORM_SPARK_BIND_ADDRESS / PLATFORM_SPARK_DRIVER_HOST for the deployment",
    ),
    (
        r"^spark\.sql\.streaming\.(stateStore\.providerClass|stateStore\.rocksdb\.changelog)",
        "the platform's state store and its guarantees depend on it",
        _DEPLOYMENT,
    ),
)


def is_tuning_key(key: str) -> bool:
    """Whether run config may set ``key``.

    >>> is_tuning_key("spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB")
    True
    >>> is_tuning_key("spark.jars")
    False
    """
    if key in TUNING_KEYS:
        return True
    return key.startswith(_ROCKSDB) and key[len(_ROCKSDB) :] in _ROCKSDB_TUNING


def run_conf_problems(conf: Mapping[str, object], field: str = "spark_conf") -> list[str]:
    """Why each key of ``conf`` may not come from run config (empty when all may)."""
    problems = []
    for key in sorted(conf):
        if is_tuning_key(key):
            continue
        why, instead = next(
            ((why, instead) for pattern, why, instead in _REFUSED if re.search(pattern, key)),
            ("it is not one of the tuning settings a run may change", _DEPLOYMENT),
        )
        problems.append(f"{field}: {key!r} is refused: {why}; {instead}.")
    if problems:
        problems.append(
            f"{field}: a run may set only these tuning keys: "
            f"{', '.join(sorted(TUNING_KEYS))}, {_ROCKSDB}<"
            f"{'|'.join(sorted(_ROCKSDB_TUNING))}>."
        )
    return problems
