"""The README's example user stream, declared as a user would, run against real Kafka."""

from __future__ import annotations

from dataclasses import replace

import pytest

from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.query import StreamContext
from platform_pipelines.streams.registry import StreamRegistry, declare_stream
from tests.integration.events import at
from tests.integration.test_pipeline import forget_last_commit
from user_streams.running_count import STREAMS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def keyed(key: str, minute: float) -> dict:
    return {"key": key, "event_time": at(minute).isoformat().replace("+00:00", "Z")}


def test_running_count_per_key_is_upserted_exactly_once_across_runs(
    spark, kafka_broker, topic_factory, tmp_path
):
    topic = topic_factory("keys", partitions=1)  # offsets below are of one partition
    example = STREAMS[0]
    registry = StreamRegistry()
    declare_stream(registry, replace(example, source=replace(example.source, topic=topic)))
    ctx = StreamContext(spark, Lakehouse(tmp_path / "lake"), kafka_broker)
    table = str(ctx.lakehouse.table("key_counts"))

    def run() -> dict[str, int]:
        run_streams(ctx, list(registry), RunOptions(mode="catch_up"), lambda *_: None)
        return {r["key"]: r["count"] for r in spark.read.format("delta").load(table).collect()}

    produce_events(
        kafka_broker, topic, [keyed("a", 0), keyed("b", 1), keyed("a", 2), b"oops"], key_field="key"
    )
    assert run() == {"a": 2, "b": 1}
    ingest = registry.names()[0]  # the bronze stream of the test's topic
    forget_last_commit(ctx.lakehouse, ingest)  # the restart replays the last bronze batch
    produce_events(
        kafka_broker, topic, [keyed("a", 3), keyed("c", 4), keyed("a", 5)], key_field="key"
    )
    assert run() == {"a": 4, "b": 1, "c": 1}
    assert run() == {"a": 4, "b": 1, "c": 1}  # nothing new: nothing changes
    raw = spark.read.format("delta").load(str(ctx.lakehouse.table(ingest))).collect()
    assert sorted(r["kafka_offset"] for r in raw) == [0, 1, 2, 4, 5, 6]  # 3 was "oops"
    quarantine = spark.read.format("delta").load(str(ctx.lakehouse.table("quarantine"))).collect()
    assert [(r["raw_value"], r["reason"]) for r in quarantine] == [("oops", "invalid JSON")]


def test_a_query_whose_python_start_times_out_starts_again_and_counts_exactly_once(
    spark, kafka_broker, topic_factory, tmp_path, monkeypatch
):
    """On a busy machine the Python process Spark starts for a Python transformWithState's
    driver-side setup can take longer than the fixed 10 s Spark waits for it: the query dies at
    its first batch. The run starts it again from its checkpoint instead of failing."""
    slowed = tmp_path / "slowed"
    slow_python = tmp_path / "slow-python"
    slow_python.write_text(
        "#!/bin/sh\n"
        'case "$*" in *transform_with_state_driver_worker*)\n'
        f'  if [ ! -e "{slowed}" ]; then touch "{slowed}"; sleep 14; fi;;\n'
        "esac\n"
        f'exec "{spark.sparkContext.pythonExec}" "$@"\n'
    )
    slow_python.chmod(0o755)
    # The queries built now start their Python processes through it (the first setup: 14 s).
    monkeypatch.setattr(spark.sparkContext, "pythonExec", str(slow_python))
    topic = topic_factory("keys-slow", partitions=1)
    example = STREAMS[0]
    registry = StreamRegistry()
    declare_stream(registry, replace(example, source=replace(example.source, topic=topic)))
    ctx = StreamContext(spark, Lakehouse(tmp_path / "lake"), kafka_broker)
    produce_events(
        kafka_broker, topic, [keyed("a", 0), keyed("b", 1), keyed("a", 2)], key_field="key"
    )
    notes: list[tuple[str, str]] = []

    supervisor = run_streams(
        ctx,
        list(registry),
        RunOptions(mode="catch_up"),
        lambda *_: None,
        on_note=lambda name, text: notes.append((name, text)),
    )

    assert slowed.exists()  # the slow start happened
    assert supervisor.restarts == {"key_counts": 1}
    assert [name for name, text in notes if "starting it again" in text] == ["key_counts"]
    assert "did not connect back within Spark's fixed 10 s" in notes[-1][1]
    table = str(ctx.lakehouse.table("key_counts"))
    counts = {r["key"]: r["count"] for r in spark.read.format("delta").load(table).collect()}
    assert counts == {"a": 2, "b": 1}
