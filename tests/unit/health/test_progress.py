"""Reading recorded progress: watermarks, state numbers, batch times and trends, on real Spark 4.2
progress JSON and batches built from it."""

from __future__ import annotations

from datetime import UTC, datetime

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.health.progress import (
    batch_seconds,
    batches,
    op_sum,
    ran_state,
    rows_in,
    slope,
    sst_bytes,
    state_bytes,
    watermark_delay,
    watermark_seconds,
)
from tests.unit.health.factories import T0, batch, counted, idle, iso, load, started


def batches_of(name: str) -> list[ProgressRecord]:
    return [ProgressRecord(T0, "progress", "orders", progress=p) for p in load(name)]


def test_the_watermark_is_read_from_spark_time_and_the_epoch_means_none_yet():
    rate = load("rate_dedup_window")
    assert rate[0]["eventTime"]["watermark"] == "1970-01-01T00:00:00.000Z"
    assert watermark_seconds(rate[0]) is None  # no watermark yet, not 56 years behind
    assert watermark_seconds(rate[2]) == datetime(2026, 11, 22, 2, 57, 40, 538_000, UTC).timestamp()


def test_a_query_without_a_declared_watermark_has_none():
    assert watermark_seconds(batch(0, watermark_delay=None).progress or {}) is None
    assert watermark_seconds({}) is None


def test_state_operator_numbers_are_summed_over_the_operators():
    two_operators = load("rate_dedup_window")[1]  # dropDuplicatesWithinWatermark, then a count
    assert op_sum(two_operators, "numRowsTotal") == 1 + 50
    assert op_sum(two_operators, "memoryUsedBytes") == 4272 + 2_101_440
    assert op_sum(batch(0, state_rows=None).progress or {}, "numRowsTotal") == 0


def test_the_sst_size_is_rocksdbs_custom_metric_or_none_when_no_operator_reports_it():
    assert sst_bytes(batch(0, sst=123_456).progress or {}) == 123_456
    assert sst_bytes(batch(0, sst=None).progress or {}) is None
    assert sst_bytes(batch(0, state_rows=None).progress or {}) is None
    assert sst_bytes(load("kafka_window_count")[1]) == 0  # no snapshot uploaded yet


def test_state_bytes_are_the_sst_size_else_memory_before_the_first_snapshot():
    assert state_bytes(batch(0).progress or {}) == 500_000
    assert state_bytes(batch(0, sst=None).progress or {}) == 2_108_456
    assert state_bytes(batch(0, sst=0).progress or {}) == 2_108_456
    assert state_bytes(load("kafka_window_count")[1]) == 2_101_440  # SST 0: memory


def test_batches_are_the_progress_records_oldest_first():
    records = [batch(2), started(), counted(1), idle(T0 + 15), batch(0), batch(1)]
    assert [(r.progress or {})["batchId"] for r in batches(records)] == [0, 1, 2]
    assert batches([started(), ProgressRecord(T0, "progress", "orders")]) == []


def test_rows_in_is_the_batchs_input_rows():
    assert rows_in(batch(0, rows_in=1234)) == 1234
    assert rows_in(batch(0, rows_in=0)) == 0


def test_the_state_ran_when_the_batch_had_input_or_touched_or_held_state():
    assert ran_state(batch(0))
    assert ran_state(batch(0, rows_in=0, state_rows=0, removed=30, updated=0))  # eviction
    assert ran_state(batch(0, rows_in=0, state_rows=0, removed=0, updated=4))
    assert ran_state(batch(0, rows_in=0, state_rows=5000, removed=0, updated=0))


def test_an_idle_batch_and_a_stateless_batch_did_not_run_the_state():
    assert not ran_state(batch(0, rows_in=0, state_rows=0, removed=0, updated=0))
    assert not ran_state(batch(0, state_rows=None))
    assert [ran_state(r) for r in batches_of("rate_dedup_window")] == [False] + [True] * 5


def test_a_batch_lasts_its_trigger_execution_else_its_rows_over_its_processing_rate():
    assert batch_seconds(batch(0, rows_in=3000, processed_rate=200.0).progress or {}) == 15.0
    assert batch_seconds(load("kafka_running_count")[0]) == 17.334
    assert batch_seconds({"numInputRows": 1000, "processedRowsPerSecond": 250.0}) == 4.0
    assert batch_seconds({"numInputRows": 1000, "processedRowsPerSecond": 0.0}) == 0.0
    assert batch_seconds({}) == 0.0


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
