"""Declaring a stream: the one place a user describes a stateful stream.

A ``StatefulStream`` names its source (a Kafka topic with a schema, or another stream's table), the
key, the logic (plain-Python ``KeyedLogic``, or a Spark ``transform`` for native operators), the
output schema and mode, the watermark, the timeout and the sink table. ``StreamRegistry.declare``
validates it against what is already declared, refusing with every problem and its fix, and turns
it into ``StreamDefinition``s: a bronze ingest stream for a Kafka source (parse + quarantine), then
the stateful stream. The Dagster job, asset and lineage follow from the definition.

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
        timeout="event_time",
    )
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from pyspark.sql import DataFrame

from platform_pipelines.state.keyed import KeyedLogic

FieldTypes = Mapping[str, str]
Timeout = Literal["event_time", "processing_time"]


@dataclass(frozen=True)
class KafkaSource:
    """A Kafka topic of JSON records. It gets a bronze stream writing ``table`` (``<topic>_raw``);
    records that do not parse, lack a ``required`` field or have a value outside ``allowed_values``
    go to the ``quarantine`` table with the reason."""

    topic: str
    schema: FieldTypes
    required: tuple[str, ...] = ()
    allowed_values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    description: str = ""
    raw_table: str | None = None

    @property
    def table(self) -> str:
        """The bronze table: ``raw_table``, else the topic name made an identifier + ``_raw``."""
        return self.raw_table or re.sub(r"[^a-z0-9_]", "_", self.topic.lower()) + "_raw"


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


@dataclass(frozen=True)
class StatefulStream:
    """Everything about one stateful stream (see the module docstring for an example).

    Attributes:
        name: the stream's name: query, checkpoint and (by default) sink table and asset key.
            Lowercase letters, digits and underscores, starting with a letter.
        description: shown on the asset and job in the Dagster UI.
        source: ``KafkaSource`` or ``TableSource``.
        key: the column whose values own separate state.
        output_schema: ``{column: type}`` of the rows the stream emits (types: string, long, int,
            double, boolean, timestamp, array<string>).
        logic: plain-Python per-key logic (``platform_pipelines.state.keyed.KeyedLogic``).
        transform: instead of ``logic``, a function of the (watermarked) source DataFrame, for
            Spark's native stateful operators.
        output_mode: ``append`` (emitted rows are final) or ``update`` (one row per key, upserted).
        event_time: the source's event-time column.
        watermark: how late an event may arrive; needed for event-time timeouts and bounded state.
        timeout: ``event_time`` (fires when the watermark passes the logic's timer) or
            ``processing_time`` (fires on a later trigger, even without new data), or None.
        trigger: the default interval between micro-batches in continuous runs.
        sink_table: the Delta table written (default: ``name``).
        initial_state: where to seed state from on a new checkpoint (``InitialState``); may be
            the stream's own sink table, so a rebuilt checkpoint resumes from the last known state.
        layer: the asset group in Dagster (bronze, silver, gold).
    """

    name: str
    description: str
    source: KafkaSource | TableSource
    key: str
    output_schema: FieldTypes
    logic: KeyedLogic | None = None
    transform: Callable[[DataFrame], DataFrame] | None = None
    output_mode: Literal["append", "update"] = "append"
    event_time: str = "event_time"
    watermark: timedelta | None = None
    timeout: Timeout | None = None
    trigger: timedelta = timedelta(seconds=10)
    sink_table: str | None = None
    initial_state: InitialState | None = None
    layer: str = "gold"

    @property
    def table(self) -> str:
        return self.sink_table or self.name

    @property
    def source_table(self) -> str:
        return self.source.table
