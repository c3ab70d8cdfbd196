"""A batch's ``stream_ledger`` row: built in the JVM (no Python worker), with the exact counts
and instants, once per batch however often the batch is replayed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from platform_pipelines.lakehouse.checkpoints import BatchClock
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.tables import LEDGER, LEDGER_TABLE
from platform_pipelines.streams.sink import BatchCounts, Target, one_row

pytestmark = pytest.mark.spark

WATERMARK_MS = 1_795_000_000_123  # 2026-11-18, with milliseconds
WRITTEN_MS = 1_795_000_600_456


def ledger_rows(spark: SparkSession, lake: Lakehouse) -> list[tuple]:
    table = spark.read.format("delta").load(str(lake.table(LEDGER_TABLE)))
    return [tuple(r) for r in table.orderBy("batch_id").collect()]


def test_a_batchs_ledger_row_holds_its_counts_and_instants_once(
    spark: SparkSession, tmp_path: Path
):
    lake = Lakehouse(tmp_path / "lake")
    target = Target(lake, "orders", "q-1")
    batch = spark.range(3)
    clock = BatchClock(WRITTEN_MS, WATERMARK_MS, WATERMARK_MS)

    target.record(batch, 7, BatchCounts(10, 6, rows_late=3, rows_quarantined=1), clock, True)
    target.record(batch, 7, BatchCounts(10, 6, rows_late=3, rows_quarantined=1), clock, True)
    target.record(batch, 8, BatchCounts(2, 2), clock, watermarked=False)
    target.record(batch, 9, BatchCounts(0, 0), clock, True)  # nothing seen: no row

    # collect() gives naive datetimes in the Python process's zone: compared as instants (ms)
    as_ms = [(*r[:7], _ms(r[7]), _ms(r[8])) for r in ledger_rows(spark, lake)]
    assert as_ms == [
        ("orders", "q-1", 7, 10, 6, 3, 1, WATERMARK_MS, WRITTEN_MS),
        ("orders", "q-1", 8, 2, 2, 0, 0, None, WRITTEN_MS),
    ]


def test_one_row_matches_the_schema(spark: SparkSession):
    values = ("s", "q", 1, 2, 3, 4, 5, None, datetime.fromtimestamp(WRITTEN_MS / 1000, UTC))
    frame = one_row(spark, LEDGER, values)

    assert [(f.name, f.dataType) for f in frame.schema.fields] == [
        (f.name, f.dataType) for f in LEDGER.fields
    ]
    assert frame.rdd.getNumPartitions() == 1
    assert frame.count() == 1


def _ms(at: datetime | None) -> int | None:
    if at is None:
        return None
    return round(at.astimezone(UTC).timestamp() * 1000)
