"""Checks a ``StatefulStream`` declaration before any query starts.

Every problem names the field and the fix; all problems are reported at once.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from pyspark.sql.types import StructType, TimestampType

from platform_pipelines.core.names import column_problem, name_problem
from platform_pipelines.streams.declare import KafkaSource, StatefulStream, TableSource
from platform_pipelines.streams.schemas import FIELD_TYPES

_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


class DeclarationError(ValueError):
    """A stream declaration that cannot run; the message lists each problem with its fix."""

    def __init__(self, stream: str, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"Stream {stream!r} is not valid:\n{lines}")


def _columns_problems(field: str, names: Iterable[object]) -> list[str]:
    return [p for name in names if (p := column_problem(field, name))]


def _type_problems(field: str, schema: Mapping[str, str]) -> list[str]:
    known = ", ".join(FIELD_TYPES)
    return [
        f"{field}: column {name!r} has unknown type {kind!r}; use one of: {known}."
        for name, kind in schema.items()
        if kind not in FIELD_TYPES
    ]


def source_problems(
    source: KafkaSource | TableSource, tables: Mapping[str, StructType]
) -> list[str]:
    """Problems of the source; ``tables`` are the tables already declared, with their schemas."""
    if isinstance(source, TableSource):
        if source.table in tables:
            return []
        return [
            f"source: table {source.table!r} is not declared; declare the stream that writes it "
            "first, or read a Kafka topic with KafkaSource(topic=..., schema=...)."
        ]
    problems = []
    if not _TOPIC.match(source.topic) or source.topic in {".", ".."}:
        problems.append(
            f"source.topic: {source.topic!r} is not a Kafka topic name; use letters, "
            "digits, '.', '_' and '-' (at most 249)."
        )
    if problem := name_problem(
        "source.raw_table" if source.raw_table else "source.topic (as the bronze table name)",
        source.table,
    ):
        problems.append(problem)
    problems += _columns_problems("source.schema", source.schema)
    problems += _type_problems("source.schema", source.schema)
    if source.bronze_trigger.total_seconds() < 0:
        problems.append(
            "source.bronze_trigger: must not be negative; e.g. timedelta(seconds=10), or "
            "timedelta(0) for bronze's next batch as soon as the last one ends."
        )
    for name in [*source.required, *source.allowed_values]:
        if name not in source.schema:
            problems.append(f"source: {name!r} is not in source.schema; add it or remove it.")
    kind = source.schema.get(source.event_time or "")
    if kind is not None and kind != "timestamp":
        problems.append(
            f"source.event_time: {source.event_time!r} is declared as {kind!r}, so "
            "its distance from the clock cannot be checked; declare it 'timestamp' "
            "or set event_time=None."
        )
    if source.max_record_bytes <= 0:
        problems.append("source.max_record_bytes: must be positive, e.g. 256 * 1024.")
    if source.min_event_time is not None and source.min_event_time.utcoffset() is None:
        problems.append(
            "source.min_event_time: give it a time zone, e.g. datetime(2000, 1, 1, tzinfo=UTC)."
        )
    return problems


def stream_problems(
    stream: StatefulStream, columns: StructType | None, declared: Sequence[tuple[str, str]]
) -> list[str]:
    """Problems of the declaration itself, given the source's columns (None if unknown) and the
    tables already written by declared streams (``(stream, table)`` pairs)."""
    problems = [
        p
        for p in (name_problem("name", stream.name), name_problem("sink_table", stream.table))
        if p
    ]
    problems += _key_problems(stream.key)
    problems += _columns_problems("output_schema", stream.output_schema)
    if stream.unique_key is not None:
        problems += _columns_problems("unique_key", [stream.unique_key])
    if stream.name in {s for s, _ in declared}:
        problems.append(f"name: a stream named {stream.name!r} is already declared; pick another.")
    if stream.table in {t for s, t in declared if s != stream.name}:
        problems.append(
            f"sink_table: {stream.table!r} is already written by another stream; "
            "give this stream its own table."
        )
    if (stream.logic is None) == (stream.transform is None):
        problems.append(
            "logic/transform: give exactly one: logic=<KeyedLogic> for plain-Python "
            "state, or transform=<function of a DataFrame> for Spark operators."
        )
    problems += _type_problems("output_schema", stream.output_schema)
    if stream.output_mode not in ("append", "update"):
        problems.append(
            f"output_mode: {stream.output_mode!r} is not supported; use 'append' or 'update'."
        )
    absent = [k for k in stream.keys if k not in stream.output_schema]
    if stream.output_mode == "update" and absent:
        problems.append(
            f"output_schema: update mode upserts rows by the key {_listed(stream.keys)}; "
            f"add {_listed(absent)} to output_schema."
        )
    if stream.reads not in ("bronze", "kafka"):
        problems.append(
            f"reads: {stream.reads!r} is not supported; use 'bronze' (the bronze "
            "table) or 'kafka' (the topic itself)."
        )
    elif stream.reads == "kafka" and isinstance(stream.source, TableSource):
        problems.append(
            f"reads: 'kafka' needs a KafkaSource, and this stream reads the table "
            f"{stream.source.table!r}; remove reads or read a topic."
        )
    if stream.state_partitions is not None and (
        isinstance(stream.state_partitions, bool)
        or not isinstance(stream.state_partitions, int)
        or stream.state_partitions < 1
    ):
        problems.append(
            f"state_partitions: {stream.state_partitions!r} is not a partition count; use a "
            "whole number of at least 1, or None for the session's spark.sql.shuffle.partitions."
        )
    problems += _publish_problems(stream)
    problems += _time_problems(stream)
    if columns is not None:
        problems += _column_problems(stream, columns)
    return problems


_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def _publish_problems(stream: StatefulStream) -> list[str]:
    topic = stream.publish_topic
    if topic is None:
        return []
    problems = []
    if not _TOPIC_NAME.match(topic) or topic in (".", ".."):
        problems.append(
            f"publish_topic: {topic!r} is not a Kafka topic name; use letters, digits, '.', "
            "'_' and '-' (at most 249)."
        )
    if stream.unique_key is None:
        problems.append(
            "publish_topic: the topic gets a replayed batch's rows again (at least once); set "
            "unique_key to the output column that identifies a row, so consumers can drop copies."
        )
    return problems


def _time_problems(stream: StatefulStream) -> list[str]:
    problems = []
    if stream.timeout not in (None, "event_time", "processing_time"):
        problems.append(
            f"timeout: {stream.timeout!r} is not a timeout kind; use 'event_time', "
            "'processing_time' or None."
        )
    if stream.timeout == "event_time" and stream.watermark is None:
        problems.append(
            "timeout: an event-time timeout fires when the watermark passes it, and "
            "this stream has none; set watermark=timedelta(minutes=10) (how late "
            "events may arrive), or use timeout='processing_time'."
        )
    if stream.watermark is not None and stream.watermark.total_seconds() <= 0:
        problems.append("watermark: must be a positive duration, e.g. timedelta(minutes=10).")
    if stream.key_lifetime is not None and stream.key_lifetime.total_seconds() <= 0:
        problems.append("key_lifetime: must be a positive duration, e.g. timedelta(minutes=30).")
    if stream.trigger.total_seconds() < 0:
        problems.append(
            "trigger: must not be negative; e.g. timedelta(seconds=10), or timedelta(0) for the "
            "next batch as soon as the last one ends and input is there."
        )
    if (
        stream.timeout
        and stream.logic is not None
        and not callable(getattr(stream.logic, "on_timeout", None))
    ):
        problems.append("logic: a stream with a timeout needs logic.on_timeout(key, state, clock).")
    if (
        stream.initial_state is not None
        and stream.logic is not None
        and not callable(getattr(stream.logic, "initial_state", None))
    ):
        problems.append(
            "initial_state: the logic has no initial_state(key, row) to seed from it; "
            "add one, or remove initial_state."
        )
    transform, seeded = stream.transform, stream.initial_state is not None
    if seeded and transform is not None and not _takes_two(transform):
        problems.append(
            "initial_state: the transform takes one argument, and with initial_state it "
            "is called with the seed rows as a second one (None once the checkpoint has "
            "state); give it one, e.g. lambda source, seed: ..., or remove initial_state."
        )
    return problems


def _takes_two(function: Callable[..., object]) -> bool:
    """Can ``function`` be called with two positional arguments?"""
    try:
        inspect.signature(function).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): let the call say
        return True
    return True


def _column_problems(stream: StatefulStream, columns: StructType) -> list[str]:
    names = columns.fieldNames()
    problems = []
    for key in (k for k in stream.keys if k not in names):
        problems.append(
            f"key: column {key!r} is not in the source ({', '.join(names)}); "
            "use one of those columns."
        )
    needs_time = stream.watermark is not None or stream.timeout == "event_time"
    if needs_time and stream.event_time not in names:
        problems.append(
            f"event_time: column {stream.event_time!r} is not in the source "
            f"({', '.join(names)}); name the source's event-time column."
        )
    elif needs_time and not isinstance(columns[stream.event_time].dataType, TimestampType):
        problems.append(
            f"event_time: column {stream.event_time!r} is not a timestamp; declare it "
            "as 'timestamp' in the source schema."
        )
    return problems


def _key_problems(key: object) -> list[str]:
    """A key is a column name or a non-empty tuple of distinct column names."""
    columns = (
        [key] if isinstance(key, str) else list(key) if isinstance(key, (tuple, list)) else None
    )
    if not columns or not all(isinstance(c, str) for c in columns):
        return [
            f"key: {key!r} is not a column name or a tuple of them; use key='user_id' or "
            "key=('user_id', 'activity')."
        ]
    if len(set(columns)) != len(columns):
        return [f"key: {key!r} names a column twice; name each key column once."]
    return _columns_problems("key", columns)


def _listed(columns: Sequence[str]) -> str:
    return ", ".join(repr(c) for c in columns)
