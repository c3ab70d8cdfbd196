"""Runs any plain-Python ``KeyedLogic`` as a ``transformWithState`` operator.

The key's state is kept as one JSON document in a ValueState (so the logic's state can be any
JSON-able dict without declaring a state schema), and at most one timer per key: the one the last
``Step`` asked for. Event-time timers fire when the watermark passes them; processing-time timers on
a later trigger, even when no new data arrives.

Every state call is a round trip between the Python worker and the JVM's state server, so a key
costs as few as possible: the document also records the key's timer (``{"state": ..., "timer_ms":
...}``), so no ``exists`` or ``listTimers`` call is needed, a timer that did not change is left
alone, and an unchanged document is not written again. A document written before the timer was
recorded (a bare state) is still read; its timers are then listed once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, Literal

from pyspark.sql import DataFrame, Row
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import StringType, StructField, StructType

from platform_pipelines.core.times import as_utc, json_default
from platform_pipelines.state.keyed import Clock, Key, KeyedLogic, State, Step
from platform_pipelines.streams.watermark import WATERMARK_COLUMN

TimeMode = Literal["EventTime", "ProcessingTime", "None"]
_STATE = StructType([StructField("json", StringType(), True)])
_UNKNOWN = -1  # the timer of a document that does not record it: list the key's timers


def encode(state: State, timer_ms: int | None) -> str:
    """The stored document: the logic's state and the key's timer.

    >>> encode({"n": 1}, 60_000)
    '{"state": {"n": 1}, "timer_ms": 60000}'
    """
    return json.dumps({"state": state, "timer_ms": timer_ms}, default=json_default)


def decode(document: str | None) -> tuple[State | None, int | None]:
    """``(state, timer_ms)`` of a stored document; a bare state (written before the timer was
    recorded) has an unknown timer (``-1``).

    >>> decode('{"state": {"n": 1}, "timer_ms": null}'), decode('{"n": 1}'), decode(None)
    (({'n': 1}, None), ({'n': 1}, -1), (None, None))
    """
    if not document:
        return None, None
    value = json.loads(document)
    if isinstance(value, dict) and set(value) == {"state", "timer_ms"}:
        return value["state"], value["timer_ms"]
    return value, _UNKNOWN


def _utc(value: Any) -> Any:
    """Spark hands timestamps to Python workers as naive or aware datetimes; make them UTC-aware."""
    return as_utc(value) if isinstance(value, datetime) else value


def _row(fields: list[str], values: Mapping[str, Any]) -> Row:
    return Row(**{f: values.get(f) for f in fields})


class KeyedLogicProcessor(StatefulProcessor):
    """The transformWithState adapter: loads state, calls the logic, applies its ``Step``."""

    def __init__(
        self,
        logic: KeyedLogic,
        output: StructType,
        time_mode: TimeMode,
        event_time_column: str | None,
        composite: bool = False,
    ) -> None:
        self._logic = logic
        self._composite = composite
        self._fields = output.fieldNames()
        self._time_mode = time_mode
        self._event_time = event_time_column

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        self._state = handle.getValueState("state", _STATE)

    def handleInputRows(
        self, key: Any, rows: Iterator[Row], timerValues: TimerValues
    ) -> Iterator[Row]:
        events = [
            {k: _utc(v) for k, v in row.asDict().items() if k != WATERMARK_COLUMN} for row in rows
        ]
        if (column := self._event_time) is not None:
            events.sort(key=lambda e: (e[column] is None, e[column]))
        stored = self._stored()
        state, _ = decode(stored)
        step = self._logic.on_events(self._key(key), state, events, self._clock(timerValues))
        return self._apply(step, stored)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[Row]:
        stored = self._stored()
        state, _ = decode(stored)
        if state is None:
            return iter([])
        step = self._logic.on_timeout(self._key(key), state, self._clock(timerValues))
        return self._apply(step, stored, fired=expiredTimerInfo.getExpiryTimeInMs())

    def handleInitialState(self, key: Any, initialState: Row, timerValues: TimerValues) -> None:
        seeded = self._logic.initial_state(self._key(key), initialState.asDict())  # type: ignore[attr-defined]
        if seeded is not None:
            self._state.update((encode(seeded, None),))

    def close(self) -> None:
        pass

    def _key(self, key: Any) -> Key:
        """What the logic sees: the value as text for one key column, a tuple for several."""
        return tuple(key) if self._composite else str(key[0])

    def _clock(self, timers: TimerValues) -> Clock:
        watermark = timers.getCurrentWatermarkInMs() if self._time_mode == "EventTime" else None
        return Clock(timers.getCurrentProcessingTimeInMs(), watermark)

    def _stored(self) -> str | None:
        value = self._state.get()  # None when the key has no state: no exists() round trip
        return value[0] if value else None

    def _apply(self, step: Step, stored: str | None, fired: int | None = None) -> Iterator[Row]:
        _, old = decode(stored)
        if old == fired:
            old = None  # Spark removes a timer once it has fired
        new = None if step.state is None else step.timeout_at_ms
        if self._time_mode == "None":  # timer calls are refused without a time mode
            old = new = None
        if old != new:
            if old == _UNKNOWN:
                for timer in list(self._handle.listTimers()):
                    if timer != fired:
                        self._handle.deleteTimer(timer)
            elif old is not None:
                self._handle.deleteTimer(old)
            if new is not None:
                self._handle.registerTimer(new)
        if step.state is None:
            if stored is not None:
                self._state.clear()
        else:
            document = encode(step.state, new)
            if document != stored:
                self._state.update((document,))
        return iter([_row(self._fields, out) for out in step.outputs])


def apply_keyed_logic(
    df: DataFrame,
    keys: tuple[str, ...],
    logic: KeyedLogic,
    output: StructType,
    output_mode: Literal["append", "update"],
    time_mode: TimeMode,
    event_time_column: str | None = None,
    initial_state: DataFrame | None = None,
) -> DataFrame:
    """``df`` grouped by the ``keys`` columns and run through ``logic`` with transformWithState."""
    processor = KeyedLogicProcessor(logic, output, time_mode, event_time_column, len(keys) > 1)
    initial = initial_state.groupBy(*keys) if initial_state is not None else None
    return df.groupBy(*keys).transformWithState(
        processor,
        output,
        outputMode=output_mode.capitalize(),
        timeMode=time_mode,
        initialState=initial,
    )
