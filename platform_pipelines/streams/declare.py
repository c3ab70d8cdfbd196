"""Declaring a stream: the one object that describes a stream, from its declaration to the sensor.

A user declares a ``StatefulStream``: its source (``streams.sources``: a Kafka topic with a schema,
or another stream's table), the key, the logic (plain-Python ``KeyedLogic``, or a Spark ``transform`` for native
operators), the output schema and mode, the watermark, the timeout and the sink table. A Kafka
source also gets an ``IngestStream`` (bronze: parse, validate, quarantine), declared for it by the
platform. Both satisfy ``Stream``: the registry, the runner, the Dagster definitions, the health
layer and the CLI all work with these objects, and ``asset_key`` is the one rule for a stream's
asset.

Example (the running count shipped in ``user_streams/running_count.py``)::

    RUNNING_COUNT = StatefulStream(
        name="key_counts",
        description="Running count of events per key.",
        source=KafkaSource(topic="key_events", schema={"key": "string", "event_time": "timestamp"},
                           required=("key", "event_time")),
        key="key",
        logic=RunningCount(),
        output_schema={"key": "string", "count": "long", "last_seen": "timestamp"},
        output_mode="update",
        watermark=timedelta(minutes=10),
    )
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal, Protocol

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from platform_pipelines.lakehouse.tables import (
    KAFKA_POSITION,
    LATE_EVENTS,
    LATE_TABLE,
    QUARANTINE,
    QUARANTINE_TABLE,
    RESCUED,
)
from platform_pipelines.state.keyed import KeyedLogic
from platform_pipelines.streams.schemas import struct_of
from platform_pipelines.streams.sources import FieldTypes, InitialState, KafkaSource, TableSource

# What a user imports to declare a stream, sources included (they live in ``streams.sources``).
__all__ = [
    "FieldTypes",
    "IngestStream",
    "InitialState",
    "KafkaSource",
    "StatefulStream",
    "Stream",
    "TableSource",
    "Timeout",
    "asset_key",
]

Timeout = Literal["event_time", "processing_time"]


class Stream(Protocol):
    """What every part of the platform knows about a stream (both kinds below satisfy it)."""

    @property
    def name(self) -> str: ...  # query, checkpoint, progress file and (by default) table

    @property
    def description(self) -> str: ...

    @property
    def layer(self) -> str: ...  # bronze, silver, gold: the Dagster asset group

    @property
    def table(self) -> str: ...  # the main output table: the stream's asset

    @property
    def outputs(self) -> dict[str, StructType]: ...  # every table written, main table first

    @property
    def upstream(self) -> str: ...  # the asset read: a Kafka topic or a table

    @property
    def topic(self) -> str | None: ...  # the Kafka topic read, if any

    @property
    def watermark(self) -> timedelta | None: ...

    @property
    def trigger(self) -> timedelta: ...

    @property
    def processing_time_timers(self) -> bool: ...

    @property
    def state_partitions(self) -> int | None: ...  # a new checkpoint's count (None: the session's)


def asset_key(stream: Stream) -> str:
    """The asset of a stream: its main table. Checks, plots and lineage all hang on it."""
    return stream.table


@dataclass(frozen=True)
class IngestStream:
    """Bronze for a Kafka source, declared by the platform for each ``KafkaSource`` a
    ``StatefulStream`` reads: every record parsed and checked, good rows to ``source.table`` with
    their Kafka position and undeclared fields (``_rescued_data``), the rest to ``quarantine``."""

    source: KafkaSource
    layer: str = "bronze"
    watermark: timedelta | None = None
    processing_time_timers: bool = False

    @property
    def name(self) -> str:
        return self.source.table

    @property
    def trigger(self) -> timedelta:
        return self.source.bronze_trigger

    @property
    def table(self) -> str:
        return self.source.table

    @property
    def description(self) -> str:
        return (
            f"Bronze: every record of the Kafka topic `{self.source.topic}` parsed against its "
            "schema, with its Kafka partition, offset and timestamp; bad records go to "
            "`quarantine` with the reason."
        )

    @property
    def outputs(self) -> dict[str, StructType]:
        raw = StructType([*self.source.fields.fields, *KAFKA_POSITION, RESCUED])
        return {self.table: raw, QUARANTINE_TABLE: QUARANTINE}

    @property
    def upstream(self) -> str:
        return self.source.topic

    @property
    def topic(self) -> str | None:
        return self.source.topic

    @property
    def state_partitions(self) -> int | None:
        """An ingest stream keeps no state: the session's count."""
        return None


@dataclass(frozen=True)
class StatefulStream:
    """Everything about one stateful stream (see the module docstring for an example).

    Attributes:
        name: the stream's name: query, checkpoint and (by default) sink table and asset key.
            Lowercase letters, digits and underscores, starting with a letter.
        description: shown on the asset and job in the Dagster UI.
        source: ``KafkaSource`` or ``TableSource``.
        reads: for a ``KafkaSource``, what the query reads: ``bronze`` (the default: the
            source's bronze table, so every row waits for bronze's trigger and commit) or
            ``kafka`` (the topic itself, beside bronze: the stream parses and validates every
            record as bronze does and keeps the good ones; bronze still keeps the raw rows and
            the quarantine). ``kafka`` halves the end-to-end latency of the dedup path (README,
            "Benchmarks") for a second parse of every record.
        key: the column whose values own separate state, or a tuple of columns for a composite
            key (``("user_id", "activity")``): grouping, state and the update-mode MERGE then use
            every column, and the logic receives the key as a tuple of the column values.
        output_schema: ``{column: type}`` of the rows the stream emits (types: string, long, int,
            double, boolean, timestamp, array<string>).
        logic: plain-Python per-key logic (``platform_pipelines.state.keyed.KeyedLogic``).
        transform: instead of ``logic``, a function of the watermarked source DataFrame, for
            Spark's native stateful operators. The source carries the platform's watermark
            column ``_wm_time`` (the event time, capped at the batch's processing time so that
            no event can move the watermark ahead of the clock): keep it in the columns the
            stateful operator sees.
            With ``initial_state``, it is called with a second argument: the seed rows on a
            new checkpoint (the latest row per key), else None.
        output_mode: ``append`` (emitted rows are final) or ``update`` (one row per key, upserted).
        event_time: the source's event-time column.
        watermark: how late an event may arrive; needed for event-time timeouts and bounded
            state. Rows later than the watermark go to ``late_events`` with the reason.
        timeout: ``event_time`` (fires when the watermark passes the logic's timer) or
            ``processing_time`` (fires on a later trigger, even without new data), or None.
        key_lifetime: how long a key's state outlives its newest event before the logic
            removes it, on the timeout's clock: the session gap, the alert window (None: the
            watermark delay, as ``dropDuplicatesWithinWatermark``). ``state_growth`` judges by it.
        trigger: the default interval between micro-batches in continuous runs; 0 starts the
            next batch as soon as the last one has ended and new input is there (for a stream
            whose rows people wait for).
        sink_table: the Delta table written (default: ``name``).
        initial_state: where to seed state from on a new checkpoint (``InitialState``); may be
            the stream's own sink table, so a rebuilt checkpoint resumes from the last known state.
        unique_key: an output column that identifies a row (``event_id``, ``session_id``): a
            replay (``platform stream reset-watermark``) then never writes a row twice.
        publish_topic: a Kafka topic that also gets every output row, as JSON keyed by ``key``,
            while the batch commits it to the table, for consumers that react rather than poll
            (a pager, a SIEM). At least once: a batch replayed after a crash sends its rows
            again, so it needs a ``unique_key``, by which a consumer drops the copies.
        layer: the asset group in Dagster (bronze, silver, gold).
        state_format: for a ``transform``, a name for how it keeps its state (the built-in
            sessions: ``sessions-jvm/1``). It is recorded in the checkpoint, and a checkpoint
            started with another one is refused with the rebuild remedy (Spark cannot read one
            operator's state as another's).
        state_partitions: the state partitions of a new checkpoint of this stream (default:
            the session's ``spark.sql.shuffle.partitions``). Every batch runs a task per
            partition, input or not; a stream with a handful of keys and a short trigger
            (``service_status``) needs one. Spark keeps a checkpoint's own count.
    """

    name: str
    description: str
    source: KafkaSource | TableSource
    key: str | tuple[str, ...]
    output_schema: FieldTypes
    reads: Literal["bronze", "kafka"] = "bronze"
    logic: KeyedLogic | None = None
    transform: Callable[..., DataFrame] | None = None
    output_mode: Literal["append", "update"] = "append"
    event_time: str = "event_time"
    watermark: timedelta | None = None
    timeout: Timeout | None = None
    key_lifetime: timedelta | None = None
    trigger: timedelta = timedelta(seconds=10)
    sink_table: str | None = None
    initial_state: InitialState | None = None
    unique_key: str | None = None
    publish_topic: str | None = None
    layer: str = "gold"
    state_format: str | None = None
    state_partitions: int | None = None

    @property
    def table(self) -> str:
        return self.sink_table or self.name

    @property
    def keys(self) -> tuple[str, ...]:
        """The key columns: one for a plain key, several for a composite one."""
        if isinstance(self.key, (tuple, list)):
            return tuple(self.key)
        return (self.key,)  # a name (a wrong type is refused by the validation with its fix)

    @property
    def source_table(self) -> str:
        """The bronze or upstream table (for a stream that reads Kafka: the bronze table that
        keeps the same records, not what the query reads)."""
        return self.source.table

    @property
    def output(self) -> StructType:
        return struct_of(dict(self.output_schema))

    @property
    def outputs(self) -> dict[str, StructType]:
        tables = {self.table: self.output}
        if self.watermark is not None:
            tables[LATE_TABLE] = LATE_EVENTS
        return tables

    @property
    def upstream(self) -> str:
        return self.topic or self.source_table

    @property
    def topic(self) -> str | None:
        """The Kafka topic the query reads (``reads="kafka"``); None when it reads a table."""
        source = self.source
        return source.topic if isinstance(source, KafkaSource) and self.reads == "kafka" else None

    @property
    def processing_time_timers(self) -> bool:
        return self.timeout == "processing_time"

    @property
    def time_mode(self) -> str:
        """The transformWithState time mode of plain-Python logic on a new checkpoint. A
        watermark without a timeout still runs in event time: only then does Spark drop the rows
        behind the watermark (which the platform keeps in ``late_events``) instead of handing
        them to the logic too."""
        if self.timeout == "processing_time":
            return "ProcessingTime"
        return "EventTime" if self.timeout == "event_time" or self.watermark else "None"
