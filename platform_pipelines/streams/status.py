"""The built-in service status on Spark: the Java port of ``state/status.py``.

``state/status.py`` is the specification (plain Python, with its unit tests); the built-in
``service_status`` stream runs its line-for-line Java port (``jvm/status``) on
``flatMapGroupsWithState`` with a processing-time timeout, because the Python rules on
``transformWithState`` ran a Python worker for every state partition in every batch, heartbeats
or not: the stream's fixed cost every 10 s on cores the alerts wait for. The Python
``ServiceStatus`` still runs as ``KeyedLogic`` for whoever declares it with ``logic=``; a
property-based test compares the two rule sets on generated cases.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from platform_pipelines.spark.java_code import platform_class
from platform_pipelines.state.status import StatusConfig

STATUS_STATE_FORMAT = "status-jvm/1 (flatMapGroupsWithState)"


def service_statuses(
    heartbeats: DataFrame, cfg: StatusConfig, seed: DataFrame | None = None
) -> DataFrame:
    """Status changes (``STATUS_FIELDS``) of heartbeat rows (``service``, ``event_time``), run by
    ``platform.status.ServiceStatus``; ``seed``: the latest status row per service, on a new
    checkpoint (``StatefulStream.initial_state``)."""
    spark = heartbeats.sparkSession
    prepared = heartbeats.select("service", F.unix_millis("event_time").alias("event_time_ms"))
    seeded = None
    if seed is not None:
        seeded = seed.select(
            "service",
            "status",
            F.unix_millis("changed_at").alias("changed_at_ms"),
            F.unix_millis("last_heartbeat_time").alias("last_heartbeat_ms"),
        )._jdf
    status = platform_class(
        spark,
        "platform.status.ServiceStatus",
        "declare the stream with logic=ServiceStatus(...)",
    )
    changes = DataFrame(status.statuses(prepared._jdf, cfg.stale_after_ms, seeded), spark)
    return changes.select(
        "service",
        "status",
        F.timestamp_millis("changed_at_ms").alias("changed_at"),
        F.timestamp_millis("last_heartbeat_ms").alias("last_heartbeat_time"),
    )
