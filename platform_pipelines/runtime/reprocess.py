"""Rebuilding a stream from its input while its table keeps serving, then switching to the rebuild.

``platform reprocess <stream>`` (and the ``reprocess`` Dagster job):

1. plans which streams to rebuild: the stream; with ``start="bronze"`` also the streams between it
   and its bronze table; with ``downstream="reprocess"`` every stream that reads a rebuilt table,
   transitively. Readers left out are *told*: their next start is refused, naming this command,
   because their checkpoints hold offsets of the replaced table (``streams.evolution``);
2. runs them to the end of their input on new checkpoints (``checkpoints/<stream>@<id>``),
   writing each table's next generation (``tables/<table>@<id>``) and the platform tables into a
   scratch folder ``reprocess/<id>/`` (``lakehouse.generations``). The live streams may keep
   running meanwhile;
3. switches, holding the checkpoint locks of every rebuilt and told stream (they must be stopped):
   each platform table's rows of a rebuilt stream are replaced by the rebuild's in one Delta commit
   (``replaceWhere``), then each table's and checkpoint's pointer is moved to its new generation
   (one atomic rename each, ``lakehouse.pointers``). The old checkpoint is marked retired, so a
   run that found it before the switch cannot start on it.

Where a rebuild starts (``start``): ``earliest``, every input still held (Kafka's earliest offset,
or the upstream table's first version); ``timestamp``, input from that time on (Kafka records from
that timestamp; upstream versions committed from then); ``bronze``, from the bronze table, so
Kafka is not read again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from platform_pipelines.core.storage import remove_tree, require_local
from platform_pipelines.lakehouse.checkpoints import StartPlan, write_plan
from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.lakehouse.generations import ShadowLakehouse
from platform_pipelines.lakehouse.pointers import generation_folder, point_to
from platform_pipelines.lakehouse.tables import (
    LATE_TABLE,
    LEDGER_TABLE,
    PLATFORM_TABLES,
    QUARANTINE_TABLE,
)
from platform_pipelines.runtime.lock import CheckpointLocks, retire
from platform_pipelines.runtime.runner import RunOptions, run_streams
from platform_pipelines.streams.declare import IngestStream, StatefulStream, Stream
from platform_pipelines.streams.query import StreamContext
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


@dataclass(frozen=True)
class Rebuilt:
    """What a finished rebuild left, ready to switch in."""

    plan: ReprocessPlan
    folder: Path
    rows: dict[str, int]  # rows of each rebuilt stream's table


def scratch(lake: Lakehouse, rebuild_id: str) -> Path:
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


def rebuild(
    spark: SparkSession,
    lake: Lakehouse,
    bootstrap: str,
    registry: StreamRegistry,
    plan: ReprocessPlan,
    on_stream: Callable[[str], None] = lambda name: None,
) -> Rebuilt:
    """Run the plan's streams to the end of their input on the shadow lakehouse."""
    require_local(lake.root, "Rebuilds (platform reprocess)")
    require_local(lake.root, "Rebuilds (platform reprocess)")
    shadow = shadow_of(lake, registry, plan)
    folder = scratch(lake, plan.rebuild_id)
    if folder.exists() or any(shadow.checkpoint(n).exists() for n in plan.streams):
        raise ReprocessRefused(
            f"A rebuild named {plan.rebuild_id} already exists ({folder}); "
            "switch it in (--switch) or pick another id."
        )
    folder.mkdir(parents=True)
    (folder / PLAN_FILE).write_text(json.dumps(asdict(plan), indent=1) + "\n")
    streams = [registry.get(n) for n in plan.streams]
    for stream in streams:
        _write_start(spark, lake, shadow, stream, plan)
    ctx = StreamContext(spark, shadow, bootstrap)
    for stream in streams:  # one at a time, upstream first, so progress can be told per stream
        on_stream(stream.name)
        run_streams(
            ctx,
            [stream],
            RunOptions(mode="catch_up"),
            lambda *_: None,
            owner=f"platform reprocess {plan.rebuild_id}",
        )
    rows = {s.name: _count(spark, shadow.table(s.table)) for s in streams}
    return Rebuilt(plan, folder, rows)


def _write_start(
    spark: SparkSession,
    lake: Lakehouse,
    shadow: ShadowLakehouse,
    stream: Stream,
    plan: ReprocessPlan,
) -> None:
    """A start plan for a stream whose input is not rebuilt with it, when starting at a time."""
    if plan.start != "timestamp" or plan.timestamp_ms is None:
        return
    if stream.topic is not None:
        write_plan(shadow.checkpoint(stream.name), StartPlan(0, 0, "", plan.timestamp_ms))
        return
    upstream = lake.table(stream.upstream)
    if str(shadow.table(stream.upstream)) != str(upstream):
        return  # its upstream is rebuilt too: read all of the new generation
    first = _first_version_since(spark, upstream, plan.timestamp_ms)
    write_plan(shadow.checkpoint(stream.name), StartPlan(first))


def _first_version_since(spark: SparkSession, table: Path, timestamp_ms: int) -> int:
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, str(table)).history().select("version", "timestamp")
    since = history.where(F.col("timestamp") >= F.timestamp_millis(F.lit(timestamp_ms)))
    first = since.agg(F.min("version")).first()
    if first is None or first[0] is None:
        latest = history.agg(F.max("version")).first()
        return int(latest[0]) + 1 if latest and latest[0] is not None else 0
    return int(first[0])


def _count(spark: SparkSession, path: Path) -> int:
    return spark.read.format("delta").load(str(path)).count() if has_commit(path) else 0


@dataclass(frozen=True)
class Switched:
    """What the switch did."""

    tables: dict[str, str]  # table -> its new generation's folder
    retired: dict[str, Path]  # old table generations and checkpoints (delete when not needed)


def switch(
    spark: SparkSession, lake: Lakehouse, registry: StreamRegistry, plan: ReprocessPlan
) -> Switched:
    """Switch a finished rebuild in (see the module docstring).

    Raises:
        CheckpointBusyError: a rebuilt or told stream is running; stop it and switch again.
    """
    require_local(lake.root, "Rebuilds (platform reprocess)")
    shadow = shadow_of(lake, registry, plan)
    folder = scratch(lake, plan.rebuild_id)
    if not (folder / PLAN_FILE).exists():
        raise ReprocessRefused(f"No rebuild {plan.rebuild_id} in {folder}: run the rebuild first.")
    streams = [registry.get(n) for n in plan.streams]
    missing = [s.name for s in streams if not (shadow.checkpoint(s.name) / "commits").is_dir()]
    if missing:
        raise ReprocessRefused(
            f"The rebuild {plan.rebuild_id} did not finish {', '.join(missing)}"
            f"; delete {folder} and reprocess again."
        )
    held = {n: lake.checkpoint(n) for n in (*plan.streams, *plan.told)}
    tables = lake.root / "tables"
    with CheckpointLocks(held, owner=f"platform reprocess {plan.rebuild_id} (switch)"):
        for stream in streams:
            for table, predicate in _platform_rows(stream):
                _replace_rows(spark, lake, shadow, table, predicate, plan.rebuild_id)
        retired: dict[str, Path] = {}
        for stream in streams:
            retired[stream.table] = lake.table(stream.table)
            retired[f"{stream.name} checkpoint"] = old = lake.checkpoint(stream.name)
            point_to(tables, stream.table, shadow.table(stream.table).name)
            point_to(old.parent, stream.name, shadow.checkpoint(stream.name).name)
            retire(old, f"rebuilt by platform reprocess as {shadow.checkpoint(stream.name)}")
    remove_tree(folder)  # its platform tables' rows are switched in
    return Switched({s.table: lake.table(s.table).name for s in streams}, retired)


def _platform_rows(stream: Stream) -> list[tuple[str, str]]:
    """The platform tables a stream writes, and the predicate of its rows in each."""
    rows = [(LEDGER_TABLE, f"stream = '{stream.name}'")]
    if isinstance(stream, IngestStream):
        rows.append((QUARANTINE_TABLE, f"source = '{stream.source.topic}'"))
    elif isinstance(stream, StatefulStream) and stream.watermark is not None:
        rows.append((LATE_TABLE, f"stream = '{stream.name}'"))
    return rows


def _replace_rows(
    spark: SparkSession,
    lake: Lakehouse,
    shadow: ShadowLakehouse,
    table: str,
    predicate: str,
    rebuild_id: str,
) -> None:
    """Replace the live table's rows matching ``predicate`` by the rebuild's, in one commit."""
    source = shadow.table(table)
    rebuilt: DataFrame = (
        spark.read.format("delta").load(str(source)).where(predicate)
        if has_commit(source)
        else spark.createDataFrame([], PLATFORM_TABLES[table])
    )
    live = lake.table(table)
    if not has_commit(live):
        if rebuilt.isEmpty():
            return
        lake.ensure_table(spark, table, PLATFORM_TABLES[table])
    tag = json.dumps({"reprocess": rebuild_id, "replaced": predicate})
    (
        rebuilt.write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", predicate)
        .option("userMetadata", tag)
        .option("mergeSchema", "true")
        .save(str(live))
    )


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
