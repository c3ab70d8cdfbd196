"""What a batch of a stream that reads Kafka itself (``reads="kafka"``) read.

Such a stream parses and validates the topic's records as bronze does, beside bronze, and its
stateful operator sees the good ones. The batch its ``foreachBatch`` receives is the operator's
output, though: the records it read, the bad ones it skipped and the late ones Spark dropped are
gone from it. Two ways get them back:

- **Counted by the query itself** (the common case). Before the filter, the query observes
  (``DataFrame.observe``) how many records it read, how many were bad and the oldest event time
  of the good ones. Spark fills these in while the batch's plan runs, so once the writer has run
  its output they are on the query's current execution (what Spark reports as the progress'
  ``observedMetrics``). When the oldest good event time is after the watermark, no row was late
  and nothing is read again.
- **Read again** when a row may be late, or when the counts are missing: the writer reads the
  batch's offset range from Kafka (``lakehouse.checkpoints.kafka_batch_offsets``) and parses it
  with the same rules and the batch's own clock, which judges every record exactly as the query
  did, for the counts and the late rows themselves.

A replayed batch runs its plan again over the same offsets, so it observes the same counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from py4j.protocol import Py4JError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from platform_pipelines.lakehouse.checkpoints import KafkaOffsets, kafka_batch_offsets
from platform_pipelines.streams.bronze import RecordParser
from platform_pipelines.streams.expressions import batch_constant

# Reads the Kafka records from the first offsets up to the second (a batch query).
RangeReader = Callable[[KafkaOffsets, KafkaOffsets], DataFrame]


OBSERVED = "platform_kafka_input"  # the name of the query's observed counts


def observed_input(parsed: DataFrame, event_time: str) -> DataFrame:
    """``parsed`` (``RecordParser.parse``), counting as it goes what ``KafkaInput.counted``
    reads back."""
    good = F.col("reason").isNull()
    return parsed.observe(
        OBSERVED,
        F.count(F.lit(1)).alias("records"),
        F.count("reason").alias("bad"),
        F.unix_micros(F.min(F.when(good, F.col(event_time)))).alias("oldest_good_us"),
    )


@dataclass(frozen=True)
class InputCounts:
    """What the query observed in its running batch."""

    records: int
    bad: int
    oldest_good_us: int | None  # the oldest event time of a good record, epoch microseconds

    def may_be_late(self, late_until_ms: int) -> bool:
        """Could a good record be at or behind ``late_until_ms`` (the batch's late bound)?"""
        return self.oldest_good_us is not None and self.oldest_good_us <= late_until_ms * 1000


@dataclass(frozen=True)
class KafkaInput:
    """How a Kafka-reading stream's writer learns what its batch read."""

    spark: SparkSession  # the session the query was started from
    query_id: str
    read_range: RangeReader
    parser: RecordParser

    def counted(self) -> InputCounts | None:
        """The counts the query observed in the batch now running (ask after the writer ran an
        action on the batch); None when Spark has none to give."""
        try:
            query = self.spark.streams.get(self.query_id)
            if query is None:
                return None
            found = query._jsq.streamingQuery().lastExecution().observedMetrics().get(OBSERVED)
            if not found.isDefined():
                return None
            row = found.get()
            return InputCounts(
                int(row.getLong(0)),
                int(row.getLong(1)),
                None if row.isNullAt(2) else int(row.getLong(2)),
            )
        except (Py4JError, AttributeError):  # not a classic session's query: read again instead
            return None

    def parsed(
        self, checkpoint: Path, batch_id: int, now: datetime, late_until_ms: int | None = None
    ) -> DataFrame | None:
        """The batch's records read again, parsed as the query parsed them (``reason`` null for
        a good one); None when the batch read none (a batch run only to move the watermark).

        With ``late_until_ms``, only the records that may be late are parsed: a record whose
        event time, read straight from its text, is after it cannot be (the parse reads the same
        text into the same timestamp); one whose event time cannot be read that way is kept.
        """
        start, end = kafka_batch_offsets(checkpoint, batch_id)
        if not records_between(start, end):
            return None
        records = self.read_range(start, end)
        field = self.parser.event_time
        if late_until_ms is not None and field is not None:
            text = F.get_json_object(F.col("value").cast("string"), f"$['{field}']")
            at = F.try_to_timestamp(text)
            records = records.where(
                at.isNull() | (at <= batch_constant(F.timestamp_millis(F.lit(late_until_ms))))
            )
        return self.parser.parse(records, now)

    def good_rows(self, parsed: DataFrame) -> DataFrame:
        return self.parser.good_rows(parsed)


def records_between(start: KafkaOffsets, end: KafkaOffsets) -> bool:
    """Does ``[start, end)`` hold any offset? A partition missing from ``start`` is new: it holds
    records from its beginning when its end is past 0.

    >>> records_between({"t": {0: 5, 1: 7}}, {"t": {0: 5, 1: 7}})
    False
    >>> records_between({"t": {0: 5}}, {"t": {0: 5, 1: 2}})
    True
    """
    return any(
        offset > start.get(topic, {}).get(partition, 0)
        for topic, partitions in end.items()
        for partition, offset in partitions.items()
    )


def offsets_option(
    offsets: KafkaOffsets, partitions: KafkaOffsets | None = None
) -> dict[str, dict[str, int]]:
    """Spark's ``startingOffsets``/``endingOffsets`` JSON for ``offsets``; given ``partitions``,
    for each of those, -2 (the earliest offset) where ``offsets`` has none.

    >>> offsets_option({"t": {0: 5}}, {"t": {0: 9, 1: 3}})
    {'t': {'0': 5, '1': -2}}
    """
    wanted = partitions or offsets
    return {
        t: {str(p): offsets.get(t, {}).get(p, -2) for p in sorted(parts)}
        for t, parts in wanted.items()
    }
