"""The ``state_snapshots`` table: a stream's state per key, appended at a point in time."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from platform_pipelines.core.state_view import StateReport
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.state_reader import key_state, state_totals, stream_state

SNAPSHOT_TABLE = "state_snapshots"
SNAPSHOT = StructType(
    [
        StructField("stream", StringType(), False),
        StructField("snapshot_time", TimestampType(), False),
        StructField("batch_id", LongType(), False),
        StructField("key", StringType(), False),
        StructField("value", StringType(), True),  # JSON, decoded (core.state_view)
        StructField("timer", TimestampType(), True),  # the key's next registered timer
        StructField("bytes", LongType(), False),
    ]
)


def write_snapshot(
    spark: SparkSession, lakehouse: Lakehouse, stream: str, at: datetime, top: int = 0
) -> StateReport:
    """Append ``stream``'s state (the ``top`` biggest keys; 0: every key) to ``state_snapshots``
    (``SNAPSHOT``: one row per key, stamped ``at``), and report it with its 10 biggest keys."""
    table = lakehouse.ensure_table(spark, SNAPSHOT_TABLE, SNAPSHOT)
    state = stream_state(spark, lakehouse.checkpoint(stream), stream)
    df = state.keys.persist()
    try:
        ranked = df.orderBy(F.desc("bytes"), "key")
        written = ranked.limit(top) if top else ranked
        written.select(
            F.lit(stream).alias("stream"),
            F.lit(at).cast("timestamp").alias("snapshot_time"),
            F.lit(state.batch_id).cast("long").alias("batch_id"),
            "key",
            "value",
            F.timestamp_millis(F.array_min("timers_ms")).alias("timer"),
            "bytes",
        ).write.format("delta").mode("append").save(str(table))
        shown = [key_state(r) for r in ranked.limit(10).collect()]
        totals = state_totals(df)
    finally:
        df.unpersist()
    return state.report(shown, totals)
