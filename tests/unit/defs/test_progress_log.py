"""The run log's progress line reports every batch since the previous line, not a sample."""

from __future__ import annotations

from platform_pipelines.defs.jobs import ProgressLog


def batch(batch_id: int, rows: int, state_rows: int = 0, seconds: float = 1.0) -> dict:
    return {
        "batchId": batch_id,
        "numInputRows": rows,
        "durationMs": {"addBatch": 1, "triggerExecution": int(seconds * 1000)},
        "stateOperators": [{"numRowsTotal": state_rows, "memoryUsedBytes": 1024}],
    }


def test_the_first_batch_is_logged_at_once_and_the_next_ones_together_at_the_interval() -> None:
    lines: list[str] = []
    log = ProgressLog(lines.append, interval_seconds=3600)

    log.on_progress("clickstream_raw", batch(0, 221, seconds=2.0))
    log.on_progress("clickstream_raw", batch(1, 40))
    log.on_progress("clickstream_raw", batch(2, 0))  # a batch that read nothing still ran
    assert lines == [
        "clickstream_raw: batch 0 read 221 rows (110 rows/s), state 0 rows / 1.0 KiB, "
        "0 rows behind the watermark"
    ]
    log.flush()

    assert lines[1:] == [
        "clickstream_raw: batches 1-2 read 40 rows (20 rows/s), state 0 rows / 1.0 KiB, "
        "0 rows behind the watermark"
    ]
    assert (log.rows("clickstream_raw"), log.batches["clickstream_raw"]) == (261, 3)


def test_a_flush_with_nothing_new_writes_nothing_and_streams_have_their_own_lines() -> None:
    lines: list[str] = []
    log = ProgressLog(lines.append, interval_seconds=0)

    log.on_progress("events", batch(4, 12, state_rows=9))
    log.on_progress("user_sessions", batch(7, 3, state_rows=2))
    log.flush()

    assert lines == [
        "events: batch 4 read 12 rows (12 rows/s), state 9 rows / 1.0 KiB, "
        "0 rows behind the watermark",
        "user_sessions: batch 7 read 3 rows (3 rows/s), state 2 rows / 1.0 KiB, "
        "0 rows behind the watermark",
    ]
