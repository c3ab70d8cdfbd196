"""How long a stream keeps a key, as its declaration says: state younger than that is no leak.

A dedup stream keeps an id until the watermark passes its event time plus the watermark delay; a
session stream keeps a user until the watermark passes the last event plus the session gap; a
processing-time timeout keeps a key until the clock passes its timer. Until the stream's clock has
moved on that far, growth with nothing removed is what the stream is declared to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import event_time, watermark_seconds
from platform_pipelines.core.units import duration
from platform_pipelines.health.history import progress_of
from platform_pipelines.streams.declare import StatefulStream, Stream


@dataclass(frozen=True)
class KeyHorizon:
    """How far a stream's clock moves past a key's newest event before the key must be gone.

    Attributes:
        clock: ``event_time`` (keys go as the watermark passes them) or ``processing_time`` (a
            processing-time timeout: as the wall clock does).
        delay: the watermark delay in seconds (0 on the processing-time clock): the watermark
            trails the newest event time by this much.
        lifetime: how long, in seconds, a key's state outlives its newest event on that clock.
    """

    clock: Literal["event_time", "processing_time"]
    delay: float
    lifetime: float

    @property
    def seconds(self) -> float:
        """Event time (or wall time) between a key's newest event and its certain removal."""
        return self.delay + self.lifetime

    def describe(self) -> str:
        """``watermark 10 min + key lifetime 30 min`` or ``processing-time timeout 5 min``."""
        if self.clock == "processing_time":
            return f"processing-time timeout {duration(self.lifetime)}"
        return f"watermark {duration(self.delay)} + key lifetime {duration(self.lifetime)}"


def key_horizon(stream: Stream) -> KeyHorizon | None:
    """The horizon ``stream`` declares: its watermark delay plus its ``key_lifetime`` (which
    defaults to the delay, as ``dropDuplicatesWithinWatermark`` keeps an id), or a
    processing-time timeout's ``key_lifetime``. None when it declares neither: nothing bounds
    its keys but their removal."""
    if not isinstance(stream, StatefulStream):
        return None
    lifetime = stream.key_lifetime
    if stream.timeout == "processing_time":
        if lifetime is None:
            return None
        return KeyHorizon("processing_time", 0.0, lifetime.total_seconds())
    if stream.watermark is None:
        return None
    delay = stream.watermark.total_seconds()
    return KeyHorizon("event_time", delay, (lifetime or stream.watermark).total_seconds())


def clock_advance(run: Sequence[ProgressRecord], horizon: KeyHorizon) -> float | None:
    """How far the stream's clock has moved past the events of the first batch of ``run``
    (oldest first) by its newest batch; None when the batches do not tell.

    On event time: the newest batch's watermark plus the delay (the newest event time the
    stream had seen) minus the newest event time of the first batch with rows. Each key that
    batch added is at least that old, so once it is above ``horizon.seconds`` every one of them
    has outlived what the stream declares. On processing time: the wall clock between the two.
    """
    if not run:
        return None
    if horizon.clock == "processing_time":
        return run[-1].ts - run[0].ts
    newest = watermark_seconds(progress_of(run[-1]))
    first = next((t for r in run if (t := event_time(progress_of(r), "max")) is not None), None)
    if newest is None or first is None:
        return None
    return max(0.0, newest + horizon.delay - first)
