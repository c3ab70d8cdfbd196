"""falling_behind on back-to-back batches: growth alone is not falling behind, the cost of a row says."""

from __future__ import annotations

from dataclasses import replace

import pytest

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.capacity import (
    Capacity,
    judge_capacity,
    measure_capacity,
    median_slope,
)
from platform_pipelines.health.policy import HealthPolicy
from platform_pipelines.health.throughput import judge_falling_behind
from tests.unit.health.factories import RUNNING, batch

OVERHEAD = 4.0  # seconds a batch costs whatever its rows
COST = 1 / 460  # seconds a row costs: 460 rows/s at most


def back_to_back(
    rate: float | list[float], first: float, n: int = 10, wobble: list[float] | None = None
) -> list[ProgressRecord]:
    """``n`` batches on a trigger of 0 at ``rate`` rows/s in (a list: batch ``i`` at its
    ``i``-th), the one before the first ``first`` seconds long:
    each reads what arrived while the one before ran and runs ``OVERHEAD + rows * COST``
    (times ``wobble[i]``, the noise of a real machine)."""
    records, before = [], first
    for i in range(n):
        rows = round((rate[i] if isinstance(rate, list) else rate) * before)
        seconds = (OVERHEAD + rows * COST) * (wobble[i] if wobble else 1.0)
        record = batch(
            i,
            every=5.0,
            trigger=0.0,
            rows_in=rows,
            input_rate=rows / before,
            processed_rate=rows / seconds,
        )
        records.append(replace(record, phase="continuous"))
        before = seconds
    return records


def test_a_stream_a_tenth_too_slow_in_long_batches_warns_where_its_rates_do_not():
    # 506 rows/s for 460: each batch 4 s plus 1.1x the one before, from 40 s on.
    records = back_to_back(rate=506.0, first=40.0)

    verdict = judge_falling_behind(records, None, run=RUNNING)

    assert verdict.evidence["input_rows_per_second"] / verdict.evidence[
        "processed_rows_per_second"
    ] == pytest.approx(1.146, abs=0.001)  # under behind_ratio: the rates alone pass it
    assert (verdict.status, verdict.summary) == (
        Status.WARN,
        "its batches run back to back and grew 2.6x over the last 10 (from 56.8 s to 148.6 s); "
        "at 2.17 ms a row it processes at most 460 rows/s, and 506 rows/s arrive (110%)",
    )
    assert verdict.remedy.startswith("Processing cannot keep up, and every batch reads more")
    assert "PLATFORM_SPARK_MASTER" in verdict.remedy
    assert (
        verdict.evidence["batch_growth"],
        verdict.evidence["capacity_rows_per_second"],
        verdict.evidence["utilisation"],
    ) == (2.62, 460.0, 1.1)


def test_batches_that_grow_after_a_rise_in_input_and_settle_pass():
    # A trickle's 4 s batches, then 230 rows/s (half of 460): they double, then stay.
    records = back_to_back(rate=[5.0] * 3 + [230.0] * 7, first=4.0)
    capacity = measure_capacity(records)

    assert capacity is not None and capacity.growth == pytest.approx(1.96, abs=0.01)
    assert capacity.utilisation == pytest.approx(0.5, abs=0.01)
    assert judge_capacity(capacity) is None
    assert judge_falling_behind(records, None, run=RUNNING).status is Status.PASS


def test_a_stream_near_its_capacity_on_a_noisy_machine_passes():
    # 90% of capacity: long steady batches (40 s), each up to 30% off (a GC, a slow commit).
    wobble = [1.0, 1.3, 0.8, 1.1, 0.9, 1.3, 0.7, 1.2, 1.0, 1.3]
    records = back_to_back(rate=414.0, first=40.0, wobble=wobble)

    assert judge_falling_behind(records, None, run=RUNNING).status is Status.PASS


@pytest.mark.parametrize(
    ("rising", "seconds_per_row", "status"),
    [
        (0.8, COST, Status.WARN),
        (0.6, COST, None),  # as long at the end, but lengths that vary more than they rise
        (1.0, 1 / 520, None),  # rising steadily, and settling: 506 rows/s of 520
        (1.0, None, None),  # no two batches with different rows: the cost is not known
    ],
)
def test_a_warning_needs_a_steady_rise_and_a_cost_the_input_outruns(
    rising: float, seconds_per_row: float | None, status: Status | None
):
    capacity = Capacity(
        batches=6,
        first_seconds=40.0,
        last_seconds=50.0,
        seconds_per_row=seconds_per_row,
        arrival=506.0,
        rising=rising,
    )

    verdict = judge_capacity(capacity)

    assert (verdict.status if verdict else None) is status
    assert capacity.growth == 1.25


@pytest.mark.parametrize("n", [2, 4])
def test_growth_over_fewer_than_the_trend_batches_is_not_judged(n: int):
    records = back_to_back(rate=506.0, first=40.0, n=n)

    assert judge_capacity(measure_capacity(records)) is None
    assert judge_capacity(measure_capacity(back_to_back(506.0, 40.0, n=5))) is not None


def test_a_window_with_a_batch_shorter_than_its_trigger_is_not_back_to_back():
    records = back_to_back(rate=506.0, first=40.0)
    records[3] = replace(records[3], trigger_seconds=1000.0)

    assert measure_capacity(records) is None


def test_the_thresholds_come_from_the_policy():
    records = back_to_back(rate=506.0, first=40.0)
    capacity = measure_capacity(records)

    assert judge_capacity(capacity, HealthPolicy(growth_warn_ratio=3.0)) is None
    assert judge_capacity(capacity, HealthPolicy(min_trend_batches=11)) is None


def test_a_catch_up_is_not_judged_on_its_growth():
    records = [replace(r, phase="catch_up") for r in back_to_back(rate=506.0, first=40.0)]

    verdict = judge_falling_behind(records, None, run=RUNNING)

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "catching up at 441.6 rows/s (a catch-up's rates are not judged)",
    )


def test_the_median_slope_ignores_one_odd_point():
    xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    ys = [2.0, 4.0, 6.0, 30.0, 10.0, 12.0]  # y = 2x, but one slow batch

    assert median_slope(xs, ys) == 2.0
    assert median_slope([3.0, 3.0], [1.0, 2.0]) is None  # no two points with different rows
