"""The curated numbers plotted on a stream's asset page: a fixed order, and no false zeros."""

from __future__ import annotations

from platform_pipelines.health.metrics import METRICS, stream_metrics
from platform_pipelines.health.throughput import Lag
from tests.unit.health.factories import T0, batch, batches, counted, idle, real_records, started

ORDER = [
    "rows_per_second",
    "batch_duration_ms",
    "lag_records",
    "late_rows",
    "state_rows",
    "state_bytes",
    "watermark_delay_seconds",
    "checkpoint_bytes",
]


def idle_batch(i: int):
    """A batch without input whose operators did not run: it reports a state of 0 rows."""
    return batch(
        i, rows_in=0, state_rows=0, removed=0, updated=0, input_rate=0.0, processed_rate=0.0
    )


def test_there_are_eight_metrics_in_a_fixed_order_with_their_unit_in_their_name():
    assert list(METRICS) == ORDER


def test_every_measured_metric_comes_in_the_fixed_order():
    records = [started(), *batches(3, state_rows=4000), counted(2, late=3)]

    metrics = stream_metrics(records, Lag("table events", 42), checkpoint_bytes=9000)

    assert metrics == {
        "rows_per_second": 200.0,
        "batch_duration_ms": 5000,  # 1000 rows at 200 rows/s
        "lag_records": 42,
        "late_rows": 3,
        "state_rows": 4000,
        "state_bytes": 500_000,  # the SST size
        "watermark_delay_seconds": 120.0,
        "checkpoint_bytes": 9000,
    }
    assert list(metrics) == ORDER


def test_an_idle_batch_after_batches_with_state_keeps_the_earlier_numbers():
    records = [*batches(3, state_rows=4000, rows_in=[1000, 1000, 600]), idle_batch(3)]

    metrics = stream_metrics(records, None, None)

    assert metrics == {
        "rows_per_second": 200.0,  # of batch 2, the newest with input, not the idle batch's 0
        "batch_duration_ms": 3000,
        "late_rows": 0,
        "state_rows": 4000,  # not the idle batch's 0
        "state_bytes": 500_000,
        "watermark_delay_seconds": 120.0,  # an idle batch still reports its watermark
    }


def test_a_batch_without_input_that_evicted_state_reports_the_state_it_left():
    evicting = batch(3, rows_in=0, state_rows=1500, removed=2500, updated=0, sst=200_000)

    metrics = stream_metrics([*batches(3, state_rows=4000), evicting], None, None)

    assert (metrics["state_rows"], metrics["state_bytes"]) == (1500, 200_000)
    assert metrics["batch_duration_ms"] == 5000  # still the newest batch with input


def test_an_unknown_lag_is_left_out_rather_than_shown_as_zero():
    metrics = stream_metrics(batches(3), Lag("Kafka topic clicks", None, "broker down"), None)

    assert "lag_records" not in metrics


def test_a_measured_lag_of_zero_is_a_real_zero():
    assert stream_metrics(batches(3), Lag("Kafka topic clicks", 0), None)["lag_records"] == 0


def test_late_rows_are_the_writers_count_of_the_newest_batch_with_input():
    records = [*batches(3, dropped=[0, 0, 1]), counted(1, late=9), counted(2, late=40)]

    assert stream_metrics(records, None, None)["late_rows"] == 40  # not Spark's 1 aggregate


def test_the_newest_record_of_a_replayed_batch_is_its_count():
    records = [*batches(3), counted(2, late=7, ts=T0 + 15.0), counted(2, late=4)]

    assert stream_metrics(records, None, None)["late_rows"] == 4


def test_without_a_batch_record_late_rows_are_sparks_drops():
    assert stream_metrics(batches(2, dropped=[5, 3]), None, None)["late_rows"] == 3


def test_state_bytes_are_memory_before_the_first_snapshot():
    assert stream_metrics(batches(2, sst=0), None, None)["state_bytes"] == 2_108_456


def test_a_stateless_stream_without_a_watermark_has_no_state_or_watermark_metrics():
    metrics = stream_metrics(batches(2, state_rows=None, watermark_delay=None), None, 4096)

    assert metrics == {
        "rows_per_second": 200.0,
        "batch_duration_ms": 5000,
        "late_rows": 0,
        "checkpoint_bytes": 4096,
    }


def test_a_stream_whose_batches_had_no_input_has_no_rate():
    metrics = stream_metrics([idle_batch(0), idle_batch(1), idle(T0 + 15)], None, None)

    assert metrics == {"watermark_delay_seconds": 120.0}


def test_a_stream_without_batches_has_only_what_is_measured_outside_spark():
    assert stream_metrics([], None, None) == {}
    assert stream_metrics([started()], Lag("table events", 9), 123) == {
        "lag_records": 9,
        "checkpoint_bytes": 123,
    }


def test_a_watermark_ahead_of_the_clock_is_a_negative_delay():
    metrics = stream_metrics(batches(2, watermark_delay=-30.0), None, None)

    assert metrics["watermark_delay_seconds"] == -30.0


def test_the_metrics_of_a_real_windowed_count():
    # Batch 8 had no input but evicted 30 windows: the state it left is 1 row; batch 7 was the
    # newest with input, and Spark dropped 1 late partial aggregate in it.
    metrics = stream_metrics(real_records("kafka_window_count"), None, None)

    assert metrics == {
        "rows_per_second": 34.1,
        "batch_duration_ms": 1465,
        "late_rows": 1,
        "state_rows": 1,
        "state_bytes": 2_101_440,  # no SST snapshot yet: memory
        "watermark_delay_seconds": -33.5,  # its producer stamped events ahead of the driver
    }


def test_the_metrics_of_a_real_running_count():
    metrics = stream_metrics(
        real_records("kafka_running_count"), Lag("Kafka topic events", 555), checkpoint_bytes=48_213
    )

    assert metrics == {
        "rows_per_second": 197.7,
        "batch_duration_ms": 2524,
        "lag_records": 555,
        "late_rows": 0,
        "state_rows": 30,
        "state_bytes": 3241,  # customMetrics.rocksdbSstFileSize
        "watermark_delay_seconds": 629.2,
        "checkpoint_bytes": 48_213,
    }
