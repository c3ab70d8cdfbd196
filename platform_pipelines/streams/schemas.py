"""Spark schemas of the tables the built-in streams write, and the type names a declaration uses."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from platform_pipelines.events import CLICKSTREAM_FIELDS, CLICKSTREAM_REQUIRED
from platform_pipelines.lakehouse.tables import KAFKA_POSITION

# The type names a declaration may use, and their Spark types.
FIELD_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "long": LongType(),
    "int": IntegerType(),
    "double": DoubleType(),
    "boolean": BooleanType(),
    "timestamp": TimestampType(),
    "array<string>": ArrayType(StringType()),
}


def struct_of(fields: dict[str, str], required: tuple[str, ...] = ()) -> StructType:
    """A StructType for a ``{name: json type}`` field list; ``required`` fields are non-nullable."""
    return StructType(
        [StructField(n, FIELD_TYPES[t], n not in required) for n, t in fields.items()]
    )


CLICKSTREAM = struct_of(CLICKSTREAM_FIELDS)

# silver: one row per event_id, the clickstream fields only.
EVENTS = struct_of(CLICKSTREAM_FIELDS, CLICKSTREAM_REQUIRED)

__all__ = ["CLICKSTREAM", "EVENTS", "FIELD_TYPES", "KAFKA_POSITION", "fields_of", "struct_of"]


def fields_of(schema: StructType) -> dict[str, str]:
    """The ``{column: type name}`` form of a schema, as a declaration writes it."""
    names = {t.simpleString(): name for name, t in FIELD_TYPES.items()}
    return {f.name: names[f.dataType.simpleString()] for f in schema.fields}
