"""A stream's state read from its checkpoint with Spark's State Data Source, offline: from a
stopped stream or a running one (the latest committed batch, pinned for every read, while the
query commits newer ones).

``state-metadata`` names the checkpoint's stateful operators. A ``transformWithState`` operator
is read one state variable at a time (``stateVarName``; lists and maps as one value per key,
``flattenCollectionTypes=false``) plus its timers (``readRegisteredTimers``) when it has a time
mode; a ``flatMapGroupsWithState`` operator (the built-in sessions) as its ``groupState`` with its
``timeoutTimestamp`` as the timer; Spark's own operators (deduplication, aggregation) are read
whole. The rows are grouped by
key in Spark and decoded by ``core.state_view`` in a Python UDF, so the biggest keys are chosen
without collecting the state to the driver.

Spark 4.2: a ``statestore`` read of RocksDB state reports its snapshot loads to the session's
StateStoreCoordinator, which a session registers only when its ``spark.streams`` manager is
created; without touching it first the read fails with ``Cannot find endpoint:
spark://StateStoreCoordinator``. ``_ready`` touches it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from platform_pipelines.core.state_view import (
    KeyState,
    Part,
    StateReport,
    StateTotals,
    assemble,
    biggest,
    value_json,
)
from platform_pipelines.lakehouse.checkpoints import batch_ids, recorded_time_mode
from platform_pipelines.lakehouse.delta import Lakehouse

SNAPSHOT_TABLE = "state_snapshots"
SNAPSHOT = StructType(
    [
        StructField("stream", StringType(), False),
        StructField("snapshot_time", TimestampType(), False),
        StructField("batch_id", LongType(), False),
        StructField("key", StringType(), False),
        StructField("value", StringType(), True),  # JSON, decoded (core.state_view)
        StructField("timer", TimestampType(), True),  # the key's next registered timer
        StructField("bytes", LongType(), False),
    ]
)
_KEY_STATE = StructType(
    [
        StructField("value", StringType(), True),
        StructField("timers_ms", ArrayType(LongType(), False), False),
        StructField("bytes", LongType(), False),
    ]
)


# Spark's name for a flatMapGroupsWithState operator; its time mode is the stream's declared one.
GROUP_STATE_OPERATOR = "flatMapGroupsWithState"


class StateUnavailable(RuntimeError):
    """The stream has no state to read: never ran, no committed batch, or keeps none."""


@dataclass(frozen=True)
class Operator:
    """One stateful operator of a checkpoint, as ``state-metadata`` lists it.

    Attributes:
        id: the ``operatorId`` option.
        name: Spark's name: ``transformWithStateInPySparkExec``, ``dedupeWithinWatermark``...
        stores: its state store names (``default``; a stream-stream join has four).
        time_mode: ``EventTime``, ``ProcessingTime`` or ``NoTime`` for transformWithState; None
            for Spark's own operators.
        variables: the user's state variables of a transformWithState operator (timers, whose
            names start with ``$``, are read with ``readRegisteredTimers``).
    """

    id: int
    name: str
    stores: tuple[str, ...]
    time_mode: str | None = None
    variables: tuple[str, ...] = ()


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
    """The checkpoint's stateful operators at ``batch_id``."""
    rows = (
        spark.read.format("state-metadata")
        .option("batchId", batch_id)
        .load(str(checkpoint))
        .collect()
    )
    found: dict[int, Operator] = {}
    for row in sorted(rows, key=lambda r: (r["operatorId"], r["stateStoreName"])):
        op = found.get(row["operatorId"])
        stores = (*(op.stores if op else ()), row["stateStoreName"])
        props = json.loads(row["operatorProperties"] or "{}")
        variables = tuple(
            v["stateName"]
            for v in props.get("stateVariables", ())
            if not v["stateName"].startswith("$")
        )
        mode = props.get("timeMode", "NoTime") if "stateVariables" in props else None
        found[row["operatorId"]] = Operator(
            row["operatorId"], row["operatorName"], stores, mode, variables
        )
    return [found[i] for i in sorted(found)]


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


def _parts(
    spark: SparkSession, checkpoint: Path, batch_id: int, operators: Sequence[Operator]
) -> tuple[list[DataFrame], tuple[str, ...]]:
    """Every operator's rows (key, part, value JSON, timer), and the part names."""
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


def key_states(
    spark: SparkSession, checkpoint: Path, batch_id: int, operators: Sequence[Operator]
) -> tuple[DataFrame, tuple[str, ...]]:
    """One row per key: ``key``, ``value`` (decoded, JSON), ``timers_ms``, ``bytes``; and the
    part names."""
    _ready(spark)
    frames, names = _parts(spark, checkpoint, batch_id, operators)
    if not frames:
        return spark.createDataFrame(
            [], "key string, value string, timers_ms array<bigint>, bytes bigint"
        ), names
    rows = reduce(DataFrame.unionAll, frames).toDF("key", "part", "value_json", "timer_ms")
    grouped = rows.groupBy("key").agg(
        F.collect_list(F.when(F.col("part").isNotNull(), F.struct("part", "value_json"))).alias(
            "parts"
        ),
        F.collect_list("timer_ms").alias("timers"),
    )
    decode = F.udf(lambda key, parts, timers: _decoded(key, parts, timers, names), _KEY_STATE)
    state = grouped.select("key", decode("key", "parts", "timers").alias("s"))
    return state.select("key", "s.value", "s.timers_ms", "s.bytes"), names


def _decoded(
    key: str, parts: list[Any], timers: list[int], names: tuple[str, ...]
) -> tuple[Any, ...]:
    state = assemble(key, [Part(p["part"], p["value_json"]) for p in parts], timers, names)
    return (
        None if state.value is None else value_json(state.value),
        list(state.timers_ms),
        state.bytes,
    )


def _key_state(row: Any) -> KeyState:
    value = None if row["value"] is None else json.loads(row["value"])
    return KeyState(row["key"], value, tuple(row["timers_ms"]), int(row["bytes"]))


def _state(
    spark: SparkSession, checkpoint: Path, stream: str, batch_id: int | None
) -> tuple[int, list[Operator], DataFrame, tuple[str, ...]]:
    batch = committed_batch(checkpoint, stream) if batch_id is None else batch_id
    operators = [
        replace(op, time_mode=recorded_time_mode(checkpoint))
        if op.name == GROUP_STATE_OPERATOR
        else op
        for op in read_operators(spark, checkpoint, batch)
    ]
    if not operators:
        raise StateUnavailable(
            f"{stream} keeps no state: its query has no stateful operator (a bronze stream, or "
            "a stateless transform). Read its table instead."
        )
    df, names = key_states(spark, checkpoint, batch, operators)
    return batch, operators, df, names


def _totals(df: DataFrame) -> StateTotals:
    row = df.agg(F.count("*"), F.sum("bytes"), F.max("bytes")).first()
    assert row is not None  # an aggregate without grouping has one row
    return StateTotals(int(row[0]), int(row[1] or 0), int(row[2] or 0))


def read_state(
    spark: SparkSession,
    checkpoint: Path,
    stream: str,
    top: int = 20,
    key: str | None = None,
    batch_id: int | None = None,
) -> StateReport:
    """``stream``'s state at ``batch_id`` (default: the latest committed): totals over every
    key, and the ``top`` biggest keys, or only ``key``."""
    batch, operators, df, names = _state(spark, checkpoint, stream, batch_id)
    df = df.persist()
    try:
        chosen = df.where(F.col("key") == key) if key is not None else df
        rows = chosen.orderBy(F.desc("bytes"), "key").limit(top).collect()
        totals = _totals(df)
    finally:
        df.unpersist()
    shown = biggest([_key_state(r) for r in rows], top)
    return StateReport(stream, batch, names, _time_mode(operators), totals, tuple(shown))


def write_snapshot(
    spark: SparkSession, lakehouse: Lakehouse, stream: str, at: datetime, top: int = 0
) -> StateReport:
    """Append ``stream``'s state (the ``top`` biggest keys; 0: every key) to ``state_snapshots``
    (``SNAPSHOT``: one row per key, stamped ``at``), and report it with its 10 biggest keys."""
    table = lakehouse.ensure_table(spark, SNAPSHOT_TABLE, SNAPSHOT)
    batch, operators, df, names = _state(spark, lakehouse.checkpoint(stream), stream, None)
    df = df.persist()
    try:
        ranked = df.orderBy(F.desc("bytes"), "key")
        written = ranked.limit(top) if top else ranked
        written.select(
            F.lit(stream).alias("stream"),
            F.lit(at).cast("timestamp").alias("snapshot_time"),
            F.lit(batch).cast("long").alias("batch_id"),
            "key",
            "value",
            F.timestamp_millis(F.array_min("timers_ms")).alias("timer"),
            "bytes",
        ).write.format("delta").mode("append").save(str(table))
        shown = [_key_state(r) for r in ranked.limit(10).collect()]
        totals = _totals(df)
    finally:
        df.unpersist()
    return StateReport(stream, batch, names, _time_mode(operators), totals, tuple(shown))


def _time_mode(operators: Sequence[Operator]) -> str | None:
    modes = [op.time_mode for op in operators if op.time_mode in ("EventTime", "ProcessingTime")]
    return modes[0] if modes else None
