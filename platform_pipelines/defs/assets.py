"""Asset specs for the lineage graph: Kafka topics as external assets, one asset per Delta table."""

from __future__ import annotations

import dagster as dg
from pyspark.sql.types import StructType

from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.tables import LATE_TABLE, QUARANTINE_TABLE
from platform_pipelines.streams.declare import IngestStream, StatefulStream, Stream

# The platform's shared tables: what they hold (their writers are listed on the asset).
SHARED_DESCRIPTIONS = {
    QUARANTINE_TABLE: "Records from Kafka that did not enter the platform: the reason (every rule "
    "they break), the raw value (or the original bytes when it is not valid UTF-8 or too large), "
    "the source topic and the Kafka position. Nothing is lost.",
    LATE_TABLE: "Rows a stream's watermark refused: the stream, the reason, how late each was, the "
    "watermark that judged it and the row itself as JSON, so it can be inspected and replayed.",
}


def column_schema(schema: StructType) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                f.name,
                f.dataType.simpleString(),
                constraints=dg.TableColumnConstraints(nullable=f.nullable),
            )
            for f in schema.fields
        ]
    )


def topic_spec(topic: str, description: str) -> dg.AssetSpec:
    """A Kafka topic as an external asset: the start of the lineage graph."""
    return dg.AssetSpec(
        key=topic,
        description=description or f"Kafka topic {topic}.",
        kinds={"kafka"},
        group_name="kafka",
    )


def published_spec(stream: StatefulStream) -> dg.AssetSpec:
    """A Kafka topic a stream publishes its rows to: downstream of the stream's table."""
    return dg.AssetSpec(
        key=str(stream.publish_topic),
        deps=[stream.table],
        description=f"Kafka topic: every row of `{stream.table}` as JSON, keyed by "
        f"{', '.join(stream.keys)}, sent while the batch commits it (at least once: drop copies "
        f"by {stream.unique_key}). Subscribe here to react without polling the table.",
        kinds={"kafka"},
        group_name="kafka",
    )


def table_spec(
    table: str, schema: StructType, writers: list[Stream], lakehouse: Lakehouse
) -> dg.AssetSpec:
    """The asset of one Delta table; a table several streams write (quarantine) lists them all."""
    main = writers[0]
    shared = table in SHARED_DESCRIPTIONS
    return dg.AssetSpec(
        key=table,
        deps=sorted({w.upstream for w in writers}),
        description=SHARED_DESCRIPTIONS.get(table, main.description),
        kinds={"spark", "delta"},
        group_name="platform" if shared else main.layer,
        metadata={
            "table_path": dg.MetadataValue.path(str(lakehouse.table(table))),
            "checkpoint": dg.MetadataValue.path(str(lakehouse.checkpoint(main.name))),
            "stream": ", ".join(w.name for w in writers),
            "dagster/column_schema": column_schema(schema),
        },
        tags={"platform/stream": main.name} if len(writers) == 1 else {},
    )


def all_specs(streams: list[Stream], lakehouse: Lakehouse) -> list[dg.AssetSpec]:
    """Topics read first, then one spec per table in the order the streams are declared, then
    the topics streams publish to."""
    topics = {s.source.topic: s.source.description for s in streams if isinstance(s, IngestStream)}
    specs = [topic_spec(topic, text) for topic, text in sorted(topics.items())]
    writers: dict[str, list[Stream]] = {}
    schemas: dict[str, StructType] = {}
    for stream in streams:
        for table, schema in stream.outputs.items():
            writers.setdefault(table, []).append(stream)
            schemas.setdefault(table, schema)
    specs += [table_spec(t, schemas[t], w, lakehouse) for t, w in writers.items()]
    specs += [
        published_spec(s) for s in streams if isinstance(s, StatefulStream) and s.publish_topic
    ]
    return specs
