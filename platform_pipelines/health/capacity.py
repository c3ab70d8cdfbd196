"""Can a stream whose batches run back to back catch up? (part of ``falling_behind``)

When every batch is full (a trigger of 0, or batches that outlast their trigger), each batch
reads what arrived while the one before ran. A batch costs a fixed ``overhead`` plus ``cost``
seconds a row, so at ``rate`` rows a second in, the next batch runs ``overhead + rate * cost *
this one``: with ``utilisation = rate * cost`` below 1 the batches settle at ``overhead / (1 -
utilisation)`` (after a rise in input they grow, then stop growing); at 1 or more they grow
without end, and so does the delay of every row.

The window's rates cannot tell the two apart once batches are long: their ratio tends to the
utilisation, which for a stream a tenth too slow stays under ``behind_ratio`` (the reaction
bench's ``events`` at 10,000 events/s: "processing 8026.3 rows/s for 9525.6 rows/s", 1.19x,
passed while its delay doubled). So when the batches grow, the cost of a row is measured from
how batch lengths vary with their rows, and the utilisation judged.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import batch_seconds, input_rate, input_rows
from platform_pipelines.core.verdict import Verdict, warned
from platform_pipelines.health.history import progress_of
from platform_pipelines.health.policy import DEFAULT_POLICY, HealthPolicy

CHECK = "falling_behind"


@dataclass(frozen=True)
class Capacity:
    """What the back-to-back batches of a window say about the stream's capacity.

    Attributes:
        batches: full batches with input in the window (oldest first).
        first_seconds: the median length of the window's first third of them.
        last_seconds: the median length of its last third.
        seconds_per_row: what one more row adds to a batch (the median slope over every pair of
            batches with different row counts); None when no pair says (every batch equal).
        arrival: rows per second arriving in the last third (their rows over their input time).
        rising: the share of every two of them in which the later ran longer (1.0: each longer
            than all before it; about half for lengths that only vary).
    """

    batches: int
    first_seconds: float
    last_seconds: float
    seconds_per_row: float | None
    arrival: float
    rising: float

    @property
    def growth(self) -> float:
        """How many times longer the newest batches are than the window's first ones."""
        return self.last_seconds / self.first_seconds if self.first_seconds > 0 else 0.0

    @property
    def utilisation(self) -> float | None:
        """Input rate times the cost of a row: 1 or more cannot keep up; None when unknown."""
        if self.seconds_per_row is None or self.seconds_per_row <= 0:
            return None
        return self.arrival * self.seconds_per_row


def measure_capacity(window: Sequence[ProgressRecord]) -> Capacity | None:
    """The capacity of a window whose batches with input all ran back to back (each at least
    its trigger interval); None when one did not, or fewer than two had input."""
    full: list[tuple[int, float, float]] = []  # rows, batch seconds, input seconds
    for record in window:
        progress = progress_of(record)
        rows, rate, seconds = input_rows(progress), input_rate(progress), batch_seconds(progress)
        if rows <= 0 or rate <= 0 or seconds <= 0:
            continue
        if seconds < record.trigger_seconds:
            return None
        full.append((rows, seconds, rows / rate))
    if len(full) < 2:
        return None
    third = max(1, len(full) // 3)
    last = full[-third:]
    pairs = list(combinations([s for _, s, _ in full], 2))
    return Capacity(
        batches=len(full),
        first_seconds=statistics.median(s for _, s, _ in full[:third]),
        last_seconds=statistics.median(s for _, s, _ in last),
        seconds_per_row=median_slope([r for r, _, _ in full], [s for _, s, _ in full]),
        arrival=sum(r for r, _, _ in last) / sum(i for _, _, i in last),
        rising=sum(later > earlier for earlier, later in pairs) / len(pairs),
    )


def median_slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The Theil-Sen slope of ``ys`` over ``xs``: the median of the slopes between every two
    points with different ``xs`` (one odd batch, a slow commit say, does not move it)."""
    slopes = [
        (y2 - y1) / (x2 - x1)
        for (x1, y1), (x2, y2) in combinations(zip(xs, ys, strict=True), 2)
        if x1 != x2
    ]
    return statistics.median(slopes) if slopes else None


def judge_capacity(
    capacity: Capacity | None, policy: HealthPolicy = DEFAULT_POLICY
) -> Verdict | None:
    """A warning when at least ``min_trend_batches`` back-to-back batches grew steadily (by
    ``growth_warn_ratio`` or more, the later longer in ``min_rising_share`` of every two) and
    the cost of a row says the input outruns the stream (utilisation 1 or more); None
    otherwise: a stream that absorbs a rise in input in longer batches, which then settle, is
    not falling behind, nor is one whose batch lengths only vary."""
    if capacity is None or capacity.batches < policy.min_trend_batches:
        return None
    grows = capacity.growth >= policy.growth_warn_ratio
    utilisation = capacity.utilisation
    if not grows or capacity.rising < policy.min_rising_share:
        return None
    if utilisation is None or utilisation < 1:
        return None
    cost = capacity.seconds_per_row or 0.0
    return warned(
        CHECK,
        f"its batches run back to back and grew {capacity.growth:.1f}x over the last "
        f"{capacity.batches} (from {capacity.first_seconds:.1f} s to "
        f"{capacity.last_seconds:.1f} s); at {cost * 1000:.3g} ms a row it processes at most "
        f"{1 / cost:,.0f} rows/s, and {capacity.arrival:,.0f} rows/s arrive ({utilisation:.0%})",
        "Processing cannot keep up, and every batch reads more than the one before, so the "
        "delay grows until the input slows down: give the stream capacity (more cores or "
        "executors: PLATFORM_SPARK_MASTER) or cut its work per row. A longer trigger does "
        "not help.",
        {
            "batch_growth": round(capacity.growth, 2),
            "capacity_rows_per_second": round(1 / cost, 1),
            "utilisation": round(utilisation, 3),
        },
    )
