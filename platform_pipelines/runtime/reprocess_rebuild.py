"""Running a planned rebuild: its streams to the end of their input, beside the live ones.

``rebuild`` runs the plan's streams on new checkpoints (``checkpoints/<stream>@<id>``), writing
each table's next generation (``tables/<table>@<id>``) and the platform tables into the scratch
folder ``reprocess/<id>/`` (``lakehouse.generations``). The live streams may keep running
meanwhile; ``runtime.reprocess_switch`` switches the finished rebuild in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from platform_pipelines.core.storage import require_local
from platform_pipelines.lakehouse.checkpoints import StartPlan, write_plan
from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.lakehouse.generations import ShadowLakehouse
from platform_pipelines.runtime.reprocess import (
    ReprocessPlan,
    ReprocessRefused,
    save_plan,
    scratch,
    shadow_of,
)
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.declare import Stream
from platform_pipelines.streams.query import StreamContext
from platform_pipelines.streams.registry import StreamRegistry


@dataclass(frozen=True)
class Rebuilt:
    """What a finished rebuild left, ready to switch in."""

    plan: ReprocessPlan
    folder: Path
    rows: dict[str, int]  # rows of each rebuilt stream's table


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
    shadow = shadow_of(lake, registry, plan)
    folder = scratch(lake, plan.rebuild_id)
    if folder.exists() or any(shadow.checkpoint(n).exists() for n in plan.streams):
        raise ReprocessRefused(
            f"A rebuild named {plan.rebuild_id} already exists ({folder}); "
            "switch it in (--switch) or pick another id."
        )
    folder.mkdir(parents=True)
    save_plan(lake, plan)
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
