"""A graceful stop that comes while a query plans its next batch lets that batch commit.

Spark (4.2) looks at a query's state again when a batch's planning ends and cuts the batch
(its offsets written, no commit) if the query was told to end meanwhile: that is how
``test_terminal_stop`` failed on CI twice. Here the batch is held in its planning on purpose:
the test takes the query's progress lock, which Spark's batch takes to choose its offsets, so
the trigger that found new input waits there while the stop comes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from platform_pipelines.lakehouse.checkpoints import batch_ids
from platform_pipelines.lakehouse.delta import checkpoint_query_id
from platform_pipelines.runtime.interrupts import StopRequest
from platform_pipelines.runtime.query_state import end_after_batch
from platform_pipelines.runtime.supervisor import Supervisor
from platform_pipelines.streams.batch_gate import GATE, GatedBatch
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark]
NAME = "held_in_planning"


def start(
    spark: SparkSession, tmp_path: Path, seen: list[tuple[int, int]], trigger: str = "1 second"
) -> StreamingQuery:
    """A query over a folder of JSON files on ``trigger``, its writer gated as the platform's
    are; it has read the first file once this returns."""
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    source.mkdir()
    (source / "part-0.json").write_text('{"n": 1}\n')

    def write(batch: DataFrame, batch_id: int) -> None:
        seen.append((batch_id, batch.count()))

    query = (
        spark.readStream.schema("n INT")
        .json(str(source))
        .writeStream.queryName(NAME)
        .foreachBatch(GatedBatch(checkpoint_query_id(checkpoint), write))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=trigger)
        .start()
    )
    wait_for(lambda: batch_ids(checkpoint, "commits") == [0], 60, "the first batch's commit")
    return query


@contextmanager
def held_in_planning(query: StreamingQuery, source: Path) -> Iterator[None]:
    """New input for ``query``, whose next trigger starts and waits in its planning, before it
    writes its offsets, until the block ends."""
    lock = query._jsq.streamingQuery().awaitProgressLock()
    taken, release, released = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:  # py4j runs a Python thread's calls on one JVM thread: it must unlock
        lock.lock()
        taken.set()
        release.wait(120)
        lock.unlock()
        released.set()

    threading.Thread(target=hold, daemon=True).start()
    assert taken.wait(60)
    (source / "part-1.json").write_text('{"n": 2}\n{"n": 3}\n')
    try:
        wait_for(lambda: lock.hasQueuedThreads(), 60, "the next trigger to wait in its planning")
        yield
    finally:
        release.set()
        assert released.wait(60)


def acted(query: StreamingQuery) -> bool:
    """The stop acted on ``query``: its next batch is armed to end it (or, told to end at once,
    the query says it is no longer active)."""
    return GATE.armed(query.id) or not query.isActive


def test_a_stop_while_a_batch_is_planned_lets_it_commit(spark, tmp_path):
    seen: list[tuple[int, int]] = []
    query = start(spark, tmp_path, seen)
    supervisor = Supervisor(lambda name, progress: None, stop=StopRequest(signal=2, count=1))
    supervisor.add(NAME, query)
    stopped: dict[str, int] = {}
    try:
        with held_in_planning(query, tmp_path / "source"):
            stopping = threading.Thread(target=lambda: stopped.update(supervisor.stop_all()))
            stopping.start()
            wait_for(lambda: acted(query), 60, "the stop to act on the query")
        stopping.join(120)
    finally:
        query.stop()

    assert not stopping.is_alive()
    assert (stopped, supervisor.abandoned) == ({NAME: 1}, [])
    assert seen == [(0, 1), (1, 2)]
    checkpoint = tmp_path / "checkpoint"
    assert batch_ids(checkpoint) == batch_ids(checkpoint, "commits") == [0, 1]
    assert not GATE.armed(query.id)


@pytest.mark.parametrize("trigger", ["0 seconds", "10 seconds"])
def test_an_idle_query_is_stopped_between_its_triggers(spark, tmp_path, trigger):
    """On a 0 s trigger the batch loop never rests (a trigger that finds nothing sleeps 10 ms
    and the next one starts); on a 10 s one it sleeps until its next trigger. Both stop at
    once, with nothing cut."""
    seen: list[tuple[int, int]] = []
    query = start(spark, tmp_path, seen, trigger)
    supervisor = Supervisor(lambda name, progress: None, stop=StopRequest(signal=2, count=1))
    supervisor.add(NAME, query)
    try:
        stopped = supervisor.stop_all()
    finally:
        query.stop()

    assert (stopped, supervisor.abandoned, seen) == ({NAME: 0}, [], [(0, 1)])
    assert not query._jsq.streamingQuery().queryExecutionThread().isAlive()
    checkpoint = tmp_path / "checkpoint"
    assert batch_ids(checkpoint) == batch_ids(checkpoint, "commits") == [0]


def test_spark_cuts_a_batch_whose_query_was_told_to_end_while_it_was_planned(spark, tmp_path):
    """Why the stop goes through the gate: told to end at once, the held batch is cut after
    writing its offsets (Spark 4.2's ``runBatch``); if a Spark upgrade lets it commit instead,
    this fails and the gate may go."""
    seen: list[tuple[int, int]] = []
    query = start(spark, tmp_path, seen)
    try:
        with held_in_planning(query, tmp_path / "source"):
            assert end_after_batch(query)
        wait_for(
            lambda: not query._jsq.streamingQuery().queryExecutionThread().isAlive(),
            60,
            "the query's batch thread to end",
        )
    finally:
        query.stop()

    assert seen == [(0, 1)]
    checkpoint = tmp_path / "checkpoint"
    assert (batch_ids(checkpoint), batch_ids(checkpoint, "commits")) == ([0, 1], [0])


def test_a_caught_up_catch_up_with_timers_ends_after_a_batch_not_in_one(spark, tmp_path):
    """An availableNow query with processing-time timers plans no-data batches back to back
    once it has read everything; the supervisor ends it when caught up. Stopped outright, the
    no-data batch being planned then was cut (offsets without a commit); through the gate,
    the batch that carries the end commits first."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    source.mkdir()
    (source / "part-0.json").write_text('{"n": 1}\n{"n": 2}\n{"n": 1}\n')
    seen: list[tuple[int, int]] = []

    def count_with_a_timer(key: tuple, rows: Iterator[Any], state: Any) -> Iterator[Any]:
        """Rows per key, with a processing-time timer: availableNow never ends the query.
        Defined here: a function of a test module is pickled by reference, and Spark's Python
        workers cannot import the tests."""
        import pandas as pd

        count = (state.get[0] if state.exists else 0) + sum(len(r) for r in rows)
        state.update((count,))
        state.setTimeoutDuration(600_000)
        yield pd.DataFrame({"n": [key[0]], "count": [count]})

    def write(batch: DataFrame, batch_id: int) -> None:
        seen.append((batch_id, batch.count()))

    query = (
        spark.readStream.schema("n INT")
        .json(str(source))
        .groupBy("n")
        .applyInPandasWithState(
            count_with_a_timer,
            "n INT, count LONG",
            "count LONG",
            "Update",
            GroupStateTimeout.ProcessingTimeTimeout,
        )
        .writeStream.queryName("caught_up")
        .outputMode("update")
        .foreachBatch(GatedBatch(checkpoint_query_id(checkpoint), write))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    supervisor = Supervisor(lambda name, progress: None, poll_seconds=0.2)
    supervisor.add("caught_up", query, stop_when_caught_up=True)
    try:
        waiting = threading.Thread(target=supervisor.wait)
        waiting.start()
        waiting.join(180)
    finally:
        query.stop()

    assert not waiting.is_alive()
    assert query.exception() is None
    assert not query._jsq.streamingQuery().queryExecutionThread().isAlive()
    assert seen[0] == (0, 2) and len(seen) >= 2  # the data, then at least one no-data batch
    offsets, commits = batch_ids(checkpoint), batch_ids(checkpoint, "commits")
    assert offsets == commits == list(range(len(seen)))
    assert not GATE.armed(checkpoint_query_id(checkpoint))
