"""Reading a stream's recorded history: its batches in order, whether a batch ran the state, its
watermark delay and trends, on real Spark 4.2 progress JSON and batches built from it."""

from __future__ import annotations

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.health.history import (
    batches,
    progress_of,
    ran_state,
    rows_in,
    slope,
    watermark_delay,
)
from tests.unit.health.factories import T0, batch, counted, idle, iso, load, started


def batches_of(name: str) -> list[ProgressRecord]:
    return [ProgressRecord(T0, "progress", "orders", progress=p) for p in load(name)]


def test_batches_are_the_progress_records_oldest_first():
    records = [batch(2), started(), counted(1), idle(T0 + 15), batch(0), batch(1)]
    assert [(r.progress or {})["batchId"] for r in batches(records)] == [0, 1, 2]
    assert batches([started(), ProgressRecord(T0, "progress", "orders")]) == []


def test_rows_in_is_the_batchs_input_rows():
    assert rows_in(batch(0, rows_in=1234)) == 1234
    assert rows_in(batch(0, rows_in=0)) == 0


def test_the_progress_of_a_batch_is_the_dict_spark_reported():
    record = batch(4)
    assert progress_of(record) is record.progress


def test_the_state_ran_when_the_batch_had_input_or_touched_or_held_state():
    assert ran_state(batch(0))
    assert ran_state(batch(0, rows_in=0, state_rows=0, removed=30, updated=0))  # eviction
    assert ran_state(batch(0, rows_in=0, state_rows=0, removed=0, updated=4))
    assert ran_state(batch(0, rows_in=0, state_rows=5000, removed=0, updated=0))


def test_an_idle_batch_and_a_stateless_batch_did_not_run_the_state():
    assert not ran_state(batch(0, rows_in=0, state_rows=0, removed=0, updated=0))
    assert not ran_state(batch(0, state_rows=None))
    assert [ran_state(r) for r in batches_of("rate_dedup_window")] == [False] + [True] * 5


def test_the_watermark_delay_is_the_batch_start_minus_the_watermark():
    assert watermark_delay(batch(3, watermark_delay=120.0)) == 120.0
    assert watermark_delay(batch(3, watermark_delay=None)) is None


def test_a_watermark_ahead_of_the_batch_start_is_a_negative_delay():
    assert watermark_delay(batch(3, watermark_delay=-30.0)) == -30.0


def test_without_a_batch_start_the_delay_is_taken_from_when_the_record_was_written():
    record = ProgressRecord(
        T0, "progress", "orders", progress={"eventTime": {"watermark": iso(T0 - 45)}}
    )
    assert watermark_delay(record) == 45.0


def test_the_slope_is_the_least_squares_trend():
    assert slope([(0, 0), (1, 2), (2, 4)]) == 2.0
    assert slope([(0, 1), (1, 3), (2, 2)]) == 0.5
    assert slope([(0, 7), (10, 7)]) == 0.0


def test_no_trend_from_one_point_or_from_points_at_one_time():
    assert slope([]) is None
    assert slope([(0, 1)]) is None
    assert slope([(5, 1), (5, 9)]) is None
