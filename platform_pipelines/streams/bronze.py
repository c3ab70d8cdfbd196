"""Bronze: Kafka JSON values parsed against the event schema; bad records to quarantine.

One query reads the topic and, per micro-batch, appends the good rows to ``clickstream_raw`` and
the bad ones (raw value + reason) to ``quarantine``, both idempotently keyed by the batch id so a
replayed batch is never written twice. A bad record never stops the stream.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from platform_pipelines.events import EVENT_TYPES
from platform_pipelines.lakehouse.delta import append_exactly_once
from platform_pipelines.streams.schemas import CLICKSTREAM_RAW, QUARANTINE

_CORRUPT = "_corrupt_record"


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
    kafka_rows: DataFrame, schema: StructType, required: tuple[str, ...]
) -> DataFrame:
    """Kafka rows -> typed fields + ``reason`` (null when the record is good) + Kafka position."""
    value = F.col("value").cast("string")
    parsed = kafka_rows.select(
        value.alias("raw_value"),
        F.from_json(value, _as_text_schema(schema), {"columnNameOfCorruptRecord": _CORRUPT}).alias(
            "j"
        ),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )
    data_fields = [
        f
        for f in schema.fields
        if f.name not in {"kafka_partition", "kafka_offset", "kafka_timestamp"}
    ]
    typed = [_typed(f.name, f.dataType.typeName()).alias(f.name) for f in data_fields]
    checks = _problems(data_fields, required)
    return parsed.select(
        "raw_value", "kafka_partition", "kafka_offset", "kafka_timestamp", "j", *typed
    ).withColumn("reason", F.nullif(F.concat_ws("; ", *checks), F.lit("")))


def _problems(fields: list[StructField], required: tuple[str, ...]) -> list[Column]:
    """One message column per check; null where the check passes."""
    not_json = F.col(f"j.{_CORRUPT}").isNotNull() | F.col("j").isNull()
    checks = [F.when(not_json, F.lit("invalid JSON"))]
    for name in required:
        checks.append(F.when(~not_json & F.col(f"j.{name}").isNull(), F.lit(f"missing {name}")))
    for field in fields:
        raw, typed = F.col(f"j.{field.name}"), F.col(field.name)
        if field.dataType.typeName() != "string":
            bad = raw.isNotNull() & typed.isNull()
            checks.append(
                F.when(
                    bad,
                    F.format_string(f"{field.name} is not a {field.dataType.typeName()}: %s", raw),
                )
            )
    if "event_type" in {f.name for f in fields}:
        unknown = F.col("event_type").isNotNull() & ~F.col("event_type").isin(*EVENT_TYPES)
        checks.append(
            F.when(unknown, F.format_string("unknown event_type: %s", F.col("event_type")))
        )
    return checks


def bronze_batch_writer(
    source: str, raw_table: Path, quarantine_table: Path, app_id: str
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function: split a micro-batch into good rows and quarantined rows."""

    def write(batch: DataFrame, batch_id: int) -> None:
        parsed = parse_records(batch, CLICKSTREAM_RAW, _required(CLICKSTREAM_RAW)).persist()
        try:
            good = parsed.where(F.col("reason").isNull()).select(*CLICKSTREAM_RAW.fieldNames())
            bad = parsed.where(F.col("reason").isNotNull()).select(
                F.lit(source).alias("source"), "raw_value", "reason",
                "kafka_partition", "kafka_offset", "kafka_timestamp",
                F.current_timestamp().alias("quarantined_at"),
            )  # fmt: skip
            append_exactly_once(good, raw_table, f"{app_id}/raw", batch_id)
            append_exactly_once(bad.select(*QUARANTINE.fieldNames()), quarantine_table,
                                f"{app_id}/quarantine", batch_id)  # fmt: skip
        finally:
            parsed.unpersist()

    return write


def _required(schema: StructType) -> tuple[str, ...]:
    return tuple(f.name for f in schema.fields if not f.nullable)
