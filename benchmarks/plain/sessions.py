"""Plain sessions, two ways.

- ``start``: a hand-written ``transformWithState`` processor, one ValueState per user (the open
  session) and one event-time timer (its last event + the gap). A batch's events are applied in
  event-time order as they arrive (not held until the watermark passes them, as the platform
  does); a session closes at a logout or after 30 minutes of inactivity and reports start, end,
  duration, event count, the last 10 pages, checkout / purchase and revenue.
- ``start_native``: Spark's native ``session_window`` (JVM only; no logout rule), aggregating
  the same columns: the cost floor.
"""

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

from benchmarks.plain.common import WATERMARK, read_delta, to_delta

GAP_MS = 30 * 60 * 1000
OPEN = (
    "start_ms long, last_ms long, count long, pages array<string>, checkout boolean, "
    "purchased boolean, revenue double"
)
OUTPUT = (
    "user_id string, session_start_ms long, session_end_ms long, event_count long, "
    "last_pages array<string>, reached_checkout boolean, purchased boolean, "
    "revenue double, close_reason string"
)


class Sessions(StatefulProcessor):
    """Per user: the open session; closes on logout, gap or timer."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        self._open = handle.getValueState("open", OPEN)

    def handleInputRows(
        self, key: Any, rows: Iterator[Row], timerValues: TimerValues
    ) -> Iterator[Row]:
        user = key[0]
        session = self._open.get()
        old_timer = None if session is None else session[1] + GAP_MS
        closed = []
        for row in sorted(rows, key=lambda r: r["event_ms"]):
            at = row["event_ms"]
            if session is not None and at - session[1] > GAP_MS:
                closed.append(_closed(user, session, "inactivity"))
                session = None
            session = _add(session, row)
            if row["event_type"] == "logout":
                closed.append(_closed(user, session, "logout"))
                session = None
        new_timer = None if session is None else session[1] + GAP_MS
        if session is not None and session[1] + GAP_MS <= timerValues.getCurrentWatermarkInMs():
            closed.append(_closed(user, session, "inactivity"))
            session, new_timer = None, None
        if old_timer != new_timer:
            if old_timer is not None:
                self._handle.deleteTimer(old_timer)
            if new_timer is not None:
                self._handle.registerTimer(new_timer)
        if session is None:
            self._open.clear()
        else:
            self._open.update(session)
        return iter(closed)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[Row]:
        session = self._open.get()
        self._open.clear()
        return iter([] if session is None else [_closed(key[0], session, "inactivity")])

    def close(self) -> None:
        pass


def _add(session: tuple[Any, ...] | None, row: Row) -> tuple[Any, ...]:
    at, kind = row["event_ms"], row["event_type"]
    start, last, count, pages, checkout, purchased, revenue = session or (
        at,
        at,
        0,
        [],
        False,
        False,
        0.0,
    )
    if row["page"] is not None:
        pages = [*pages, row["page"]][-10:]
    bought = kind == "purchase"
    amount = row["amount"] or 0.0
    return (
        min(start, at),
        max(last, at),
        count + 1,
        pages,
        checkout or kind == "checkout",
        purchased or bought,
        revenue + (amount if bought else 0.0),
    )


def _closed(user: str, session: tuple[Any, ...], reason: str) -> Row:
    start, last, count, pages, checkout, purchased, revenue = session
    return Row(
        user_id=user,
        session_start_ms=start,
        session_end_ms=last,
        event_count=count,
        last_pages=list(pages),
        reached_checkout=checkout,
        purchased=purchased,
        revenue=revenue,
        close_reason=reason,
    )


def sessionize(events: DataFrame) -> DataFrame:
    """Closed sessions from a watermarked event stream."""
    rows = events.select(
        "user_id", F.unix_millis("event_time").alias("event_ms"), "event_type", "page", "amount"
    )
    closed = rows.groupBy("user_id").transformWithState(
        Sessions(), OUTPUT, outputMode="Append", timeMode="EventTime"
    )
    start, end = F.timestamp_millis("session_start_ms"), F.timestamp_millis("session_end_ms")
    return closed.select(
        "user_id",
        F.concat_ws("-", "user_id", F.col("session_start_ms").cast("string")).alias("session_id"),
        start.alias("session_start"),
        end.alias("session_end"),
        ((F.col("session_end_ms") - F.col("session_start_ms")) / 1000).alias("duration_seconds"),
        "event_count",
        "last_pages",
        "reached_checkout",
        "purchased",
        "revenue",
        "close_reason",
    )


def native(events: DataFrame) -> DataFrame:
    """Spark's ``session_window``: the same columns, without the logout rule."""
    bought = F.col("event_type") == "purchase"
    window = F.session_window("event_time", "30 minutes")
    return events.groupBy("user_id", window.alias("session")).agg(
        F.count("*").alias("event_count"),
        F.max("event_time").alias("session_end"),
        F.bool_or(F.col("event_type") == "checkout").alias("reached_checkout"),
        F.bool_or(bought).alias("purchased"),
        F.sum(F.when(bought, F.col("amount")).otherwise(0.0)).alias("revenue"),
        F.slice(F.collect_list("page"), -10, 10).alias("last_pages"),
    )


def _events(spark: SparkSession, source: Path) -> DataFrame:
    return read_delta(spark, source).withWatermark("event_time", WATERMARK)


def start(
    spark: SparkSession, source: Path, out: Path, trigger_seconds: float | None = None
) -> StreamingQuery:
    """Start the hand-written sessionization of the events table ``source``."""
    return to_delta(sessionize(_events(spark, source)), out, trigger_seconds, "plain_sessions")


def start_native(
    spark: SparkSession, source: Path, out: Path, trigger_seconds: float | None = None
) -> StreamingQuery:
    """Start ``session_window`` over the events table ``source``."""
    return to_delta(native(_events(spark, source)), out, trigger_seconds, "native_sessions")
