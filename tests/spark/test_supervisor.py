"""The supervisor on real queries that die: their end is always reported as a failure, never as
a clean end, whether Spark tells the error or the query's handle no longer answers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from py4j.protocol import Py4JError
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.liveness import judge_liveness
from platform_pipelines.health.runs import RunState
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.supervisor import StreamFailedError, Supervisor

pytestmark = [pytest.mark.spark]
NAME = "refusing_sink"
RUNNING = RunState("running", "run r1")


def refuse(batch: DataFrame, batch_id: int) -> None:
    raise RuntimeError(f"the sink refused batch {batch_id}")


def start_dying_query(spark: SparkSession, tmp_path: Path) -> StreamingQuery:
    """A query over one JSON file whose foreachBatch raises on its first batch."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "part-0.json").write_text('{"n": 1}\n')
    return (
        spark.readStream.schema("n INT")
        .json(str(source))
        .writeStream.queryName(NAME)
        .foreachBatch(refuse)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )


def recorder_in(tmp_path: Path) -> tuple[ProgressStore, ProgressRecorder]:
    store = ProgressStore(tmp_path / "progress")
    return store, ProgressRecorder(store, "r1", {NAME: 0.0})


def test_a_query_whose_sink_raises_fails_the_wait_and_is_recorded_as_failed(spark, tmp_path):
    store, recorder = recorder_in(tmp_path)
    supervisor = Supervisor(lambda name, progress: None, on_end=recorder.record_end)
    supervisor.add(NAME, start_dying_query(spark, tmp_path))

    with pytest.raises(StreamFailedError, match=f"Stream '{NAME}' failed: .*FOREACH_BATCH"):
        supervisor.wait()

    end = store.latest(NAME)
    assert end is not None and end.event == "terminated"
    assert end.error_class is not None and end.error
    assert judge_liveness(store.recent(NAME), RUNNING, time.time()).status is Status.FAIL


def test_a_dead_query_whose_handle_no_longer_answers_is_recorded_as_failed_not_clean(
    spark, tmp_path, caplog
):
    store, recorder = recorder_in(tmp_path)
    query = start_dying_query(spark, tmp_path)
    with pytest.raises(StreamingQueryException):
        query.awaitTermination(60)
    # The JVM forgets the query's handle, as when the driver's JVM is gone: every call on the
    # handle fails from now on (at once: PySpark's py4j client otherwise queues the release).
    handle = query._jsq
    handle._gateway_client.garbage_collect_object(handle._target_id, enqueue=False)
    supervisor = Supervisor(lambda name, progress: None, on_end=recorder.record_end)
    supervisor.add(NAME, query)

    with pytest.raises(Py4JError):
        supervisor.wait()

    end = store.latest(NAME)
    assert end is not None and end.event == "terminated"
    assert end.error_class == "QueryLostError"
    assert "the query no longer answers" in (end.error or "")
    assert judge_liveness(store.recent(NAME), RUNNING, time.time()).status is Status.FAIL
    assert f"Stream {NAME!r}: stopping its query failed" in caplog.text
    assert f"Stream {NAME!r}: asking whether its query runs failed" in caplog.text
