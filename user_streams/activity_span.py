"""First and last activity per (user, activity): Spark's own ``mapGroupsWithState`` example, keyed by
two columns.

Produce JSON like ``{"user_id": "u1", "activity": "search", "event_time": "2026-11-22T10:00:00Z"}``
to the ``user_activity`` topic; the ``activity_spans`` table holds one row per (user, activity)
with when it was first and last seen and how many times (update mode: the row is upserted by both
key columns).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from platform_pipelines.state.keyed import Clock, Event, Key, State, Step, from_ms, to_ms
from platform_pipelines.streams.declare import KafkaSource, StatefulStream


class ActivitySpan:
    """Keeps the first and last event time and the count of one user's one activity."""

    def on_events(
        self, key: Key, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        user_id, activity = key  # a composite key arrives as a tuple, in the declared order
        times = [to_ms(e["event_time"]) for e in events]
        known = state or {"first_ms": min(times), "last_ms": max(times), "count": 0}
        span = {
            "first_ms": min(known["first_ms"], *times),
            "last_ms": max(known["last_ms"], *times),
            "count": known["count"] + len(events),
        }
        row = {
            "user_id": user_id,
            "activity": activity,
            "first_seen": from_ms(span["first_ms"]),
            "last_seen": from_ms(span["last_ms"]),
            "events": span["count"],
        }
        return Step(span, [row])

    def on_timeout(self, key: Key, state: State, clock: Clock) -> Step:
        return Step(state)  # no timer is ever set: every span is kept


STREAMS = [
    StatefulStream(
        name="activity_spans",
        description="First and last time each user did each activity, and how often "
        "(a user-declared example stream with a composite key).",
        source=KafkaSource(
            topic="user_activity",
            schema={"user_id": "string", "activity": "string", "event_time": "timestamp"},
            required=("user_id", "activity", "event_time"),
            description="Kafka topic of user activities: {user_id, activity, event_time}.",
        ),
        key=("user_id", "activity"),
        logic=ActivitySpan(),
        output_schema={
            "user_id": "string",
            "activity": "string",
            "first_seen": "timestamp",
            "last_seen": "timestamp",
            "events": "long",
        },
        output_mode="update",
        watermark=timedelta(minutes=10),
    )
]
