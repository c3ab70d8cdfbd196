"""The sessions state machine (``state.sessions``) on PySpark's two Python state APIs.

``sessionize(api="transform_with_state")`` and ``sessionize(api="apply_in_pandas_with_state")``
run these instead of the default Java port. Both adapters only convert rows and call
``state.sessions``. Each keeps a user's open session and held events, one event-time timer per
user, and emits closed sessions in append mode; times cross the Python boundary as UTC (the
platform pins ``spark.sql.session.timeZone``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd
from pyspark.sql import Row
from pyspark.sql.streaming.state import GroupState
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
)

from platform_pipelines.core.times import EPOCH, MS, as_utc
from platform_pipelines.state.sessions import (
    ClosedSession,
    SessionConfig,
    SessionEvent,
    UserState,
    advance,
    event_from_tuple,
    event_to_tuple,
    on_events,
    session_from_tuple,
    session_to_tuple,
    timer_for,
)

# Field for field the state machine's SessionState (see ``session_to_tuple``).
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
# A held event (see ``event_to_tuple``); the user is the key.
PENDING_SCHEMA = StructType(
    [
        StructField("event_time_ms", LongType(), False),
        StructField("event_id", StringType(), False),
        StructField("event_type", StringType(), False),
        StructField("page", StringType(), True),
        StructField("amount", DoubleType(), True),
    ]
)

# PySpark 4.2.0's worker lower-cases the state schema JSON it receives for applyInPandasWithState
# (``EvalConf.state_value_schema`` reads it with ``lower_str=True``), so "elementType" is lost and
# any array field fails with KeyError. That API keeps the whole UserState as one JSON string.
PANDAS_STATE_SCHEMA = StructType([StructField("user_state", StringType(), False)])


class SessionProcessor(StatefulProcessor):
    """``transformWithState`` adapter: a ValueState holds the open session, a ListState the held
    events, and one event-time timer the moment the user next needs attention."""

    def __init__(self, cfg: SessionConfig) -> None:
        self._cfg = cfg

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Declare the state variables."""
        self._handle = handle
        self._session = handle.getValueState("session", STATE_SCHEMA)
        self._pending = handle.getListState("pending", PENDING_SCHEMA)

    def handleInputRows(
        self, key: Any, rows: Iterator[Row], timerValues: TimerValues
    ) -> Iterator[Row]:
        """Hold this batch's events and release what the watermark has reached."""
        before = self._load(str(key[0]))
        events = [_row_event(row) for row in rows]
        after, closed = on_events(before, events, self._cfg, timerValues.getCurrentWatermarkInMs())
        self._store(before, after)
        return iter([_as_row(c) for c in closed])

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[Row]:
        """The watermark reached the user's timer: release held events, close finished sessions."""
        before = self._load(str(key[0]))
        if before is None:
            return iter([])
        after, closed = advance(before, self._cfg, timerValues.getCurrentWatermarkInMs())
        self._store(before, after, fired=expiredTimerInfo.getExpiryTimeInMs())
        return iter([_as_row(c) for c in closed])

    def close(self) -> None:
        """Nothing to release."""

    def _load(self, user_id: str) -> UserState | None:
        stored = self._session.get()
        pending = tuple(event_from_tuple(user_id, row) for row in self._pending.get())
        session = None if stored is None else session_from_tuple(stored)
        return None if session is None and not pending else UserState(session, pending)

    def _store(
        self, before: UserState | None, after: UserState | None, fired: int | None = None
    ) -> None:
        old = None if before is None else timer_for(before, self._cfg)
        new = None if after is None else timer_for(after, self._cfg)
        if old != new:
            if old is not None and old != fired:  # Spark removes a timer once it has fired
                self._handle.deleteTimer(old)
            if new is not None:
                self._handle.registerTimer(new)
        if after is None or after.open is None:
            self._session.clear()
        elif before is None or before.open != after.open:
            self._session.update(session_to_tuple(after.open))
        if after is None or not after.pending:
            self._pending.clear()
        elif before is None or before.pending != after.pending:
            self._pending.put([event_to_tuple(e) for e in after.pending])


def pandas_sessionizer(cfg: SessionConfig) -> Any:
    """The ``applyInPandasWithState`` function: the whole UserState as JSON, one timeout."""

    def sessionize_group(
        key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        user_id = str(key[0])
        before = _from_json(user_id, state.get[0]) if state.exists else None
        watermark = state.getCurrentWatermarkMs()
        if state.hasTimedOut:
            after, closed = advance(before or UserState(), cfg, watermark)
        else:
            events = [event for frame in frames for event in _frame_events(frame)]
            after, closed = on_events(before, events, cfg, watermark)
        if after is None:
            state.remove()
        else:
            state.update((_to_json(after),))
            timer = timer_for(after, cfg)
            if timer is not None:
                state.setTimeoutTimestamp(timer)
        if closed:
            yield _as_frame(closed)

    return sessionize_group


def _to_json(state: UserState) -> str:
    session = None if state.open is None else session_to_tuple(state.open)
    return json.dumps({"open": session, "pending": [event_to_tuple(e) for e in state.pending]})


def _from_json(user_id: str, text: str) -> UserState:
    data = json.loads(text)
    session = None if data["open"] is None else session_from_tuple(data["open"])
    return UserState(session, tuple(event_from_tuple(user_id, row) for row in data["pending"]))


def _row_event(row: Row) -> SessionEvent:
    return SessionEvent(
        event_time_ms=(as_utc(row["event_time"]) - EPOCH) // MS,
        event_id=row["event_id"],
        user_id=row["user_id"],
        event_type=row["event_type"],
        page=row["page"],
        amount=row["amount"],
    )


def _frame_events(frame: pd.DataFrame) -> Iterable[SessionEvent]:
    times = frame["event_time"]
    if times.dt.tz is not None:
        times = times.dt.tz_convert("UTC").dt.tz_localize(None)
    millis = times.astype("datetime64[ms]").astype("int64")
    columns = zip(
        millis,
        frame["event_id"],
        frame["user_id"],
        frame["event_type"],
        frame["page"],
        frame["amount"],
        strict=True,
    )
    for at, event_id, user_id, kind, page, amount in columns:
        yield SessionEvent(
            int(at),
            event_id,
            user_id,
            kind,
            None if pd.isna(page) else page,
            None if pd.isna(amount) else float(amount),
        )


def _as_row(closed: ClosedSession) -> Row:
    return Row(**_as_dict(closed))


def _as_frame(closed: list[ClosedSession]) -> pd.DataFrame:
    return pd.DataFrame([_as_dict(c) for c in closed])  # columns in SESSION_SCHEMA's order


def _as_dict(closed: ClosedSession) -> dict[str, Any]:
    return {
        "user_id": closed.user_id,
        "session_id": closed.session_id,
        "session_start": EPOCH + closed.session_start_ms * MS,
        "session_end": EPOCH + closed.session_end_ms * MS,
        "duration_seconds": closed.duration_seconds,
        "event_count": closed.event_count,
        "last_pages": list(closed.last_pages),
        "reached_checkout": closed.reached_checkout,
        "purchased": closed.purchased,
        "revenue": closed.revenue,
        "close_reason": closed.close_reason,
    }
