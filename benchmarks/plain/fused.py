"""Plain dedup and alerts in one query: Kafka is read and parsed once, two stateful branches
(the dedup of every event; the failed-login alerts over the login events, deduplicated on their
own) are unioned with a tag, and one ``foreachBatch`` writes each branch's rows to its Delta table
with Delta's idempotent-write options. It measures what one query instead of two gives (one
read, one parse, one plan and one batch's fixed cost) before the platform's ``events`` and
``security_alerts`` are joined that way (docs/benchmarks/latency.md)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from benchmarks.plain import alerts, bronze
from benchmarks.plain.common import WATERMARK, read_kafka, trigger_of

EVENT_COLUMNS = {name: ("double" if name == "amount" else "string") for name in bronze.FIELDS}
EVENT_COLUMNS["event_time"] = "timestamp"
ALERT_COLUMNS = {
    "alert_id": "string",
    "alert_user_id": "string",
    "first_failure_time": "timestamp",
    "last_failure_time": "timestamp",
    "failure_count": "long",
    "alert_type": "string",
}


def _row(branch: str, columns: dict[str, Column]) -> list[Column]:
    """The union's columns: ``branch``, then every event and alert column (null when the
    branch has none)."""
    wide = {**EVENT_COLUMNS, **ALERT_COLUMNS}
    return [
        F.lit(branch).alias("branch"),
        *[columns.get(n, F.lit(None)).cast(t).alias(n) for n, t in wide.items()],
    ]


def fused(parsed: DataFrame) -> DataFrame:
    """Both branches of one watermarked input, tagged ``events`` or ``alerts``."""
    events = parsed.select(*bronze.FIELDS).withWatermark("event_time", WATERMARK)
    unique = events.dropDuplicatesWithinWatermark(["event_id"])
    logins = events.where(F.col("event_type").isin("login_failed", "login_success"))
    raised = alerts.alerts(logins.dropDuplicatesWithinWatermark(["event_id"]))
    return unique.select(*_row("events", {n: F.col(n) for n in bronze.FIELDS})).unionByName(
        raised.select(
            *_row(
                "alerts",
                {n: F.col(n) for n in ALERT_COLUMNS if n != "alert_user_id"}
                | {"alert_user_id": F.col("user_id")},
            )
        )
    )


class _Writer:
    """Each branch's rows of a batch to its table, the batch computed once."""

    def __init__(self, events: Path, alerts: Path) -> None:
        self._events, self._alerts = events, alerts

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = batch.persist()
        try:
            event_rows = rows.where("branch = 'events'").select(*EVENT_COLUMNS)
            alert_rows = rows.where("branch = 'alerts'").select(
                "alert_id",
                F.col("alert_user_id").alias("user_id"),
                *[n for n in ALERT_COLUMNS if n not in ("alert_id", "alert_user_id")],
            )
            bronze._append(event_rows, self._events, batch_id)
            bronze._append(alert_rows, self._alerts, batch_id)
        finally:
            rows.unpersist()


def start_from_kafka(
    spark: SparkSession, bootstrap: str, topic: str, out: Path, trigger_seconds: float | None
) -> StreamingQuery:
    """The single query Kafka -> parse -> (dedup | alerts) -> ``out/dedup/table`` and
    ``out/alerts/table``."""
    parsed = bronze.good_rows(bronze.parse(read_kafka(spark, bootstrap, topic, None)))
    return (
        fused(parsed)
        .writeStream.foreachBatch(_Writer(out / "dedup" / "table", out / "alerts" / "table"))
        .queryName("plain_fused")
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(**trigger_of(trigger_seconds))
        .start()
    )
