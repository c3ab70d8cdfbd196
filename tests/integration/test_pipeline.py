"""Kafka -> bronze -> silver -> gold on a real broker, real Spark (RocksDB) and real Delta tables."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext
from tests.integration.events import (
    EXPECTED_REASONS,
    MALFORMED,
    U1_SHOPPING,
    U2_BROWSING,
    U3_MUCH_LATER,
    at,
)

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def run_catch_up(
    spark: SparkSession,
    lake: Lakehouse,
    bootstrap: str,
    topic: str,
    streams: Iterable[str] | None = None,
    max_offsets: int | None = None,
) -> list[str]:
    """Run the built-in streams (or some) to the end of what Kafka holds; returns progress log."""
    registry = builtin_streams(BuiltinSettings(clickstream_topic=topic))
    names = streams or ["clickstream_raw", "events", "user_sessions"]
    chosen = [registry.get(n) for n in names]
    ctx = StreamContext(spark, lake, bootstrap)
    seen: list[str] = []
    run_streams(
        ctx,
        chosen,
        RunOptions(mode="catch_up", max_offsets_per_trigger=max_offsets),
        lambda name, p: seen.append(name),
    )
    return seen


def table(spark: SparkSession, lake: Lakehouse, name: str) -> list[dict]:
    return [
        r.asDict(recursive=True)
        for r in spark.read.format("delta").load(str(lake.table(name))).collect()
    ]


@pytest.fixture
def lake(tmp_path: Path) -> Lakehouse:
    return Lakehouse(tmp_path / "lakehouse")


def test_bronze_keeps_good_records_with_their_kafka_position_and_quarantines_the_rest(
    spark, kafka_broker, topic_factory, lake
):
    topic = topic_factory("bronze", partitions=1)
    produce_events(
        kafka_broker, topic, [*U1_SHOPPING[:2], MALFORMED[0], U1_SHOPPING[1], *MALFORMED[1:]]
    )

    run_catch_up(spark, lake, kafka_broker, topic, ["clickstream_raw"])

    raw = sorted(table(spark, lake, "clickstream_raw"), key=lambda r: r["kafka_offset"])
    assert [(r["event_id"], r["kafka_partition"], r["kafka_offset"]) for r in raw] == [
        ("e1", 0, 0),
        ("e2", 0, 1),
        ("e2", 0, 3),
    ]
    assert raw[0]["page"] == "/home" and raw[0]["event_time"] == at(0).replace(tzinfo=None)
    quarantined = {
        r["raw_value"]: (r["reason"], r["kafka_offset"], r["source"])
        for r in table(spark, lake, "quarantine")
    }
    assert {v: q[0] for v, q in quarantined.items()} == EXPECTED_REASONS
    assert sorted(q[1] for q in quarantined.values()) == [2, 4, 5]
    assert {q[2] for q in quarantined.values()} == {topic}


def test_silver_removes_duplicate_event_ids(spark, kafka_broker, topic_factory, lake):
    topic = topic_factory("silver")
    duplicates = [U1_SHOPPING[1], U1_SHOPPING[3], U2_BROWSING[0]]
    produce_events(kafka_broker, topic, [*U1_SHOPPING, *U2_BROWSING, *duplicates])

    run_catch_up(spark, lake, kafka_broker, topic, ["clickstream_raw", "events"])

    assert len(table(spark, lake, "clickstream_raw")) == 11
    ids = sorted(r["event_id"] for r in table(spark, lake, "events"))
    assert ids == ["e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8"]


EXPECTED_U1_SESSION = {
    "user_id": "u1",
    "session_id": "u1-" + str(int(at(0).timestamp() * 1000)),
    "session_start": at(0).replace(tzinfo=None),
    "session_end": at(5).replace(tzinfo=None),
    "duration_seconds": 300.0,
    "event_count": 6,
    "last_pages": ["/home", "/product/1", "/product/1", "/checkout", "/checkout"],
    "reached_checkout": True,
    "purchased": True,
    "revenue": 25.5,
    "close_reason": "logout",
}
EXPECTED_U2_SESSION = {
    "user_id": "u2",
    "session_id": "u2-" + str(int(at(0).timestamp() * 1000)),
    "session_start": at(0).replace(tzinfo=None),
    "session_end": at(10).replace(tzinfo=None),
    "duration_seconds": 600.0,
    "event_count": 2,
    "last_pages": ["/home", "/about"],
    "reached_checkout": False,
    "purchased": False,
    "revenue": 0.0,
    "close_reason": "timeout",
}


def forget_last_commit(lake: Lakehouse, stream: str) -> None:
    commits = lake.checkpoint(stream) / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)


def sessions(spark, lake) -> list[dict]:
    return sorted(
        table(spark, lake, "user_sessions"), key=lambda r: (r["user_id"], r["session_start"])
    )


def test_sessions_close_at_logout_and_after_the_inactivity_timeout(
    spark, kafka_broker, topic_factory, lake
):
    topic = topic_factory("gold")
    produce_events(
        kafka_broker, topic, [*U1_SHOPPING, *U2_BROWSING, U1_SHOPPING[2], *U3_MUCH_LATER]
    )

    run_catch_up(spark, lake, kafka_broker, topic)

    assert sessions(spark, lake) == [EXPECTED_U1_SESSION, EXPECTED_U2_SESSION]


def test_restart_on_the_same_checkpoints_writes_every_row_exactly_once(
    spark, kafka_broker, topic_factory, lake
):
    topic = topic_factory("restart", partitions=1)
    produce_events(kafka_broker, topic, [*U1_SHOPPING[:3], U2_BROWSING[0], MALFORMED[0]])
    first = run_catch_up(spark, lake, kafka_broker, topic, max_offsets=2)
    assert first.count("clickstream_raw") >= 3  # several batches before the "stop"
    # As if the process died after writing the last batch but before committing it: the restart
    # replays that batch, and the idempotent writes must not append its rows a second time.
    for stream in ("clickstream_raw", "events"):
        forget_last_commit(lake, stream)

    produce_events(
        kafka_broker, topic, [*U1_SHOPPING[3:], U1_SHOPPING[0], U2_BROWSING[1], *U3_MUCH_LATER]
    )
    run_catch_up(spark, lake, kafka_broker, topic, max_offsets=2)

    offsets = sorted(r["kafka_offset"] for r in table(spark, lake, "clickstream_raw"))
    assert offsets == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10]  # 4 was malformed
    assert len(table(spark, lake, "quarantine")) == 1
    ids = sorted(r["event_id"] for r in table(spark, lake, "events"))
    assert ids == ["e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9"]
    assert sessions(spark, lake) == [EXPECTED_U1_SESSION, EXPECTED_U2_SESSION]
    assert json.loads((lake.checkpoint("events") / "metadata").read_text())["id"]
