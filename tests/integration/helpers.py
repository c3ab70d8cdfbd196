"""Factories for the integration tests: run streams to the end of what Kafka holds, read tables."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext
from platform_pipelines.streams.registry import StreamRegistry


@dataclass
class Progress:
    """Every progress Spark reported during a run, by stream."""

    batches: dict[str, list[dict]] = field(default_factory=dict)

    def __call__(self, name: str, progress: dict) -> None:
        self.batches.setdefault(name, []).append(progress)

    def dropped_by_watermark(self, name: str) -> int:
        return sum(
            int(op.get("numRowsDroppedByWatermark") or 0)
            for p in self.batches.get(name, [])
            for op in p.get("stateOperators") or []
        )


def run_catch_up(
    spark: SparkSession,
    lake: Lakehouse,
    bootstrap: str,
    topic: str,
    streams: Iterable[str] | None = None,
    max_offsets: int | None = None,
    registry: StreamRegistry | None = None,
) -> Progress:
    """Run the built-in streams (or some) to the end of what Kafka holds."""
    registry = registry or builtin_streams(
        BuiltinSettings(clickstream_topic=topic, alerts_topic=f"{topic}-alerts")
    )
    names = list(streams or ["clickstream_raw", "events", "user_sessions"])
    progress = Progress()
    run_streams(
        StreamContext(spark, lake, bootstrap),
        [registry.get(n) for n in names],
        RunOptions(mode="catch_up", max_offsets_per_trigger=max_offsets),
        progress,
    )
    return progress


def table(spark: SparkSession, lake: Lakehouse, name: str) -> list[dict]:
    """Every row of a lakehouse table, as dicts (nested rows too)."""
    path = lake.table(name)
    # A table being created has its _delta_log folder a moment before its first commit.
    if not any((path / "_delta_log").glob("*.json")):
        return []
    return [r.asDict(recursive=True) for r in spark.read.format("delta").load(str(path)).collect()]


def ledger(spark: SparkSession, lake: Lakehouse, stream: str) -> dict[str, int]:
    """A stream's ``stream_ledger`` totals."""
    rows = [r for r in table(spark, lake, "stream_ledger") if r["stream"] == stream]
    keys = ("rows_in", "rows_out", "rows_late", "rows_quarantined")
    return {k: sum(r[k] for r in rows) for k in keys}
