"""Stream declarations: what each stateful query reads, computes and writes, in one place.

A ``StreamDefinition`` is everything the platform needs to run a stream and show it in Dagster:
its name (shared by table, checkpoint, asset and query), its upstream asset, the tables it writes
with their schemas, and ``build``, which turns a ``StreamContext`` into an unstarted
``DataStreamWriter``. The runner adds the checkpoint, trigger and query name, so a declaration never
deals with them. The built-in streams are declared in ``builtin.py`` with this same mechanism.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import StructType

from platform_pipelines.lakehouse.delta import Lakehouse


@dataclass(frozen=True)
class StreamContext:
    """What a stream's ``build`` may use: the session, the lakehouse and the Kafka address."""

    spark: SparkSession
    lakehouse: Lakehouse
    kafka_bootstrap_servers: str
    max_offsets_per_trigger: int | None = None

    def read_topic(self, topic: str) -> DataFrame:
        """The topic as a stream of Kafka rows, from the earliest offset on a new checkpoint."""
        reader = (
            self.spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.kafka_bootstrap_servers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("failOnDataLoss", "true")
        )
        if self.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", self.max_offsets_per_trigger)
        return reader.load()

    def read_table(self, name: str) -> DataFrame:
        """An upstream Delta table of the lakehouse as a stream of its appended rows."""
        return self.spark.readStream.format("delta").load(str(self.lakehouse.table(name)))

    def delta_sink(self, df: DataFrame, name: str) -> DataStreamWriter:
        """Append ``df`` to the Delta table ``name``; exactly once through the checkpoint."""
        return (
            df.writeStream.format("delta")
            .outputMode("append")
            .option("path", str(self.lakehouse.table(name)))
        )


@dataclass(frozen=True)
class StreamDefinition:
    """One stateful streaming query, declared once.

    Attributes:
        name: table, checkpoint, asset and query name (a lowercase identifier).
        description: shown on the asset and the job in the Dagster UI.
        upstream: the asset it reads: a Kafka topic or another stream's table.
        outputs: every Delta table it writes, ``name`` first, with its schema. Tables are created
            empty before the query starts so that downstream streams can start at the same time.
        build: returns the unstarted writer of the query.
        layer: bronze, silver or gold (the Dagster asset group).
        upstream_is_topic: whether ``upstream`` is a Kafka topic (else a lakehouse table).
        watermark: the event-time watermark delay of its stateful operator, for the docs and UI.
        trigger: the default interval between micro-batches in continuous runs.
        processing_time_timers: its state has processing-time timers, so Spark keeps scheduling
            batches for it and a catch-up run must stop it once it has caught up.
        upstream_description: for a topic upstream, its description in the UI.
        output_descriptions: descriptions of the extra outputs (default: ``description``).
    """

    name: str
    description: str
    upstream: str
    outputs: dict[str, StructType]
    build: Callable[[StreamContext], DataStreamWriter]
    layer: str
    upstream_is_topic: bool = False
    watermark: timedelta | None = None
    trigger: timedelta = timedelta(seconds=10)
    processing_time_timers: bool = False
    upstream_description: str = ""
    output_descriptions: dict[str, str] = field(default_factory=dict)


class StreamRegistry:
    """The declared streams, in dependency order (upstream first)."""

    def __init__(self, streams: Iterable[StreamDefinition] = ()) -> None:
        self._streams: dict[str, StreamDefinition] = {}
        for stream in streams:
            self.register(stream)

    def register(self, stream: StreamDefinition) -> StreamDefinition:
        if stream.name in self._streams:
            raise ValueError(f"A stream named {stream.name!r} is already declared.")
        self._streams[stream.name] = stream
        return stream

    def get(self, name: str) -> StreamDefinition:
        try:
            return self._streams[name]
        except KeyError:
            known = ", ".join(self._streams)
            raise KeyError(f"No stream named {name!r}; declared streams: {known}.") from None

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.in_dependency_order())

    def tables(self) -> dict[str, StructType]:
        """Every table the declared streams write, with its schema."""
        return {t: schema for s in self._streams.values() for t, schema in s.outputs.items()}

    def names(self) -> list[str]:
        return [s.name for s in self.in_dependency_order()]

    def in_dependency_order(self) -> list[StreamDefinition]:
        """Streams sorted so that every stream comes after the one whose table it reads."""
        produced_by = {out: s.name for s in self._streams.values() for out in s.outputs}
        ordered: list[StreamDefinition] = []
        seen: set[str] = set()

        def visit(stream: StreamDefinition) -> None:
            if stream.name in seen:
                return
            seen.add(stream.name)
            parent = produced_by.get(stream.upstream)
            if parent and parent != stream.name:
                visit(self._streams[parent])
            ordered.append(stream)

        for stream in self._streams.values():
            visit(stream)
        return ordered
