"""The suite's inputs: the synthetic clickstream (the platform's own generator), placed in the past
so no event is ahead of the clock, and the scaling input (exactly one event per key)."""

from __future__ import annotations

import json
import math
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from platform_pipelines.kafka.producer import ClickstreamConfig, ProducedRecord

# A generous bound on how far the generator's event-time clock moves per event of one user
# (steps of 5 s - 2 min, pauses of up to 3 h between sessions of ~6 steps).
_MINUTES_PER_EVENT_PER_USER = 30
SCALING_WINDOW = timedelta(minutes=15)  # within the 10-minute watermarks: no key expires


def span(events: int, users: int) -> timedelta:
    """An upper bound of the event-time span ``events`` records of ``users`` users cover."""
    return timedelta(minutes=_MINUTES_PER_EVENT_PER_USER * math.ceil(events / max(users, 1)) + 60)


def past_start(
    events: int, users: int, now: datetime | None = None, before: timedelta = timedelta(0)
) -> datetime:
    """A start time (midnight UTC, so the same all day) early enough that the whole input lies
    ``before`` and a day in the past: bronze refuses event times ahead of its clock."""
    today = (now or datetime.now(UTC)).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - span(events, users) - before - timedelta(days=1)


def clickstream(
    events: int, users: int, seed: int, *, clean: bool = False, before: timedelta = timedelta(0)
) -> ClickstreamConfig:
    """The throughput input (2 % duplicates, 5 % late within the watermark, 1 % malformed), or
    with ``clean`` duplicates only (for latency: every record must reach ``events``)."""
    trouble = (
        {"late_rate": 0.0, "malformed_rate": 0.0}
        if clean
        else {"late_rate": 0.05, "malformed_rate": 0.01}
    )
    return ClickstreamConfig(
        events=events,
        users=users,
        duplicate_rate=0.02,
        duplicate_window=500,
        seed=seed,
        start_time=past_start(events, users, before=before),
        **trouble,
    )


def scaling_records(
    keys: int,
    start: datetime,
    *,
    count: int | None = None,
    stride: int = 1,
    tag: str = "a",
    late_part: float = 0.0,
) -> Iterator[ProducedRecord]:
    """One page view per user ``user-<i>`` for ``i`` in ``0, stride, 2 * stride, ...`` (``count``
    of them, default ``keys``), with random (seeded by ``tag``) version-4 UUIDs as event ids.
    Event times are spread evenly over ``SCALING_WINDOW`` after ``start``, or over its part after
    ``late_part`` of it (0.7: the last 30 %).

    Example:
        >>> records = list(scaling_records(4, datetime(2026, 1, 1, tzinfo=UTC)))
        >>> [json.loads(r.value)["user_id"] for r in records][:2], len({r.value for r in records})
        (['user-0000000', 'user-0000001'], 4)
    """
    rng = random.Random(f"scaling-{tag}")
    window_ms = SCALING_WINDOW // timedelta(milliseconds=1)
    first_ms, spread_ms = int(window_ms * late_part), int(window_ms * (1 - late_part))
    for n in range(keys if count is None else count):
        i = (n * stride) % keys
        at = start + timedelta(milliseconds=first_ms + i * spread_ms // keys)
        user = f"user-{i:07d}"
        event = {
            "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "user_id": user,
            "event_type": "page_view",
            "page": f"/product/{i % 40}",
            "amount": None,
            "event_time": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        yield ProducedRecord(user.encode(), json.dumps(event, separators=(",", ":")).encode(), "ok")
