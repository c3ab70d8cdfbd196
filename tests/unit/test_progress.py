"""The numbers read off a StreamingQueryProgress (as Spark reports it) for logs and plots."""

from __future__ import annotations

from platform_pipelines.kafka.heartbeats import HeartbeatConfig, generate_heartbeats
from platform_pipelines.runtime.progress import describe, progress_metrics

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


def test_silent_services_stop_sending_halfway():
    records = list(generate_heartbeats(HeartbeatConfig(services=3, beats=4, silent=1)))
    keys = [r.key.decode() for r in records]
    assert keys.count("svc-00") == 4 and keys.count("svc-01") == 4 and keys.count("svc-02") == 2
