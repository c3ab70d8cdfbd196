"""Runs any plain-Python ``KeyedLogic`` as a ``transformWithState`` operator.

The key's state is kept as one JSON document in a ValueState (so the logic's state can be any
JSON-able dict without declaring a state schema), and at most one timer per key: the one the last
``Step`` asked for. Event-time timers fire when the watermark passes them; processing-time timers on
a later trigger, even when no new data arrives.
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
from platform_pipelines.state.keyed import Clock, KeyedLogic, State, Step
from platform_pipelines.streams.watermark import WATERMARK_COLUMN

TimeMode = Literal["EventTime", "ProcessingTime", "None"]
_STATE = StructType([StructField("json", StringType(), True)])


def _utc(value: Any) -> Any:
    """Spark hands timestamps to Python workers as naive or aware datetimes; make them UTC-aware."""
    return as_utc(value) if isinstance(value, datetime) else value


def _row(fields: list[str], values: Mapping[str, Any]) -> Row:
    return Row(**{f: values.get(f) for f in fields})


class KeyedLogicProcessor(StatefulProcessor):
    """The transformWithState adapter: loads state, calls the logic, applies its ``Step``."""

    def __init__(self, logic: KeyedLogic, output: StructType, time_mode: TimeMode,
                 event_time_column: str | None) -> None:  # fmt: skip
        self._logic = logic
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
        step = self._logic.on_events(str(key[0]), self._load(), events, self._clock(timerValues))
        return self._apply(step)

    def handleExpiredTimer(self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[Row]:  # fmt: skip
        state = self._load()
        if state is None:
            return iter([])
        step = self._logic.on_timeout(str(key[0]), state, self._clock(timerValues))
        return self._apply(step, fired=expiredTimerInfo.getExpiryTimeInMs())

    def handleInitialState(self, key: Any, initialState: Row, timerValues: TimerValues) -> None:
        seeded = self._logic.initial_state(str(key[0]), initialState.asDict())  # type: ignore[attr-defined]
        if seeded is not None:
            self._state.update((json.dumps(seeded, default=json_default),))

    def close(self) -> None:
        pass

    def _clock(self, timers: TimerValues) -> Clock:
        watermark = timers.getCurrentWatermarkInMs() if self._time_mode == "EventTime" else None
        return Clock(timers.getCurrentProcessingTimeInMs(), watermark)

    def _load(self) -> State | None:
        if not self._state.exists():
            return None
        value = self._state.get()
        return json.loads(value[0]) if value and value[0] else None

    def _apply(self, step: Step, fired: int | None = None) -> Iterator[Row]:
        timers = self._time_mode != "None"  # timer calls are refused without a time mode
        if timers:
            for timer in list(self._handle.listTimers()):
                if timer != fired:  # Spark removes a timer once it has fired
                    self._handle.deleteTimer(timer)
        if step.state is None:
            self._state.clear()
        else:
            self._state.update((json.dumps(step.state, default=json_default),))
            if timers and step.timeout_at_ms is not None:
                self._handle.registerTimer(step.timeout_at_ms)
        return iter([_row(self._fields, out) for out in step.outputs])


def apply_keyed_logic(
    df: DataFrame,
    key: str,
    logic: KeyedLogic,
    output: StructType,
    output_mode: Literal["append", "update"],
    time_mode: TimeMode,
    event_time_column: str | None = None,
    initial_state: DataFrame | None = None,
) -> DataFrame:
    """``df`` grouped by ``key`` and run through ``logic`` with transformWithState."""
    processor = KeyedLogicProcessor(logic, output, time_mode, event_time_column)
    initial = initial_state.groupBy(key) if initial_state is not None else None
    return df.groupBy(key).transformWithState(
        processor,
        output,
        outputMode=output_mode.capitalize(),
        timeMode=time_mode,
        initialState=initial,
    )
