"""A running count per key: the classic flatMapGroupsWithState example, declared as a user would.

Produce JSON like ``{"key": "a", "event_time": "2026-11-22T10:00:00Z"}`` to the ``key_events``
topic; the ``key_counts`` table holds one row per key with its count so far (update mode).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from platform_pipelines.state.keyed import Clock, Event, State, Step, from_ms, to_ms
from platform_pipelines.streams.declare import KafkaSource, StatefulStream


class RunningCount:
    """Counts events per key; emits the new count whenever a key has new events."""

    def on_events(
        self, key: str, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        count = (state or {}).get("count", 0) + len(events)
        newest = max(to_ms(e["event_time"]) for e in events)
        last_seen = max(newest, (state or {}).get("last_seen_ms", 0))
        row = {"key": key, "count": count, "last_seen": from_ms(last_seen)}
        return Step({"count": count, "last_seen_ms": last_seen}, [row])

    def on_timeout(self, key: str, state: State, clock: Clock) -> Step:
        return Step(state)  # no timer is ever set: every key keeps its count


STREAMS = [
    StatefulStream(
        name="key_counts",
        description="Running count of events per key (a user-declared example stream).",
        source=KafkaSource(
            topic="key_events",
            schema={"key": "string", "event_time": "timestamp"},
            required=("key", "event_time"),
            description="Kafka topic of keyed events: {key, event_time}.",
        ),
        key="key",
        logic=RunningCount(),
        output_schema={"key": "string", "count": "long", "last_seen": "timestamp"},
        output_mode="update",
        watermark=timedelta(minutes=10),
    )
]
