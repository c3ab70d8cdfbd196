"""Which streams of a run wait for a missing Kafka topic, and what the broker is asked."""

from __future__ import annotations

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.runtime.topic_wait import missing_topics, waiting_note, waiting_streams
from platform_pipelines.streams.builtin import builtin_streams

ALL = list(builtin_streams())


def test_the_reader_of_a_missing_topic_and_everything_downstream_of_it_wait():
    assert waiting_streams(ALL, {"service_heartbeats"}) == {
        "service_heartbeats_raw": "service_heartbeats",
        "service_status": "service_heartbeats",
    }


def test_streams_downstream_of_a_waiting_bronze_wait_for_its_topic_too():
    assert waiting_streams(ALL, {"clickstream"}) == {
        "clickstream_raw": "clickstream",
        "events": "clickstream",
        "user_sessions": "clickstream",
        "security_alerts": "clickstream",
    }


def test_nothing_waits_when_every_topic_exists():
    assert waiting_streams(ALL, set()) == {}


def test_a_broker_that_does_not_answer_cannot_tell_which_topics_are_missing():
    # None: the run then starts every stream, as it did before, and the broker watch reports
    # the outage.
    assert missing_topics("127.0.0.1:1", ["clickstream"]) is None
    assert missing_topics("127.0.0.1:1", []) == set()


def test_the_run_log_says_what_the_stream_waits_for_and_how_to_end_the_wait():
    assert waiting_note("service_heartbeats") == (
        "waits for the Kafka topic service_heartbeats, which does not exist yet: it starts by "
        "itself once the topic exists (create it with `platform kafka create-topic "
        "service_heartbeats`)"
    )


def test_a_waiting_record_keeps_its_topic_through_the_progress_store():
    record = ProgressRecord(1.0, "waiting", "service_status", "1a2b", waiting_for="beats")

    assert ProgressRecord.from_json(record.to_json()) == record
