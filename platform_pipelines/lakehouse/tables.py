"""The platform's own tables: where rows that do not make it into a stream's table are kept.

Nothing a stream reads disappears silently. A record that cannot enter the platform goes to
``quarantine`` (with the reason and its original bytes); a row a stream's watermark refuses goes to
``late_events`` (with the reason and how late it was); and every micro-batch of every stream adds
one row to ``stream_ledger`` with its counts, so the ``no_silent_loss`` check can prove that rows in
equal rows out plus everything kept aside.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql.types import (
    BinaryType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

QUARANTINE_TABLE: Final = "quarantine"
LATE_TABLE: Final = "late_events"
LEDGER_TABLE: Final = "stream_ledger"

KAFKA_POSITION = [
    StructField("kafka_partition", IntegerType(), True),
    StructField("kafka_offset", LongType(), True),
    StructField("kafka_timestamp", TimestampType(), True),
]

# Bronze keeps every field of a record that its source's schema does not declare, as a JSON object
# (null when there is none): a producer that adds a field loses nothing before the declaration
# catches up.
RESCUED_COLUMN: Final = "_rescued_data"
RESCUED = StructField(RESCUED_COLUMN, StringType(), True)

QUARANTINE = StructType(
    [
        StructField("source", StringType(), True),
        # The record as text; null when it is not valid UTF-8 or too large (see raw_bytes).
        StructField("raw_value", StringType(), True),
        # The original bytes when the text would lose them: invalid UTF-8 (all of them) or a
        # record over the size limit (its first bytes).
        StructField("raw_bytes", BinaryType(), True),
        StructField("raw_size", LongType(), True),
        StructField("reason", StringType(), True),
        *KAFKA_POSITION,
        StructField("quarantined_at", TimestampType(), True),
    ]
)

LATE_EVENTS = StructType(
    [
        StructField("stream", StringType(), False),
        StructField("reason", StringType(), False),
        StructField("event_time", TimestampType(), True),
        StructField("watermark", TimestampType(), True),
        StructField("late_by_seconds", DoubleType(), True),
        # The input row as JSON, so it can be inspected and replayed.
        StructField("row", StringType(), False),
        StructField("query_id", StringType(), False),
        StructField("batch_id", LongType(), False),
        StructField("detected_at", TimestampType(), False),
    ]
)

LEDGER = StructType(
    [
        StructField("stream", StringType(), False),
        StructField("query_id", StringType(), False),
        StructField("batch_id", LongType(), False),
        StructField("rows_in", LongType(), False),
        StructField("rows_out", LongType(), False),
        StructField("rows_late", LongType(), False),
        StructField("rows_quarantined", LongType(), False),
        StructField("watermark", TimestampType(), True),
        StructField("written_at", TimestampType(), False),
    ]
)

PLATFORM_TABLES: Final = {
    QUARANTINE_TABLE: QUARANTINE,
    LATE_TABLE: LATE_EVENTS,
    LEDGER_TABLE: LEDGER,
}
