"""Progress records for the health tests, built from real Spark 4.2 progress JSON.

``tests/unit/data/progress/*.json`` are ``query.recentProgress`` of real local queries (RocksDB
state store, changelog checkpointing): a Kafka source feeding a transformWithState running count,
a Kafka source feeding a windowed count with late rows, and a rate source feeding
``dropDuplicatesWithinWatermark`` and a windowed count. ``batch`` copies the transformWithState
batch and sets the numbers a test is about.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.times import parse_iso
from platform_pipelines.health.runs import RunState

DATA = Path(__file__).parent.parent / "data" / "progress"
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
RUNNING = RunState("running", "run 1a2b")


def load(name: str) -> list[dict[str, Any]]:
    progress: list[dict[str, Any]] = json.loads((DATA / f"{name}.json").read_text())
    return progress


TEMPLATE = load("kafka_running_count")[-1]  # Kafka source, transformWithState, RocksDB, watermark


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def batch(
    i: int,
    *,
    every: float = 10.0,
    trigger: float = 10.0,
    rows_in: int = 1000,
    input_rate: float = 100.0,
    processed_rate: float = 200.0,
    state_rows: int | None = 5000,
    removed: int = 100,
    updated: int = 10,
    memory: int = 2_108_456,
    sst: int | None = 500_000,
    dropped: int = 0,
    watermark_delay: float | None = 120.0,
    oldest_event: float | None = None,
    query_run: str | None = None,
) -> ProgressRecord:
    """Batch ``i`` recorded at ``T0 + i * every``; ``state_rows=None`` is a stateless query.

    Its rows' event times (``eventTime.min``/``max``, only with a watermark) end 1 s before the
    batch started and span 5 s, or reach back to ``oldest_event`` (epoch seconds); ``query_run``
    sets Spark's ``runId`` (the template's otherwise)."""
    p = copy.deepcopy(TEMPLATE)
    ts = T0 + i * every
    duration_ms = round(rows_in / processed_rate * 1000) if processed_rate else 0
    p.update(
        batchId=i,
        timestamp=iso(ts - duration_ms / 1000),
        batchDuration=duration_ms,
        numInputRows=rows_in,
        inputRowsPerSecond=input_rate,
        processedRowsPerSecond=processed_rate,
    )
    p["durationMs"]["triggerExecution"] = duration_ms
    newest_event = ts - duration_ms / 1000 - 1.0
    oldest = newest_event - 5.0 if oldest_event is None else oldest_event
    p["eventTime"].update(min=iso(oldest), max=iso(newest_event), avg=iso(newest_event - 2.5))
    if query_run is not None:
        p["runId"] = query_run
    if watermark_delay is None:  # Spark reports no event times for a query without a watermark
        p["eventTime"] = {}
    else:
        p["eventTime"]["watermark"] = iso(ts - duration_ms / 1000 - watermark_delay)
    if state_rows is None:
        p["stateOperators"] = []
    else:
        op = p["stateOperators"][0]
        op.update(
            numRowsTotal=state_rows,
            numRowsRemoved=removed,
            numRowsUpdated=updated,
            memoryUsedBytes=memory,
            numRowsDroppedByWatermark=dropped,
        )
        if sst is None:
            del op["customMetrics"]["rocksdbSstFileSize"]
        else:
            op["customMetrics"]["rocksdbSstFileSize"] = sst
    return ProgressRecord(ts, "progress", "orders", "1a2b", p, trigger_seconds=trigger)


def batches(n: int, **numbers: Any) -> list[ProgressRecord]:
    """``n`` batches; a list value gives batch ``i`` its ``i``-th item."""
    return [
        batch(i, **{k: v[i] if isinstance(v, list) else v for k, v in numbers.items()})
        for i in range(n)
    ]


def counted(
    batch_id: int,
    *,
    rows_in: int = 1000,
    late: int = 0,
    out: int | None = None,
    ts: float | None = None,
) -> ProgressRecord:
    """What the stream's writer recorded for ``batch_id`` (a ``batch`` record)."""
    counts = {
        "rows_in": rows_in,
        "rows_out": rows_in - late if out is None else out,
        "rows_late": late,
        "rows_quarantined": 0,
    }
    at = T0 + batch_id * 10 - 0.1 if ts is None else ts
    return ProgressRecord(at, "batch", "orders", "1a2b", batch_id=batch_id, counts=counts)


def started(ts: float = T0 - 5, trigger: float = 10.0) -> ProgressRecord:
    return ProgressRecord(ts, "started", "orders", "1a2b", trigger_seconds=trigger)


def real_records(name: str, trigger: float = 1.0) -> list[ProgressRecord]:
    """A captured sample as the running op records it: ``ts`` when the batch ended."""
    return [
        ProgressRecord(
            float(parse_iso(p["timestamp"]) or 0) + p["durationMs"]["triggerExecution"] / 1000,
            "progress",
            p["name"],
            "1a2b",
            p,
            trigger_seconds=trigger,
        )
        for p in load(name)
    ]


def idle(ts: float, trigger: float = 10.0) -> ProgressRecord:
    """A trigger that found no new data (Spark's ``QueryIdleEvent``)."""
    return ProgressRecord(ts, "idle", "orders", "1a2b", trigger_seconds=trigger)


def terminated(
    ts: float, error_class: str | None = None, error: str | None = None, trigger: float = 10.0
) -> ProgressRecord:
    """The query ended: cleanly, or with ``error_class``."""
    return ProgressRecord(
        ts,
        "terminated",
        "orders",
        "1a2b",
        trigger_seconds=trigger,
        error_class=error_class,
        error=error,
    )
