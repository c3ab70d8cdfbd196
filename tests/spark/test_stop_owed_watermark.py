"""A stop names a stream that stopped before the batch applying its watermark, and only such one.

Spark applies the watermark that a batch's rows imply in the next batch, a no-data batch when
no new input comes; a stop right after a data batch leaves it to the stream's next input, and
the stop line says so (``GracefulStop.owed``). A stream that already ran that batch is not named.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from platform_pipelines.lakehouse.checkpoints import batch_ids
from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest
from platform_pipelines.runtime.supervisor import Supervisor
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark]
NAME = "deduplicated"
DELAY = timedelta(minutes=10)
LATEST = datetime(2026, 11, 22, 10, 24, tzinfo=UTC)  # the newest event time of the input


def start(spark: SparkSession, tmp_path: Path, trigger: str) -> tuple[StreamingQuery, Path]:
    """A deduplication within a 10 minute watermark over a folder of JSON events, on
    ``trigger``; returns the query and its checkpoint."""
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    source.mkdir()
    (source / "part-0.json").write_text(
        '{"id": "a", "ts": "2026-11-22T10:20:00Z"}\n'
        '{"id": "a", "ts": "2026-11-22T10:21:00Z"}\n'
        '{"id": "b", "ts": "2026-11-22T10:24:00Z"}\n'
    )

    def write(batch: DataFrame, batch_id: int) -> None:
        batch.count()

    query = (
        spark.readStream.schema("id STRING, ts TIMESTAMP")
        .json(str(source))
        .withWatermark("ts", f"{int(DELAY.total_seconds())} seconds")
        .dropDuplicatesWithinWatermark(["id"])
        .writeStream.queryName(NAME)
        .foreachBatch(write)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=trigger)
        .start()
    )
    return query, checkpoint


def stop(query: StreamingQuery) -> GracefulStop:
    request = StopRequest(why="the test's stop")
    supervisor = Supervisor(lambda name, progress: None, stop=request)
    supervisor.add(NAME, query, watermark=DELAY)
    with pytest.raises(GracefulStop) as stopped:
        supervisor.wait()
    return stopped.value


def test_a_stop_right_after_a_data_batch_names_the_watermark_the_stream_owes(spark, tmp_path):
    # A minute's trigger: the batch that applies the watermark would come a minute later.
    query, checkpoint = start(spark, tmp_path, "60 seconds")
    wait_for(lambda: batch_ids(checkpoint, "commits") == [0], 60, "the data batch's commit")

    done = stop(query)

    assert done.stopped == {NAME: 0}
    assert done.owed == {NAME: (LATEST - DELAY).timestamp()}
    assert done.line().endswith(
        f"{NAME} stopped before the batch that moves its watermark to 2026-11-22T10:14:00.000Z: "
        "what waits on the watermark (sessions to close, timers to fire, state to expire) "
        "happens when it next reads input."
    )


def test_a_stream_that_applied_its_watermark_is_not_named(spark, tmp_path):
    query, checkpoint = start(spark, tmp_path, "1 second")
    # batch 1 reads nothing and applies the watermark batch 0's rows imply
    wait_for(lambda: batch_ids(checkpoint, "commits") == [0, 1], 60, "the no-data batch's commit")

    done = stop(query)

    assert done.stopped == {NAME: 1}
    assert done.owed == {}
    assert "watermark" not in done.line()
