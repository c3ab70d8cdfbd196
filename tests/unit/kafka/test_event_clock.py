"""Synthetic data that looks live: the generators' events moved to end at a given instant."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from platform_pipelines.kafka.event_clock import (
    clickstream_ending_at,
    day_span,
    heartbeats_ending_at,
)
from platform_pipelines.kafka.heartbeats import HeartbeatConfig, generate_heartbeats
from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream

NOW = datetime(2027, 1, 15, 12, 30, 15, 123_456, tzinfo=UTC)


def event_times(records) -> list[str]:
    return [json.loads(r.value)["event_time"] for r in records if r.kind != "malformed"]


def test_the_clickstream_ends_now_with_the_same_events_and_spacing():
    fixed = ClickstreamConfig(events=2000, users=40, late_rate=0.05, duplicate_rate=0.02)

    live = clickstream_ending_at(fixed, NOW)

    assert max(event_times(generate_clickstream(live))) == "2027-01-15T12:30:15.123Z"
    shift = live.start_time - fixed.start_time
    old = [json.loads(r.value) for r in generate_clickstream(fixed) if r.kind != "malformed"]
    new = [json.loads(r.value) for r in generate_clickstream(live) if r.kind != "malformed"]
    moved = [
        {**e, "event_time": (datetime.fromisoformat(e["event_time"]) + shift).isoformat()}
        for e in old
    ]
    assert [
        {**e, "event_time": datetime.fromisoformat(e["event_time"]).isoformat()} for e in new
    ] == moved


def test_a_clickstream_of_late_records_only_ends_where_its_clock_would():
    lonely = clickstream_ending_at(ClickstreamConfig(events=0), NOW)

    assert lonely.start_time == datetime(2027, 1, 15, 12, 30, 15, 123_000, tzinfo=UTC)


def test_heartbeats_end_with_their_last_round_now():
    live = heartbeats_ending_at(replace(HeartbeatConfig(), beats=4), NOW)

    assert sorted(set(event_times(generate_heartbeats(live)))) == [
        "2027-01-15T12:28:45.123Z",
        "2027-01-15T12:29:15.123Z",
        "2027-01-15T12:29:45.123Z",
        "2027-01-15T12:30:15.123Z",
    ]


def test_the_days_events_fall_on_are_every_day_from_the_first_to_the_last():
    assert day_span(
        datetime(2026, 12, 31, 23, tzinfo=UTC), datetime(2027, 1, 2, 1, tzinfo=UTC)
    ) == [
        "2026-12-31",
        "2027-01-01",
        "2027-01-02",
    ]
