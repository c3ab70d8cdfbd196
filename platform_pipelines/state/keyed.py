"""The contract between a stream's per-key logic (plain Python) and the Spark adapter that runs it.

A stream's logic sees one key at a time: its state (a JSON-able dict, or None), the key's new events
in this micro-batch sorted by event time, and a clock (processing time and watermark, epoch ms). It
returns a ``Step``: the new state (None removes the key from the state store), the rows to emit, and
when to be called again through ``on_timeout`` (an epoch-ms timestamp in event time or processing
time, as the stream declares; None for no timer). Nothing here imports Spark, so the logic is unit
tested by calling it with events and a clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from platform_pipelines.core.times import from_ms, to_ms

__all__ = [
    "Clock",
    "Event",
    "Key",
    "KeyedLogic",
    "SeedableLogic",
    "State",
    "Step",
    "from_ms",
    "to_ms",
]

State = dict[str, Any]
Event = Mapping[str, Any]
# A stream keyed by one column gives its value as text; a composite key (``key=("user_id",
# "activity")``) gives the tuple of the columns' values, in the declared order.
Key = Any


@dataclass(frozen=True)
class Clock:
    """What time it is for the logic: wall clock of the batch and the event-time watermark."""

    processing_time_ms: int
    watermark_ms: int | None = None


@dataclass(frozen=True)
class Step:
    """The result of one call: new state, rows to emit, and the next timer (if any)."""

    state: State | None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    timeout_at_ms: int | None = None


class KeyedLogic(Protocol):
    """Per-key stateful logic in plain Python (flatMapGroupsWithState semantics)."""

    def on_events(
        self, key: Key, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        """New events for ``key`` (sorted by event time); ``state`` is None for a new key."""
        ...

    def on_timeout(self, key: Key, state: State, clock: Clock) -> Step:
        """The timer set by the last Step fired (the watermark or the wall clock passed it)."""
        ...


class SeedableLogic(KeyedLogic, Protocol):
    """Logic whose state can be seeded when a stream starts on a new checkpoint."""

    def initial_state(self, key: Key, row: Mapping[str, Any]) -> State | None:
        """The state of ``key`` from a row of the stream's initial-state table."""
        ...
