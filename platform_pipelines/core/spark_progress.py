"""Spark's StreamingQueryProgress JSON, read in one place: the runtime's log and the health checks.

Field names are Spark 4.2's, as captured from real queries (RocksDB state store, Kafka source) in
``tests/unit/data/progress/``:

* ``timestamp`` (batch start) and ``eventTime.watermark`` are ISO-8601 UTC strings with
  milliseconds, e.g. ``"2026-11-22T02:48:35.370Z"``. Before the first watermark is computed Spark
  reports ``"1970-01-01T00:00:00.000Z"``; that is read as "no watermark yet". A query without
  a watermark has no ``eventTime.watermark`` at all. ``eventTime.min``, ``max`` and ``avg``
  describe the batch's rows (on the watermark's column) and are absent for a batch without rows.
* ``stateOperators[]``: ``numRowsTotal``, ``numRowsUpdated``, ``numRowsRemoved``,
  ``memoryUsedBytes``, ``numRowsDroppedByWatermark`` and ``customMetrics``. With RocksDB,
  ``customMetrics`` holds ``rocksdbSstFileSize`` (bytes of the SST files of the last uploaded
  snapshot: 0 until changelog checkpointing uploads a first snapshot). RocksDB's
  ``memoryUsedBytes`` is mostly its fixed-size memtables and caches, so bytes per key is taken
  from the SST size when there is one.
* ``numRowsDroppedByWatermark`` counts rows where the stateful operator sees them: after the
  partial aggregation of a ``groupBy``, so 40 late input rows of one key and window count as 1.
* ``sink.numOutputRows`` is -1 for sinks that do not count (foreachBatch, Delta).

Pure functions over the progress dict, so they are unit-tested without a JVM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from platform_pipelines.core.times import parse_iso
from platform_pipelines.core.units import count, size

Progress = Mapping[str, Any]
SST_METRIC = "rocksdbSstFileSize"


def batch_id(progress: Progress) -> int:
    """The micro-batch's id; -1 when the dict has none."""
    return int(progress.get("batchId", -1))


def query_run(progress: Progress) -> str:
    """The query run that ran the batch (``runId``): a new one each time the query starts."""
    return str(progress.get("runId") or "")


def input_rows(progress: Progress) -> int:
    """Rows the batch read (``numInputRows``)."""
    return int(progress.get("numInputRows") or 0)


def input_rate(progress: Progress) -> float:
    """Rows per second arriving at the source (``inputRowsPerSecond``); 0 when unknown."""
    return float(progress.get("inputRowsPerSecond") or 0.0)


def processed_rate(progress: Progress) -> float:
    """Rows per second the batch processed (``processedRowsPerSecond``); 0 when unknown."""
    return float(progress.get("processedRowsPerSecond") or 0.0)


def started_at(progress: Progress) -> float | None:
    """When the batch started (``timestamp``, epoch seconds); None when not reported."""
    return parse_iso(progress.get("timestamp"))


def watermark_seconds(progress: Progress) -> float | None:
    """The batch's event-time watermark (epoch seconds); None when there is none yet (Spark
    reports the epoch itself before the first watermark) or the query declares none."""
    value = parse_iso((progress.get("eventTime") or {}).get("watermark"))
    return value if value else None


def event_time(progress: Progress, stat: str) -> float | None:
    """``eventTime.min``, ``max`` or ``avg`` of the batch's rows (epoch seconds, of the column
    the watermark is on); None for a batch without rows or a query without a watermark. Unlike
    the watermark, the epoch itself is a value here: a row dated 1970-01-01 reports it."""
    return parse_iso((progress.get("eventTime") or {}).get(stat))


def watermark_owed(
    batches: Sequence[Progress], delay_seconds: float
) -> tuple[float | None, float] | None:
    """The watermark a stateful query's batches imply that its newest batch did not run with:
    ``(applied, implied)`` (epoch seconds; ``applied`` None before the first watermark), or
    None when nothing is owed.

    ``implied`` is the largest ``eventTime.max`` less ``delay_seconds`` over the batches (oldest
    first) of the newest batch's query run (``runId``). Spark applies it in the batch after the
    one that read those rows: a no-data batch, which closes sessions and expires state. It
    plans that batch only after a batch the same run executed (``constructNextBatch``): a
    restarted query runs nothing until new input arrives, and then runs with the watermark
    the last committed batch left (its commit log keeps it). So what an earlier run owed is
    not owed by the next one, and a query without stateful operators owes nothing.

    For queries with one watermark whose stateful operators ask for a batch when it moves
    (event-time timeouts, deduplication or aggregation with a watermark): with several
    watermarks Spark keeps the smallest, and an operator that never asks (a timeout-less
    ``flatMapGroupsWithState``) would look owed for good.
    """
    if not batches or not operators(batches[-1]):
        return None
    run = query_run(batches[-1])
    maxima = [m for b in batches if query_run(b) == run and (m := event_time(b, "max")) is not None]
    if not maxima:
        return None
    implied, applied = max(maxima) - delay_seconds, watermark_seconds(batches[-1])
    return None if applied is not None and applied >= implied else (applied, implied)


def operators(progress: Progress) -> list[Mapping[str, Any]]:
    """The batch's stateful operators; empty for a stateless query."""
    return list(progress.get("stateOperators") or [])


def op_sum(progress: Progress, key: str) -> int:
    """A state operator number summed over the query's stateful operators."""
    return sum(int(op.get(key) or 0) for op in operators(progress))


def sst_bytes(progress: Progress) -> int | None:
    """RocksDB's ``rocksdbSstFileSize`` summed over the operators; None when none reports it."""
    values = [
        int(op["customMetrics"][SST_METRIC])
        for op in operators(progress)
        if SST_METRIC in (op.get("customMetrics") or {})
    ]
    return sum(values) if values else None


def state_bytes(progress: Progress) -> int:
    """Bytes of state: RocksDB's SST size when it has uploaded one, else ``memoryUsedBytes``."""
    sst = sst_bytes(progress)
    return sst if sst else op_sum(progress, "memoryUsedBytes")


def _trigger_execution_ms(progress: Progress) -> Any:
    return (progress.get("durationMs") or {}).get("triggerExecution")


def batch_seconds(progress: Progress) -> float:
    """How long the batch ran: ``durationMs.triggerExecution``, else rows / processed rate."""
    ms = _trigger_execution_ms(progress)
    if ms is not None:
        return float(ms) / 1000.0
    rows = float(progress.get("numInputRows") or 0)
    rate = processed_rate(progress)
    return rows / rate if rows and rate else 0.0


def progress_metrics(progress: Progress) -> dict[str, float | int]:
    """The per-batch numbers worth plotting, from one StreamingQueryProgress (as a dict).

    State numbers are summed over the query's stateful operators; a stateless query reports 0.
    """
    sink = progress.get("sink") or {}
    metrics: dict[str, float | int] = {
        "batch_id": batch_id(progress),
        "rows_in": input_rows(progress),
        "input_rows_per_sec": round(input_rate(progress), 2),
        "processed_rows_per_sec": round(processed_rate(progress), 2),
        "batch_duration_ms": int(_trigger_execution_ms(progress) or 0),
        "state_rows": op_sum(progress, "numRowsTotal"),
        "state_rows_updated": op_sum(progress, "numRowsUpdated"),
        "state_rows_removed": op_sum(progress, "numRowsRemoved"),
        "state_memory_bytes": op_sum(progress, "memoryUsedBytes"),
        "rows_dropped_by_watermark": op_sum(progress, "numRowsDroppedByWatermark"),
    }
    rows_out = int(sink.get("numOutputRows", -1))
    if rows_out >= 0:  # -1: the sink does not count (foreachBatch, Delta)
        metrics["rows_out"] = rows_out
    return metrics


def describe(name: str, metrics: Mapping[str, float | int]) -> str:
    """One readable log line for a batch (``progress_metrics``), in human units."""
    return (
        f"{name}: batch {metrics['batch_id']} read {count(metrics['rows_in'])} rows "
        f"({count(round(metrics['processed_rows_per_sec']))} rows/s), "
        f"state {count(metrics['state_rows'])} rows / {size(metrics['state_memory_bytes'])}, "
        f"{count(metrics['rows_dropped_by_watermark'])} rows behind the watermark"
    )
