"""Reading Spark's StreamingQueryProgress JSON: its fields, on real Spark 4.2 progress, and the
numbers and log line made of them."""

from __future__ import annotations

from datetime import UTC, datetime

from platform_pipelines.core.spark_progress import (
    batch_id,
    batch_seconds,
    describe,
    input_rate,
    input_rows,
    op_sum,
    processed_rate,
    progress_metrics,
    sst_bytes,
    started_at,
    state_bytes,
    watermark_owed,
    watermark_seconds,
)
from tests.unit.health.factories import batch, load

PROGRESS = {
    "batchId": 7,
    "numInputRows": 1200,
    "inputRowsPerSecond": 400.123,
    "processedRowsPerSecond": 350.987,
    "durationMs": {"triggerExecution": 3421},
    "stateOperators": [
        {
            "numRowsTotal": 100,
            "numRowsUpdated": 20,
            "numRowsRemoved": 5,
            "memoryUsedBytes": 4096,
            "numRowsDroppedByWatermark": 3,
        },
        {
            "numRowsTotal": 50,
            "numRowsUpdated": 1,
            "numRowsRemoved": 0,
            "memoryUsedBytes": 1024,
            "numRowsDroppedByWatermark": 0,
        },
    ],
    "sink": {"description": "DeltaSink", "numOutputRows": -1},
}


def test_state_numbers_are_summed_over_operators_and_an_uncounted_sink_is_left_out():
    assert progress_metrics(PROGRESS) == {
        "batch_id": 7,
        "rows_in": 1200,
        "input_rows_per_sec": 400.12,
        "processed_rows_per_sec": 350.99,
        "batch_duration_ms": 3421,
        "state_rows": 150,
        "state_rows_updated": 21,
        "state_rows_removed": 5,
        "state_memory_bytes": 5120,
        "rows_dropped_by_watermark": 3,
    }


def test_a_stateless_query_with_a_counting_sink_reports_zero_state_and_its_output():
    metrics = progress_metrics({"batchId": 0, "numInputRows": 0, "sink": {"numOutputRows": 9}})
    assert (metrics["state_rows"], metrics["rows_out"], metrics["input_rows_per_sec"]) == (
        0,
        9,
        0.0,
    )


def test_the_log_line_says_batch_rows_rate_state_and_late_rows_in_human_units():
    assert describe("events", progress_metrics(PROGRESS)) == (
        "events: batch 7 read 1,200 rows (351 rows/s), state 150 rows / 5.0 KiB, "
        "3 rows behind the watermark"
    )


def test_the_batch_numbers_are_read_with_defaults_for_what_spark_left_out():
    assert (batch_id(PROGRESS), input_rows(PROGRESS)) == (7, 1200)
    assert (input_rate(PROGRESS), processed_rate(PROGRESS)) == (400.123, 350.987)
    assert (batch_id({}), input_rows({}), input_rate({}), processed_rate({})) == (-1, 0, 0.0, 0.0)
    assert input_rows({"numInputRows": None}) == 0


def test_the_batch_start_is_spark_timestamp_in_epoch_seconds():
    first = load("rate_dedup_window")[0]
    assert started_at(first) == datetime.fromisoformat(first["timestamp"]).timestamp()
    assert started_at({}) is None


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


def test_a_batch_lasts_its_trigger_execution_else_its_rows_over_its_processing_rate():
    assert batch_seconds(batch(0, rows_in=3000, processed_rate=200.0).progress or {}) == 15.0
    assert batch_seconds(load("kafka_running_count")[0]) == 17.334
    assert batch_seconds({"numInputRows": 1000, "processedRowsPerSecond": 250.0}) == 4.0
    assert batch_seconds({"numInputRows": 1000, "processedRowsPerSecond": 0.0}) == 0.0
    assert batch_seconds({}) == 0.0


def _timed(
    batch_id: int, watermark: str, newest: str | None, state: bool = True, run: str = "run-1"
) -> dict:
    """A batch's progress with its watermark and (for a batch with rows) its newest event."""
    times = {"watermark": watermark, **({"max": newest} if newest else {})}
    operators = [{"numRowsTotal": 3}] if state else []
    return {"batchId": batch_id, "runId": run, "eventTime": times, "stateOperators": operators}


def _at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_the_watermark_a_data_batch_implies_is_owed_until_a_later_batch_runs_with_it() -> None:
    first = _timed(0, "1970-01-01T00:00:00.000Z", "2026-11-06T09:40:00.000Z")
    assert watermark_owed([first], 600) == (None, _at("2026-11-06T09:30:00Z"))
    data = _timed(1, "2026-11-06T09:30:00.000Z", "2026-11-06T10:00:00.000Z")
    assert watermark_owed([first, data], 600) == (
        _at("2026-11-06T09:30:00Z"),
        _at("2026-11-06T09:50:00Z"),
    )
    no_data = _timed(2, "2026-11-06T09:50:00.000Z", None)
    assert watermark_owed([first, data, no_data], 600) is None


def test_a_batch_of_older_rows_owes_nothing_and_a_stateless_query_never_does() -> None:
    newest = _timed(4, "2026-11-06T09:50:00.000Z", "2026-11-06T10:00:00.000Z")
    older = _timed(5, "2026-11-06T09:50:00.000Z", "2026-11-06T09:55:00.000Z")
    assert watermark_owed([newest, older], 600) is None  # the max of all batches counts
    assert watermark_owed([newest, older], 300) == (
        _at("2026-11-06T09:50:00Z"),
        _at("2026-11-06T09:55:00Z"),
    )
    stateless = _timed(1, "2026-11-06T09:30:00.000Z", "2026-11-06T10:00:00.000Z", state=False)
    assert watermark_owed([stateless], 600) is None
    assert watermark_owed([], 600) is None


def test_a_restarted_query_owes_only_what_its_own_batches_imply() -> None:
    # The first run stopped after a data batch, before the no-data batch that would apply it.
    stopped = _timed(1, "2026-11-06T09:30:00.000Z", "2026-11-06T10:00:00.000Z", run="run-1")
    # The next run read older rows only: it runs with the committed watermark, owes nothing.
    older = _timed(2, "2026-11-06T09:50:00.000Z", "2026-11-06T09:55:00.000Z", run="run-2")
    assert watermark_owed([stopped, older], 600) is None
    # Newer rows in the next run: it owes what they imply, and pays it itself.
    newer = _timed(2, "2026-11-06T09:50:00.000Z", "2026-11-06T10:20:00.000Z", run="run-2")
    assert watermark_owed([stopped, newer], 600) == (
        _at("2026-11-06T09:50:00Z"),
        _at("2026-11-06T10:10:00Z"),
    )
