"""A stream's state per key, read offline from its checkpoint: from a stopped or a running stream.

A running stream's state is read at its latest committed batch, pinned for every read, while the
query commits newer ones. The operators' rows (``lakehouse.state_source``) are grouped by key in
Spark and decoded by ``core.state_view`` in a Python UDF, so the biggest keys are chosen without
collecting the state to the driver. A small state (at most ``LOCAL_ROWS`` rows) is collected and
decoded in the driver instead: the UDF's Python workers alone take seconds to start, more than
such a state takes to read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from platform_pipelines.core.state_view import (
    KeyState,
    Part,
    StateReport,
    StateTotals,
    assemble,
    biggest,
    value_json,
)
from platform_pipelines.lakehouse.checkpoints import recorded_time_mode
from platform_pipelines.lakehouse.state_operators import Operator
from platform_pipelines.lakehouse.state_source import (
    GROUP_STATE_OPERATOR,
    StateUnavailable,
    committed_batch,
    read_operators,
    state_parts,
)

# Rows (key parts and timers) up to which ``read_state`` decodes a state in the driver.
LOCAL_ROWS = 50_000
_ROWS_SCHEMA = "key string, part string, value_json string, timer_ms bigint"
_KEY_STATE = StructType(
    [
        StructField("value", StringType(), True),
        StructField("timers_ms", ArrayType(LongType(), False), False),
        StructField("bytes", LongType(), False),
    ]
)


@dataclass(frozen=True)
class StreamState:
    """A stream's state at one committed batch: one row per key (``key_states``) and what it
    was read from."""

    stream: str
    batch_id: int
    operators: tuple[Operator, ...]
    keys: DataFrame
    parts: tuple[str, ...]
    rows: DataFrame  # before grouping: ``key``, ``part``, ``value_json``, ``timer_ms``

    def report(self, shown: Sequence[KeyState], totals: StateTotals) -> StateReport:
        """The report of this state, showing the keys ``shown``."""
        modes = [
            op.time_mode for op in self.operators if op.time_mode in ("EventTime", "ProcessingTime")
        ]
        time_mode = modes[0] if modes else None
        return StateReport(self.stream, self.batch_id, self.parts, time_mode, totals, tuple(shown))


def state_rows(
    spark: SparkSession, checkpoint: Path, batch_id: int, operators: Sequence[Operator]
) -> tuple[DataFrame, tuple[str, ...]]:
    """Every operator's rows: ``key``, ``part`` and ``value_json`` (a part of a key's value), or
    ``timer_ms`` (one of its timers); and the part names."""
    frames, names = state_parts(spark, checkpoint, batch_id, operators)
    if not frames:
        return spark.createDataFrame([], _ROWS_SCHEMA), names
    return reduce(DataFrame.unionAll, frames).toDF("key", "part", "value_json", "timer_ms"), names


def key_states(rows: DataFrame, names: tuple[str, ...]) -> DataFrame:
    """One row per key of ``state_rows``: ``key``, ``value`` (decoded, JSON), ``timers_ms``,
    ``bytes``."""
    grouped = rows.groupBy("key").agg(
        F.collect_list(F.when(F.col("part").isNotNull(), F.struct("part", "value_json"))).alias(
            "parts"
        ),
        F.collect_list("timer_ms").alias("timers"),
    )
    decode = F.udf(lambda key, parts, timers: _decoded(key, parts, timers, names), _KEY_STATE)
    state = grouped.select("key", decode("key", "parts", "timers").alias("s"))
    return state.select("key", "s.value", "s.timers_ms", "s.bytes")


def assembled(rows: Sequence[Any], names: tuple[str, ...]) -> list[KeyState]:
    """Collected ``state_rows``, one ``KeyState`` per key: what ``key_states`` computes, in the
    driver."""
    parts: dict[str, list[Part]] = {}
    timers: dict[str, list[int]] = {}
    for row in rows:
        key = row["key"]
        parts.setdefault(key, [])
        timers.setdefault(key, [])
        if row["part"] is not None:
            parts[key].append(Part(row["part"], row["value_json"]))
        if row["timer_ms"] is not None:
            timers[key].append(int(row["timer_ms"]))
    return [assemble(key, parts[key], timers[key], names) for key in parts]


def _decoded(
    key: str, parts: list[Any], timers: list[int], names: tuple[str, ...]
) -> tuple[Any, ...]:
    state = assemble(key, [Part(p["part"], p["value_json"]) for p in parts], timers, names)
    return (
        None if state.value is None else value_json(state.value),
        list(state.timers_ms),
        state.bytes,
    )


def key_state(row: Any) -> KeyState:
    """A collected row of ``key_states``, decoded."""
    value = None if row["value"] is None else json.loads(row["value"])
    return KeyState(row["key"], value, tuple(row["timers_ms"]), int(row["bytes"]))


def stream_state(
    spark: SparkSession, checkpoint: Path, stream: str, batch_id: int | None = None
) -> StreamState:
    """``stream``'s state at ``batch_id`` (default: the latest committed)."""
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
    rows, names = state_rows(spark, checkpoint, batch, operators)
    return StreamState(stream, batch, tuple(operators), key_states(rows, names), names, rows)


def state_totals(df: DataFrame) -> StateTotals:
    """Keys, bytes and the biggest key's bytes over every row of ``key_states``."""
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
    local_rows: int = LOCAL_ROWS,
) -> StateReport:
    """``stream``'s state at ``batch_id`` (default: the latest committed): totals over every
    key, and the ``top`` biggest keys, or only ``key``. A state of at most ``local_rows`` rows
    is decoded in the driver, a bigger one in Spark."""
    state = stream_state(spark, checkpoint, stream, batch_id)
    few = state.rows.limit(local_rows + 1).collect() if local_rows > 0 else None
    if few is not None and len(few) <= local_rows:
        every = assembled(few, state.parts)
        sizes = [s.bytes for s in every]
        totals = StateTotals(len(every), sum(sizes), max(sizes, default=0))
        wanted = [s for s in every if key is None or s.key == key]
        return state.report(biggest(wanted, top), totals)
    df = state.keys.persist()
    try:
        chosen = df.where(F.col("key") == key) if key is not None else df
        rows = chosen.orderBy(F.desc("bytes"), "key").limit(top).collect()
        totals = state_totals(df)
    finally:
        df.unpersist()
    return state.report(biggest([key_state(r) for r in rows], top), totals)
