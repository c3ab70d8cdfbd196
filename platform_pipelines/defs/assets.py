"""Asset specs for the lineage graph: Kafka topics as external assets, one asset per Delta table."""

from __future__ import annotations

import dagster as dg
from pyspark.sql.types import StructType

from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.streams.registry import StreamDefinition, StreamRegistry


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


def table_spec(table: str, schema: StructType, writers: list[StreamDefinition],
               lakehouse: Lakehouse) -> dg.AssetSpec:  # fmt: skip
    """The asset of one Delta table; a table several streams write (quarantine) lists them all."""
    main = writers[0]
    return dg.AssetSpec(
        key=table,
        deps=sorted({w.upstream for w in writers}),
        description=main.output_descriptions.get(table, main.description),
        kinds={"spark", "delta"},
        group_name=main.layer,
        metadata={
            "table_path": dg.MetadataValue.path(str(lakehouse.table(table))),
            "checkpoint": dg.MetadataValue.path(str(lakehouse.checkpoint(main.name))),
            "stream": ", ".join(w.name for w in writers),
            "dagster/column_schema": column_schema(schema),
        },
        tags={"platform/stream": main.name} if len(writers) == 1 else {},
    )


def all_specs(registry: StreamRegistry, lakehouse: Lakehouse) -> list[dg.AssetSpec]:
    """Topics first, then one spec per table in the order the streams are declared."""
    topics = {s.upstream: s.upstream_description for s in registry if s.upstream_is_topic}
    specs = [topic_spec(topic, text) for topic, text in sorted(topics.items())]
    writers: dict[str, list[StreamDefinition]] = {}
    schemas: dict[str, StructType] = {}
    for stream in registry:
        for table, schema in stream.outputs.items():
            writers.setdefault(table, []).append(stream)
            schemas.setdefault(table, schema)
    specs += [table_spec(t, schemas[t], w, lakehouse) for t, w in writers.items()]
    return specs
