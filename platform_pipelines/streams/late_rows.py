"""The rows a stateful operator drops behind the watermark, found again and kept in ``late_events``.

Spark drops such rows inside the stateful operator without a trace. ``LateRows`` finds them again:
it knows which upstream versions the batch read and the files they added
(``lakehouse.delta_log``), and the watermark that judged them (``lakehouse.checkpoints``), so it
reads the late rows back from those files, and only from the files whose statistics say they can
hold any; a stream that reads Kafka itself reads its batch's records again only when one may be
late (``streams.kafka_input``). On the way it counts the rows the batch read, for the ledger.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from platform_pipelines.core.times import from_ms
from platform_pipelines.core.units import duration
from platform_pipelines.lakehouse.checkpoints import BatchClock
from platform_pipelines.lakehouse.delta_log import AddedFile, added_files, batch_versions
from platform_pipelines.lakehouse.tables import LATE_TABLE
from platform_pipelines.streams.declare import StatefulStream
from platform_pipelines.streams.expressions import batch_constant, human_duration
from platform_pipelines.streams.kafka_input import InputCounts, KafkaInput
from platform_pipelines.streams.sink import Target


class LateRows:
    """What a stateful stream's batch read, and its late rows written to ``late_events``."""

    def __init__(
        self,
        stream: StatefulStream,
        target: Target,
        upstream: Path,
        first_version: int,
        finds_late: bool,
        kafka: KafkaInput | None = None,
    ) -> None:
        self._stream = stream
        self._target = target
        self._upstream = upstream  # the upstream table's folder
        self._first_version = first_version  # the upstream version a new checkpoint started at
        self._finds_late = finds_late  # does the operator drop rows behind the watermark?
        self._kafka = kafka  # the stream reads Kafka itself (``reads="kafka"``)

    def find(
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
        candidates = self._candidates(files, clock)
        if not candidates:
            return rows_in, 0, 0
        return (
            rows_in,
            self._write(spark.read.parquet(*self._paths(candidates)), batch_id, clock),
            0,
        )

    def _kafka_input(
        self, batch_id: int, clock: BatchClock, counted: InputCounts | None
    ) -> tuple[int, int, int]:
        """``find`` for a stream that reads Kafka: what the query counted, and the late rows
        read again from Kafka when it saw a good row at or behind the watermark. Without counts,
        every record is read again and counted here."""
        assert self._kafka is not None
        now, checkpoint = from_ms(clock.timestamp_ms), self._target.checkpoint
        if counted is not None:
            if not (self._finds_late and counted.may_be_late(clock.late_until_ms)):
                return counted.records, 0, counted.bad
            maybe = self._kafka.parsed(checkpoint, batch_id, now, clock.late_until_ms)
            rows_late = (
                0 if maybe is None else self._write(self._kafka.good_rows(maybe), batch_id, clock)
            )
            return counted.records, rows_late, counted.bad
        parsed = self._kafka.parsed(checkpoint, batch_id, now)
        if parsed is None:
            return 0, 0, 0
        limit = batch_constant(F.timestamp_millis(F.lit(clock.late_until_ms)))
        is_late = F.col("reason").isNull() & (F.col(self._stream.event_time) <= limit)
        is_late = is_late if self._finds_late else F.lit(False)
        row = parsed.agg(F.count(F.lit(1)), F.count("reason"), F.count_if(is_late)).first()
        rows_in, bad, rows_late = (int(v) for v in row)  # type: ignore[union-attr]
        if rows_late:
            self._write(self._kafka.good_rows(parsed), batch_id, clock)
        return rows_in, rows_late, bad

    def _write(self, rows: DataFrame, batch_id: int, clock: BatchClock) -> int:
        """Put the ``rows`` at or behind the batch's watermark into ``late_events``; how many."""
        limit = batch_constant(F.timestamp_millis(F.lit(clock.late_until_ms)))
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

    def _candidates(self, files: list[AddedFile], clock: BatchClock) -> list[AddedFile]:
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
