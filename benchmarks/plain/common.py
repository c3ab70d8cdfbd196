"""What every plain query shares: how a trigger is given, reading a Delta table as a stream, and
writing a stream into a Delta table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

# Read whole upstream versions per batch, as the platform's stateful streams do.
ALL_FILES = 1_000_000_000
WATERMARK = "10 minutes"


def trigger_of(seconds: float | None) -> dict[str, Any]:
    """None: ``availableNow`` (catch up and stop); a number: a processing-time trigger."""
    if seconds is None:
        return {"availableNow": True}
    return {"processingTime": f"{int(seconds * 1000)} milliseconds"}


def read_delta(spark: SparkSession, table: Path) -> DataFrame:
    """A Delta table as a stream of its rows, whole versions per batch."""
    return spark.readStream.format("delta").option("maxFilesPerTrigger", ALL_FILES).load(str(table))


def read_kafka(
    spark: SparkSession, bootstrap: str, topic: str, max_offsets: int | None
) -> DataFrame:
    """A Kafka topic from its earliest offset."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.fetch.max.wait.ms", "20")  # the platform's setting (streams/query.py)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", max_offsets)
    return reader.load()


def to_delta(
    df: DataFrame, out: Path, trigger_seconds: float | None, name: str, mode: str = "append"
) -> StreamingQuery:
    """Start ``df`` into the Delta table ``out/table`` (checkpoint ``out/checkpoint``)."""
    return (
        df.writeStream.format("delta")
        .outputMode(mode)
        .queryName(name)
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(**trigger_of(trigger_seconds))
        .start(str(out / "table"))
    )
