"""Bronze: Kafka JSON values parsed against a declared schema; bad records to quarantine.

One query reads the topic and, per micro-batch, appends the good rows to ``<topic>_raw`` and the bad
ones (raw value + reason) to ``quarantine``, both idempotently keyed by the batch id so a replayed
batch is never written twice. A bad record never stops the stream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from platform_pipelines.lakehouse.delta import append_exactly_once
from platform_pipelines.streams.schemas import KAFKA_POSITION, QUARANTINE

_CORRUPT = "_corrupt_record"
_POSITION = [f.name for f in KAFKA_POSITION]


def _as_text_schema(schema: StructType) -> StructType:
    """Every field as a string, so a value of the wrong type is kept and reported, not nulled."""
    fields = [StructField(f.name, StringType(), True) for f in schema.fields]
    return StructType([*fields, StructField(_CORRUPT, StringType(), True)])


def _typed(name: str, type_name: str) -> Column:
    raw = F.col(f"j.{name}")
    if type_name == "timestamp":
        return F.try_to_timestamp(raw)
    if type_name == "string":
        return raw
    return raw.try_cast(type_name)


def parse_records(
    kafka_rows: DataFrame,
    fields: StructType,
    required: Sequence[str],
    allowed_values: Mapping[str, Sequence[str]] | None = None,
) -> DataFrame:
    """Kafka rows -> typed ``fields`` + ``reason`` (null when the record is good) + Kafka position."""
    value = F.col("value").cast("string")
    parsed = kafka_rows.select(
        value.alias("raw_value"),
        F.from_json(value, _as_text_schema(fields), {"columnNameOfCorruptRecord": _CORRUPT}).alias(
            "j"
        ),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )
    typed = [_typed(f.name, f.dataType.typeName()).alias(f.name) for f in fields.fields]
    checks = _problems(fields, required, allowed_values or {})
    return parsed.select("raw_value", *_POSITION, "j", *typed).withColumn(
        "reason", F.nullif(F.concat_ws("; ", *checks), F.lit(""))
    )


def _problems(
    fields: StructType, required: Sequence[str], allowed: Mapping[str, Sequence[str]]
) -> list[Column]:
    """One message column per check; null where the check passes."""
    not_json = F.col(f"j.{_CORRUPT}").isNotNull() | F.col("j").isNull()
    checks = [F.when(not_json, F.lit("invalid JSON"))]
    for name in required:
        checks.append(F.when(~not_json & F.col(f"j.{name}").isNull(), F.lit(f"missing {name}")))
    for field in fields.fields:
        type_name = field.dataType.typeName()
        if type_name != "string":
            bad = F.col(f"j.{field.name}").isNotNull() & F.col(field.name).isNull()
            message = F.format_string(f"{field.name} is not a {type_name}: %s", f"j.{field.name}")
            checks.append(F.when(bad, message))
    for name, values in allowed.items():
        unknown = F.col(name).isNotNull() & ~F.col(name).isin(*values)
        checks.append(F.when(unknown, F.format_string(f"unknown {name}: %s", F.col(name))))
    return checks


def bronze_batch_writer(
    source: str,
    fields: StructType,
    required: Sequence[str],
    allowed_values: Mapping[str, Sequence[str]],
    raw_table: Path,
    quarantine_table: Path,
    app_id: str,
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function: split a micro-batch into good rows and quarantined rows."""
    good_columns = [*fields.fieldNames(), *_POSITION]

    def write(batch: DataFrame, batch_id: int) -> None:
        parsed = parse_records(batch, fields, required, allowed_values).persist()
        try:
            good = parsed.where(F.col("reason").isNull()).select(*good_columns)
            bad = parsed.where(F.col("reason").isNotNull()).select(
                F.lit(source).alias("source"),
                "raw_value",
                "reason",
                *_POSITION,
                F.current_timestamp().alias("quarantined_at"),
            )
            append_exactly_once(good, raw_table, f"{app_id}/raw", batch_id)
            append_exactly_once(
                bad.select(*QUARANTINE.fieldNames()),
                quarantine_table,
                f"{app_id}/quarantine",
                batch_id,
            )
        finally:
            parsed.unpersist()

    return write
