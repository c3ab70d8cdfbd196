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


def stream_specs(stream: StreamDefinition, lakehouse: Lakehouse) -> list[dg.AssetSpec]:
    """One spec per table the stream writes, each depending on the stream's upstream asset."""
    return [
        dg.AssetSpec(
            key=table,
            deps=[stream.upstream],
            description=stream.output_descriptions.get(table, stream.description),
            kinds={"spark", "delta"},
            group_name=stream.layer,
            metadata={
                "table_path": dg.MetadataValue.path(str(lakehouse.table(table))),
                "checkpoint": dg.MetadataValue.path(str(lakehouse.checkpoint(stream.name))),
                "stream": stream.name,
                "dagster/column_schema": column_schema(schema),
            },
            tags={"platform/stream": stream.name},
        )
        for table, schema in stream.outputs.items()
    ]


def all_specs(registry: StreamRegistry, lakehouse: Lakehouse) -> list[dg.AssetSpec]:
    topics = {s.upstream: s.upstream_description for s in registry if s.upstream_is_topic}
    specs = [topic_spec(topic, text) for topic, text in sorted(topics.items())]
    for stream in registry:
        specs.extend(stream_specs(stream, lakehouse))
    return specs
