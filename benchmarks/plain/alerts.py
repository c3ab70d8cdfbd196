"""Plain failed-login alerts: a hand-written ``transformWithState`` processor over the login
events only (filtered before the grouping, as one would by hand). Per user: the failure times
within the last 10 minutes of event time; the 5th emits one alert and resets, a success resets,
and an event-time timer at the newest failure + 10 minutes removes the state. No native
operator expresses this."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from benchmarks.plain import bronze
from benchmarks.plain.common import WATERMARK, read_delta, read_kafka, to_delta

THRESHOLD = 5
WINDOW_MS = 10 * 60 * 1000
OUTPUT = "user_id string, first_ms long, last_ms long, failure_count long"


class Alerts(StatefulProcessor):
    """Per user: the failure times still in the window (a ValueState), one timer."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        self._failures = handle.getValueState("failures", "times array<long>")

    def handleInputRows(
        self, key: Any, rows: Iterator[Row], timerValues: TimerValues
    ) -> Iterator[Row]:
        stored = self._failures.get()
        failures: list[int] = list(stored[0]) if stored else []
        old_timer = failures[-1] + WINDOW_MS if failures else None
        alerts = []
        for row in sorted(rows, key=lambda r: r["event_ms"]):
            at = row["event_ms"]
            if row["event_type"] == "login_success":
                failures = [f for f in failures if f > at]
                continue
            failures = sorted(f for f in [*failures, at] if f >= at - WINDOW_MS)
            if len(failures) >= THRESHOLD:
                alerts.append(
                    Row(
                        user_id=key[0],
                        first_ms=failures[0],
                        last_ms=failures[-1],
                        failure_count=len(failures),
                    )
                )
                failures = []
        new_timer = failures[-1] + WINDOW_MS if failures else None
        if new_timer is not None and new_timer <= timerValues.getCurrentWatermarkInMs():
            failures, new_timer = [], None
        if old_timer != new_timer:
            if old_timer is not None:
                self._handle.deleteTimer(old_timer)
            if new_timer is not None:
                self._handle.registerTimer(new_timer)
        if failures:
            self._failures.update((failures,))
        else:
            self._failures.clear()
        return iter(alerts)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[Row]:
        self._failures.clear()
        return iter([])

    def close(self) -> None:
        pass


def alerts(events: DataFrame) -> DataFrame:
    """One alert per 5 failed logins of a user within 10 minutes."""
    logins = events.where(F.col("event_type").isin("login_failed", "login_success")).select(
        "user_id", F.unix_millis("event_time").alias("event_ms"), "event_type"
    )
    raised = logins.groupBy("user_id").transformWithState(
        Alerts(), OUTPUT, outputMode="Append", timeMode="EventTime"
    )
    return raised.select(
        F.concat_ws("-", "user_id", F.col("last_ms").cast("string")).alias("alert_id"),
        "user_id",
        F.timestamp_millis("first_ms").alias("first_failure_time"),
        F.timestamp_millis("last_ms").alias("last_failure_time"),
        "failure_count",
        F.lit("failed_logins").alias("alert_type"),
    )


def start(
    spark: SparkSession, source: Path, out: Path, trigger_seconds: float | None = None
) -> StreamingQuery:
    """Start the alerts over the events table ``source`` into ``out/table``."""
    events = read_delta(spark, source).withWatermark("event_time", WATERMARK)
    return to_delta(alerts(events), out, trigger_seconds, "plain_alerts")


def start_from_kafka(
    spark: SparkSession, bootstrap: str, topic: str, out: Path, trigger_seconds: float | None
) -> StreamingQuery:
    """The single query Kafka -> parse -> dedup -> alerts -> ``out/table``."""
    parsed = bronze.good_rows(bronze.parse(read_kafka(spark, bootstrap, topic, None)))
    unique = parsed.withWatermark("event_time", WATERMARK).dropDuplicatesWithinWatermark(
        ["event_id"]
    )
    return to_delta(alerts(unique), out, trigger_seconds, "plain_kafka_alerts")
