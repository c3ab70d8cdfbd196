"""Bronze: Kafka records checked against their source's declaration; the bad ones kept with why.

``parse_records`` turns Kafka rows into the typed fields plus a ``reason`` column that is null for
a good record and otherwise lists every rule it breaks:

- larger than ``max_record_bytes`` (not parsed; its first bytes and its size are kept);
- not valid UTF-8 (its original bytes are kept, since text would replace them);
- not JSON, or JSON that is not an object;
- a field of the wrong JSON type (an object where a string is expected, a number in a timestamp);
- a required field missing, null or an empty string; a value outside ``allowed_values``;
- an event time further ahead of the processing clock than ``max_future``;
- a declared expectation that is false.

JSON is parsed once into a Variant, so each field's JSON type is known exactly. Fields the schema
does not declare are kept, with their JSON types, in ``_rescued_data`` (a JSON object; null when a
record has none), as Auto Loader's rescued-data column does.
"""

from __future__ import annotations

import operator
from datetime import datetime
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from platform_pipelines.core.units import duration
from platform_pipelines.lakehouse.tables import KAFKA_POSITION, RESCUED_COLUMN
from platform_pipelines.streams.declare import KafkaSource
from platform_pipelines.streams.expressions import human_duration

KEPT_BYTES = 4096  # how much of an oversized record the quarantine keeps
POSITION = [f.name for f in KAFKA_POSITION]
# The JSON (Variant) types each declared type accepts; ``schema_of_variant`` names them.
_ACCEPTED = {
    "string": ("STRING",),
    "timestamp": ("STRING",),
    "long": ("BIGINT", "DECIMAL"),
    "int": ("BIGINT", "DECIMAL"),
    "double": ("BIGINT", "DECIMAL", "DOUBLE"),
    "boolean": ("BOOLEAN",),
    "array<string>": ("ARRAY<STRING>", "ARRAY<VOID>"),
}
_CAST = {"long": "bigint", "int": "int", "double": "double", "boolean": "boolean",
         "array<string>": "array<string>"}  # fmt: skip


def parse_records(kafka_rows: DataFrame, source: KafkaSource, now: datetime) -> DataFrame:
    """Kafka rows -> ``raw_value``, ``raw_bytes``, ``raw_size``, the Kafka position, the typed
    fields and ``reason`` (null when the record is good).

    ``now`` is the processing clock that event times are judged against: the micro-batch's own
    timestamp, so that a replayed batch judges every record exactly as the first attempt did.
    """
    value = F.col("value")
    text = value.cast("string")
    too_big = F.length(value) > F.lit(source.max_record_bytes)
    bad_utf8 = ~F.is_valid_utf8(text)
    keep_text = ~too_big & ~bad_utf8
    parsed = kafka_rows.select(
        F.when(keep_text, text).alias("raw_value"),
        F.when(too_big, F.substring(value, 1, KEPT_BYTES)).when(bad_utf8, value).alias("raw_bytes"),
        F.length(value).cast("long").alias("raw_size"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.when(keep_text, F.try_parse_json(text)).alias("_v"),
        too_big.alias("_too_big"),
        bad_utf8.alias("_bad_utf8"),
    )
    kinds = {
        n: F.schema_of_variant(F.try_variant_get("_v", _path(n), "variant")) for n in source.schema
    }
    typed = [_typed(n, t, kinds[n]).alias(n) for n, t in source.schema.items()]
    with_fields = parsed.select("*", *[k.alias(f"_t_{n}") for n, k in kinds.items()]).select(
        "*", *typed
    )
    problems = _problems(source, now)
    return with_fields.select(
        "raw_value", "raw_bytes", "raw_size", *POSITION, *source.schema,
        _rescued(source).alias(RESCUED_COLUMN),
        F.nullif(F.concat_ws("; ", *problems), F.lit("")).alias("reason"),
    )  # fmt: skip


def _rescued(source: KafkaSource) -> Column:
    """The record's undeclared fields as a JSON object (types kept), null when there are none."""
    fields = F.try_variant_get("_v", "$", "map<string,variant>")  # null unless a JSON object
    declared = F.array(*[F.lit(n) for n in source.schema])
    undeclared = F.map_filter(fields, lambda k, _: ~F.array_contains(declared, k))
    return F.when(F.size(undeclared) > 0, F.to_json(undeclared))


def _path(name: str) -> str:
    return f'$["{name}"]'


def _kind_ok(type_name: str, kind: Column) -> Column:
    return reduce(operator.or_, [kind.startswith(a) for a in _ACCEPTED[type_name]])


def _typed(name: str, type_name: str, kind: Column) -> Column:
    """The field as its declared type; null when missing or of the wrong JSON type."""
    if type_name in ("string", "timestamp"):
        as_text = F.when(kind == "STRING", F.try_variant_get("_v", _path(name), "string"))
        return F.try_to_timestamp(as_text) if type_name == "timestamp" else as_text
    value = F.try_variant_get("_v", _path(name), _CAST[type_name])
    return F.when(_kind_ok(type_name, kind), value)


def _problems(source: KafkaSource, now: datetime) -> list[Column]:
    """One message column per rule; null where the rule holds. Later rules are skipped for a
    record that is not a readable JSON object."""
    readable = F.col("_v").isNotNull() & F.schema_of_variant("_v").startswith("OBJECT")
    checks = [
        F.when(F.col("_too_big"), F.format_string(
            f"record is %d bytes, over the {source.max_record_bytes}-byte limit "
            f"(max_record_bytes; its first {KEPT_BYTES} bytes are kept in raw_bytes)",
            F.col("raw_size"))),
        F.when(F.col("_bad_utf8"), F.lit("value is not valid UTF-8 (its bytes are kept in raw_bytes)")),
        F.when(F.col("raw_value").isNotNull() & F.col("_v").isNull(), F.lit("invalid JSON")),
        F.when(F.col("_v").isNotNull() & ~readable, F.format_string(
            "not a JSON object: %s", F.lower(F.schema_of_variant("_v")))),
    ]  # fmt: skip
    field_checks: list[Column] = []
    for name, type_name in source.schema.items():
        field_checks += _field_problems(source, name, type_name)
    for name, values in source.allowed_values.items():
        unknown = F.col(name).isNotNull() & ~F.col(name).isin(*values)
        field_checks.append(F.when(unknown, F.format_string(f"unknown {name}: %s", F.col(name))))
    if source.event_time and source.event_time in source.schema and source.max_future is not None:
        field_checks.append(
            _future_problem(source.event_time, source.max_future.total_seconds(), now)
        )
    for expectation, condition in source.expectations.items():
        broken = F.coalesce(~F.expr(condition), F.lit(False))
        field_checks.append(F.when(broken, F.lit(f"expectation {expectation} failed: {condition}")))
    return checks + [F.when(readable, check) for check in field_checks]


def _field_problems(source: KafkaSource, name: str, type_name: str) -> list[Column]:
    kind = F.col(f"_t_{name}")
    present = kind.isNotNull() & (kind != "VOID")
    raw = F.to_json(F.try_variant_get("_v", _path(name), "variant"))
    wrong = present & (~_kind_ok(type_name, kind) | F.col(name).isNull())
    what = "a timestamp" if type_name == "timestamp" else f"a {type_name}"
    problems = [
        F.when(wrong, F.format_string(f"{name} is not {what}: %s", F.substring(raw, 1, 200)))
    ]
    if name in source.required:
        problems.append(F.when(~present, F.lit(f"missing {name}")))
        if type_name == "string":
            empty = present & (F.trim(F.col(name)) == "")
            problems.append(F.when(empty, F.lit(f"empty {name}")))
    return problems


def _future_problem(column: str, max_future_seconds: float, now: datetime) -> Column:
    ahead = F.unix_timestamp(F.col(column)) - F.lit(int(now.timestamp()))
    message = F.format_string(
        f"{column} is %s ahead of the processing clock (max_future {duration(max_future_seconds)})",
        human_duration(ahead),
    )
    return F.when(ahead > F.lit(max_future_seconds), message)
