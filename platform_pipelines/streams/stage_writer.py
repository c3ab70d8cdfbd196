"""The ``foreachBatch`` of a stateful stream: its output, its late rows and its ledger row.

The operator's output is appended, or upserted by key in update mode, and, for a stream with a
``publish_topic``, sent to that Kafka topic first (``streams.publish``); the rows its watermark
refused are found again and put into ``late_events`` (``streams.late_rows``).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from platform_pipelines.lakehouse.checkpoints import BatchClock, StartPlan, batch_clock
from platform_pipelines.lakehouse.delta import Lakehouse, upsert_exactly_once
from platform_pipelines.spark.together import run_together
from platform_pipelines.streams.declare import StatefulStream
from platform_pipelines.streams.kafka_input import KafkaInput
from platform_pipelines.streams.late_rows import LateRows
from platform_pipelines.streams.sink import BatchCounts, Target

# Rows per file of a batch's output. The operator's output has a partition per state partition
# (4 by default), nearly empty in continuous mode (an alert batch: a row or none), and every
# partition was a task and a file in each write of it: ~0.15 s of a loaded core per task, twice
# per batch for a stream that publishes, and small files for compaction to merge later.
ROWS_PER_FILE = 100_000


def output_files(rows: int) -> int:
    """How many files (and write tasks) a batch of ``rows`` output rows is written in.

    >>> [output_files(n) for n in (0, 1, 100_000, 100_001, 250_000)]
    [1, 1, 1, 2, 3]
    """
    return max(1, -(-rows // ROWS_PER_FILE))


class StageWriter:
    """The ``foreachBatch`` of a stateful stream: output, late rows and the ledger."""

    def __init__(
        self,
        stream: StatefulStream,
        target: Target,
        upstream: Lakehouse,
        plan: StartPlan | None = None,
        drops_late: bool = True,
        kafka: KafkaInput | None = None,
        publish: Callable[[DataFrame], None] | None = None,
    ) -> None:
        self._stream = stream
        self._publish = publish  # sends the output rows to the stream's topic
        self._kafka = kafka  # the stream reads Kafka itself (``reads="kafka"``)
        self._target = target
        self._guard_until_ms = plan.guard_until_ms if plan else 0
        self._columns = stream.output.fieldNames()
        self._late = LateRows(
            stream,
            target,
            upstream.table(stream.source_table),
            plan.starting_version if plan else 0,
            # Does the operator drop rows behind the watermark (to be found and kept)?
            finds_late=stream.watermark is not None and drops_late,
            kafka=kafka,
        )

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        clock = batch_clock(self._target.checkpoint, batch_id)
        output = self._guarded(batch.select(*self._columns), clock).persist()
        try:
            if self._publish is not None:
                # The job that runs the operator (and fills the cache) is the topic's send, so
                # the topic gets the rows a Spark job sooner than after a count; the count
                # below reads the cache. A crash before the Delta commit replays the batch,
                # which sends its rows again (at least once, by the unique key).
                self._publish(output)
            rows_out = output.count()
            # Cached: the writes below read it in output_files(rows_out) tasks, each reading
            # several of its partitions in order (so an upsert still sees a key's rows in order).
            written = output.coalesce(output_files(rows_out))
            counted = self._kafka.counted() if self._kafka is not None else None

            def late_rows_and_ledger() -> None:
                rows_in, rows_late, bad = self._late.find(batch, batch_id, clock, counted)
                counts = BatchCounts(rows_in, rows_out, rows_late, rows_quarantined=bad)
                watermarked = self._stream.watermark is not None
                self._target.record(batch, batch_id, counts, clock, watermarked)

            # The output's commit overlaps the late rows' and the ledger's; each is idempotent,
            # so a batch that fails in one of them is replayed and completes the others.
            run_together(
                *([lambda: self._write_output(written, batch_id, clock)] if rows_out else []),
                late_rows_and_ledger,
            )
        finally:
            output.unpersist()

    def _guarded(self, output: DataFrame, clock: BatchClock) -> DataFrame:
        """After a replay started (``StartPlan``), rows the table already holds are dropped until
        the watermark passes the plan's guard."""
        key = self._stream.unique_key
        if key is None or clock.late_until_ms >= self._guard_until_ms:
            return output
        existing = output.sparkSession.read.format("delta").load(
            str(self._target.lakehouse.table(self._stream.table))
        )
        return output.join(existing.select(key), on=key, how="left_anti").select(*self._columns)

    def _write_output(self, output: DataFrame, batch_id: int, clock: BatchClock) -> None:
        table, app = self._stream.table, self._target.app_id(self._stream.table)
        if self._stream.output_mode == "update":
            path = self._target.lakehouse.table(table)
            upsert_exactly_once(output, path, self._stream.keys, app, batch_id, clock.timestamp_ms)
        else:
            self._target.append(output, table, app, batch_id, clock)
