"""What a batch of a stream that reads Kafka itself (``reads="kafka"``) read: its records again.

Such a stream parses and validates the topic's records as bronze does, beside bronze, and its
stateful operator sees the good ones. The batch its ``foreachBatch`` receives is the operator's
output, though: the records it read, the bad ones it skipped and the late ones Spark dropped are
gone from it. So the writer reads the batch's offset range from Kafka again
(``lakehouse.checkpoints.kafka_batch_offsets``) and parses it with the same rules and the batch's
own clock, which judges every record exactly as the query did. That gives the ledger's counts
(records in, bad ones, which bronze keeps in ``quarantine``) and the late rows themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pyspark.sql import DataFrame

from platform_pipelines.lakehouse.checkpoints import KafkaOffsets, kafka_batch_offsets
from platform_pipelines.streams.bronze import RecordParser

# Reads the Kafka records from the first offsets up to the second (a batch query).
RangeReader = Callable[[KafkaOffsets, KafkaOffsets], DataFrame]


@dataclass(frozen=True)
class KafkaInput:
    """How a Kafka-reading stream's writer gets its batch's records back."""

    read_range: RangeReader
    parser: RecordParser

    def parsed(self, checkpoint: Path, batch_id: int, now: datetime) -> DataFrame | None:
        """The batch's records, parsed as the query parsed them (``reason`` null for a good
        one); None when the batch read none (a batch run only to move the watermark)."""
        start, end = kafka_batch_offsets(checkpoint, batch_id)
        if not records_between(start, end):
            return None
        return self.parser.parse(self.read_range(start, end), now)

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
    return {t: {str(p): offsets.get(t, {}).get(p, -2) for p in sorted(parts)}
            for t, parts in wanted.items()}  # fmt: skip
