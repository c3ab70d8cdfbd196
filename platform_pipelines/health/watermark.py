"""Is a stream's watermark sane? A pure reading of its batches' clocks.

A watermark ahead of the processing clock makes every on-time row late. The platform's own
watermark cannot get there (``streams.watermark`` caps it at the batch's clock), but a checkpoint
written before that cap existed, or by another tool, can hold one; ``platform stream
reset-watermark`` uses ``first_poisoned_batch`` to know from where to replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class BatchTimes:
    """The clock of one batch: its id, its processing time, and the watermark its rows were
    judged late by (the previous batch's watermark), epoch milliseconds."""

    batch_id: int
    timestamp_ms: int
    late_until_ms: int


def first_poisoned_batch(batches: Sequence[BatchTimes]) -> int | None:
    """The first batch of the newest run of batches whose rows were judged by a watermark ahead
    of their own clock; None when the newest batch was judged sanely.

    Example:
        >>> first_poisoned_batch([BatchTimes(4, 1_000, 0), BatchTimes(5, 2_000, 9_000),
        ...                       BatchTimes(6, 3_000, 9_000)])
        5
    """
    first = None
    for batch in sorted(batches, key=lambda b: b.batch_id, reverse=True):
        if batch.late_until_ms <= batch.timestamp_ms:
            break
        first = batch.batch_id
    return first
