"""Continuous mode equals catch-up mode: the same input, whatever the backlog, gives the same
tables. A run catches up first (upstream first, whole upstream versions per batch), and its
continuous triggers read every Kafka partition to its end."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from platform_pipelines.core.spark_progress import batch_id, watermark_owed
from platform_pipelines.health.checkpoint import inspect_checkpoint, kafka_committed_offsets
from platform_pipelines.kafka.admin import end_offsets
from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream, produce
from platform_pipelines.lakehouse import quality
from platform_pipelines.lakehouse.checkpoints import batch_ids
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import committed_version, latest_version
from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext
from platform_pipelines.streams.registry import StreamRegistry
from tests.integration.helpers import Progress, run_catch_up, table
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

STREAMS = ["clickstream_raw", "events", "user_sessions", "security_alerts"]
# Both runs catch up in batches of this many records: the whole backlog in one. events and
# security_alerts read the topic themselves, so a smaller bound would cut their catch-up into
# batches whose watermark refuses the backlog's older rows (into late_events), which one batch
# over the same records keeps.
CATCH_UP_BATCH = 50_000
START = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)  # in the past: max_future lets it in
BACKLOG = ClickstreamConfig(
    events=3000,
    users=60,
    duplicate_rate=0.03,
    late_rate=0.06,
    malformed_rate=0.01,
    stale_share=0.1,
    seed=7,
    start_time=START,
)
# Produced while the continuous run runs: days later, in event-time order.
LIVE = ClickstreamConfig(
    events=800,
    users=60,
    duplicate_rate=0.0,
    late_rate=0.0,
    malformed_rate=0.0,
    seed=8,
    start_time=START + timedelta(days=5),
)


def multiset(rows: list[dict]) -> Counter:
    return Counter(tuple(sorted((k, str(v)) for k, v in row.items())) for row in rows)


def caught_up(lake: Lakehouse, bootstrap: str, registry: StreamRegistry) -> bool:
    """Every stream has committed everything its input holds: a stream reading Kafka (bronze,
    and events and security_alerts beside it) up to the topic's end offsets, a stream reading a
    table up to the table's newest version."""
    for name in STREAMS:
        stream, checkpoint = registry.get(name), lake.checkpoint(name)
        if stream.topic is not None:
            committed = kafka_committed_offsets(inspect_checkpoint(checkpoint))
            if committed.get(stream.topic) != end_offsets(bootstrap, stream.topic):
                return False
        elif (
            committed_version(checkpoint) != (latest_version(lake.table(stream.upstream)) or 0) + 1
        ):
            return False
    return True


def watermarks_behind(
    progress: Progress, registry: StreamRegistry, lake: Lakehouse
) -> dict[str, object]:
    """The streams whose newest batch ran behind the watermark their rows imply
    (``watermark_owed``): a stop before the batch that applies it leaves it to the next input,
    so the run is stopped only once none is owed. A stream whose reported progress is behind
    its checkpoint's last commit (reports come about once a second) is named too."""
    owed: dict[str, object] = {}
    for name in STREAMS:
        delay, batches = registry.get(name).watermark, progress.batches.get(name, [])
        if delay is None:
            continue
        committed = batch_ids(lake.checkpoint(name), "commits")
        if committed and (not batches or batch_id(batches[-1]) < committed[-1]):
            owed[name] = f"batch {committed[-1]} committed, not reported yet"
        elif gap := watermark_owed(batches, delay.total_seconds()):
            owed[name] = gap
    return owed


def test_a_continuous_run_over_a_backlog_writes_the_same_tables_as_a_catch_up_run(
    spark, kafka_broker, topic_factory, tmp_path: Path
):
    topic = topic_factory("modes", partitions=3)
    produce(kafka_broker, topic, generate_clickstream(BACKLOG))
    # the settings run_catch_up uses: alerts go to the test's own topic
    registry = builtin_streams(
        BuiltinSettings(clickstream_topic=topic, alerts_topic=f"{topic}-alerts")
    )
    continuous = Lakehouse(tmp_path / "continuous")
    stop, progress, phases = StopRequest(), Progress(), []
    options = RunOptions(
        mode="continuous", processing_time="1 second", max_offsets_per_trigger=CATCH_UP_BATCH
    )

    def run() -> None:
        with contextlib.suppress(GracefulStop):  # the test's stop request ends the run
            run_streams(
                StreamContext(spark, continuous, kafka_broker),
                [registry.get(n) for n in STREAMS],
                options,
                progress,
                on_start=lambda name, phase: phases.append((name, phase)),
                stop=stop,
            )

    runner = threading.Thread(target=run)
    runner.start()
    try:
        wait_for(lambda: len(phases) == 2 * len(STREAMS), 300, "the continuous phase to start")
        produce(kafka_broker, topic, generate_clickstream(LIVE), rate_per_sec=200)  # ~4 s
        wait_for(
            lambda: (
                caught_up(continuous, kafka_broker, registry)
                and not watermarks_behind(progress, registry, continuous)
            ),
            300,
            "the continuous run to read everything and apply its watermarks",
            show=lambda: watermarks_behind(progress, registry, continuous),
        )
    finally:
        stop.signal = 2
        runner.join(120)
    assert not runner.is_alive()
    continuous_batches = len([p for p in progress.batches["events"] if p["numInputRows"]])
    run_catch_up(spark, continuous, kafka_broker, topic, STREAMS)  # reads nothing new
    reference = Lakehouse(tmp_path / "catch_up")
    run_catch_up(spark, reference, kafka_broker, topic, STREAMS, max_offsets=CATCH_UP_BATCH)

    # one catch-up batch read the whole backlog; continuous batches read the live records
    assert continuous_batches >= 2
    for name in ("events", "user_sessions", "security_alerts", "quarantine"):
        ours, theirs = table(spark, continuous, name), table(spark, reference, name)
        if name == "quarantine":  # the same records, judged at another moment
            ours = [{k: v for k, v in r.items() if k != "quarantined_at"} for r in ours]
            theirs = [{k: v for k, v in r.items() if k != "quarantined_at"} for r in theirs]
        assert multiset(ours) == multiset(theirs), name
    assert len(table(spark, reference, "events")) > 3000
    assert len(table(spark, reference, "user_sessions")) > 100
    assert quality.sessions_valid(spark, continuous.table("user_sessions")).passed
