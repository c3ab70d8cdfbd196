"""A first start that dies anywhere leaves nothing that breaks the next start, and loses nothing."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest

from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.runtime.chaos import first_batch_after
from platform_pipelines.runtime.chaos_worker import STREAMS
from platform_pipelines.runtime.crash_points import CrashPoints, pauses
from platform_pipelines.streams.schemas import EVENTS
from tests.integration.first_start import INPUT, Windows, pause_through, rows
from tests.integration.helpers import run_catch_up
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark]

# The chaos worker's catch-up batches: the same batches in every run compared here.
BATCH_RECORDS = 500
# The streams of each launch, one process each: security_alerts apart, so that fewer streams
# write at once while each write is paused (it reads the topic, as clickstream_raw and events do).
LAUNCHES = [("clickstream_raw", "events", "user_sessions"), ("security_alerts",)]


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


@pytest.mark.kafka
def test_every_window_of_a_first_start_recovers_with_the_same_rows(
    spark, kafka_broker, topic_factory, launcher, tmp_path: Path
):
    """Each stream's first start is paused at every checkpoint write (temporary file complete,
    then renamed) and at every Delta commit's checksum, up to its first committed batch; what is
    on disk at each pause is copied, exactly what a SIGKILL there would leave. Each copy is then
    started again: the stream catches up with the same rows as a run that never crashed."""
    topic = topic_factory("first_start_windows", 3)
    produce_events(kafka_broker, topic, INPUT)
    reference = Lakehouse(tmp_path / "reference")
    run_catch_up(spark, reference, kafka_broker, topic, STREAMS, max_offsets=BATCH_RECORDS)

    lake_dir = tmp_path / "crashed"
    windows = [Windows(launch, tmp_path / f"at-{n}") for n, launch in enumerate(LAUNCHES)]
    for number, found in enumerate(windows):
        names = "|".join(found.launch)
        crash = CrashPoints(tmp_path / f"crash-{number}", pause_every=f"/({names})/|\\.crc$")
        worker = launcher(lake_dir, kafka_broker, topic, found.launch, crash=crash)
        exit_code = pause_through(worker, crash, partial(found.at_pause, lake_dir / "lakehouse"))
        assert exit_code == 0, (lake_dir / "worker.log").read_text()[-3000:]
        assert found.done == set(found.launch), f"no first batch: {pauses(crash.folder)}"

    copies = {name: copy for found in windows for name, copy in found.copies.items()}
    expected = {stream: rows(spark, reference, stream) for stream in STREAMS}

    # A session runs one query of a name at a time: copies of different streams recover side by
    # side (tiny batches are mostly driver-side waits), copies of one stream one after the other.
    running = {stream: threading.Lock() for stream in STREAMS}

    def differences(name: str) -> list[str]:
        stream, copy = copies[name]
        lake = Lakehouse(copy)
        with running[stream]:
            run_catch_up(spark, lake, kafka_broker, topic, [stream], max_offsets=BATCH_RECORDS)
        if rows(spark, lake, stream) != expected[stream]:
            return [name]  # kept, to be looked at
        shutil.rmtree(copy)  # equal to the reference, whose sessions are checked on teardown
        return []

    with ThreadPoolExecutor(max_workers=len(STREAMS)) as pool:
        wrong = [window for found in pool.map(differences, copies) for window in found]
    assert wrong == [], f"{len(wrong)} of {len(copies)} windows recovered other rows"
    kinds = " ".join(copies)
    for stream in STREAMS:
        assert f"{stream}: temp checkpoints/{stream}/offsets/N" in kinds, sorted(copies)
        assert f"{stream}: temp checkpoints/{stream}/commits/N" in kinds, sorted(copies)
    for stream in ("events", "user_sessions", "security_alerts"):
        changelog = f"{stream}: done checkpoints/{stream}/state/N/N/N.changelog"
        assert changelog in kinds, sorted(copies)


@pytest.mark.kafka
def test_sigkill_at_first_start_points_side_by_side_then_a_continuous_launch(
    spark, kafka_broker, topic_factory, launcher, tmp_path: Path
):
    """SIGKILL (process group: driver and JVM) the continuous pipeline while ``events`` and
    ``security_alerts``, side by side (both read the topic: the same catch-up wave; a stream of a
    later wave would never start while one of an earlier wave is paused), are paused at different
    writes of their first start
    (the issue-30 window: a temporary ``offsets/0``; state metadata without a commit); the next
    continuous launch records batches, stops cleanly on SIGTERM, and its tables hold what a run
    that never crashed holds."""
    topic = topic_factory("first_start_kills", 3)
    produce_events(kafka_broker, topic, INPUT)
    reference = Lakehouse(tmp_path / "reference")
    run_catch_up(spark, reference, kafka_broker, topic, STREAMS, max_offsets=BATCH_RECORDS)
    lake_dir = tmp_path / "crashed"
    points = ("temp:/events/offsets/0$", "done:/security_alerts/state/0/_metadata/metadata$")
    crash = CrashPoints(tmp_path / "crash", pause_at=points)
    worker = launcher(lake_dir, kafka_broker, topic, STREAMS, "continuous", crash)
    wait_for(
        lambda: len(pauses(crash.folder)) == len(points) or worker.poll() is not None,
        300,
        f"the first start to pause at {points}",
        every=0.05,
    )
    assert worker.poll() is None, (lake_dir / "worker.log").read_text()[-3000:]
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()

    worker, launched = (
        launcher(lake_dir, kafka_broker, topic, STREAMS, "continuous"),
        time.monotonic(),
    )
    first_batch_after(lake_dir, launched, worker)  # raises if it exits or never makes a batch
    lake = Lakehouse(lake_dir / "lakehouse")
    wait_for(
        lambda: all((lake.checkpoint(s) / "commits" / "0").exists() for s in STREAMS),
        300,
        "a committed batch of every stream",
    )
    os.kill(worker.pid, signal.SIGTERM)
    assert worker.wait(120) == 0, (lake_dir / "worker.log").read_text()[-3000:]
    log = (lake_dir / "worker.log").read_text()
    assert "Stopped gracefully on SIGTERM" in log
    assert "events: its first start was interrupted before batch 0" in log
    run_catch_up(spark, lake, kafka_broker, topic, STREAMS, max_offsets=BATCH_RECORDS)
    for stream in STREAMS:
        assert rows(spark, lake, stream) == rows(spark, reference, stream), stream
