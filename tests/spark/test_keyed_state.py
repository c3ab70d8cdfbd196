"""The keyed-logic adapter records each key's timer in its state document (no listTimers per key);
a checkpoint written before that (bare documents, timers only in Spark) keeps working: its
timers are replaced, never fired twice or left behind."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark import cloudpickle
from pyspark.sql import Row
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from platform_pipelines.state.keyed import Step, to_ms
from platform_pipelines.streams.keyed import KeyedLogicProcessor

pytestmark = [pytest.mark.spark]
# The Python workers cannot import this test module: its classes travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

T0 = datetime(2026, 11, 1, tzinfo=UTC)
OUT = StructType(
    [
        StructField("key", StringType()),
        StructField("count", LongType()),
        StructField("expired", BooleanType()),
    ]
)


class IdleCount:
    """Counts per key; a key idle for 10 minutes of event time expires, emitting its count."""

    def on_events(self, key, state, events, clock):
        count = (state or {}).get("count", 0) + len(events)
        last = max([to_ms(e["event_time"]) for e in events] + [(state or {}).get("last", 0)])
        return Step({"count": count, "last": last}, [], timeout_at_ms=last + 600_000)

    def on_timeout(self, key, state, clock):
        return Step(None, [{"key": key, "count": state["count"], "expired": True}])


class LegacyProcessor(KeyedLogicProcessor):
    """The adapter as it wrote state before timers were recorded: a bare JSON document."""

    def _apply(self, step, stored, fired=None) -> Iterator[Row]:
        for timer in list(self._handle.listTimers()):
            if timer != fired:
                self._handle.deleteTimer(timer)
        if step.state is None:
            self._state.clear()
        else:
            self._state.update((json.dumps(step.state),))
            if step.timeout_at_ms is not None:
                self._handle.registerTimer(step.timeout_at_ms)
        return iter([Row(**out) for out in step.outputs])


def run(spark, source: Path, checkpoint: Path, processor_class) -> list[dict]:
    """Process every new file on ``checkpoint``; returns every row the stream has emitted."""
    events = (
        spark.readStream.schema("key string, event_time timestamp")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
        .withWatermark("event_time", "0 seconds")
    )
    processor = processor_class(IdleCount(), OUT, "EventTime", "event_time")
    out = events.groupBy("key").transformWithState(
        processor, OUT, outputMode="Append", timeMode="EventTime"
    )
    table = checkpoint.parent / "out"
    query = (
        out.writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(str(table))
    )
    query.awaitTermination()
    return [r.asDict() for r in spark.read.format("delta").load(str(table)).collect()]


def add_file(spark, source: Path, rows: list[tuple[str, int]]) -> None:
    data = [(key, T0 + timedelta(minutes=minute)) for key, minute in rows]
    spark.createDataFrame(data, "key string, event_time timestamp").coalesce(1).write.mode(
        "append"
    ).parquet(str(source))


def test_a_legacy_checkpoint_keeps_one_timer_per_key_after_the_upgrade(spark, tmp_path):
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    add_file(spark, source, [("a", 0)])  # legacy: a's timer at minute 10, in Spark only
    assert run(spark, source, checkpoint, LegacyProcessor) == []

    add_file(spark, source, [("a", 5)])  # the upgraded adapter moves a's timer to minute 15
    add_file(spark, source, [("b", 12)])  # the watermark passes minute 10, not 15
    assert run(spark, source, checkpoint, KeyedLogicProcessor) == []

    add_file(spark, source, [("b", 16)])  # now it passes minute 15: a expires, once
    assert run(spark, source, checkpoint, KeyedLogicProcessor) == [
        {"key": "a", "count": 2, "expired": True}
    ]
