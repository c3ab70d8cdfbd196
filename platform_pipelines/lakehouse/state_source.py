"""A checkpoint's stateful operators and their rows, read with Spark's State Data Source.

The checkpoint's operator metadata files (``lakehouse.state_operators``; Spark's
``state-metadata`` source where they do not say) name its stateful operators. A
``transformWithState`` operator is read one state variable at a time (``stateVarName``; lists and
maps as one value per key, ``flattenCollectionTypes=false``) plus its timers
(``readRegisteredTimers``) when it has a time mode; a ``flatMapGroupsWithState`` operator (the built-in sessions) as its ``groupState`` with its
``timeoutTimestamp`` as the timer; Spark's own operators (deduplication, aggregation) are read
whole.

Spark 4.2: a ``statestore`` read of RocksDB state reports its snapshot loads to the session's
StateStoreCoordinator, which a session registers only when its ``spark.streams`` manager is
created; without touching it first the read fails with ``Cannot find endpoint:
spark://StateStoreCoordinator``. ``_ready`` touches it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from platform_pipelines.lakehouse.checkpoints import batch_ids
from platform_pipelines.lakehouse.state_operators import Operator, operator, operators_from_files

# Spark's name for a flatMapGroupsWithState operator; its time mode is the stream's declared one.
GROUP_STATE_OPERATOR = "flatMapGroupsWithState"


class StateUnavailable(RuntimeError):
    """The stream has no state to read: never ran, no committed batch, or keeps none."""


def committed_batch(checkpoint: Path, stream: str) -> int:
    """The latest batch whose state is committed (``commits/<n>``)."""
    if not (checkpoint / "offsets").is_dir():
        raise StateUnavailable(
            f"{stream} has no checkpoint at {checkpoint}: it never ran. Start it (its job "
            f"stream_{stream}, or all_streams) and read its state once a batch has run."
        )
    committed = batch_ids(checkpoint, "commits")
    if not committed:
        raise StateUnavailable(
            f"{stream} has not committed a batch yet ({checkpoint}): its first batch is still "
            "running or failed. Wait for its first batch, or look at its run's log."
        )
    return committed[-1]


def read_operators(spark: SparkSession, checkpoint: Path, batch_id: int) -> list[Operator]:
    """The checkpoint's stateful operators at ``batch_id``: from its operator metadata files, or
    where they do not say, from Spark's ``state-metadata`` source."""
    from_files = operators_from_files(checkpoint, batch_id)
    return from_files if from_files is not None else spark_operators(spark, checkpoint, batch_id)


def spark_operators(spark: SparkSession, checkpoint: Path, batch_id: int) -> list[Operator]:
    """The checkpoint's stateful operators at ``batch_id``, as ``state-metadata`` lists them."""
    rows = (
        spark.read.format("state-metadata")
        .option("batchId", batch_id)
        .load(str(checkpoint))
        .collect()
    )
    stores: dict[int, list[str]] = {}
    for row in rows:
        stores.setdefault(row["operatorId"], []).append(row["stateStoreName"])
    first = {row["operatorId"]: row for row in reversed(rows)}
    return [
        operator(
            i,
            first[i]["operatorName"],
            stores[i],
            json.loads(first[i]["operatorProperties"] or "{}"),
        )
        for i in sorted(first)
    ]


def _ready(spark: SparkSession) -> None:
    spark.streams.active  # noqa: B018 - registers the StateStoreCoordinator (module docstring)


def _read(
    spark: SparkSession, checkpoint: Path, batch_id: int, op: Operator, **options: str
) -> DataFrame:
    reader = spark.read.format("statestore").option("batchId", batch_id)
    return reader.option("operatorId", op.id).options(**options).load(str(checkpoint))


def _key_text(df: DataFrame) -> Column:
    """The key as text: a one-field key its value (``u1``), a wider one its JSON."""
    fields = df.schema["key"].dataType.fieldNames()  # type: ignore[attr-defined]
    text = F.col("key")[fields[0]].cast("string") if len(fields) == 1 else F.to_json("key")
    return F.coalesce(text, F.lit("null"))


def _value_json(df: DataFrame) -> Column:
    values = [c for c in df.columns if c not in ("key", "partition_id")]
    return F.to_json(F.col(values[0]) if len(values) == 1 else F.struct(*values))


def state_parts(
    spark: SparkSession, checkpoint: Path, batch_id: int, operators: Sequence[Operator]
) -> tuple[list[DataFrame], tuple[str, ...]]:
    """Every operator's rows (key, part, value JSON, timer), and the part names."""
    _ready(spark)
    frames: list[DataFrame] = []
    names: list[str] = []
    for op in operators:
        prefix = f"{op.name}#{op.id}/" if len(operators) > 1 else ""
        if op.stores != ("default",):
            raise StateUnavailable(
                f"Operator {op.name} keeps its state in several stores ({', '.join(op.stores)}), "
                "as a stream-stream join does; this reader shows single-store operators only. "
                'Read it with spark.read.format("statestore").option("joinSide", "left").'
            )
        reads = [
            (
                v,
                _read(
                    spark, checkpoint, batch_id, op, stateVarName=v, flattenCollectionTypes="false"
                ),
            )
            for v in op.variables
        ]
        if op.name == GROUP_STATE_OPERATOR:
            df = _read(spark, checkpoint, batch_id, op)
            timeout = F.col("value.timeoutTimestamp")
            names.append(prefix + op.name)
            frames.append(
                df.select(
                    _key_text(df).alias("key"),
                    F.lit(prefix + op.name),
                    F.to_json("value.groupState"),
                    F.lit(None).cast("long"),
                )
            )
            frames.append(
                df.where(timeout >= 0).select(
                    _key_text(df).alias("key"),
                    F.lit(None).cast("string"),
                    F.lit(None).cast("string"),
                    timeout,
                )
            )
            continue
        if op.time_mode is None:
            reads = [(op.name, _read(spark, checkpoint, batch_id, op))]
        for name, df in reads:
            names.append(prefix + name)
            frames.append(
                df.select(
                    _key_text(df).alias("key"),
                    F.lit(prefix + name).alias("part"),
                    _value_json(df).alias("value_json"),
                    F.lit(None).cast("long").alias("timer_ms"),
                )
            )
        if op.time_mode in ("EventTime", "ProcessingTime"):
            df = _read(spark, checkpoint, batch_id, op, readRegisteredTimers="true")
            frames.append(
                df.select(
                    _key_text(df).alias("key"),
                    F.lit(None).cast("string"),
                    F.lit(None).cast("string"),
                    "expiration_timestamp_ms",
                )
            )
    return frames, tuple(names)
