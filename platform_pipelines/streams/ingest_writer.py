"""The bronze ``foreachBatch``: good Kafka records to ``<topic>_raw``, bad ones quarantined."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from platform_pipelines.core.times import from_ms
from platform_pipelines.lakehouse.checkpoints import BatchClock, batch_clock
from platform_pipelines.lakehouse.tables import QUARANTINE, QUARANTINE_TABLE
from platform_pipelines.spark.together import run_together
from platform_pipelines.streams.bronze import POSITION, RecordParser
from platform_pipelines.streams.declare import KafkaSource
from platform_pipelines.streams.expressions import batch_constant
from platform_pipelines.streams.sink import BatchCounts, Target


class IngestWriter:
    """The ``foreachBatch`` of a bronze stream: it splits a batch of Kafka records into good rows
    (``<topic>_raw``) and quarantined ones (``quarantine``, with every reason and the original
    bytes), and adds the batch's ledger row."""

    def __init__(self, source: KafkaSource, target: Target) -> None:
        self._source = source
        self._target = target
        self._parser = RecordParser(source)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        clock = batch_clock(self._target.checkpoint, batch_id)
        parsed = self._parser.parse(batch, from_ms(clock.timestamp_ms)).persist()
        try:
            row = parsed.agg(F.count(F.lit(1)).alias("n"), F.count("reason").alias("bad")).first()
            total, bad = int(row["n"]), int(row["bad"])  # type: ignore[index]
            target, app = self._target, self._target.app_id(self._source.table)
            writes = []
            if total - bad:
                good = self._parser.good_rows(parsed)
                writes.append(
                    lambda: target.append(good, self._source.table, f"{app}/raw", batch_id, clock)
                )
            if bad:
                writes.append(
                    lambda: target.append(
                        self._quarantined(parsed, clock),
                        QUARANTINE_TABLE,
                        f"{app}/quarantine",
                        batch_id,
                        clock,
                    )
                )
            counts = BatchCounts(rows_in=total, rows_out=total - bad, rows_quarantined=bad)
            writes.append(lambda: target.record(batch, batch_id, counts, clock, watermarked=False))
            # Three tables: the commits overlap. Each is idempotent, so a batch that fails in
            # one of them is replayed and completes the others.
            run_together(*writes)
        finally:
            parsed.unpersist()

    def _quarantined(self, parsed: DataFrame, clock: BatchClock) -> DataFrame:
        at = batch_constant(F.timestamp_millis(F.lit(clock.timestamp_ms)))
        return (
            parsed.where(F.col("reason").isNotNull())
            .select(
                F.lit(self._source.topic).alias("source"),
                "raw_value",
                "raw_bytes",
                "raw_size",
                "reason",
                *POSITION,
                at.alias("quarantined_at"),
            )
            .select(*QUARANTINE.fieldNames())
        )
