"""Turns declarations into runnable ``StreamDefinition``s (the registry's currency)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import StructType

from platform_pipelines.lakehouse.delta import Lakehouse, checkpoint_query_id, upsert_exactly_once
from platform_pipelines.streams.bronze import bronze_batch_writer
from platform_pipelines.streams.declare import KafkaSource, StatefulStream
from platform_pipelines.streams.keyed import apply_keyed_logic
from platform_pipelines.streams.registry import StreamContext, StreamDefinition, StreamRegistry
from platform_pipelines.streams.schemas import KAFKA_POSITION, QUARANTINE, struct_of
from platform_pipelines.streams.validate import DeclarationError, source_problems, stream_problems

QUARANTINE_DESCRIPTION = (
    "Records from Kafka that could not be parsed (invalid JSON, a missing required field, a value "
    "of the wrong type or outside its allowed values): the raw value, the reason, the source topic "
    "and the Kafka position, so nothing is lost."
)
_TIME_MODES = {"event_time": "EventTime", "processing_time": "ProcessingTime", None: "None"}


def ingest_definition(source: KafkaSource) -> StreamDefinition:
    """The bronze stream of a Kafka source: parsed rows to ``<topic>_raw``, bad ones to quarantine."""
    fields = struct_of(dict(source.schema), source.required)

    def build(ctx: StreamContext) -> DataStreamWriter:
        query_id = checkpoint_query_id(ctx.lakehouse.checkpoint(source.table))
        write = bronze_batch_writer(
            source.topic, fields, source.required, source.allowed_values,
            ctx.lakehouse.table(source.table), ctx.lakehouse.table("quarantine"),
            app_id=f"{source.table}/{query_id}",
        )  # fmt: skip
        return ctx.read_topic(source.topic).writeStream.foreachBatch(write)

    return StreamDefinition(
        name=source.table,
        description=(
            f"Bronze: every record of the Kafka topic `{source.topic}` parsed against its schema, "
            "with its Kafka partition, offset and timestamp; bad records go to `quarantine`."
        ),
        upstream=source.topic,
        upstream_is_topic=True,
        upstream_description=source.description,
        outputs={
            source.table: StructType(list(fields.fields) + KAFKA_POSITION),
            "quarantine": QUARANTINE,
        },
        output_descriptions={"quarantine": QUARANTINE_DESCRIPTION},
        build=build,
        layer="bronze",
    )


def declare_stream(registry: StreamRegistry, stream: StatefulStream) -> StreamDefinition:
    """Validate ``stream`` against ``registry`` and register it (and its Kafka ingest stream)."""
    tables = registry.tables()
    problems = source_problems(stream.source, tables)
    ingest = None
    if isinstance(stream.source, KafkaSource) and not problems:
        ingest = ingest_definition(stream.source)
        if ingest.name not in registry.names():
            tables = {**tables, **ingest.outputs}
    declared = [(s.name, t) for s in registry for t in s.outputs]
    problems += stream_problems(stream, tables.get(stream.source_table), declared)
    if stream.initial_state and stream.initial_state.table not in {*tables, stream.table}:
        problems.append(f"initial_state: table {stream.initial_state.table!r} is not declared; "
                        "use a declared table or the stream's own sink table.")  # fmt: skip
    if problems:
        raise DeclarationError(stream.name, problems)
    if ingest is not None and ingest.name not in registry.names():
        registry.register(ingest)
    return registry.register(stateful_definition(stream))


def stateful_definition(stream: StatefulStream) -> StreamDefinition:
    """The stateful query of a (validated) declaration."""
    output = struct_of(dict(stream.output_schema))

    def build(ctx: StreamContext) -> DataStreamWriter:
        source = ctx.read_table(stream.source_table)
        if stream.watermark is not None:
            delay = f"{int(stream.watermark.total_seconds())} seconds"
            source = source.withWatermark(stream.event_time, delay)
        result = _apply_logic(ctx, stream, source, output)
        _check_output(stream, result.schema, output)
        result = result.select(*output.fieldNames())
        if stream.output_mode == "append":
            return ctx.delta_sink(result, stream.table)
        app_id = f"{stream.table}/{checkpoint_query_id(ctx.lakehouse.checkpoint(stream.name))}"
        path = ctx.lakehouse.table(stream.table)
        return result.writeStream.outputMode("update").foreachBatch(
            lambda batch, batch_id: upsert_exactly_once(batch, path, stream.key, app_id, batch_id)
        )

    return StreamDefinition(
        name=stream.name,
        description=stream.description,
        upstream=stream.source_table,
        outputs={stream.table: output},
        build=build,
        layer=stream.layer,
        watermark=stream.watermark,
        trigger=stream.trigger,
        processing_time_timers=stream.timeout == "processing_time",
    )


def _apply_logic(ctx: StreamContext, stream: StatefulStream, source: DataFrame,
                 output: StructType) -> DataFrame:  # fmt: skip
    if stream.transform is not None:
        return stream.transform(source)
    assert stream.logic is not None  # validated
    time_mode = _TIME_MODES[stream.timeout]
    return apply_keyed_logic(
        source, stream.key, stream.logic, output, stream.output_mode, time_mode,  # type: ignore[arg-type]
        event_time_column=stream.event_time if stream.event_time in source.columns else None,
        initial_state=_initial_state(ctx.spark, ctx.lakehouse, stream),
    )  # fmt: skip


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
    latest = Window.partitionBy(stream.key).orderBy(*[F.col(c).desc() for c in seed.latest_by])
    return rows.withColumn("_n", F.row_number().over(latest)).where("_n = 1").drop("_n")


def _check_output(stream: StatefulStream, actual: StructType, declared: StructType) -> None:
    missing = [n for n in declared.fieldNames() if n not in actual.fieldNames()]
    wrong = [
        f"{f.name} is {actual[f.name].dataType.simpleString()}, declared {f.dataType.simpleString()}"
        for f in declared.fields
        if f.name in actual.fieldNames()
        and actual[f.name].dataType.simpleString() != f.dataType.simpleString()
    ]
    if missing or wrong:
        problems = [f"output_schema: the stream does not produce {', '.join(missing)}; add them "
                    "to its output or remove them from output_schema."] if missing else []  # fmt: skip
        problems += [f"output_schema: {w}; declare the type the stream produces." for w in wrong]
        raise DeclarationError(stream.name, problems)
