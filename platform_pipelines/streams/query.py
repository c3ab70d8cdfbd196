"""Turning a declared stream into an unstarted Spark query (the runner adds checkpoint, trigger
and query name).

- An ``IngestStream`` reads its Kafka topic and writes through an ``IngestWriter``
  (``streams.ingest_writer``).
- A ``StatefulStream`` reads its upstream Delta table in whole versions (or, with
  ``reads="kafka"``, its Kafka topic, parsed and validated as bronze does, good records only),
  adds the watermark (``streams.watermark``), applies its logic and writes through a
  ``StageWriter`` (``streams.stage_writer``), which also sends the rows to the stream's
  ``publish_topic`` if it has one (``streams.publish``).

Batch sizes: a catch-up read of Kafka takes at most ``max_offsets_per_trigger`` records per batch;
a continuous read takes everything new in every partition, because a per-trigger limit reads the
partitions of a backlog at different event-time positions and the watermark would then drop
on-time events. Delta reads are never limited: a stateful stream sees every upstream version
whole (see ``lakehouse.delta_log``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import StructType

from platform_pipelines.kafka.security import kafka_security
from platform_pipelines.lakehouse.checkpoints import KafkaOffsets, read_plan, recorded_time_mode
from platform_pipelines.lakehouse.delta import Lakehouse, checkpoint_query_id
from platform_pipelines.streams.batch_gate import GatedBatch
from platform_pipelines.streams.bronze import RecordParser
from platform_pipelines.streams.declare import IngestStream, KafkaSource, StatefulStream, Stream
from platform_pipelines.streams.ingest_writer import IngestWriter
from platform_pipelines.streams.kafka_input import KafkaInput, observed_input, offsets_option
from platform_pipelines.streams.keyed import apply_keyed_logic
from platform_pipelines.streams.publish import Publisher
from platform_pipelines.streams.sink import BatchCounts, Target
from platform_pipelines.streams.stage_writer import StageWriter
from platform_pipelines.streams.validate import DeclarationError
from platform_pipelines.streams.watermark import with_watermark

_UNLIMITED_FILES = 1_000_000_000
# How long the broker may hold a fetch of Spark's Kafka consumers when it has no new record to
# give. Kafka's default of 500 ms cost every batch that read up to a partition's end ~1 s on 2
# cores (a 300,000-record catch-up: its last full batch 2.8-3.3 s against 1.7-2.0 s for the
# others; with 20 ms, 1.7-2.2 s like the rest). A task only asks for offsets that exist, so a
# shorter wait costs nothing but an earlier empty answer when a partition is idle.
KAFKA_FETCH_MAX_WAIT_MS = "20"


@dataclass(frozen=True)
class StreamContext:
    """What building a query may use: the session, the lakehouse, the Kafka address, the
    catch-up batch bound (None for a continuous read) and whom to tell what each batch did."""

    spark: SparkSession
    lakehouse: Lakehouse
    kafka_bootstrap_servers: str
    max_offsets_per_trigger: int | None = None
    on_batch: Callable[[str, int, BatchCounts], None] | None = None

    def read_topic(self, topic: str, starting_timestamp_ms: int = 0) -> DataFrame:
        """The topic as a stream of Kafka rows; a new checkpoint starts at the earliest offset,
        or at the first record at or after ``starting_timestamp_ms``."""
        reader = (
            self.spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.kafka_bootstrap_servers)
            .options(**kafka_security().spark_options())  # PLATFORM_KAFKA_*: TLS, SASL
            .option("kafka.fetch.max.wait.ms", KAFKA_FETCH_MAX_WAIT_MS)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("failOnDataLoss", "true")
        )
        if starting_timestamp_ms:  # a partition with nothing that new starts at its end
            reader = reader.option("startingTimestamp", str(starting_timestamp_ms)).option(
                "startingOffsetsByTimestampStrategy", "latest"
            )
        if self.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", self.max_offsets_per_trigger)
        return reader.load()

    def read_offsets(self, start: KafkaOffsets, end: KafkaOffsets) -> DataFrame:
        """The Kafka records from ``start`` up to ``end``, as a batch (a partition missing from
        ``start`` is read from its earliest offset)."""
        return (
            self.spark.read.format("kafka")
            .option("kafka.bootstrap.servers", self.kafka_bootstrap_servers)
            .options(**kafka_security().spark_options())
            .option("kafka.fetch.max.wait.ms", KAFKA_FETCH_MAX_WAIT_MS)
            .option("assign", json.dumps({t: sorted(parts) for t, parts in end.items()}))
            .option("startingOffsets", json.dumps(offsets_option(start, end)))
            .option("endingOffsets", json.dumps(offsets_option(end)))
            .option("failOnDataLoss", "true")
            .load()
        )

    def read_table(self, name: str, starting_version: int | None = None) -> DataFrame:
        """An upstream Delta table as a stream of its appended rows, whole versions per batch;
        a new checkpoint starts at ``starting_version`` (default: the table's beginning)."""
        reader = self.spark.readStream.format("delta").option(
            "maxFilesPerTrigger", _UNLIMITED_FILES
        )
        if starting_version is not None:
            reader = reader.option("startingVersion", starting_version)
        return reader.load(str(self.lakehouse.table(name)))


def build_query(ctx: StreamContext, stream: Stream) -> DataStreamWriter:
    """The unstarted writer of ``stream``'s query."""
    target = Target(
        ctx.lakehouse, stream.name, checkpoint_query_id(ctx.lakehouse.checkpoint(stream.name))
    )
    if isinstance(stream, IngestStream):
        writer = IngestWriter(stream.source, target)
        plan = read_plan(ctx.lakehouse.checkpoint(stream.name))
        start_ms = plan.starting_timestamp_ms if plan else 0
        records = ctx.read_topic(stream.source.topic, start_ms)
        return records.writeStream.foreachBatch(GatedBatch(target.query_id, writer))
    assert isinstance(stream, StatefulStream)
    return _stateful_query(ctx, stream, target)


def _stateful_query(ctx: StreamContext, stream: StatefulStream, target: Target) -> DataStreamWriter:
    plan = read_plan(ctx.lakehouse.checkpoint(stream.name))
    kafka = None
    if isinstance(stream.source, KafkaSource) and stream.topic:  # reads="kafka"
        kafka = KafkaInput(
            ctx.spark, target.query_id, ctx.read_offsets, RecordParser(stream.source)
        )
        records = ctx.read_topic(stream.topic, plan.starting_timestamp_ms if plan else 0)
        # current_timestamp() is the batch's own time, recorded in its offsets file.
        parsed = kafka.parser.parse(records, F.current_timestamp())
        source = kafka.good_rows(observed_input(parsed, stream.event_time))
    else:
        source = ctx.read_table(stream.source_table, plan.starting_version if plan else None)
    if stream.watermark is not None:
        source = with_watermark(source, stream.event_time, stream.watermark)
    result = _apply_logic(ctx, stream, source)
    _check_output(stream, result.schema)
    mode = recorded_time_mode(ctx.lakehouse.checkpoint(stream.name)) or stream.time_mode
    # Only an event-time operator (or a native one) drops the rows behind the watermark.
    drops_late = stream.watermark is not None and (
        stream.transform is not None or mode == "EventTime"
    )
    publish = None
    if stream.publish_topic:
        publish = Publisher(ctx.kafka_bootstrap_servers, stream.publish_topic, stream.keys)
        publish.ensure_topic()
    writer = StageWriter(stream, target, ctx.lakehouse, plan, drops_late, kafka, publish)
    return (
        result.select(*stream.output.fieldNames())
        .writeStream.outputMode(stream.output_mode)
        .foreachBatch(GatedBatch(target.query_id, writer))
    )


def _apply_logic(ctx: StreamContext, stream: StatefulStream, source: DataFrame) -> DataFrame:
    if stream.transform is not None:
        if stream.initial_state is not None:  # seeded: the seed rows, or None
            return stream.transform(source, _initial_state(ctx.spark, ctx.lakehouse, stream))
        return stream.transform(source)
    assert stream.logic is not None  # validated
    return apply_keyed_logic(
        source,
        stream.keys,
        stream.logic,
        stream.output,
        stream.output_mode,
        recorded_time_mode(ctx.lakehouse.checkpoint(stream.name)) or stream.time_mode,  # type: ignore[arg-type]
        event_time_column=stream.event_time if stream.event_time in source.columns else None,
        initial_state=_initial_state(ctx.spark, ctx.lakehouse, stream),
    )


def _initial_state(
    spark: SparkSession, lakehouse: Lakehouse, stream: StatefulStream
) -> DataFrame | None:
    """The seed rows, only for a stream starting on a new checkpoint (Spark ignores it later)."""
    seed = stream.initial_state
    # Spark creates commits/ when the query starts; only a committed batch means it has state.
    if seed is None or any((lakehouse.checkpoint(stream.name) / "commits").glob("[0-9]*")):
        return None
    path = lakehouse.table(seed.table)
    if not (path / "_delta_log").exists():
        return None
    rows = spark.read.format("delta").load(str(path))
    latest = Window.partitionBy(*stream.keys).orderBy(*[F.col(c).desc() for c in seed.latest_by])
    return rows.withColumn("_n", F.row_number().over(latest)).where("_n = 1").drop("_n")


def _check_output(stream: StatefulStream, actual: StructType) -> None:
    declared = stream.output
    missing = [n for n in declared.fieldNames() if n not in actual.fieldNames()]
    wrong = [
        f"{f.name} is {actual[f.name].dataType.simpleString()}, declared {f.dataType.simpleString()}"
        for f in declared.fields
        if f.name in actual.fieldNames()
        and actual[f.name].dataType.simpleString() != f.dataType.simpleString()
    ]
    if missing or wrong:
        problems = (
            [
                f"output_schema: the stream does not produce {', '.join(missing)}; add them "
                "to its output or remove them from output_schema."
            ]
            if missing
            else []
        )
        problems += [f"output_schema: {w}; declare the type the stream produces." for w in wrong]
        raise DeclarationError(stream.name, problems)
