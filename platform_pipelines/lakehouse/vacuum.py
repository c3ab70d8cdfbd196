"""Deleting the files a Delta table no longer references (``VACUUM``), with the retention asked.

``vacuum`` deletes the files that no version within the retention references any more (what
compaction replaced), with the retention asked for (Delta 4.4 alone would ignore it), rounded up
to whole hours (Delta rounds it to the nearest), and never longer than the table remembers
replaced files; a shorter one than the table's only when the caller says it is safe. Which
retention is safe for the streams' tables is ``runtime.vacuum_retention``'s decision.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote

from pyspark.sql import SparkSession

from platform_pipelines.core.storage import location
from platform_pipelines.lakehouse.table_files import data_files

RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
WINDOW_IGNORE = "spark.databricks.delta.vacuum.retentionWindowIgnore.enabled"
# VACUUM lists a table in this many tasks (10,000 by default): 87-137 s against 13 s here.
LISTING = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
DELTA_DEFAULT_RETENTION = timedelta(days=7)  # delta.deletedFileRetentionDuration's default
_INTERVAL = re.compile(r"(\d+(?:\.\d+)?)\s*(week|day|hour|minute|second)s?", re.IGNORECASE)


@dataclass(frozen=True)
class Vacuum:
    """What ``VACUUM`` deleted (or, in a dry run, would delete)."""

    retention: timedelta
    files_deleted: int
    bytes_deleted: int
    dry_run: bool = False


class RetentionRefused(RuntimeError):
    """A retention VACUUM cannot honour safely; the message says why and what to do."""


def tombstone_retention(spark: SparkSession, table: Path) -> timedelta:
    """How long ``table``'s log remembers replaced files (``delta.deletedFileRetentionDuration``,
    7 days by default): Delta refuses a shorter VACUUM retention, and forgets longer ones."""
    from delta.tables import DeltaTable

    row = DeltaTable.forPath(spark, str(table)).detail().first()
    text = ((row["properties"] if row else None) or {}).get("delta.deletedFileRetentionDuration")
    return parse_interval(text) or DELTA_DEFAULT_RETENTION


def parse_interval(text: str | None) -> timedelta | None:
    """A Delta table property interval as a timedelta; None when it is not one.

    >>> parse_interval("interval 1 week"), parse_interval("interval 36 hours")
    (datetime.timedelta(days=7), datetime.timedelta(days=1, seconds=43200))
    """
    match = _INTERVAL.search(text or "")
    return timedelta(**{match[2].lower() + "s": float(match[1])}) if match else None


def whole_hours(retention: timedelta) -> timedelta:
    """``retention`` rounded up to whole hours: Delta rounds a VACUUM retention to the nearest
    hour, which would delete files up to half an hour younger than asked.

    >>> whole_hours(timedelta(minutes=61)), whole_hours(timedelta(0))
    (datetime.timedelta(seconds=7200), datetime.timedelta(0))
    """
    return timedelta(hours=math.ceil(retention / timedelta(hours=1)))


def vacuum(
    spark: SparkSession,
    table: Path,
    retention: timedelta,
    dry_run: bool = False,
    below_threshold_is_safe: bool = False,
) -> Vacuum:
    """``VACUUM`` ``table`` keeping what was replaced less than ``retention`` ago (rounded up to
    whole hours).

    Delta 4.4 ignores a retention other than 0 h (``WINDOW_IGNORE``) for the table's
    ``tombstone_retention``: that is turned off for this command. A shorter retention than the
    table's needs ``below_threshold_is_safe`` (no reader or write in progress needs older files;
    Delta's check is then off too); a longer one is refused: the log forgets files replaced
    before the table's retention, and VACUUM would take them for never-committed files.

    Raises:
        RetentionRefused: the retention cannot be honoured safely (the message says why).
    """
    retention, threshold = whole_hours(retention), tombstone_retention(spark, table)
    if retention < threshold and not below_threshold_is_safe:
        raise RetentionRefused(
            f"A VACUUM retention of {_hours(retention):g} h is below {table.name}'s "
            f"{_hours(threshold):g} h: files a running write or reader still needs could be "
            "deleted. Use at least that, or the platform's maintenance, which keeps what every "
            "stream and replay still reads."
        )
    if retention > threshold:
        raise RetentionRefused(
            f"{table.name} remembers replaced files for {_hours(threshold):g} h "
            f"(delta.deletedFileRetentionDuration), less than the {_hours(retention):g} h "
            "asked: VACUUM could delete files replaced before that, so it was not run."
        )
    before, hours = data_files(table), retention // timedelta(hours=1)
    confs = {
        WINDOW_IGNORE: "false",
        RETENTION_CHECK: str(retention >= threshold).lower(),
        LISTING: spark.conf.get("spark.sql.shuffle.partitions") or "4",
    }
    with _session_confs(spark, confs):
        if dry_run:
            quoted = str(table).replace("`", "``")
            sql = f"VACUUM delta.`{quoted}` RETAIN {hours} HOURS DRY RUN"
            listed = {_relative(table, r["path"]) for r in spark.sql(sql).collect()}
            gone = {p: before[p] for p in listed if p in before}
        else:
            from delta.tables import DeltaTable

            DeltaTable.forPath(spark, str(table)).vacuum(hours)
            after = data_files(table)
            gone = {p: size for p, size in before.items() if p not in after}
    return Vacuum(retention, len(gone), sum(gone.values()), dry_run)


@contextmanager
def _session_confs(spark: SparkSession, confs: dict[str, str]) -> Iterator[None]:
    """Set ``confs`` in the session for the block, then restore what was there."""
    previous: dict[str, str | None] = {key: spark.conf.get(key, None) for key in confs}
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def _hours(retention: timedelta) -> float:
    return retention / timedelta(hours=1)


def _relative(table: Path, path: str) -> str:
    """A path VACUUM listed (``file:/...``, URL-encoded), relative to the table's folder."""
    local = Path(unquote(path.removeprefix("file:")))
    try:
        return str(local.resolve().relative_to(location(table).resolve()))
    except ValueError:
        return str(local)
