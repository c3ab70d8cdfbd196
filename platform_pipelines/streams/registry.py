"""The declared streams of a deployment, in dependency order, and how they are declared.

``declare_stream`` validates a ``StatefulStream`` against what is already declared (refusing with
every problem and its fix) and registers it, after the ``IngestStream`` of its Kafka source if it
reads one. The Dagster job, asset, checks and lineage all follow from the registered streams.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pyspark.sql.types import StructType

from platform_pipelines.streams.declare import IngestStream, KafkaSource, StatefulStream, Stream
from platform_pipelines.streams.validate import DeclarationError, source_problems, stream_problems


class StreamRegistry:
    """The declared streams, in dependency order (upstream first)."""

    def __init__(self, streams: Iterable[Stream] = ()) -> None:
        self._streams: dict[str, Stream] = {}
        for stream in streams:
            self.register(stream)

    def register(self, stream: Stream) -> Stream:
        if stream.name in self._streams:
            raise ValueError(f"A stream named {stream.name!r} is already declared.")
        self._streams[stream.name] = stream
        return stream

    def get(self, name: str) -> Stream:
        try:
            return self._streams[name]
        except KeyError:
            known = ", ".join(self._streams)
            raise KeyError(f"No stream named {name!r}; declared streams: {known}.") from None

    def __iter__(self) -> Iterator[Stream]:
        return iter(self.in_dependency_order())

    def __contains__(self, name: object) -> bool:
        return name in self._streams

    def tables(self) -> dict[str, StructType]:
        """Every table the declared streams write, with its schema."""
        return {t: schema for s in self._streams.values() for t, schema in s.outputs.items()}

    def names(self) -> list[str]:
        return [s.name for s in self.in_dependency_order()]

    def in_dependency_order(self) -> list[Stream]:
        """Streams sorted so that every stream comes after the one whose table it reads."""
        produced_by = {s.table: s.name for s in self._streams.values()}
        ordered: list[Stream] = []
        seen: set[str] = set()

        def visit(stream: Stream) -> None:
            if stream.name in seen:
                return
            seen.add(stream.name)
            parent = produced_by.get(stream.upstream)
            if parent and parent != stream.name:
                visit(self._streams[parent])
            ordered.append(stream)

        for stream in self._streams.values():
            visit(stream)
        return ordered


def declare_stream(registry: StreamRegistry, stream: StatefulStream) -> StatefulStream:
    """Validate ``stream`` against ``registry`` and register it (and its Kafka ingest stream)."""
    tables = registry.tables()
    problems = source_problems(stream.source, tables)
    ingest = None
    if isinstance(stream.source, KafkaSource) and not problems:
        ingest = IngestStream(stream.source)
        if ingest.name not in registry:
            tables = {**tables, **ingest.outputs}
    declared = [(s.name, t) for s in registry for t in (s.table,)]
    problems += stream_problems(stream, tables.get(stream.source_table), declared)
    if stream.initial_state and stream.initial_state.table not in {*tables, stream.table}:
        problems.append(
            f"initial_state: table {stream.initial_state.table!r} is not declared; "
            "use a declared table or the stream's own sink table."
        )
    if problems:
        raise DeclarationError(stream.name, problems)
    if ingest is not None and ingest.name not in registry:
        registry.register(ingest)
    registry.register(stream)
    return stream
