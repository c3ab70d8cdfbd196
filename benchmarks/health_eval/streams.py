"""The streams the scenarios run: built-in ones and a few declared as a user would, some with a
fault built in (a count that never forgets a key, logic that is slow, hangs or raises).

Each factory takes the scenario's topic and returns the streams to run, upstream first. The
per-key logic is plain Python (``state.keyed``); Spark's Python workers import it from this
module, so the recorder puts the repository on their ``PYTHONPATH``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta

from platform_pipelines.state.keyed import Clock, Event, State, Step
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams, clickstream_source
from platform_pipelines.streams.declare import (
    IngestStream,
    KafkaSource,
    StatefulStream,
    Stream,
    Timeout,
)
from platform_pipelines.streams.watermark import WATERMARK_COLUMN
from user_streams.running_count import RunningCount

Streams = Callable[[str], Sequence[Stream]]
KEYED_SCHEMA = {"key": "string", "event_time": "timestamp"}
COUNT_SCHEMA = {"key": "string", "count": "long", "last_seen": "timestamp"}
HANG = "hang"  # the key on which ``HangingCount`` hangs
HANG_SECONDS = 240.0
POISON = "poison"  # the key on which ``CrashingCount`` raises


class ExpiringCount(RunningCount):
    """A running count per key that forgets a key ``ttl_ms`` (processing time) after its last
    event: the same count as the leak's, with the timer that bounds it."""

    def __init__(self, ttl_ms: int) -> None:
        self.ttl_ms = ttl_ms

    def on_events(
        self, key: str, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        step = super().on_events(key, state, events, clock)
        return Step(step.state, step.outputs, clock.processing_time_ms + self.ttl_ms)

    def on_timeout(self, key: str, state: State, clock: Clock) -> Step:
        return Step(None)


class SlowCount(RunningCount):
    """A running count that spends ``seconds_per_event`` on every event (a costly lookup)."""

    def __init__(self, seconds_per_event: float) -> None:
        self.seconds_per_event = seconds_per_event

    def on_events(
        self, key: str, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        time.sleep(self.seconds_per_event * len(events))
        return super().on_events(key, state, events, clock)


class HangingCount(RunningCount):
    """A running count that never returns from the key ``hang`` (a call without a timeout)."""

    def on_events(
        self, key: str, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        while key == HANG:
            time.sleep(1.0)
        return super().on_events(key, state, events, clock)


class CrashingCount(RunningCount):
    """A running count with a bug: the key ``poison`` raises."""

    def on_events(
        self, key: str, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        if key == POISON:
            raise ValueError(f"cannot count key {key!r}: a bug in the stream's logic")
        return super().on_events(key, state, events, clock)


def bronze(topic: str) -> list[Stream]:
    """``clickstream_raw``: the built-in bronze of a clickstream topic (stateless)."""
    return [IngestStream(clickstream_source(topic))]


def dedup(watermark: timedelta) -> Streams:
    """The built-in silver ``events`` (dedup by event_id within ``watermark``), reading Kafka."""

    def streams(topic: str) -> list[Stream]:
        cfg = BuiltinSettings(
            clickstream_topic=topic, events_reads="kafka", dedup_watermark=watermark
        )
        return [builtin_streams(cfg).get("events")]

    return streams


def bronze_and_dedup(topic: str) -> list[Stream]:
    """Bronze, then the built-in ``events`` reading its table (``PLATFORM_EVENTS_READS=bronze``)."""
    cfg = BuiltinSettings(clickstream_topic=topic, events_reads="bronze")
    return [*bronze(topic), builtin_streams(cfg).get("events")]


def sessions(topic: str) -> list[Stream]:
    """The built-in ``user_sessions`` (30 min gap, 10 min watermark), reading the topic itself
    instead of the ``events`` table: one query instead of three."""
    builtin = builtin_streams(BuiltinSettings(clickstream_topic=topic)).get("user_sessions")
    assert isinstance(builtin, StatefulStream)
    return [replace(builtin, source=clickstream_source(topic), reads="kafka")]


def first_visits(topic: str) -> list[Stream]:
    """``active_users``: a user's first visit within 10 minutes of event time (state: one key
    per user seen in the last 10 minutes, removed when the watermark passes it)."""
    return [
        StatefulStream(
            name="active_users",
            description="A user's first visit within 10 minutes (dedup by user_id).",
            source=clickstream_source(topic),
            reads="kafka",
            key="user_id",
            transform=lambda events: events.select(
                "user_id", "event_time", WATERMARK_COLUMN
            ).dropDuplicatesWithinWatermark(["user_id"]),
            output_schema={"user_id": "string", "event_time": "timestamp"},
            watermark=timedelta(minutes=10),
            layer="silver",
        )
    ]


def keyed(
    logic: RunningCount,
    watermark: timedelta | None = None,
    timeout: Timeout | None = None,
    key_lifetime: timedelta | None = None,
) -> Streams:
    """A running count per key of ``{key, event_time}`` records, read straight from the topic."""

    def streams(topic: str) -> list[Stream]:
        source = KafkaSource(topic=topic, schema=KEYED_SCHEMA, required=("key", "event_time"))
        return [
            StatefulStream(
                name="key_counts",
                description="A running count per key.",
                source=source,
                reads="kafka",
                key="key",
                logic=logic,
                output_schema=COUNT_SCHEMA,
                output_mode="update",
                watermark=watermark,
                timeout=timeout,
                key_lifetime=key_lifetime,
            )
        ]

    return streams


def misspelled(streams: Streams) -> Streams:
    """``streams`` declared on a topic nobody writes: the producers' topic with a typo."""
    return lambda topic: streams(topic.replace("health-", "helath-", 1))
