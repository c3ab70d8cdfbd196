"""Switching a finished rebuild in: the platform tables' rows, then each table's pointer.

``switch`` holds the checkpoint locks of every rebuilt and told stream (they must be stopped):
each platform table's rows of a rebuilt stream are replaced by the rebuild's in one Delta commit
(``replaceWhere``), then each table's and checkpoint's pointer is moved to its new generation
(one atomic rename each, ``lakehouse.pointers``). The old checkpoint is marked retired, so a
run that found it before the switch cannot start on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from platform_pipelines.core.storage import remove_tree, require_local
from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.lakehouse.generations import ShadowLakehouse
from platform_pipelines.lakehouse.pointers import point_to
from platform_pipelines.lakehouse.tables import (
    LATE_TABLE,
    LEDGER_TABLE,
    PLATFORM_TABLES,
    QUARANTINE_TABLE,
)
from platform_pipelines.runtime.lock import CheckpointLocks, retire
from platform_pipelines.runtime.reprocess import (
    PLAN_FILE,
    ReprocessPlan,
    ReprocessRefused,
    scratch,
    shadow_of,
)
from platform_pipelines.streams.declare import IngestStream, StatefulStream, Stream
from platform_pipelines.streams.registry import StreamRegistry


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
