"""No row disappears silently: hostile records go to quarantine with why, rows a watermark
refuses go to late_events with how late, and the ledger counts every one of them."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from delta.tables import DeltaTable

from platform_pipelines.core.times import iso
from platform_pipelines.defs.health.deep import no_silent_loss
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.registry import StreamRegistry, declare_stream
from tests.integration.events import ev
from tests.integration.helpers import ledger, run_catch_up, table
from user_streams.running_count import STREAMS as USER_STREAMS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

T = "2026-11-22T10:00:00Z"
GOOD = {"event_id": "g1", "user_id": "u1", "event_type": "page_view", "page": "/", "event_time": T}


def record(**fields: object) -> bytes:
    return json.dumps({**GOOD, **fields}).encode()


BIG = record(event_id="big", page="x" * 600_000)  # over the 256 KiB limit, under Kafka's 1 MB
BAD_UTF8 = (
    b'{"event_id":"utf","user_id":"u\xff\xfe","event_type":"page_view","event_time":"'
    + T.encode()
    + b'"}'
)
HOSTILE = {
    record(event_id="e-empty-user", user_id=""): "empty user_id",
    record(event_id=""): "empty event_id",
    record(event_id="e-obj", page={"a": 1}): 'page is not a string: {"a":1}',
    record(event_id="e-num-user", user_id=42): "user_id is not a string: 42",
    record(
        event_id="e-num-time", event_time=1_700_000_000
    ): "event_time is not a timestamp: 1700000000",
    record(event_id="e-neg", event_type="purchase", amount=-1e308): (
        "expectation amount_in_range failed: amount IS NULL OR (amount >= 0 AND amount <= 1000000)"
    ),
    b"[1,2]": "not a JSON object: array<bigint>",
    BAD_UTF8: "value is not valid UTF-8 (its bytes are kept in raw_bytes)",
    BIG: f"record is {len(BIG)} bytes, over the 262144-byte limit (max_record_bytes; its first "
    "4096 bytes are kept in raw_bytes)",
}
FAR_FUTURE = record(event_id="e-2100", event_time="2100-01-01T00:00:00Z")


@pytest.fixture
def lake(tmp_path: Path) -> Lakehouse:
    return Lakehouse(tmp_path / "lakehouse")


def test_bronze_quarantines_every_hostile_record_with_its_reason_and_original_bytes(
    spark, kafka_broker, topic_factory, lake
):
    topic = topic_factory("hostile", partitions=1)
    produce_events(kafka_broker, topic, [record(), *HOSTILE, FAR_FUTURE])

    run_catch_up(spark, lake, kafka_broker, topic, ["clickstream_raw"])

    assert [r["event_id"] for r in table(spark, lake, "clickstream_raw")] == ["g1"]
    by_offset = {r["kafka_offset"]: r for r in table(spark, lake, "quarantine")}
    values = [*HOSTILE, FAR_FUTURE]
    assert sorted(by_offset) == list(range(1, len(values) + 1))
    for offset, value in enumerate(values, start=1):
        row = by_offset[offset]
        assert row["raw_size"] == len(value)
        if value == FAR_FUTURE:
            assert re.fullmatch(
                r"event_time is \d+ d \d+ h ahead of the processing clock "
                r"\(max_future 1 h\)",
                row["reason"],
            ), row["reason"]
        else:
            assert row["reason"] == HOSTILE[value]
    assert by_offset[values.index(BAD_UTF8) + 1]["raw_bytes"] == bytearray(BAD_UTF8)
    assert by_offset[values.index(BAD_UTF8) + 1]["raw_value"] is None
    assert by_offset[values.index(BIG) + 1]["raw_bytes"] == bytearray(BIG[:4096])
    assert by_offset[1]["raw_value"] == record(event_id="e-empty-user", user_id="").decode()
    assert ledger(spark, lake, "clickstream_raw") == {
        "rows_in": 11,
        "rows_out": 1,
        "rows_late": 0,
        "rows_quarantined": 10,
    }


def ids(rows: list[dict]) -> list[str]:
    return sorted(r["event_id"] for r in rows)


def test_rows_the_watermark_refuses_land_once_in_late_events_with_how_late_they_were(
    spark, kafka_broker, topic_factory, lake
):
    topic = topic_factory("late", partitions=2)
    epoch = {**ev("epoch", "u2", "page_view", 0), "event_time": "1970-01-01T00:00:00Z"}
    first = [ev("a", "u1", "page_view", 0), ev("b", "u1", "page_view", 30), epoch]
    produce_events(kafka_broker, topic, first)
    streams = ["clickstream_raw", "events"]
    one = run_catch_up(spark, lake, kafka_broker, topic, streams)  # watermark now 10:20

    ancient = {**ev("ancient", "u3", "page_view", 0), "event_time": "0001-01-01T00:00:00Z"}
    second = [
        ev("late", "u1", "page_view", 5),
        ev("on-time", "u1", "page_view", 25),
        ancient,
        ev("a", "u1", "page_view", 0),
    ]  # (a re-sent duplicate, also late)
    produce_events(kafka_broker, topic, second)
    two = run_catch_up(spark, lake, kafka_broker, topic, streams)

    assert ids(table(spark, lake, "events")) == ["a", "b", "on-time"]
    # Placeholder dates are invalid, not late: bronze sets them aside, no watermark is blamed.
    assert sorted(
        (json.loads(r["raw_value"])["event_id"], r["reason"])
        for r in table(spark, lake, "quarantine")
    ) == [
        (
            "ancient",
            "event_time 0001-01-01 00:00:00 is before min_event_time 2000-01-01 UTC: not a real event time",
        ),
        (
            "epoch",
            "event_time 1970-01-01 00:00:00 is before min_event_time 2000-01-01 UTC: not a real event time",
        ),
    ]
    late = sorted(table(spark, lake, "late_events"), key=lambda r: (r["batch_id"], r["event_time"]))
    assert [
        (json.loads(r["row"])["event_id"], r["stream"], r["late_by_seconds"]) for r in late
    ] == [("a", "events", 1200.0), ("late", "events", 900.0)]
    assert late[1]["reason"] == (
        "event_time is 15 min 0 s behind the watermark of events, which allows 10 min of lateness"
    )
    spark_dropped = one.dropped_by_watermark("events") + two.dropped_by_watermark("events")
    assert spark_dropped == len(late) == 2
    # events reads the topic beside bronze: it counts all 7 records in, and as quarantined the two
    # placeholder dates it skipped (bronze wrote them to quarantine, once).
    assert ledger(spark, lake, "events") == {
        "rows_in": 7,
        "rows_out": 3,
        "rows_late": 2,
        "rows_quarantined": 2,
    }
    assert ledger(spark, lake, "clickstream_raw") == {
        "rows_in": 7,
        "rows_out": 5,
        "rows_late": 0,
        "rows_quarantined": 2,
    }


def test_without_a_floor_placeholder_dates_are_kept_as_late_rows(
    spark, kafka_broker, topic_factory, lake
):
    """A source that declares no min_event_time: its epoch-dated row reaches the stream, whose
    watermark refuses it and keeps it in late_events, 0 s behind the first batch's watermark."""
    topic = topic_factory("no_floor", partitions=1)
    registry = StreamRegistry()
    for stream in builtin_streams(BuiltinSettings(clickstream_topic=topic)):
        if stream.name == "events":
            declare_stream(
                registry, replace(stream, source=replace(stream.source, min_event_time=None))
            )
    epoch = {**ev("epoch", "u2", "page_view", 0), "event_time": "1970-01-01T00:00:00Z"}
    produce_events(kafka_broker, topic, [ev("a", "u1", "page_view", 0), epoch])

    run_catch_up(spark, lake, kafka_broker, topic, ["clickstream_raw", "events"], registry=registry)

    assert table(spark, lake, "quarantine") == []
    assert [json.loads(r["row"])["event_id"] for r in table(spark, lake, "late_events")] == [
        "epoch"
    ]


def test_a_far_future_event_cannot_push_the_watermark_past_the_clock(
    spark, kafka_broker, topic_factory, lake
):
    """A user source without the max_future guard: the year-2100 record is kept, and the real-time
    records after it are still counted (the watermark is capped at the processing clock, so it
    stays behind them)."""
    topic = topic_factory("future", partitions=1)
    example = USER_STREAMS[0]
    source = replace(example.source, topic=topic, max_future=None)
    registry = StreamRegistry()
    declare_stream(registry, replace(example, source=source))

    def keyed(key: str, when: str) -> dict:
        return {"key": key, "event_time": when}

    now = datetime.now(UTC)
    produce_events(
        kafka_broker,
        topic,
        [keyed("k2100", "2100-01-01T00:00:00Z"), keyed("k1", iso(now))],
        key_field="key",
    )
    run_catch_up(spark, lake, kafka_broker, topic, registry.names(), registry=registry)
    later = [keyed("k2", iso(datetime.now(UTC))), keyed("k3", iso(now - timedelta(minutes=5)))]
    produce_events(kafka_broker, topic, later, key_field="key")
    run_catch_up(spark, lake, kafka_broker, topic, registry.names(), registry=registry)

    counts = {r["key"]: r["count"] for r in table(spark, lake, "key_counts")}
    assert counts == {"k2100": 1, "k1": 1, "k2": 1, "k3": 1}
    assert table(spark, lake, "late_events") == []


def test_the_ledger_balances_against_the_tables_and_a_lost_row_fails_the_check(
    spark, kafka_broker, topic_factory, lake
):
    topic = topic_factory("balance", partitions=2)
    produce_events(
        kafka_broker,
        topic,
        [
            ev("a", "u1", "page_view", 0),
            ev("b", "u1", "logout", 1),
            ev("a", "u1", "page_view", 0),
            b"oops",
            ev("d", "u4", "page_view", 60),
        ],
    )
    run_catch_up(spark, lake, kafka_broker, topic)
    produce_events(
        kafka_broker, topic, [ev("c", "u2", "page_view", 90), ev("old", "u3", "page_view", 5)]
    )
    streams = ["clickstream_raw", "events", "user_sessions"]
    run_catch_up(spark, lake, kafka_broker, topic, streams)
    registry = builtin_streams(BuiltinSettings(clickstream_topic=topic))

    verdicts = {name: no_silent_loss(spark, lake, registry.get(name)) for name in streams}

    # events reads the topic beside bronze: "oops" is among its records in, and quarantined.
    assert {n: v.summary for n, v in verdicts.items()} == {
        "clickstream_raw": "7 in = 6 out + 0 late + 1 quarantined + 0 absorbed",
        "events": "7 in = 4 out + 1 late + 1 quarantined + 1 duplicates removed",
        "user_sessions": "4 in = 1 out + 0 late + 0 quarantined + 3 rows folded into state",
    }
    assert all(v.passed for v in verdicts.values())

    DeltaTable.forPath(spark, str(lake.table("events"))).delete("event_id = 'c'")
    lost = no_silent_loss(spark, lake, registry.get("events"))
    assert not lost.passed
    assert lost.summary.startswith("3 rows in its table but 4 written by its batches")
