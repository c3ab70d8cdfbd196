"""A declaration is checked before any query starts; each problem names the field and the fix."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.declare import (
    InitialState,
    KafkaSource,
    StatefulStream,
    TableSource,
)
from platform_pipelines.streams.registry import declare_stream
from platform_pipelines.streams.validate import DeclarationError
from user_streams.running_count import STREAMS, RunningCount

EXAMPLE = STREAMS[0]


def problems_of(stream: StatefulStream) -> list[str]:
    with pytest.raises(DeclarationError) as error:
        declare_stream(builtin_streams(), stream)
    return error.value.problems


def test_the_example_user_stream_declares_an_ingest_and_a_stateful_stream():
    registry = builtin_streams()
    declare_stream(registry, EXAMPLE)
    assert registry.get("key_events_raw").upstream == "key_events"
    assert registry.get("key_counts").upstream == "key_events_raw"
    assert registry.names()[-2:] == ["key_events_raw", "key_counts"]


def test_an_unknown_key_column_is_refused_with_the_source_columns():
    assert problems_of(replace(EXAMPLE, key="user")) == [
        "output_schema: update mode upserts rows by the key 'user'; add 'user' to output_schema.",
        "key: column 'user' is not in the source (key, event_time, kafka_partition, kafka_offset, "
        "kafka_timestamp, _rescued_data); use one of those columns.",
    ]


def test_a_composite_key_must_name_source_columns_once_and_be_in_the_output_in_update_mode():
    assert problems_of(replace(EXAMPLE, key=("key", "event_time"))) == [
        "output_schema: update mode upserts rows by the key 'key', 'event_time'; add "
        "'event_time' to output_schema."
    ]
    assert problems_of(replace(EXAMPLE, key=("key", "key"))) == [
        "key: ('key', 'key') names a column twice; name each key column once."
    ]
    assert problems_of(replace(EXAMPLE, key=42)) == [  # type: ignore[arg-type]
        "key: 42 is not a column name or a tuple of them; use key='user_id' or "
        "key=('user_id', 'activity').",
        "output_schema: update mode upserts rows by the key 42; add 42 to output_schema.",
        "key: column 42 is not in the source (key, event_time, kafka_partition, kafka_offset, "
        "kafka_timestamp, _rescued_data); use one of those columns.",
    ]


def test_an_event_time_timeout_without_a_watermark_is_refused():
    assert problems_of(replace(EXAMPLE, watermark=None, timeout="event_time")) == [
        "timeout: an event-time timeout fires when the watermark passes it, and this stream has "
        "none; set watermark=timedelta(minutes=10) (how late events may arrive), or use "
        "timeout='processing_time'."
    ]


@pytest.mark.parametrize("name", ["../etc", "Key Counts", "1counts", "a/b"])
def test_a_name_that_is_not_an_identifier_or_could_escape_the_lakehouse_is_refused(name):
    (problem, *_) = problems_of(replace(EXAMPLE, name=name))
    assert problem.startswith(f"name: {name!r} is not a valid name; use lowercase letters, digits")


def test_every_problem_is_reported_at_once():
    broken = StatefulStream(
        name="bad-name",
        description="",
        source=TableSource("nowhere"),
        key="k",
        output_schema={"k": "text"},
        timeout="event_time",
    )
    assert problems_of(broken) == [
        "source: table 'nowhere' is not declared; declare the stream that writes it first, or "
        "read a Kafka topic with KafkaSource(topic=..., schema=...).",
        "name: 'bad-name' is not a valid name; use lowercase letters, digits and underscores, "
        "starting with a letter, at most 63 characters (e.g. 'bad_name').",
        "sink_table: 'bad-name' is not a valid name; use lowercase letters, digits and "
        "underscores, starting with a letter, at most 63 characters (e.g. 'bad_name').",
        "logic/transform: give exactly one: logic=<KeyedLogic> for plain-Python state, or "
        "transform=<function of a DataFrame> for Spark operators.",
        "output_schema: column 'k' has unknown type 'text'; use one of: string, long, int, "
        "double, boolean, timestamp, array<string>.",
        "timeout: an event-time timeout fires when the watermark passes it, and this stream has "
        "none; set watermark=timedelta(minutes=10) (how late events may arrive), or use "
        "timeout='processing_time'.",
    ]


def test_a_stream_name_or_sink_table_already_taken_is_refused():
    taken = replace(
        EXAMPLE,
        name="events",
        source=TableSource("clickstream_raw"),
        key="event_id",
        output_mode="append",
    )
    assert problems_of(taken) == [
        "name: a stream named 'events' is already declared; pick another."
    ]
    assert problems_of(replace(taken, name="events2", sink_table="events")) == [
        "sink_table: 'events' is already written by another stream; give this stream its own table."
    ]


def test_update_mode_needs_the_key_in_the_output_and_kafka_schema_types_are_checked():
    stream = StatefulStream(
        name="counts2",
        description="",
        source=KafkaSource(topic="t", schema={"key": "string", "n": "integer"}, required=("id",)),
        key="key",
        logic=RunningCount(),
        output_schema={"count": "long"},
        output_mode="update",
        watermark=timedelta(minutes=1),
    )
    assert problems_of(stream) == [
        "source.schema: column 'n' has unknown type 'integer'; use one of: string, long, int, "
        "double, boolean, timestamp, array<string>.",
        "source: 'id' is not in source.schema; add it or remove it.",
        "output_schema: update mode upserts rows by the key 'key'; add 'key' to output_schema.",
    ]


def test_a_source_quarantines_event_times_before_2000_by_default():
    assert EXAMPLE.source.min_event_time == datetime(2000, 1, 1, tzinfo=UTC)


def test_a_min_event_time_without_a_time_zone_is_refused():
    naive = replace(EXAMPLE.source, min_event_time=datetime(2000, 1, 1))

    assert problems_of(replace(EXAMPLE, source=naive)) == [
        "source.min_event_time: give it a time zone, e.g. datetime(2000, 1, 1, tzinfo=UTC)."
    ]


def test_a_key_lifetime_that_is_not_positive_is_refused():
    assert problems_of(replace(EXAMPLE, key_lifetime=timedelta(0))) == [
        "key_lifetime: must be a positive duration, e.g. timedelta(minutes=30)."
    ]


@pytest.mark.parametrize("count", [0, -1, True, "2", 1.5])
def test_state_partitions_that_are_not_a_count_are_refused(count):
    assert problems_of(replace(EXAMPLE, state_partitions=count)) == [
        f"state_partitions: {count!r} is not a partition count; use a whole number of at least "
        "1, or None for the session's spark.sql.shuffle.partitions."
    ]


def test_state_partitions_of_one_or_more_are_accepted():
    for count in (1, 8, None):
        declare_stream(builtin_streams(), replace(EXAMPLE, state_partitions=count))


def test_a_published_topic_needs_a_unique_key_and_a_kafka_topic_name():
    assert problems_of(replace(EXAMPLE, publish_topic="key counts!")) == [
        "publish_topic: 'key counts!' is not a Kafka topic name; use letters, digits, '.', '_' "
        "and '-' (at most 249).",
        "publish_topic: the topic gets a replayed batch's rows again (at least once); set "
        "unique_key to the output column that identifies a row, so consumers can drop copies.",
    ]
    registry = builtin_streams()
    declare_stream(registry, replace(EXAMPLE, publish_topic="key_counts.v1", unique_key="key"))
    assert registry.get("key_counts").publish_topic == "key_counts.v1"


def test_a_trigger_of_zero_runs_batches_back_to_back_and_a_negative_one_is_refused():
    registry = builtin_streams()
    assert registry.get("security_alerts").trigger == timedelta(0)
    declare_stream(registry, replace(EXAMPLE, trigger=timedelta(0)))
    assert problems_of(replace(EXAMPLE, name="other", trigger=timedelta(seconds=-1))) == [
        "trigger: must not be negative; e.g. timedelta(seconds=10), or timedelta(0) for the next "
        "batch as soon as the last one ends and input is there."
    ]


def test_a_sources_bronze_trigger_is_its_bronze_streams_and_a_negative_one_is_refused():
    registry = builtin_streams()
    # nothing waits on the clickstream's bronze (events and security_alerts read the topic)
    assert registry.get("clickstream_raw").trigger == timedelta(seconds=60)
    assert registry.get("service_heartbeats_raw").trigger == timedelta(seconds=10)
    # ... unless events reads bronze: then every row of events waits for it
    on_bronze = builtin_streams(BuiltinSettings(events_reads="bronze"))
    assert on_bronze.get("clickstream_raw").trigger == timedelta(seconds=10)
    source = EXAMPLE.source
    assert isinstance(source, KafkaSource)
    declare_stream(registry, replace(EXAMPLE, source=replace(source, bronze_trigger=timedelta(0))))
    assert registry.get(source.table).trigger == timedelta(0)
    backwards = replace(source, topic="other_events", bronze_trigger=timedelta(seconds=-1))
    assert problems_of(replace(EXAMPLE, name="other", source=backwards)) == [
        "source.bronze_trigger: must not be negative; e.g. timedelta(seconds=10), or "
        "timedelta(0) for bronze's next batch as soon as the last one ends."
    ]


def test_a_seeded_transform_must_take_the_seed_rows():
    seeded = replace(
        EXAMPLE,
        name="seeded",
        logic=None,
        transform=lambda source: source,
        initial_state=InitialState("seeded", latest_by=("last_seen",)),
    )
    assert problems_of(seeded) == [
        "initial_state: the transform takes one argument, and with initial_state it is called "
        "with the seed rows as a second one (None once the checkpoint has state); give it one, "
        "e.g. lambda source, seed: ..., or remove initial_state."
    ]
    registry = builtin_streams()
    declare_stream(registry, replace(seeded, transform=lambda source, seed: source))
    assert registry.get("seeded").initial_state is not None
