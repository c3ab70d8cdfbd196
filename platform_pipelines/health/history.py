"""A stream's recorded history as the judgements read it: its batches oldest first, the facts of
one batch that need its record (when it was written), and trends over several.

The progress dict inside a record is read by ``core.spark_progress``, the one reader of Spark's
StreamingQueryProgress JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import (
    Progress,
    input_rows,
    op_sum,
    operators,
    started_at,
    watermark_seconds,
)


def by_time(records: Iterable[ProgressRecord]) -> list[ProgressRecord]:
    """The records oldest first."""
    return sorted(records, key=lambda r: r.ts)


def batches(records: Iterable[ProgressRecord]) -> list[ProgressRecord]:
    """The ``progress`` records that carry a progress dict, oldest first."""
    return [r for r in by_time(records) if r.event == "progress" and r.progress is not None]


def progress_of(record: ProgressRecord) -> Progress:
    """The progress dict of a record that ``batches`` returned."""
    assert record.progress is not None
    return record.progress


def rows_in(record: ProgressRecord) -> int:
    """Rows the recorded batch read."""
    return input_rows(progress_of(record))


def ran_state(record: ProgressRecord) -> bool:
    """Whether the batch's stateful operators ran: an idle batch (no input, nothing updated or
    removed) reports a state of 0 rows that is not the state's size."""
    progress = progress_of(record)
    if not operators(progress):
        return False
    touched = op_sum(progress, "numRowsUpdated") + op_sum(progress, "numRowsRemoved")
    return rows_in(record) > 0 or touched > 0 or op_sum(progress, "numRowsTotal") > 0


def watermark_delay(record: ProgressRecord) -> float | None:
    """Batch ``timestamp`` minus ``eventTime.watermark`` in seconds; None without a watermark.
    Negative when the watermark is ahead of the clock; the record's own time stands in for a
    batch that reports no start."""
    progress = progress_of(record)
    mark = watermark_seconds(progress)
    if mark is None:
        return None
    at = started_at(progress)
    return (at if at is not None else record.ts) - mark


def slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x; None when x does not vary."""
    n = len(points)
    if n < 2:
        return None
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if var == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / var
