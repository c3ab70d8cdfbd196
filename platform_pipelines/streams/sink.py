"""Where a micro-batch lands: every row a stream reads ends up, exactly once, somewhere with a why.

Each stream writes through a ``foreachBatch`` writer defined here:

- ``IngestWriter`` (bronze) splits a batch of Kafka records into good rows (``<topic>_raw``) and
  quarantined ones (``quarantine``, with every reason and the original bytes).
- ``StageWriter`` (stateful streams) writes the operator's output (appended, or upserted by key in
  update mode) and puts the rows that the watermark refused into ``late_events``. Spark drops
  such rows inside the stateful operator without a trace; the writer finds them again: it knows
  which upstream versions the batch read and the files they added (``lakehouse.delta_log``), and
  the watermark that judged them (``lakehouse.checkpoints``), so it reads the late rows back from
  those files, and only from the files whose statistics say they can hold any.

Both add one row per batch to ``stream_ledger`` (rows in, out, late, quarantined). Every write is
tagged with the batch id in its Delta commit (``lakehouse.delta.append_exactly_once``), so a batch
replayed after a crash writes nothing twice, and no table gets a commit for a batch that has
nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from platform_pipelines.core.times import from_ms
from platform_pipelines.core.units import duration
from platform_pipelines.lakehouse.checkpoints import BatchClock, StartPlan, batch_clock
from platform_pipelines.lakehouse.delta import Lakehouse, append_exactly_once, upsert_exactly_once
from platform_pipelines.lakehouse.delta_log import AddedFile, added_files, batch_versions
from platform_pipelines.lakehouse.tables import (
    LATE_TABLE,
    LEDGER,
    LEDGER_TABLE,
    QUARANTINE,
    QUARANTINE_TABLE,
)
from platform_pipelines.spark.together import run_together
from platform_pipelines.streams.bronze import POSITION, RecordParser
from platform_pipelines.streams.declare import IngestStream, KafkaSource, StatefulStream, Stream
from platform_pipelines.streams.expressions import human_duration
from platform_pipelines.streams.kafka_input import InputCounts, KafkaInput


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
            from_ms(clock.watermark_ms).replace(tzinfo=None) if watermarked else None,
            from_ms(clock.timestamp_ms).replace(tzinfo=None),
        )
        ledger = batch.sparkSession.createDataFrame([row], LEDGER)
        app_id = f"{LEDGER_TABLE}/{self.stream}/{self.query_id}"
        self.append(ledger, LEDGER_TABLE, app_id, batch_id, clock)
        if self.on_batch is not None:
            self.on_batch(self.stream, batch_id, counts)


class IngestWriter:
    """The ``foreachBatch`` of a bronze stream."""

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
        at = F.timestamp_millis(F.lit(clock.timestamp_ms))
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
    ) -> None:
        self._stream = stream
        self._kafka = kafka  # the stream reads Kafka itself (``reads="kafka"``)
        # Does the operator drop rows behind the watermark (to be found and kept)?
        self._finds_late = stream.watermark is not None and drops_late
        self._target = target
        self._upstream = upstream.table(stream.source_table)
        self._first_version = plan.starting_version if plan else 0
        self._guard_until_ms = plan.guard_until_ms if plan else 0
        self._columns = stream.output.fieldNames()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        clock = batch_clock(self._target.checkpoint, batch_id)
        output = self._guarded(batch.select(*self._columns), clock).persist()
        try:
            rows_out = output.count()
            counted = self._kafka.counted() if self._kafka is not None else None

            def late_rows_and_ledger() -> None:
                rows_in, rows_late, bad = self._input(batch, batch_id, clock, counted)
                counts = BatchCounts(rows_in, rows_out, rows_late, rows_quarantined=bad)
                watermarked = self._stream.watermark is not None
                self._target.record(batch, batch_id, counts, clock, watermarked)

            # The output's commit overlaps the late rows' and the ledger's; each is idempotent,
            # so a batch that fails in one of them is replayed and completes the others.
            run_together(
                *([lambda: self._write_output(output, batch_id, clock)] if rows_out else []),
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

    def _input(
        self, batch: DataFrame, batch_id: int, clock: BatchClock, counted: InputCounts | None = None
    ) -> tuple[int, int, int]:
        """Rows the batch read, how many of them were late (now written) and how many bad (read
        from Kafka and skipped: bronze quarantines them)."""
        if self._kafka is not None:
            return self._kafka_input(batch_id, clock, counted)
        start, end = batch_versions(self._target.checkpoint, batch_id, self._first_version)
        files = [f for f in added_files(self._upstream, start, end) if f.records != 0]
        spark = batch.sparkSession
        unknown = [f for f in files if f.records is None]
        rows_in = sum(f.records or 0 for f in files)
        if unknown:
            rows_in += spark.read.parquet(*self._paths(unknown)).count()
        candidates = self._late_candidates(files, clock)
        if not candidates:
            return rows_in, 0, 0
        return (
            rows_in,
            self._write_late(spark.read.parquet(*self._paths(candidates)), batch_id, clock),
            0,
        )

    def _kafka_input(
        self, batch_id: int, clock: BatchClock, counted: InputCounts | None
    ) -> tuple[int, int, int]:
        """``_input`` of a stream that reads Kafka: what the query counted, and the late rows
        read again from Kafka when it saw a good row at or behind the watermark. Without counts,
        every record is read again and counted here."""
        assert self._kafka is not None
        now, checkpoint = from_ms(clock.timestamp_ms), self._target.checkpoint
        if counted is not None:
            if not (self._finds_late and counted.may_be_late(clock.late_until_ms)):
                return counted.records, 0, counted.bad
            maybe = self._kafka.parsed(checkpoint, batch_id, now, clock.late_until_ms)
            rows_late = (
                0
                if maybe is None
                else self._write_late(self._kafka.good_rows(maybe), batch_id, clock)
            )
            return counted.records, rows_late, counted.bad
        parsed = self._kafka.parsed(checkpoint, batch_id, now)
        if parsed is None:
            return 0, 0, 0
        limit = F.timestamp_millis(F.lit(clock.late_until_ms))
        is_late = F.col("reason").isNull() & (F.col(self._stream.event_time) <= limit)
        is_late = is_late if self._finds_late else F.lit(False)
        row = parsed.agg(F.count(F.lit(1)), F.count("reason"), F.count_if(is_late)).first()
        rows_in, bad, rows_late = (int(v) for v in row)  # type: ignore[union-attr]
        if rows_late:
            self._write_late(self._kafka.good_rows(parsed), batch_id, clock)
        return rows_in, rows_late, bad

    def _write_late(self, rows: DataFrame, batch_id: int, clock: BatchClock) -> int:
        """Put the ``rows`` at or behind the batch's watermark into ``late_events``; how many."""
        limit = F.timestamp_millis(F.lit(clock.late_until_ms))
        late = rows.where(F.col(self._stream.event_time) <= limit)
        late = late.select(
            *_late_columns(self._stream, limit, rows.columns, self._target, batch_id, clock)
        ).persist()
        try:
            rows_late = late.count()
            if rows_late:
                app = f"{self._target.app_id(LATE_TABLE)}/{self._stream.name}"
                self._target.append(late, LATE_TABLE, app, batch_id, clock)
        finally:
            late.unpersist()
        return rows_late

    def _late_candidates(self, files: list[AddedFile], clock: BatchClock) -> list[AddedFile]:
        """The files that may hold a row at or before the watermark (by their statistics)."""
        if not self._finds_late:
            return []
        limit_s = clock.late_until_ms / 1000
        column = self._stream.event_time
        return [f for f in files if (m := f.min_epoch_seconds(column)) is None or m <= limit_s]

    def _paths(self, files: list[AddedFile]) -> list[str]:
        return [str(self._upstream / unquote(f.path)) for f in files]


def _late_columns(
    stream: StatefulStream,
    limit: Column,
    columns: list[str],
    target: Target,
    batch_id: int,
    clock: BatchClock,
) -> list[Column]:
    """A ``late_events`` row for each late upstream row."""
    assert stream.watermark is not None
    column = stream.event_time
    behind = (F.unix_micros(limit) - F.unix_micros(F.col(column))) / 1e6
    allowed = duration(stream.watermark.total_seconds())
    reason = F.format_string(
        f"{column} is %s behind the watermark of {stream.name}, which allows {allowed} of lateness",
        human_duration(behind),
    )
    return [
        F.lit(stream.name).alias("stream"),
        reason.alias("reason"),
        F.col(column).alias("event_time"),
        limit.alias("watermark"),
        behind.alias("late_by_seconds"),
        F.to_json(F.struct(*[F.col(c) for c in columns])).alias("row"),
        F.lit(target.query_id).alias("query_id"),
        F.lit(batch_id).cast("long").alias("batch_id"),
        F.timestamp_millis(F.lit(clock.timestamp_ms)).alias("detected_at"),
    ]


def writer_ids(stream: Stream, query_id: str) -> dict[str, str]:
    """Every table ``stream`` writes, with the writer id its commits are tagged with (as the
    writers below build them), own tables first: what a restore looks for in the logs."""
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
