"""The progress recorder as Spark calls it: registered with ``spark.streams.addListener``, it
records a query's start, each batch's progress and its end, with the error when it fails, and
nothing of queries it was not given."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.runtime.recorder import ProgressRecorder
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark]
RECORDED, OTHER = "recorded_query", "other_query"


def start(spark: SparkSession, tmp_path: Path, name: str, sink) -> object:  # type: ignore[no-untyped-def]
    """A query over two JSON files (two batches of one file each) into ``sink``."""
    source = tmp_path / name / "source"
    source.mkdir(parents=True)
    for n in (1, 2):
        (source / f"part-{n}.json").write_text(f'{{"n": {n}}}\n')
    return (
        spark.readStream.schema("n INT")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .writeStream.queryName(name)
        .foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / name / "checkpoint"))
        .start()
    )


def keep(batch: DataFrame, batch_id: int) -> None:
    batch.count()


def refuse(batch: DataFrame, batch_id: int) -> None:
    batch.count()  # read, so that Spark counts the batch's input rows
    if batch_id == 1:
        raise RuntimeError(f"the sink refused batch {batch_id}")


def test_the_listener_records_start_progress_and_a_failed_end(spark, tmp_path):
    store = ProgressStore(tmp_path / "progress")
    recorder = ProgressRecorder(store, "r1", {RECORDED: 2.0})
    spark.streams.addListener(recorder)
    try:
        other = start(spark, tmp_path, OTHER, keep)
        query = start(spark, tmp_path, RECORDED, refuse)
        with pytest.raises(StreamingQueryException, match="the sink refused batch 1"):
            query.awaitTermination(120)
        other.processAllAvailable()
        other.stop()

        def ended() -> list:
            records = store.recent(RECORDED, 20)
            return records if records and records[-1].event == "terminated" else []

        records = wait_for(ended, 60, "the listener's terminated record")
    finally:
        spark.streams.removeListener(recorder)

    events = [r.event for r in records]
    assert events[0] == "started" and events[-1] == "terminated", events
    progress = [r.progress for r in records if r.event == "progress"]
    assert [p["batchId"] for p in progress] == [0]  # batch 1 failed: no progress for it
    assert progress[0]["name"] == RECORDED and progress[0]["numInputRows"] == 1
    assert {r.run_id for r in records} == {"r1"}
    assert {r.trigger_seconds for r in records} == {2.0}
    end = records[-1]
    assert end.error_class == "FOREACH_BATCH_USER_FUNCTION_ERROR", end
    assert end.error and "Python Proxy" in end.error, end  # the first line of Spark's message
    assert store.recent(OTHER, 20) == []  # not one of the recorder's streams
