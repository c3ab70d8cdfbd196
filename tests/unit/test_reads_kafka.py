"""A stream that reads its Kafka topic itself (``reads="kafka"``): its declaration, lineage,
catch-up order, checkpoint record and the offsets its batches read (no JVM)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from platform_pipelines.lakehouse.checkpoints import kafka_batch_offsets
from platform_pipelines.runtime.reprocess import ReprocessRefused, plan_reprocess
from platform_pipelines.runtime.runner import catch_up_waves
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.declare import TableSource
from platform_pipelines.streams.evolution import DeclarationChanged, check_declaration
from platform_pipelines.streams.kafka_input import InputCounts
from platform_pipelines.streams.registry import declare_stream
from platform_pipelines.streams.validate import DeclarationError
from user_streams.running_count import STREAMS

FROM_KAFKA = builtin_streams(BuiltinSettings(clickstream_topic="clicks", events_reads="kafka"))
FROM_BRONZE = builtin_streams(BuiltinSettings(clickstream_topic="clicks", events_reads="bronze"))


def test_events_reading_kafka_has_the_topic_upstream_and_catches_up_beside_bronze():
    events = FROM_KAFKA.get("events")
    assert (events.upstream, events.topic) == ("clicks", "clicks")
    streams = [FROM_KAFKA.get(n) for n in ("clickstream_raw", "events", "user_sessions")]
    assert [[s.name for s in wave] for wave in catch_up_waves(streams)] == [
        ["clickstream_raw", "events"],
        ["user_sessions"],
    ]
    assert builtin_streams(BuiltinSettings()).get("events").reads == "kafka"  # the default
    behind = builtin_streams(BuiltinSettings(clickstream_topic="clicks", events_reads="bronze"))
    assert (behind.get("events").upstream, behind.get("events").topic) == ("clickstream_raw", None)
    assert [[s.name for s in w] for w in catch_up_waves(list(FROM_KAFKA))][:3] == [
        ["clickstream_raw", "events", "security_alerts", "service_heartbeats_raw"],
        ["user_sessions", "service_status"],
    ]


def test_reads_is_checked_with_the_fix():
    registry = builtin_streams()
    with pytest.raises(DeclarationError) as refused:
        declare_stream(registry, replace(STREAMS[0], reads="topic"))  # type: ignore[arg-type]
    assert refused.value.problems == [
        "reads: 'topic' is not supported; use 'bronze' (the bronze table) or 'kafka' (the topic "
        "itself)."
    ]
    table_reader = replace(
        STREAMS[0], name="from_table", source=TableSource("events"), reads="kafka", sink_table=None
    )
    with pytest.raises(DeclarationError, match="reads: 'kafka' needs a KafkaSource"):
        declare_stream(registry, table_reader)


def test_a_rebuild_from_bronze_is_refused_for_a_stream_that_reads_kafka():
    with pytest.raises(ReprocessRefused, match=r"events is read from Kafka: .*from a timestamp"):
        plan_reprocess(FROM_KAFKA, "events", "bronze", "notify")
    plan = plan_reprocess(FROM_KAFKA, "events", "earliest", "reprocess", rebuild_id="r1")
    assert list(plan.streams) == ["events", "user_sessions"]


def test_a_checkpoint_records_what_it_reads_and_refuses_the_other_source(tmp_path: Path):
    check_declaration(tmp_path, FROM_KAFKA.get("events"))
    assert json.loads((tmp_path / "_declaration.json").read_text())["reads"] == "kafka"
    with pytest.raises(DeclarationChanged, match=r"reads: kafka -> bronze \(the checkpoint's"):
        check_declaration(tmp_path, FROM_BRONZE.get("events"), upstream="clickstream_raw")


def _offsets(checkpoint: Path, batch_id: int, offsets: dict) -> None:
    folder = checkpoint / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    (folder / str(batch_id)).write_text(f"v1\n{json.dumps(meta)}\n{json.dumps(offsets)}")


def test_a_batch_reads_from_the_previous_batch_end_or_the_start_offsets(tmp_path: Path):
    sources = tmp_path / "sources" / "0"
    sources.mkdir(parents=True)
    (sources / "0").write_bytes(b'\x00v1\n{"clicks":{"0":3,"1":0}}')
    _offsets(tmp_path, 0, {"clicks": {"0": 10, "1": 4}})
    _offsets(tmp_path, 1, {"clicks": {"0": 12, "1": 4, "2": 5}})

    assert kafka_batch_offsets(tmp_path, 0) == ({"clicks": {0: 3, 1: 0}}, {"clicks": {0: 10, 1: 4}})
    assert kafka_batch_offsets(tmp_path, 1) == (
        {"clicks": {0: 10, 1: 4}},
        {"clicks": {0: 12, 1: 4, 2: 5}},
    )
    with pytest.raises(RuntimeError, match=r"Batch 2 of .* has no Kafka source offsets"):
        kafka_batch_offsets(tmp_path, 2)


def test_only_a_batch_whose_oldest_good_row_is_at_or_behind_the_watermark_may_hold_late_rows():
    assert InputCounts(5, 1, oldest_good_us=2_000_000).may_be_late(late_until_ms=2_000)
    assert not InputCounts(5, 1, oldest_good_us=2_000_001).may_be_late(late_until_ms=2_000)
    assert not InputCounts(5, 5, oldest_good_us=None).may_be_late(late_until_ms=2_000)
