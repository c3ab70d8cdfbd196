"""``events`` reading its Kafka topic itself (``reads="kafka"``), beside bronze: the same rows,
late rows and balance as when it reads ``clickstream_raw``, with the records bronze quarantines
counted in its ledger, and a checkpoint that refuses to switch sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from platform_pipelines.defs.health.deep import no_silent_loss
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.evolution import DeclarationChanged
from platform_pipelines.streams.kafka_input import KafkaInput
from platform_pipelines.streams.registry import StreamRegistry
from tests.integration.events import ev
from tests.integration.helpers import ledger, run_catch_up, table

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

EPOCH_REASON = (
    "event_time 1970-01-01 00:00:00 is before min_event_time 2000-01-01 UTC: not a real event time"
)


@pytest.fixture
def lake(tmp_path: Path) -> Lakehouse:
    return Lakehouse(tmp_path / "lakehouse")


def from_kafka(topic: str) -> StreamRegistry:
    return builtin_streams(BuiltinSettings(clickstream_topic=topic, events_reads="kafka"))


def from_bronze(topic: str) -> StreamRegistry:
    return builtin_streams(BuiltinSettings(clickstream_topic=topic, events_reads="bronze"))


@pytest.fixture
def read_again(monkeypatch) -> list[tuple[int, bool]]:
    """The batches whose records the writer read from Kafka again: (batch, only the records
    that may be late)."""
    batches: list[tuple[int, bool]] = []
    real = KafkaInput.parsed

    def parsed(self, checkpoint, batch_id, now, late_until_ms=None):
        batches.append((batch_id, late_until_ms is not None))
        return real(self, checkpoint, batch_id, now, late_until_ms)

    monkeypatch.setattr(KafkaInput, "parsed", parsed)
    return batches


def test_events_read_from_kafka_over_many_batches_balance_with_bronze_beside_them(
    spark, kafka_broker, topic_factory, lake, read_again
):
    topic = topic_factory("fromkafka", partitions=2)
    good = [ev(f"e{i}", f"u{i % 3}", "page_view", i / 60) for i in range(30)]
    produce_events(kafka_broker, topic, [*good[:10], good[3], b"oops", *good[10:], good[7], b"{}"])
    registry = from_kafka(topic)
    assert registry.get("events").upstream == topic  # lineage: the topic, not clickstream_raw

    progress = run_catch_up(
        spark,
        lake,
        kafka_broker,
        topic,
        ["clickstream_raw", "events"],
        max_offsets=5,
        registry=registry,
    )

    assert len(progress.batches["events"]) >= 6  # offsets ranges batch after batch
    assert read_again == []  # no row could be late: the query's own counts were enough
    assert sorted(r["event_id"] for r in table(spark, lake, "events")) == sorted(
        e["event_id"] for e in good
    )
    assert ledger(spark, lake, "events") == {
        "rows_in": 34,
        "rows_out": 30,
        "rows_late": 0,
        "rows_quarantined": 2,
    }
    assert ledger(spark, lake, "clickstream_raw") == {
        "rows_in": 34,
        "rows_out": 32,
        "rows_late": 0,
        "rows_quarantined": 2,
    }
    assert sorted(r["raw_value"] for r in table(spark, lake, "quarantine")) == ["oops", "{}"]
    # Each batch's rows, spread over the four state partitions, land in one file.
    files = written_files(spark, lake, "events")
    assert files == [1] * len(files)
    verdicts = {
        n: no_silent_loss(spark, lake, registry.get(n)) for n in ("clickstream_raw", "events")
    }
    assert {n: v.summary for n, v in verdicts.items()} == {
        "clickstream_raw": "34 in = 32 out + 0 late + 2 quarantined + 0 absorbed",
        "events": "34 in = 30 out + 0 late + 2 quarantined + 2 duplicates removed",
    }
    assert all(v.passed for v in verdicts.values())


def written_files(spark, lake: Lakehouse, name: str) -> list[int]:
    """The files each batch's write added to a table, oldest first."""
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, str(lake.table(name))).history()
    writes = history.where("operation = 'WRITE'").orderBy("version").collect()
    assert len(writes) >= 6
    return [int(w["operationMetrics"]["numFiles"]) for w in writes]


@pytest.mark.parametrize("counts", ["observed", "missing"])
def test_rows_the_watermark_refuses_are_read_back_from_kafka_into_late_events(
    spark, kafka_broker, topic_factory, lake, read_again, monkeypatch, counts
):
    """With the query's counts, only batches with a row behind the watermark are read again;
    without them (``counted`` gives None), every batch is, and the outcome is the same. A
    placeholder date is not late: events counts it as quarantined, and bronze keeps it."""
    if counts == "missing":
        monkeypatch.setattr(KafkaInput, "counted", lambda self: None)
    topic = topic_factory("fromkafkalate", partitions=2)
    epoch = {**ev("epoch", "u2", "page_view", 0), "event_time": "1970-01-01T00:00:00Z"}
    produce_events(
        kafka_broker, topic, [ev("a", "u1", "page_view", 0), ev("b", "u1", "page_view", 30), epoch]
    )
    registry = from_kafka(topic)
    one = run_catch_up(spark, lake, kafka_broker, topic, ["events"], registry=registry)
    produce_events(
        kafka_broker,
        topic,
        [
            ev("late", "u1", "page_view", 5),
            b"[1]",
            ev("on-time", "u1", "page_view", 25),
            ev("a", "u1", "page_view", 0),
        ],
    )
    two = run_catch_up(
        spark, lake, kafka_broker, topic, ["events", "user_sessions"], registry=registry
    )

    assert sorted(r["event_id"] for r in table(spark, lake, "events")) == ["a", "b", "on-time"]
    late = sorted(table(spark, lake, "late_events"), key=lambda r: (r["batch_id"], r["event_time"]))
    assert [(json.loads(r["row"])["event_id"], r["late_by_seconds"]) for r in late] == [
        ("a", 1200.0),
        ("late", 900.0),
    ]
    assert late[1]["reason"] == (
        "event_time is 15 min 0 s behind the watermark of events, which allows 10 min of lateness"
    )
    assert set(json.loads(late[0]["row"])) >= {"event_id", "kafka_partition", "kafka_offset"}
    if counts == "observed":  # the one batch with late rows, only its possibly late records
        assert read_again == [(2, True)]
    else:
        assert len(read_again) >= 2 and not any(only_late for _, only_late in read_again)
    dropped = one.dropped_by_watermark("events") + two.dropped_by_watermark("events")
    assert dropped == len(late) == 2
    assert ledger(spark, lake, "events") == {
        "rows_in": 7,
        "rows_out": 3,
        "rows_late": 2,
        "rows_quarantined": 2,
    }
    assert ledger(spark, lake, "user_sessions")["rows_in"] == 3
    # Nothing ran bronze yet: the quarantined records are counted, and only bronze writes them.
    assert table(spark, lake, "quarantine") == []
    run_catch_up(spark, lake, kafka_broker, topic, ["clickstream_raw"], registry=registry)
    assert {r["reason"]: json.loads(r["raw_value"]) for r in table(spark, lake, "quarantine")} == {
        EPOCH_REASON: epoch,
        "not a JSON object: array<bigint>": [1],
    }


def test_a_checkpoint_started_on_kafka_refuses_to_read_bronze(
    spark, kafka_broker, topic_factory, lake
):
    topic = topic_factory("fromkafkaswitch", partitions=1)
    produce_events(kafka_broker, topic, [ev("a", "u1", "page_view", 0)])
    run_catch_up(spark, lake, kafka_broker, topic, ["events"], registry=from_kafka(topic))

    with pytest.raises(DeclarationChanged, match=r"reads: kafka -> bronze .*platform reprocess"):
        run_catch_up(
            spark,
            lake,
            kafka_broker,
            topic,
            ["clickstream_raw", "events"],
            registry=from_bronze(topic),
        )
    assert [r["event_id"] for r in table(spark, lake, "events")] == ["a"]
