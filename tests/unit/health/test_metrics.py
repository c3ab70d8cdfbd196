"""The curated numbers plotted on a stream's asset page."""

from __future__ import annotations

from platform_pipelines.health.metrics import METRICS, stream_metrics
from platform_pipelines.health.throughput import Lag
from tests.unit.health.factories import batch, batches, counted


def test_the_metrics_come_in_a_fixed_order_with_units_in_their_names():
    records = [*batches(3, state_rows=4000), counted(2, late=3)]
    metrics = stream_metrics(records, Lag("table events", 42), checkpoint_bytes=9000)
    assert metrics == {
        "rows_per_second": 200.0,
        "batch_duration_ms": 5000,
        "lag_records": 42,
        "late_rows": 3,
        "state_rows": 4000,
        "state_bytes": 500_000,
        "watermark_delay_seconds": 120.0,
        "checkpoint_bytes": 9000,
    }
    assert list(metrics) == list(METRICS) and len(METRICS) <= 8


def test_idle_batches_and_unknown_lags_give_no_false_zeros():
    records = [
        *batches(3, state_rows=4000),
        batch(3, rows_in=0, state_rows=0, removed=0, updated=0),
    ]
    metrics = stream_metrics(records, Lag("Kafka topic clicks", None, "broker down"), None)
    assert metrics["state_rows"] == 4000  # not the idle batch's 0
    assert metrics["rows_per_second"] == 200.0  # from the newest batch with input
    assert "lag_records" not in metrics and "checkpoint_bytes" not in metrics


def test_a_stream_without_batches_has_only_what_is_measured():
    assert stream_metrics([], None, 123) == {"checkpoint_bytes": 123}
