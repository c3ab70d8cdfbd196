"""Gold ``user_sessions``: the sessionization state machine run by Spark, with either stateful API.

Both adapters only convert rows and call ``platform_pipelines.state.sessions``; they keep one state
row per user and one event-time timer (last event + gap), and emit closed sessions in append mode.
Timestamps cross the Python boundary as UTC (the platform pins ``spark.sql.session.timeZone``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pandas as pd
from pyspark.sql import DataFrame, Row
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
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

from platform_pipelines.state.sessions import (
    ClosedSession,
    SessionConfig,
    SessionEvent,
    SessionState,
    on_events,
    on_timeout,
    state_from_tuple,
    state_to_tuple,
    timer_for,
)

SessionApi = Literal["transform_with_state", "apply_in_pandas_with_state"]

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

# Field for field the state machine's SessionState (see ``state_to_tuple``).
STATE_SCHEMA = StructType(
    [
        StructField("user_id", StringType(), False),
        StructField("session_start_ms", LongType(), False),
        StructField("last_event_ms", LongType(), False),
        StructField("event_count", LongType(), False),
        StructField("pages", ArrayType(StringType(), False), False),
        StructField("page_times_ms", ArrayType(LongType(), False), False),
        StructField("reached_checkout", BooleanType(), False),
        StructField("purchased", BooleanType(), False),
        StructField("revenue", DoubleType(), False),
    ]
)

# PySpark 4.2.0's worker lower-cases the state schema JSON it receives for applyInPandasWithState
# (``EvalConf.state_value_schema`` reads it with ``lower_str=True``), so "elementType" is lost and
# any array field fails with KeyError. That API keeps the two list fields as JSON strings instead.
PANDAS_STATE_SCHEMA = StructType(
    [
        StructField(f.name, StringType(), False) if isinstance(f.dataType, ArrayType) else f
        for f in STATE_SCHEMA.fields
    ]
)
_LIST_FIELDS = (4, 5)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def sessionize(
    events: DataFrame,
    gap: timedelta = timedelta(minutes=30),
    api: SessionApi = "transform_with_state",
) -> DataFrame:
    """Closed user sessions (``SESSION_SCHEMA``) from a streaming clickstream, in append mode.

    Args:
        events: streaming events with at least ``INPUT_COLUMNS`` and a watermark on
            ``event_time``; the watermark decides when an idle session times out.
        gap: event-time inactivity that closes a session.
        api: ``"transform_with_state"`` (the row-based state API v2, the default) or
            ``"apply_in_pandas_with_state"`` (GroupState with an event-time timeout).

    Example:
        >>> watermarked = events.withWatermark("event_time", "10 minutes")  # doctest: +SKIP
        >>> sessionize(watermarked).writeStream.format("delta").start(path)  # doctest: +SKIP
    """
    cfg = SessionConfig(gap_ms=gap // _MS)
    grouped = events.select(*INPUT_COLUMNS).groupBy("user_id")
    if api == "transform_with_state":
        return grouped.transformWithState(
            SessionProcessor(cfg), SESSION_SCHEMA, outputMode="Append", timeMode="EventTime"
        )
    if api == "apply_in_pandas_with_state":
        return grouped.applyInPandasWithState(
            _pandas_sessionizer(cfg),
            SESSION_SCHEMA,
            PANDAS_STATE_SCHEMA,
            outputMode="Append",
            timeoutConf=GroupStateTimeout.EventTimeTimeout,
        )
    raise ValueError(f"unknown api {api!r}; use one of {SessionApi.__args__}")


class SessionProcessor(StatefulProcessor):
    """``transformWithState`` adapter: a ValueState holds the open session, a timer its timeout."""

    def __init__(self, cfg: SessionConfig) -> None:
        self._cfg = cfg

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Declare the one state variable."""
        self._handle = handle
        self._session = handle.getValueState("session", STATE_SCHEMA)

    def handleInputRows(
        self, key: Any, rows: Iterator[Row], timerValues: TimerValues
    ) -> Iterator[Row]:
        """Fold this batch's rows into the session; move the timer to the new last event."""
        before = self._load()
        events = [_row_event(row) for row in rows]
        watermark = timerValues.getCurrentWatermarkInMs()
        after, closed = on_events(before, events, self._cfg, watermark)
        if after is None:
            self._session.clear()
        else:
            self._session.update(state_to_tuple(after))
        self._move_timer(before, after)
        return iter([_as_row(c) for c in closed])

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[Row]:
        """The watermark passed the session's last event + gap: emit it and drop the state."""
        state = self._load()
        # Only the current timer counts; _move_timer deletes superseded ones, this is a backstop.
        if state is None or expiredTimerInfo.getExpiryTimeInMs() < timer_for(state, self._cfg):
            return iter([])
        self._session.clear()
        return iter([_as_row(on_timeout(state, self._cfg))])

    def close(self) -> None:
        """Nothing to release."""

    def _move_timer(self, before: SessionState | None, after: SessionState | None) -> None:
        old = None if before is None else timer_for(before, self._cfg)
        new = None if after is None else timer_for(after, self._cfg)
        if old != new:
            if old is not None:
                self._handle.deleteTimer(old)
            if new is not None:
                self._handle.registerTimer(new)

    def _load(self) -> SessionState | None:
        stored = self._session.get()
        return None if stored is None else state_from_tuple(stored)


def _pandas_sessionizer(cfg: SessionConfig) -> Any:
    """The ``applyInPandasWithState`` function: the state row and its event-time timeout."""

    def sessionize_group(
        key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        if state.hasTimedOut:
            closed = [on_timeout(_from_pandas_state(state.get), cfg)]
            state.remove()
        else:
            before = _from_pandas_state(state.get) if state.exists else None
            events = [event for frame in frames for event in _frame_events(frame)]
            watermark = state.getCurrentWatermarkMs()
            after, closed = on_events(before, events, cfg, watermark)
            if after is None:
                state.remove()
            else:
                state.update(_to_pandas_state(after))
                state.setTimeoutTimestamp(timer_for(after, cfg))
        if closed:
            yield _as_frame(closed)

    return sessionize_group


def _to_pandas_state(state: SessionState) -> tuple[object, ...]:
    row = state_to_tuple(state)
    return tuple(json.dumps(v) if i in _LIST_FIELDS else v for i, v in enumerate(row))


def _from_pandas_state(row: tuple[Any, ...]) -> SessionState:
    return state_from_tuple([json.loads(v) if i in _LIST_FIELDS else v for i, v in enumerate(row)])


def _row_event(row: Row) -> SessionEvent:
    at: datetime = row["event_time"]
    # Arrow hands over UTC-aware datetimes; a naive one is already in the (UTC) session zone.
    aware = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return SessionEvent(
        user_id=row["user_id"],
        event_id=row["event_id"],
        event_type=row["event_type"],
        event_time_ms=(aware - _EPOCH) // _MS,
        page=row["page"],
        amount=row["amount"],
    )


def _frame_events(frame: pd.DataFrame) -> Iterable[SessionEvent]:
    times = frame["event_time"]
    if times.dt.tz is not None:
        times = times.dt.tz_convert("UTC").dt.tz_localize(None)
    millis = times.astype("datetime64[ms]").astype("int64")
    columns = zip(
        frame["user_id"],
        frame["event_id"],
        frame["event_type"],
        millis,
        frame["page"],
        frame["amount"],
        strict=True,
    )
    for user_id, event_id, kind, at, page, amount in columns:
        yield SessionEvent(
            user_id,
            event_id,
            kind,
            int(at),
            None if pd.isna(page) else page,
            None if pd.isna(amount) else float(amount),
        )


def _as_row(closed: ClosedSession) -> Row:
    return Row(**_as_dict(closed))


def _as_frame(closed: list[ClosedSession]) -> pd.DataFrame:
    return pd.DataFrame([_as_dict(c) for c in closed], columns=SESSION_SCHEMA.fieldNames())


def _as_dict(closed: ClosedSession) -> dict[str, Any]:
    return {
        "user_id": closed.user_id,
        "session_id": closed.session_id,
        "session_start": _EPOCH + closed.session_start_ms * _MS,
        "session_end": _EPOCH + closed.session_end_ms * _MS,
        "duration_seconds": closed.duration_seconds,
        "event_count": closed.event_count,
        "last_pages": list(closed.last_pages),
        "reached_checkout": closed.reached_checkout,
        "purchased": closed.purchased,
        "revenue": closed.revenue,
        "close_reason": closed.close_reason,
    }
