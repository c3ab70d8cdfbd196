"""Plain bronze: Kafka -> ``from_json`` -> a reason per bad record -> two Delta tables (good rows,
quarantine), written once each per batch from ``foreachBatch`` with Delta's idempotent-write
options (``txnAppId``/``txnVersion``), as a hand-written exactly-once job does."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

from benchmarks.plain.common import read_kafka, trigger_of

FIELDS = ("event_id", "user_id", "event_type", "page", "amount", "event_time")
JSON_SCHEMA = StructType(
    [StructField(n, DoubleType() if n == "amount" else StringType()) for n in FIELDS]
)
REQUIRED = ("event_id", "user_id", "event_type", "event_time")
EVENT_TYPES = (
    "page_view",
    "add_to_cart",
    "checkout",
    "purchase",
    "login_failed",
    "login_success",
    "logout",
)


def parse(kafka_rows: DataFrame) -> DataFrame:
    """Kafka rows -> the typed fields, the Kafka position, the text and ``reason`` (null: good)."""
    text = F.col("value").cast("string")
    parsed = kafka_rows.select(
        text.alias("raw_value"),
        F.from_json(text, JSON_SCHEMA).alias("j"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )
    typed = parsed.select(
        "raw_value",
        "kafka_partition",
        "kafka_offset",
        "kafka_timestamp",
        *[F.col(f"j.{n}").alias(n) for n in FIELDS if n != "event_time"],
        F.try_to_timestamp(F.col("j.event_time")).alias("event_time"),
        F.col("j.event_time").alias("_event_time_text"),
    )
    return typed.withColumn("reason", F.nullif(F.concat_ws("; ", *_problems()), F.lit("")))


def _problems() -> list[Column]:
    missing = [
        F.when(
            F.coalesce(F.trim(F.col(n)) == "", F.lit(True))
            if n != "event_time"
            else F.col("_event_time_text").isNull(),
            F.lit(f"missing {n}"),
        )
        for n in REQUIRED
    ]
    return [
        *missing,
        F.when(
            F.col("_event_time_text").isNotNull() & F.col("event_time").isNull(),
            F.lit("event_time is not a timestamp"),
        ),
        F.when(~F.col("event_type").isin(*EVENT_TYPES), F.lit("unknown event_type")),
        F.when((F.col("amount") < 0) | (F.col("amount") > 1_000_000), F.lit("amount out of range")),
        F.when(
            F.col("event_time") > F.current_timestamp() + F.expr("INTERVAL 1 HOUR"),
            F.lit("event_time in the future"),
        ),
    ]


def good_rows(parsed: DataFrame) -> DataFrame:
    return parsed.where(F.col("reason").isNull()).select(
        *FIELDS, "kafka_partition", "kafka_offset", "kafka_timestamp"
    )


class _Writer:
    def __init__(self, out: Path) -> None:
        self._out = out

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        parsed = parse(batch).persist()
        try:
            _append(good_rows(parsed), self._out / "raw", batch_id)
            bad = parsed.where(F.col("reason").isNotNull()).select(
                "raw_value",
                "reason",
                "kafka_partition",
                "kafka_offset",
                F.current_timestamp().alias("quarantined_at"),
            )
            _append(bad, self._out / "quarantine", batch_id)
        finally:
            parsed.unpersist()


def _append(df: DataFrame, table: Path, batch_id: int) -> None:
    (
        df.write.format("delta")
        .mode("append")
        .option("txnAppId", str(table))
        .option("txnVersion", batch_id)
        .save(str(table))
    )


def start(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    out: Path,
    max_offsets: int | None,
    trigger_seconds: float | None = None,
) -> StreamingQuery:
    """Start plain bronze: tables ``out/raw`` and ``out/quarantine``."""
    return (
        read_kafka(spark, bootstrap, topic, max_offsets)
        .writeStream.foreachBatch(_Writer(out))
        .queryName("plain_bronze")
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(**trigger_of(trigger_seconds))
        .start()
    )
