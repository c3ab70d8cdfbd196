"""Putting a stream's tables back to a savepoint: Delta RESTORE for its own tables, a DELETE of
its later rows for the shared ones, each commit tagged for the stream's writer.

The exactly-once writers (``lakehouse.delta``) skip a batch when the newest tag of their writer
id in the table's log is that batch or a later one. Rolling back leaves the tagged commits of the
rolled-back batches in the log; the rollback's own commit, tagged with the savepoint's batch, is
newer than them, so the writer reads "batch S" and writes batches S+1.. again. (A RESTORE or
DELETE commit carries ``spark.databricks.delta.commitInfo.userMetadata`` like any write; a
RESTORE to the current version and a DELETE that matches nothing make no commit at all.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.errors import AnalysisException
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from platform_pipelines.lakehouse.delta import batch_tag
from platform_pipelines.lakehouse.delta_log import latest_version
from platform_pipelines.lakehouse.savepoint_manifest import (
    Manifest,
    TableMark,
    commit_tag,
    rolled_back_past,
)
from platform_pipelines.lakehouse.tables import LATE_TABLE, LEDGER_TABLE, QUARANTINE_TABLE

# Written by several streams: never restored as a whole.
SHARED_TABLES = frozenset({LATE_TABLE, LEDGER_TABLE, QUARANTINE_TABLE})
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
_WRITTEN_AT = {LEDGER_TABLE: "written_at", LATE_TABLE: "detected_at"}


@dataclass(frozen=True)
class TableRestore:
    """What a restore did to one table.

    Attributes:
        table: the table.
        action: ``restored`` (Delta RESTORE) or ``rows deleted`` (a shared table).
        version: the version restored to (None for a shared table).
        rows: rows deleted (shared), or data files the RESTORE took back (own).
    """

    table: str
    action: str
    version: int | None
    rows: int


def unrestorable(spark: SparkSession, table: Path, version: int | None) -> str | None:
    """Why ``table`` cannot go back to ``version`` (None when it can): the version left the
    Delta log, or VACUUM removed data files it needs."""
    if version is None:
        return None
    try:
        files = spark.read.format("delta").option("versionAsOf", version).load(str(table))
        paths = files.inputFiles()
    except AnalysisException as error:
        first = str(error).splitlines()[0][:300]
        return (
            f"version {version} of table {table.name} is no longer in its Delta log "
            f"({first}); the log retention (delta.logRetentionDuration) removed it."
        )
    local = [Path(unquote(urlparse(p).path)) for p in paths if p.startswith("file:")]
    missing = [p for p in local if not p.exists()]
    if not missing:
        return None
    return (
        f"version {version} of table {table.name} was vacuumed: {len(missing)} of its "
        f"{len(paths)} data files are gone (e.g. {missing[0].name}). VACUUM deletes files "
        "later versions no longer use once they are older than "
        "delta.deletedFileRetentionDuration (7 days by default): restore savepoints younger "
        "than that."
    )


def rolled_back(table: Path, mark: TableMark) -> str | None:
    """How ``table`` went back before ``mark``'s version since (None when it never did)."""
    back = None if mark.version is None else rolled_back_past(table, mark.version)
    if back is None:
        return None
    return f"table {mark.table} went back to version {back[1]} at version {back[0]}"


def restore_version(
    spark: SparkSession,
    table: Path,
    mark: TableMark,
    batch: int,
) -> TableRestore:
    """Delta RESTORE of an own table to ``mark.version``, tagged as the writer's batch ``batch``
    (a table that had no commit at the savepoint loses every row instead)."""
    from delta.tables import DeltaTable

    delta = DeltaTable.forPath(spark, str(table))
    with _tagged(spark, batch_tag(mark.app_id, batch)):
        if mark.version is None:
            delta.delete()
            return TableRestore(mark.table, "rows deleted", None, 0)
        metrics = delta.restoreToVersion(mark.version).first()
    restored = int(metrics["num_restored_files"]) if metrics else 0
    return TableRestore(mark.table, "restored", mark.version, restored)


def forget_rows_after(
    spark: SparkSession,
    table: Path,
    mark: TableMark,
    manifest: Manifest,
) -> TableRestore:
    """Delete the stream's rows written to a shared table after the savepoint, tagged as the
    writer's savepoint batch; return how many were deleted."""
    from delta.tables import DeltaTable

    before = latest_version(table)
    tag = batch_tag(mark.app_id, manifest.batch)
    with _tagged(spark, tag):
        DeltaTable.forPath(spark, str(table)).delete(rows_after(mark.table, manifest))
    return TableRestore(mark.table, "rows deleted", None, _deleted(table, before, tag))


def rows_after(table: str, manifest: Manifest) -> Column:
    """The rows of a shared table that the stream wrote after its savepoint.

    ``quarantine`` (bronze): rows of its topic at or after the Kafka offsets its checkpoint had
    reached. ``stream_ledger``/``late_events``: the checkpoint's rows of later batches, and rows
    a newer checkpoint of the stream (a reset since) wrote after the savepoint was taken.
    """
    if table == QUARANTINE_TABLE:
        after = F.lit(False)
        for topic, parts in manifest.kafka_offsets.items():
            seen = [int(p) for p in parts]
            later = F.lit(False) if not seen else ~F.col("kafka_partition").isin(seen)
            for part, offset in parts.items():
                later |= (F.col("kafka_partition") == int(part)) & (F.col("kafka_offset") >= offset)
            after |= (F.col("source") == topic) & later
        return after
    same = F.col("query_id") == manifest.query_id
    written = F.col(_WRITTEN_AT[table]) >= F.timestamp_millis(F.lit(manifest.created_ms))
    later = (same & (F.col("batch_id") > manifest.batch)) | (~same & written)
    return (F.col("stream") == manifest.stream) & later


def _deleted(table: Path, before: int | None, tag: str) -> int:
    """The rows the DELETE tagged ``tag`` removed, from its commit (0 when it made none)."""
    latest = latest_version(table)
    newest, oldest = (-1 if latest is None else latest), (-1 if before is None else before)
    for version in range(newest, oldest, -1):
        info = commit_tag(table, version)
        if info.get("operation") == "DELETE" and info.get("userMetadata") == tag:
            return int((info.get("operationMetrics") or {}).get("numDeletedRows", 0))
    return 0


@contextmanager
def _tagged(spark: SparkSession, tag: str) -> Iterator[None]:
    """Tag the session's Delta commits (RESTORE and DELETE take no writer option)."""
    spark.conf.set(_USER_METADATA, tag)
    try:
        yield
    finally:
        spark.conf.unset(_USER_METADATA)
