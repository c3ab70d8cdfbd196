"""Reading Spark's StreamingQueryProgress: the numbers a person (and the Dagster UI) watches.

Pure functions over the progress dict, so they are unit-tested without a JVM.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from platform_pipelines.core.units import count, size

Progress = Mapping[str, Any]


def _state_sum(progress: Progress, key: str) -> int:
    return sum(int(op.get(key) or 0) for op in progress.get("stateOperators") or [])


def progress_metrics(progress: Progress) -> dict[str, float | int]:
    """The per-batch numbers worth plotting, from one StreamingQueryProgress (as a dict).

    State numbers are summed over the query's stateful operators; a stateless query reports 0.
    """
    sink = progress.get("sink") or {}
    metrics: dict[str, float | int] = {
        "batch_id": int(progress.get("batchId", -1)),
        "rows_in": int(progress.get("numInputRows") or 0),
        "input_rows_per_sec": round(float(progress.get("inputRowsPerSecond") or 0.0), 2),
        "processed_rows_per_sec": round(float(progress.get("processedRowsPerSecond") or 0.0), 2),
        "batch_duration_ms": int((progress.get("durationMs") or {}).get("triggerExecution") or 0),
        "state_rows": _state_sum(progress, "numRowsTotal"),
        "state_rows_updated": _state_sum(progress, "numRowsUpdated"),
        "state_rows_removed": _state_sum(progress, "numRowsRemoved"),
        "state_memory_bytes": _state_sum(progress, "memoryUsedBytes"),
        "rows_dropped_by_watermark": _state_sum(progress, "numRowsDroppedByWatermark"),
    }
    rows_out = int(sink.get("numOutputRows", -1))
    if rows_out >= 0:  # -1: the sink does not count (foreachBatch, Delta)
        metrics["rows_out"] = rows_out
    return metrics


def describe(name: str, metrics: Mapping[str, float | int]) -> str:
    """One readable log line for a batch, in human units."""
    return (
        f"{name}: batch {metrics['batch_id']} read {count(metrics['rows_in'])} rows "
        f"({count(round(metrics['processed_rows_per_sec']))} rows/s), "
        f"state {count(metrics['state_rows'])} rows / {size(metrics['state_memory_bytes'])}, "
        f"{count(metrics['rows_dropped_by_watermark'])} rows behind the watermark"
    )
