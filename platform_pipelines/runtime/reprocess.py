"""Planning a rebuild of a stream from its input: which streams it covers, and where it writes.

``platform reprocess <stream>`` (and the ``reprocess`` Dagster job) rebuilds a stream while its
table keeps serving, then switches to the rebuild, in three steps:

1. ``plan_reprocess`` (here) plans which streams to rebuild: the stream; with ``start="bronze"``
   also the streams between it and its bronze table; with ``downstream="reprocess"`` every stream
   that reads a rebuilt table, transitively. Readers left out are *told*: their next start is
   refused, naming this command, because their checkpoints hold offsets of the replaced table
   (``streams.evolution``);
2. ``runtime.reprocess_rebuild`` runs them to the end of their input on new checkpoints and table
   generations, in the scratch folder ``reprocess/<id>/`` that holds the plan;
3. ``runtime.reprocess_switch`` switches the finished rebuild in.

Where a rebuild starts (``start``): ``earliest``, every input still held (Kafka's earliest offset,
or the upstream table's first version); ``timestamp``, input from that time on (Kafka records from
that timestamp; upstream versions committed from then); ``bronze``, from the bronze table, so
Kafka is not read again.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.generations import ShadowLakehouse
from platform_pipelines.lakehouse.pointers import generation_folder
from platform_pipelines.lakehouse.tables import PLATFORM_TABLES
from platform_pipelines.streams.declare import IngestStream, StatefulStream, Stream
from platform_pipelines.streams.registry import StreamRegistry

Start = Literal["earliest", "timestamp", "bronze"]
Downstream = Literal["notify", "reprocess"]
PLAN_FILE = "plan.json"


class ReprocessRefused(RuntimeError):
    """The rebuild cannot be done as asked; the message says why and what to do."""


@dataclass(frozen=True)
class ReprocessPlan:
    """What one rebuild does.

    Attributes:
        rebuild_id: names the scratch folder and the new table generations.
        streams: the rebuilt streams, upstream first.
        start: where the first rebuilt streams read from (``earliest``, ``timestamp``, ``bronze``).
        timestamp_ms: the start time for ``timestamp``.
        told: streams that read a rebuilt table and are not rebuilt.
    """

    rebuild_id: str
    streams: tuple[str, ...]
    start: Start
    timestamp_ms: int | None = None
    told: tuple[str, ...] = ()


def plan_reprocess(
    registry: StreamRegistry,
    name: str,
    start: Start,
    downstream: Downstream,
    timestamp_ms: int | None = None,
    rebuild_id: str = "",
) -> ReprocessPlan:
    """Which streams a rebuild of ``name`` covers (pure: reads only the declarations)."""
    target = registry.get(name)
    if start == "timestamp" and timestamp_ms is None:
        raise ReprocessRefused(
            "A rebuild from a timestamp needs the time to start from: give "
            "it (--timestamp, or `timestamp` in the launch config) in ISO "
            "8601, e.g. 2026-11-23T10:00:00Z."
        )
    if start == "bronze" and target.topic:
        what = "a bronze stream" if isinstance(target, IngestStream) else "read from Kafka"
        raise ReprocessRefused(
            f"{name} is {what}: its input is Kafka, not a bronze table; "
            "start it from earliest or from a timestamp instead."
        )
    chosen = {name}
    producers = {s.table: s for s in registry}
    stream: Stream = target
    while start == "bronze" and isinstance(stream, StatefulStream):
        parent = producers.get(stream.upstream)
        if parent is None or isinstance(parent, IngestStream):
            break
        chosen.add(parent.name)
        stream = parent
    readers = _readers(registry)
    if downstream == "reprocess":
        pending = list(chosen)
        while pending:
            for reader in readers.get(registry.get(pending.pop()).table, []):
                if reader not in chosen:
                    chosen.add(reader)
                    pending.append(reader)
    ordered = tuple(n for n in registry.names() if n in chosen)
    told = sorted({r for n in ordered for r in readers.get(registry.get(n).table, [])} - chosen)
    rebuild_id = rebuild_id or time.strftime("r%Y%m%dT%H%M%S", time.gmtime())
    return ReprocessPlan(rebuild_id, ordered, start, timestamp_ms, tuple(told))


def _readers(registry: StreamRegistry) -> dict[str, list[str]]:
    readers: dict[str, list[str]] = {}
    for stream in registry:
        if stream.topic is None:
            readers.setdefault(stream.upstream, []).append(stream.name)
    return readers


def scratch(lake: Lakehouse, rebuild_id: str) -> Path:
    """The rebuild's scratch folder: its plan, and its platform tables until the switch."""
    return lake.root / "reprocess" / rebuild_id


def shadow_of(lake: Lakehouse, registry: StreamRegistry, plan: ReprocessPlan) -> ShadowLakehouse:
    """The lakehouse the rebuild runs on."""
    folder = scratch(lake, plan.rebuild_id)
    streams = [registry.get(n) for n in plan.streams]
    tables = {
        s.table: lake.root / "tables" / generation_folder(s.table, plan.rebuild_id) for s in streams
    }
    tables |= {t: folder / "tables" / t for t in PLATFORM_TABLES}
    checkpoints = {
        s.name: lake.root / "checkpoints" / generation_folder(s.name, plan.rebuild_id)
        for s in streams
    }
    return ShadowLakehouse(lake.root, tables, checkpoints)


def save_plan(lake: Lakehouse, plan: ReprocessPlan) -> None:
    """Write ``plan`` into its scratch folder, where ``load_plan`` finds it for the switch."""
    path = scratch(lake, plan.rebuild_id) / PLAN_FILE
    path.write_text(json.dumps(asdict(plan), indent=1) + "\n")


def load_plan(lake: Lakehouse, rebuild_id: str) -> ReprocessPlan:
    """The plan of a rebuild that has not been switched in yet."""
    path = scratch(lake, rebuild_id) / PLAN_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReprocessRefused(
            f"No rebuild {rebuild_id} waits to be switched in ({path} is "
            "missing); list them with `ls reprocess/`."
        ) from None
    return ReprocessPlan(
        data["rebuild_id"],
        tuple(data["streams"]),
        data["start"],
        data.get("timestamp_ms"),
        tuple(data.get("told", ())),
    )
