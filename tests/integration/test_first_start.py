"""A first start that dies half-way leaves nothing that breaks the next start."""

from __future__ import annotations

from pathlib import Path

import pytest

from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.streams.schemas import EVENTS

pytestmark = [pytest.mark.spark]


def test_a_table_folder_without_a_commit_is_rebuilt_on_the_next_start(spark, tmp_path: Path):
    lake = Lakehouse(tmp_path / "lake")
    broken = lake.table("events")
    (broken / "_delta_log" / "_staged_commits").mkdir(parents=True)
    (broken / "part-00000-left-by-a-killed-writer.snappy.parquet").write_bytes(b"PAR1 partial")

    lake.ensure_table(spark, "events", EVENTS)

    assert has_commit(broken)
    table = spark.read.format("delta").load(str(broken))
    assert table.count() == 0 and table.schema.fieldNames() == EVENTS.fieldNames()
    assert not (broken / "part-00000-left-by-a-killed-writer.snappy.parquet").exists()


def test_an_existing_table_is_left_alone(spark, tmp_path: Path):
    lake = Lakehouse(tmp_path / "lake")
    lake.ensure_table(spark, "events", EVENTS)
    log = sorted(p.name for p in (lake.table("events") / "_delta_log").iterdir())

    lake.ensure_table(spark, "events", EVENTS)

    assert sorted(p.name for p in (lake.table("events") / "_delta_log").iterdir()) == log


# Moments of a first start, each observable on disk, in the order they happen.
KILL_POINTS = {
    "a bronze table folder exists": lambda lake: any((lake / "tables").glob("*/_delta_log")),
    "the first batch is planned": lambda lake: (
        lake / "checkpoints" / "clickstream_raw" / "offsets" / "0"
    ).exists(),
    "the first batch of a stateful stream is planned": lambda lake: (
        lake / "checkpoints" / "user_sessions" / "offsets" / "0"
    ).exists(),
}


@pytest.mark.kafka
def test_a_first_start_killed_at_several_points_then_launches_continuously(
    kafka_broker, topic_factory, tmp_path: Path
):
    """SIGKILL (process group: driver and JVM) the continuous pipeline at each point of its
    first start; the next continuous launch records batches and stops cleanly."""
    import os
    import signal
    import time

    from platform_pipelines.kafka.producer import produce_events
    from platform_pipelines.runtime.chaos import first_batch_after, launch_worker
    from tests.integration.events import U1_SHOPPING
    from tests.waiting import wait_for

    topic = topic_factory("first_start", 3)
    produce_events(kafka_broker, topic, U1_SHOPPING)
    lake = tmp_path / "lakehouse"
    for point, reached in KILL_POINTS.items():
        assert not reached(lake), f"{point}: already reached before this launch"
        worker = launch_worker(tmp_path, kafka_broker, topic)
        wait_for(
            lambda reached=reached, worker=worker: reached(lake) or worker.poll() is not None,
            300,
            f"the first start to reach: {point}",
            every=0.01,
        )
        assert worker.poll() is None, f"the pipeline exited before {point}"
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    worker, launched = launch_worker(tmp_path, kafka_broker, topic), time.monotonic()
    first_batch_after(tmp_path, launched, worker)  # raises if it exits or never makes a batch
    os.kill(worker.pid, signal.SIGTERM)
    assert worker.wait(120) == 0, (tmp_path / "worker.log").read_text()[-3000:]
    log = (tmp_path / "worker.log").read_text()
    assert "DELTA_SCHEMA_NOT_SET" not in log
    assert "Stopped gracefully on SIGTERM" in log
