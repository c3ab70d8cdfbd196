"""Counting a stream's rows outside its ledger, for the ``no_silent_loss`` check (needs Spark).

The judgement itself is pure (``health.loss``); this module gathers its facts: the ledger's
totals, what the stream's current checkpoint consumed (Kafka offsets, or upstream Delta versions),
and the rows of its tables. A stream that commits a batch while this reads would make the counts
disagree, so the ledger is read before and after the tables, and the reading is repeated until
both agree.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from platform_pipelines.health.checkpoint import inspect_checkpoint, kafka_committed_offsets
from platform_pipelines.health.loss import Counted, LedgerTotals
from platform_pipelines.lakehouse.checkpoints import initial_kafka_offsets, query_id_of, read_plan
from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.lakehouse.delta_log import added_files, committed_version
from platform_pipelines.lakehouse.tables import LATE_TABLE, LEDGER_TABLE, QUARANTINE_TABLE
from platform_pipelines.streams.declare import IngestStream, StatefulStream, Stream

ATTEMPTS = 5


class StillWriting(RuntimeError):
    """The stream committed batches during every attempt to count it."""


def absorbs(stream: Stream) -> str | None:
    """What a stream's logic may absorb, in words; None when it must pass every row on."""
    if isinstance(stream, IngestStream):
        return None
    if stream.name == "events":
        return "duplicates removed"
    return "rows folded into state"


def balance_facts(
    spark: SparkSession, lakehouse: Lakehouse, stream: Stream
) -> tuple[LedgerTotals, Counted]:
    """The ledger's totals and the independent counts, read consistently.

    Raises:
        StillWriting: the stream kept committing batches while it was being counted.
    """
    for _ in range(ATTEMPTS):
        before = _ledger(spark, lakehouse, stream.name)
        counted = _counted(spark, lakehouse, stream)
        after = _ledger(spark, lakehouse, stream.name)
        if before == after:
            totals = LedgerTotals(*(sum(row[i] for row in after.values()) for i in range(4)))
            query = query_id_of(lakehouse.checkpoint(stream.name))
            consumed = sum(row[0] for (q, _), row in after.items() if q == query)
            return totals, Counted(
                counted.consumed,
                consumed,
                counted.table_rows,
                counted.late_rows,
                counted.quarantined_rows,
            )
    raise StillWriting(f"{stream.name} committed batches during {ATTEMPTS} attempts to count it")


def _ledger(
    spark: SparkSession, lakehouse: Lakehouse, stream: str
) -> dict[tuple[str, int], tuple[int, int, int, int]]:
    path = lakehouse.table(LEDGER_TABLE)
    if not has_commit(path):
        return {}
    rows = spark.read.format("delta").load(str(path)).where(F.col("stream") == stream).collect()
    return {
        (r["query_id"], r["batch_id"]): (
            r["rows_in"],
            r["rows_out"],
            r["rows_late"],
            r["rows_quarantined"],
        )
        for r in rows
    }


def _counted(spark: SparkSession, lakehouse: Lakehouse, stream: Stream) -> Counted:
    def rows(table: str, where: Column | None = None) -> int:
        path = lakehouse.table(table)
        if not has_commit(path):
            return 0
        df = spark.read.format("delta").load(str(path))
        return (df.where(where) if where is not None else df).count()

    checkpoint = lakehouse.checkpoint(stream.name)
    if isinstance(stream, IngestStream):
        return Counted(
            consumed=_kafka_consumed(checkpoint),
            table_rows=rows(stream.table),
            quarantined_rows=rows(
                QUARANTINE_TABLE, F.col("source").eqNullSafe(stream.source.topic)
            ),
        )
    assert isinstance(stream, StatefulStream)
    table_rows = rows(stream.table) if stream.output_mode == "append" else None
    late = rows(LATE_TABLE, F.col("stream").eqNullSafe(stream.name)) if stream.watermark else None
    consumed = (
        _kafka_consumed(checkpoint)
        if stream.topic
        else _delta_consumed(lakehouse, stream, checkpoint)
    )
    return Counted(consumed=consumed, table_rows=table_rows, late_rows=late)


def _kafka_consumed(checkpoint: Path) -> int | None:
    """Records between the offsets the checkpoint started from and those it committed."""
    committed = kafka_committed_offsets(inspect_checkpoint(checkpoint))
    start = initial_kafka_offsets(checkpoint)
    if not committed or start is None:
        return None
    return sum(
        end - start.get(topic, {}).get(partition, 0)
        for topic, partitions in committed.items()
        for partition, end in partitions.items()
    )


def _delta_consumed(lakehouse: Lakehouse, stream: StatefulStream, checkpoint: Path) -> int | None:
    end = committed_version(checkpoint)
    if end is None:
        return None
    plan = read_plan(checkpoint)
    try:
        files = added_files(
            lakehouse.table(stream.source_table), plan.starting_version if plan else 0, end
        )
    except OSError:  # the upstream table is gone, or its log was cleaned up: cannot be counted
        return None
    if any(f.records is None for f in files):
        return None
    return sum(f.records or 0 for f in files)
