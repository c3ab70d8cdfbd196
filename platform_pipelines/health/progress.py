"""Reading the progress a running stream recorded: pure helpers the judgements share.

Field names are Spark 4.2's StreamingQueryProgress JSON, as captured from real queries (RocksDB
state store, Kafka source) in ``tests/unit/data/progress/``:

* ``timestamp`` (batch start) and ``eventTime.watermark`` are ISO-8601 UTC strings with
  milliseconds, e.g. ``"2026-11-22T02:48:35.370Z"``. Before the first watermark is computed Spark
  reports ``"1970-01-01T00:00:00.000Z"``; that is read as "no watermark yet". A query without
  a watermark has no ``eventTime.watermark`` at all.
* ``stateOperators[]``: ``numRowsTotal``, ``numRowsUpdated``, ``numRowsRemoved``,
  ``memoryUsedBytes``, ``numRowsDroppedByWatermark`` and ``customMetrics``. With RocksDB,
  ``customMetrics`` holds ``rocksdbSstFileSize`` (bytes of the SST files of the last uploaded
  snapshot: 0 until changelog checkpointing uploads a first snapshot). RocksDB's
  ``memoryUsedBytes`` is mostly its fixed-size memtables and caches, so bytes per key is taken
  from the SST size when there is one.
* ``numRowsDroppedByWatermark`` counts rows where the stateful operator sees them: after the
  partial aggregation of a ``groupBy``, so 40 late input rows of one key and window count as 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.times import parse_iso

Progress = Mapping[str, Any]
SST_METRIC = "rocksdbSstFileSize"


def watermark_seconds(progress: Progress) -> float | None:
    """The batch's event-time watermark (epoch seconds); None when there is none yet (Spark
    reports the epoch itself before the first watermark) or the query declares none."""
    value = parse_iso((progress.get("eventTime") or {}).get("watermark"))
    return value if value else None


def ops(progress: Progress) -> list[Mapping[str, Any]]:
    return list(progress.get("stateOperators") or [])


def op_sum(progress: Progress, key: str) -> int:
    """A state operator number summed over the query's stateful operators."""
    return sum(int(op.get(key) or 0) for op in ops(progress))


def sst_bytes(progress: Progress) -> int | None:
    """RocksDB's ``rocksdbSstFileSize`` summed over the operators; None when none reports it."""
    values = [
        int(op["customMetrics"][SST_METRIC])
        for op in ops(progress)
        if SST_METRIC in (op.get("customMetrics") or {})
    ]
    return sum(values) if values else None


def state_bytes(progress: Progress) -> int:
    """Bytes of state: RocksDB's SST size when it has uploaded one, else ``memoryUsedBytes``."""
    sst = sst_bytes(progress)
    return sst if sst else op_sum(progress, "memoryUsedBytes")


def batches(records: Iterable[ProgressRecord]) -> list[ProgressRecord]:
    """The ``progress`` records that carry a progress dict, oldest first."""
    return [r for r in by_time(records) if r.event == "progress" and r.progress is not None]


def by_time(records: Iterable[ProgressRecord]) -> list[ProgressRecord]:
    return sorted(records, key=lambda r: r.ts)


def p(record: ProgressRecord) -> Progress:
    assert record.progress is not None
    return record.progress


def rows_in(record: ProgressRecord) -> int:
    return int(p(record).get("numInputRows") or 0)


def ran_state(record: ProgressRecord) -> bool:
    """Whether the batch's stateful operators ran: an idle batch (no input, nothing updated or
    removed) reports a state of 0 rows that is not the state's size."""
    progress = p(record)
    if not ops(progress):
        return False
    touched = op_sum(progress, "numRowsUpdated") + op_sum(progress, "numRowsRemoved")
    return rows_in(record) > 0 or touched > 0 or op_sum(progress, "numRowsTotal") > 0


def batch_seconds(progress: Progress) -> float:
    """How long the batch ran: ``durationMs.triggerExecution``, else rows / processed rate."""
    ms = (progress.get("durationMs") or {}).get("triggerExecution")
    if ms is not None:
        return float(ms) / 1000.0
    rows = float(progress.get("numInputRows") or 0)
    rate = float(progress.get("processedRowsPerSecond") or 0.0)
    return rows / rate if rows and rate else 0.0


def watermark_delay(record: ProgressRecord) -> float | None:
    """Batch ``timestamp`` minus ``eventTime.watermark`` in seconds; None without a watermark.
    Negative when the watermark is ahead of the clock."""
    progress = p(record)
    mark = watermark_seconds(progress)
    if mark is None:
        return None
    at = parse_iso(progress.get("timestamp"))
    return (at if at is not None else record.ts) - mark


def slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x; None when x does not vary."""
    n = len(points)
    if n < 2:
        return None
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if var == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / var
