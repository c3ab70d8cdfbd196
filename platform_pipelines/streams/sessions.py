"""Gold ``user_sessions``: ``sessionize`` runs the sessions state machine on Spark.

The state machine is ``state.sessions``. By default its Java port runs in the JVM
(``jvm/sessions``; no Python call per user); ``streams.sessions_python`` runs the Python one on
either of PySpark's state APIs instead. Every API gives the same rows.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from platform_pipelines.core.times import MS
from platform_pipelines.spark.java_code import platform_class
from platform_pipelines.state.sessions import SessionConfig
from platform_pipelines.streams.sessions_python import (
    PANDAS_STATE_SCHEMA,
    SessionProcessor,
    pandas_sessionizer,
)
from platform_pipelines.streams.watermark import WATERMARK_COLUMN

SessionApi = Literal["jvm", "transform_with_state", "apply_in_pandas_with_state"]
# How the default API keeps its state: recorded in the sessions checkpoint (``state_format``).
SESSIONS_STATE_FORMAT = "sessions-jvm/1 (flatMapGroupsWithState)"

INPUT_COLUMNS = ("event_id", "user_id", "event_type", "page", "amount", "event_time")

SESSION_SCHEMA = StructType(
    [
        StructField("user_id", StringType(), False),
        StructField("session_id", StringType(), False),
        StructField("session_start", TimestampType(), False),
        StructField("session_end", TimestampType(), False),
        StructField("duration_seconds", DoubleType(), False),
        StructField("event_count", LongType(), False),
        StructField("last_pages", ArrayType(StringType(), False), False),
        StructField("reached_checkout", BooleanType(), False),
        StructField("purchased", BooleanType(), False),
        StructField("revenue", DoubleType(), False),
        StructField("close_reason", StringType(), False),
    ]
)


def sessionize(
    events: DataFrame,
    gap: timedelta = timedelta(minutes=30),
    api: SessionApi = "jvm",
) -> DataFrame:
    """Closed user sessions (``SESSION_SCHEMA``) from a streaming clickstream, in append mode.

    Args:
        events: streaming events with at least ``INPUT_COLUMNS`` and the platform's watermark
            column (``streams.query.with_watermark``); the watermark releases held events and
            closes idle sessions.
        gap: event-time inactivity that closes a session.
        api: ``"jvm"`` (the default: the state machine ported to Java, ``jvm/sessions``, on
            ``flatMapGroupsWithState``; no row or state call crosses into Python), or the Python
            state machine on ``"transform_with_state"`` or ``"apply_in_pandas_with_state"``.
            All give the same rows; a checkpoint stays with the API it started with.

    Usage (needs a SparkSession, so not a doctest)::

        watermarked = with_watermark(events, "event_time", timedelta(minutes=10))
        sessionize(watermarked).writeStream.format("delta").start(path)
    """
    cfg = SessionConfig(gap_ms=gap // MS)
    if api == "jvm":
        return _jvm_sessionize(events, cfg)
    grouped = events.select(*INPUT_COLUMNS, WATERMARK_COLUMN).groupBy("user_id")
    if api == "transform_with_state":
        return grouped.transformWithState(
            SessionProcessor(cfg), SESSION_SCHEMA, outputMode="Append", timeMode="EventTime"
        )
    if api == "apply_in_pandas_with_state":
        return grouped.applyInPandasWithState(
            pandas_sessionizer(cfg),
            SESSION_SCHEMA,
            PANDAS_STATE_SCHEMA,
            outputMode="Append",
            timeoutConf=GroupStateTimeout.EventTimeTimeout,
        )
    raise ValueError(f"unknown api {api!r}; use one of {SessionApi.__args__}")


def _jvm_sessionize(events: DataFrame, cfg: SessionConfig) -> DataFrame:
    """``platform.sessions.Sessionizer`` (``jvm.ensure_compiled``); epoch ms become timestamps."""
    spark = events.sparkSession
    prepared = events.select(
        "user_id",
        "event_id",
        "event_type",
        "page",
        "amount",
        F.unix_millis("event_time").alias("event_time_ms"),
        WATERMARK_COLUMN,
    )
    sessionizer = platform_class(
        spark, "platform.sessions.Sessionizer", "pass api='transform_with_state'"
    )
    sessions = DataFrame(sessionizer.sessionize(prepared._jdf, cfg.gap_ms, cfg.max_pages), spark)
    as_time = {"session_start": "session_start_ms", "session_end": "session_end_ms"}
    return sessions.select(
        *[
            F.timestamp_millis(as_time[n]).alias(n) if n in as_time else n
            for n in SESSION_SCHEMA.fieldNames()
        ]
    )
