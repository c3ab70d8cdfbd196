"""Where a declared stream reads from: a Kafka topic and what its records must satisfy, another
stream's table, and the table a new checkpoint seeds its state from."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pyspark.sql.types import StructType

from platform_pipelines.streams.schemas import struct_of

FieldTypes = Mapping[str, str]
MIN_EVENT_TIME = datetime(2000, 1, 1, tzinfo=UTC)  # KafkaSource's default floor


DEFAULT_BRONZE_TRIGGER = timedelta(seconds=10)


@dataclass(frozen=True)
class KafkaSource:
    """A Kafka topic of JSON objects, and what a record must satisfy to enter the platform.

    Records that fail any rule go to the ``quarantine`` table with every reason, the original
    bytes and their Kafka position; nothing is dropped.

    Attributes:
        topic: the Kafka topic.
        schema: ``{field: type}`` of the JSON object (types as in ``output_schema``). A value of
            another JSON type (an object where a string is expected, a number in a timestamp) is
            a reason.
        required: fields that must be present, non-null and, for strings, non-empty.
        allowed_values: ``{field: (value, ...)}``: anything else is a reason.
        expectations: ``{name: SQL condition}`` over the typed fields that must hold, as Delta
            Live Tables' expectations (``{"amount_not_negative": "amount IS NULL OR amount >= 0"}``).
        event_time: the timestamp field checked against ``max_future`` and ``min_event_time``
            (None: no check).
        max_future: how far ahead of the processing clock an event time may be (default 1 hour):
            one far-future event would otherwise move the watermark past every real event.
        min_event_time: earlier event times are invalid, not late (placeholder dates such as
            1970-01-01 or 0001-01-01): quarantined (default 2000-01-01 UTC; None: no floor).
        max_record_bytes: larger records are quarantined with their first bytes and size
            (default 256 KiB).
        description: the topic's description in the Dagster UI.
        raw_table: the bronze table (default ``<topic>_raw``).
        bronze_trigger: how often the bronze stream runs in continuous mode (default 10 s).
            Nothing waits on bronze when the streams read the topic themselves
            (``reads="kafka"``): a longer interval then costs the cores less per record and
            leaves them to the streams people wait for (the built-in clickstream: 60 s, unless
            ``events`` reads bronze). Bronze is declared once per topic, with the first
            declaring stream's source.
    """

    topic: str
    schema: FieldTypes
    required: tuple[str, ...] = ()
    allowed_values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    expectations: Mapping[str, str] = field(default_factory=dict)
    event_time: str | None = "event_time"
    max_future: timedelta | None = timedelta(hours=1)
    min_event_time: datetime | None = MIN_EVENT_TIME
    max_record_bytes: int = 256 * 1024
    description: str = ""
    raw_table: str | None = None
    bronze_trigger: timedelta = DEFAULT_BRONZE_TRIGGER

    @property
    def table(self) -> str:
        """The bronze table: ``raw_table``, else the topic name made an identifier + ``_raw``."""
        return self.raw_table or re.sub(r"[^a-z0-9_]", "_", self.topic.lower()) + "_raw"

    @property
    def fields(self) -> StructType:
        """The typed fields of a good record (required ones non-nullable)."""
        return struct_of(dict(self.schema), self.required)


@dataclass(frozen=True)
class TableSource:
    """Another declared stream's Delta table, read as a stream of appended rows."""

    table: str


@dataclass(frozen=True)
class InitialState:
    """Seed a stream's state from a declared table when it starts on a new checkpoint: the latest
    row per key (ordered by the ``latest_by`` columns, newest first) goes to the logic's
    ``initial_state(key, row)``."""

    table: str
    latest_by: tuple[str, ...]
