"""Plain dedup, Spark's native operator: ``withWatermark`` -> ``dropDuplicatesWithinWatermark``
-> Delta. ``start`` reads the bronze Delta table (as the platform's ``events`` does);
``start_from_kafka`` is the whole path in one query: Kafka -> parse -> dedup -> Delta (bad
records are dropped, no bronze tables are kept)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from benchmarks.plain import bronze
from benchmarks.plain.common import WATERMARK, read_delta, read_kafka, to_delta


def deduplicate(events: DataFrame) -> DataFrame:
    return (
        events.select(*bronze.FIELDS)
        .withWatermark("event_time", WATERMARK)
        .dropDuplicatesWithinWatermark(["event_id"])
    )


def start(
    spark: SparkSession, source: Path, out: Path, trigger_seconds: float | None = None
) -> StreamingQuery:
    """Start dedup of the bronze table ``source`` into ``out/table``."""
    return to_delta(deduplicate(read_delta(spark, source)), out, trigger_seconds, "plain_dedup")


def start_from_kafka(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    out: Path,
    max_offsets: int | None,
    trigger_seconds: float | None = None,
) -> StreamingQuery:
    """Start the single query Kafka -> parse -> dedup -> ``out/table``."""
    parsed = bronze.good_rows(bronze.parse(read_kafka(spark, bootstrap, topic, max_offsets)))
    return to_delta(deduplicate(parsed), out, trigger_seconds, "plain_kafka_dedup")
