"""What a checkpoint was started with, and which declaration changes it can survive.

A checkpoint freezes part of a stream's declaration: the key its state is grouped by and the
columns its table holds. Each checkpoint keeps the declaration it started with
(``_declaration.json``); at every start the current declaration is compared with it:

- compatible: fields added to a Kafka source's schema (bronze gains the column; older rows keep
  such values in ``_rescued_data``), and a changed description, trigger or logic;
- refused before the query starts: another key, another source read (``reads``: the bronze
  table or the Kafka topic), or an output or source column removed or given another type. The message names every change and the command that rebuilds the stream on a new
  checkpoint from its input (``platform reprocess <stream>``).

The record also names the generation of the upstream table the checkpoint reads (its folder,
``lakehouse.pointers``). When that table was rebuilt and switched in without this stream, the
checkpoint's offsets belong to the old generation: the start is refused the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from platform_pipelines.core.storage import location, replace_text
from platform_pipelines.lakehouse.checkpoints import DECLARATION_FILE
from platform_pipelines.streams.declare import IngestStream, StatefulStream, Stream


class DeclarationChanged(RuntimeError):
    """The declaration changed in a way the stream's checkpoint cannot follow."""


def declaration_of(stream: Stream, upstream: str | None = None) -> dict[str, Any]:
    """The parts of a declaration a checkpoint depends on, as JSON-able data; ``upstream`` is
    the folder of the upstream table's generation (stateful streams)."""
    if isinstance(stream, IngestStream):
        return {"kind": "ingest", "source": dict(stream.source.schema)}
    assert isinstance(stream, StatefulStream)
    return {
        "kind": "stateful",
        "key": list(stream.keys),
        "output": dict(stream.output_schema),
        "output_mode": stream.output_mode,
        "upstream": upstream,
        "time_mode": stream.time_mode if stream.logic or stream.state_format else None,
        **({"state_format": stream.state_format} if stream.state_format else {}),
        **({"reads": "kafka"} if stream.topic else {}),
    }


def incompatible_changes(started: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Every change from ``started`` to ``now`` that the checkpoint cannot follow.

    >>> old = {"kind": "stateful", "key": ["user_id"], "output": {"n": "long"},
    ...        "output_mode": "update"}
    >>> incompatible_changes(old, {**old, "key": ["user_id", "activity"]})
    ["key: ['user_id'] -> ['user_id', 'activity']"]
    >>> incompatible_changes(old, {**old, "output": {"n": "string", "m": "long"}})
    ['output_schema: n long -> string', 'output_schema: m added']
    >>> incompatible_changes({"kind": "ingest", "source": {"a": "string"}},
    ...                      {"kind": "ingest", "source": {"a": "string", "b": "long"}})
    []
    """
    if started.get("kind") != now.get("kind"):
        return [f"kind: {started.get('kind')} -> {now.get('kind')}"]
    if now["kind"] == "ingest":
        return _column_changes("source.schema", started["source"], now["source"], additions=False)
    changes = []
    if started.get("upstream") and now.get("upstream") and started["upstream"] != now["upstream"]:
        changes.append(
            f"upstream: the checkpoint reads the table generation {started['upstream']}"
            f", which was rebuilt and replaced by {now['upstream']}"
        )
    if "time_mode" in started and started["time_mode"] != now.get("time_mode"):
        changes.append(
            f"time_mode: {started['time_mode']} -> {now.get('time_mode')} (a timeout "
            "added or removed; Spark keeps a checkpoint's time mode)"
        )
    if started.get("state_format") != now.get("state_format"):
        before = started.get("state_format") or "transformWithState in Python (not recorded)"
        after = now.get("state_format") or "not recorded"
        changes.append(f"state_format: {before} -> {after} (the state is kept by another operator)")
    if started.get("reads", "bronze") != now.get("reads", "bronze"):
        changes.append(
            f"reads: {started.get('reads', 'bronze')} -> {now.get('reads', 'bronze')} "
            "(the checkpoint's offsets belong to the other source)"
        )
    if started["key"] != now["key"]:
        changes.append(f"key: {started['key']} -> {now['key']}")
    if started["output_mode"] != now["output_mode"]:
        changes.append(f"output_mode: {started['output_mode']} -> {now['output_mode']}")
    return changes + _column_changes("output_schema", started["output"], now["output"], True)


def _column_changes(
    field: str, old: dict[str, str], new: dict[str, str], additions: bool
) -> list[str]:
    changes = [f"{field}: {name} removed" for name in old if name not in new]
    changes += [
        f"{field}: {name} {old[name]} -> {new[name]}"
        for name in old
        if name in new and old[name] != new[name]
    ]
    if additions:
        changes += [f"{field}: {name} added" for name in new if name not in old]
    return changes


def check_declaration(checkpoint: Path, stream: Stream, upstream: str | None = None) -> None:
    """Refuse to start ``stream`` on a checkpoint started with an incompatible declaration;
    record the declaration on a checkpoint that has none yet (new, or from before this check).

    Raises:
        DeclarationChanged: with every change and the remedy.
    """
    path = location(checkpoint) / DECLARATION_FILE
    now = declaration_of(stream, upstream)
    try:
        started = json.loads(path.read_text())
    except FileNotFoundError:
        started = None
    if started is not None and "time_mode" not in started and now.get("time_mode"):
        now["time_mode"] = _legacy_time_mode(stream)  # started before the mode was recorded
    if started is not None:
        changes = incompatible_changes(started, now)
        if changes:
            raise DeclarationChanged(
                f"Stream {stream.name!r} changed in a way its checkpoint ({checkpoint}) cannot "
                f"follow: {'; '.join(changes)}. Its state and table were built with the old "
                f"declaration. Rebuild it from its input with `platform reprocess {stream.name}` "
                "(the current table keeps serving until the rebuilt one replaces it), or revert "
                "the declaration."
            )
        if started == now:
            return
    # Atomic: a first start killed here leaves no half-written declaration to fail the next one.
    replace_text(path, json.dumps(now, indent=1, sort_keys=True) + "\n")


def _legacy_time_mode(stream: Stream) -> str:
    """The time mode a checkpoint started before time modes were recorded runs in."""
    timeout = getattr(stream, "timeout", None)
    return {"event_time": "EventTime", "processing_time": "ProcessingTime"}.get(
        timeout or "", "None"
    )
