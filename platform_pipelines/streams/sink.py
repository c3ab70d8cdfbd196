"""Where a stream's micro-batches land: the exactly-once target, its ledger row, its writer ids.

Every row a stream reads ends up, exactly once, somewhere with a why. Each stream writes through a
``foreachBatch`` writer: ``streams.ingest_writer`` (bronze: good rows and quarantined ones) or
``streams.stage_writer`` (stateful streams: the operator's output, and the rows its watermark
refused, found again by ``streams.late_rows``). Both write through a ``Target`` and add one row per
batch to ``stream_ledger`` (rows in, out, late, quarantined). Every write is tagged with the batch
id in its Delta commit (``lakehouse.delta.append_exactly_once``), so a batch replayed after a crash
writes nothing twice, and no table gets a commit for a batch that has nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from platform_pipelines.core.times import from_ms
from platform_pipelines.lakehouse.checkpoints import BatchClock
from platform_pipelines.lakehouse.delta import Lakehouse, append_exactly_once
from platform_pipelines.lakehouse.tables import LATE_TABLE, LEDGER, LEDGER_TABLE, QUARANTINE_TABLE
from platform_pipelines.streams.declare import IngestStream, Stream
from platform_pipelines.streams.expressions import batch_constant


@dataclass(frozen=True)
class BatchCounts:
    """What one micro-batch did with its rows (a ``stream_ledger`` row)."""

    rows_in: int
    rows_out: int
    rows_late: int = 0
    rows_quarantined: int = 0

    @property
    def empty(self) -> bool:
        return not (self.rows_in or self.rows_out or self.rows_late or self.rows_quarantined)


@dataclass(frozen=True)
class Target:
    """Where a stream's batches go: its lakehouse, its name and its checkpoint's query id (the
    idempotency key of every write)."""

    lakehouse: Lakehouse
    stream: str
    query_id: str
    on_batch: Callable[[str, int, BatchCounts], None] | None = None

    @property
    def checkpoint(self) -> Path:
        return self.lakehouse.checkpoint(self.stream)

    def app_id(self, table: str) -> str:
        return f"{table}/{self.query_id}"

    def append(
        self,
        df: DataFrame,
        table: str,
        app_id: str,
        batch_id: int,
        clock: BatchClock,
    ) -> None:
        append_exactly_once(
            df, self.lakehouse.table(table), app_id, batch_id, clock.timestamp_ms, merge_schema=True
        )

    def record(
        self,
        batch: DataFrame,
        batch_id: int,
        counts: BatchCounts,
        clock: BatchClock,
        watermarked: bool,
    ) -> None:
        """Add the batch's ``stream_ledger`` row (nothing for a batch that saw no rows)."""
        if counts.empty:
            return
        row = (
            self.stream,
            self.query_id,
            batch_id,
            counts.rows_in,
            counts.rows_out,
            counts.rows_late,
            counts.rows_quarantined,
            from_ms(clock.watermark_ms) if watermarked else None,
            from_ms(clock.timestamp_ms),
        )
        ledger = one_row(batch.sparkSession, LEDGER, row)
        app_id = f"{LEDGER_TABLE}/{self.stream}/{self.query_id}"
        self.append(ledger, LEDGER_TABLE, app_id, batch_id, clock)
        if self.on_batch is not None:
            self.on_batch(self.stream, batch_id, counts)


def one_row(spark: SparkSession, schema: StructType, values: Sequence[object]) -> DataFrame:
    """A DataFrame of one row of ``values`` (timestamps as aware datetimes), built in the JVM.

    ``createDataFrame`` of a Python list runs a Python worker for each of its partitions to
    unpickle the row: about 0.2 s of a core per partition, per batch and per stream on a loaded
    2-core machine. Literals over a one-partition range need no Python worker.
    """
    columns = [
        batch_constant(F.lit(value).cast(field.dataType)).alias(field.name)
        for field, value in zip(schema.fields, values, strict=True)
    ]
    return spark.range(0, 1, 1, 1).select(*columns)


def writer_ids(stream: Stream, query_id: str) -> dict[str, str]:
    """Every table ``stream`` writes, with the writer id its commits are tagged with (as its
    writer builds them), own tables first: what a restore looks for in the logs."""
    ledger = f"{LEDGER_TABLE}/{stream.name}/{query_id}"
    if isinstance(stream, IngestStream):
        app = f"{stream.table}/{query_id}"
        return {
            stream.table: f"{app}/raw",
            QUARANTINE_TABLE: f"{app}/quarantine",
            LEDGER_TABLE: ledger,
        }
    ids = {stream.table: f"{stream.table}/{query_id}"}
    if LATE_TABLE in stream.outputs:
        ids[LATE_TABLE] = f"{LATE_TABLE}/{query_id}/{stream.name}"
    return {**ids, LEDGER_TABLE: ledger}
