"""A watermark ahead of the clock (a checkpoint written before the platform capped it) makes every
on-time row late. The late_data check fails and names the reset; the reset replays what the bad
watermark refused, with no loss and no duplicates."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.defs.health.deep import no_silent_loss
from platform_pipelines.health.late_data import judge_late_data
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.checkpoints import batch_ids, read_plan
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.reset import ResetRefused, reset_watermark
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from tests.integration.events import ev
from tests.integration.helpers import Progress, run_catch_up, table

pytestmark = [pytest.mark.spark, pytest.mark.kafka]
YEAR_2100_MS = 4_102_444_200_000  # 2099-12-31T23:50:00Z
STREAMS = ["clickstream_raw", "events"]


def poison(checkpoint: Path) -> None:
    """What a pre-cap checkpoint that saw a year-2100 event holds: its newest batch's watermark."""
    newest = batch_ids(checkpoint)[-1]
    for log, key in (("offsets", "batchWatermarkMs"), ("commits", "nextBatchWatermarkMs")):
        path = checkpoint / log / str(newest)
        lines = path.read_text().splitlines()
        meta = json.loads(lines[1])
        meta[key] = YEAR_2100_MS
        path.write_text("\n".join([lines[0], json.dumps(meta), *lines[2:]]))
        (checkpoint / log / f".{newest}.crc").unlink(missing_ok=True)


def event_ids(spark: SparkSession, lake: Lakehouse) -> list[str]:
    return sorted(r["event_id"] for r in table(spark, lake, "events"))


def test_a_reset_replays_what_a_watermark_ahead_of_the_clock_refused(
    spark, kafka_broker, topic_factory, tmp_path
):
    topic = topic_factory("poison", partitions=2)
    lake = Lakehouse(tmp_path / "lake")
    # events reading bronze: a reset replays from the bronze table (a stream reading Kafka is
    # refused one, and told what works instead).
    registry = builtin_streams(BuiltinSettings(clickstream_topic=topic, events_reads="bronze"))
    events = registry.get("events")
    produce_events(
        kafka_broker, topic, [ev("a", "u1", "page_view", 0), ev("b", "u1", "page_view", 30)]
    )
    run_catch_up(spark, lake, kafka_broker, topic, STREAMS, registry=registry)
    poison(lake.checkpoint("events"))
    later = [
        ev("c", "u1", "page_view", 35),
        ev("d", "u2", "page_view", 40),
        ev("a", "u1", "page_view", 0),
    ]  # (a re-sent duplicate of a)
    produce_events(kafka_broker, topic, later)
    progress = run_catch_up(spark, lake, kafka_broker, topic, STREAMS, registry=registry)
    assert event_ids(spark, lake) == ["a", "b"]  # c, d and the duplicate were refused as late
    assert len(table(spark, lake, "late_events")) == 3
    verdict = judge_late_data(_records(progress, "events"), stream="events")
    assert "ahead of the wall clock: every on-time row is now late" in verdict.summary
    assert "platform stream reset-watermark events" in verdict.remedy

    done = reset_watermark(spark, lake, events)

    assert done.late_rows_returned == 3
    assert read_plan(lake.checkpoint("events")).starting_version == done.starting_version
    assert done.archived.exists()
    run_catch_up(spark, lake, kafka_broker, topic, STREAMS, registry=registry)
    assert event_ids(spark, lake) == ["a", "b", "c", "d"]  # no loss, the duplicate not again
    assert table(spark, lake, "late_events") == []
    assert no_silent_loss(spark, lake, events).passed
    with pytest.raises(ResetRefused, match="not ahead of the clock"):
        reset_watermark(spark, lake, events)  # nothing to reset any more


def _records(progress: Progress, stream: str) -> list[ProgressRecord]:
    """The run's progress as the recorder stores it."""
    now = time.time()
    return [ProgressRecord(now, "progress", stream, "r", p, 0.0) for p in progress.batches[stream]]
