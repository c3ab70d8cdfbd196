"""Keeping a streaming Delta table cheap to read: its files counted, compacted and vacuumed.

Every micro-batch adds files to each table it writes, so a table fed every 10 s gains thousands
of small files a day. Three operations on one table (which, when and with which retention:
``runtime.maintainer``):

- ``table_files``: the live files of the newest version and their bytes, from the Delta log alone
  (no JVM): the version's checksum file (``<version>.crc``, which Delta writes after a commit)
  when there is one, else the newest checkpoint and the commits after it.
- ``compact``: ``OPTIMIZE``; its commit has ``dataChange=false``, which streaming readers skip.
  Appends never conflict with it; a concurrent DELETE, MERGE or overwrite can (retried).
- ``vacuum``: deletes the files that no version within the retention references any more
  (what compaction replaced), with the retention asked for (Delta 4.4 alone would ignore it),
  rounded up to whole hours (Delta rounds it to the nearest), and never longer than the table
  remembers replaced files; a shorter one than the table's only when the caller says it is safe.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote

from pyspark.sql import SparkSession

from platform_pipelines.core.storage import location
from platform_pipelines.lakehouse.delta_log import commit_file, latest_version

RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
WINDOW_IGNORE = "spark.databricks.delta.vacuum.retentionWindowIgnore.enabled"
# VACUUM lists a table in this many tasks (10,000 by default): 87-137 s against 13 s here.
LISTING = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
DELTA_DEFAULT_RETENTION = timedelta(days=7)  # delta.deletedFileRetentionDuration's default
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d{10}\.\d{10}|\.[0-9a-f-]{36})?\.parquet$")
_INTERVAL = re.compile(r"(\d+(?:\.\d+)?)\s*(week|day|hour|minute|second)s?", re.IGNORECASE)


@dataclass(frozen=True)
class TableFiles:
    """The live files of one version of a table (what a reader of that version opens)."""

    version: int
    files: int
    bytes: int

    @property
    def avg_bytes(self) -> float:
        return self.bytes / self.files if self.files else 0.0


def table_files(table: Path) -> TableFiles | None:
    """The newest version's live files and bytes; None when the table has no commit."""
    version = latest_version(table)
    if version is None:
        return None
    return _from_checksum(location(table), version) or _replay(location(table), version)


def _from_checksum(table: Path, version: int) -> TableFiles | None:
    try:
        checksum = json.loads((table / "_delta_log" / f"{version:020d}.crc").read_text())
        return TableFiles(version, int(checksum["numFiles"]), int(checksum["tableSizeBytes"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _replay(table: Path, version: int) -> TableFiles:
    """Live files from the newest checkpoint at or before ``version`` plus the commits after."""
    live: dict[str, int] = {}
    checkpoint = _newest_checkpoint(table / "_delta_log", version)
    for part in checkpoint[1] if checkpoint else []:
        live.update(_checkpoint_adds(part))
    for v in range(checkpoint[0] + 1 if checkpoint else 0, version + 1):
        for line in commit_file(table, v).read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if add := action.get("add"):
                live[add["path"]] = int(add.get("size") or 0)
            elif remove := action.get("remove"):
                live.pop(remove["path"], None)
    return TableFiles(version, len(live), sum(live.values()))


def _newest_checkpoint(log: Path, version: int) -> tuple[int, list[Path]] | None:
    """The newest complete checkpoint at or before ``version``: its version and its files."""
    found: dict[int, list[Path]] = {}
    for path in log.iterdir():
        if (match := _CHECKPOINT.match(path.name)) and int(match[1]) <= version:
            found.setdefault(int(match[1]), []).append(path)
    for v in sorted(found, reverse=True):
        parts = sorted(found[v])
        multi = [p for p in parts if p.name.count(".") == 4]  # <v>.checkpoint.<i>.<n>.parquet
        if not multi or len(multi) == int(multi[0].name.split(".")[3]):
            return v, multi or parts[:1]
    return None


def _checkpoint_adds(part: Path) -> dict[str, int]:
    """``path -> size`` of the files a checkpoint part (and its V2 sidecars) lists as live."""
    import pyarrow.parquet as pq

    names = set(pq.read_schema(part).names)
    rows = pq.read_table(part, columns=[c for c in ("add", "sidecar") if c in names]).to_pylist()
    adds = {r["add"]["path"]: int(r["add"]["size"] or 0) for r in rows if r.get("add")}
    for row in rows:
        if sidecar := row.get("sidecar"):
            adds.update(_checkpoint_adds(part.parent / "_sidecars" / sidecar["path"]))
    return adds


def commit_timestamp(table: Path, version: int) -> int | None:
    """When ``version`` was committed (epoch ms, the writer's clock, as VACUUM compares it);
    None when its commit file is gone (cleaned up by the log retention) or never existed."""
    path = commit_file(table, version)
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        if info := (json.loads(line) if line.strip() else {}).get("commitInfo"):
            stamp = info.get("inCommitTimestamp") or info.get("timestamp")
            if stamp is not None:
                return int(stamp)
    return int(path.stat().st_mtime * 1000)


def oldest_commit(table: Path) -> int | None:
    """The oldest version whose commit file is still in the log."""
    log = location(table) / "_delta_log"
    versions = [int(p.name[:20]) for p in log.glob("*.json") if p.name[:20].isdigit()]
    return min(versions, default=None)


def data_files(table: Path) -> dict[str, int]:
    """``relative path -> bytes`` of every data file in the folder, live or not (what VACUUM
    may delete); the log, hidden files and checksums are left out."""
    found, root = {}, location(table)
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for name in files:
            if not name.startswith(("_", ".")) and name.endswith(".parquet"):
                path = Path(folder) / name
                found[str(path.relative_to(root))] = path.stat().st_size
    return found


@dataclass(frozen=True)
class Compaction:
    """What ``OPTIMIZE`` did: files replaced and written (``attempts`` > 1: after conflicts)."""

    files_removed: int
    files_added: int
    attempts: int = 1


class CompactionConflict(RuntimeError):
    """Concurrent writes kept conflicting with the compaction; nothing was changed."""


def _conflicts() -> tuple[type[BaseException], ...]:
    from delta import exceptions as e

    return (
        e.ConcurrentAppendException,
        e.ConcurrentDeleteReadException,
        e.ConcurrentDeleteDeleteException,
        e.ConcurrentTransactionException,
        e.ConcurrentWriteException,
        e.DeltaConcurrentModificationException,
        e.MetadataChangedException,
        e.ProtocolChangedException,
    )


def compact(
    spark: SparkSession,
    table: Path,
    attempts: int = 3,
    wait_seconds: float = 5.0,
) -> Compaction:
    """``OPTIMIZE`` ``table``; a conflict with a concurrent write is retried ``attempts`` times.

    Raises:
        CompactionConflict: every attempt conflicted (the message names the Delta error).
    """
    from delta.tables import DeltaTable

    error: BaseException | None = None
    for attempt in range(1, attempts + 1):
        try:
            row = DeltaTable.forPath(spark, str(table)).optimize().executeCompaction().first()
        except _conflicts() as conflict:
            error = conflict
            time.sleep(wait_seconds * attempt if attempt < attempts else 0)
            continue
        m = row["metrics"] if row is not None else None
        return (
            Compaction(int(m["numFilesRemoved"]), int(m["numFilesAdded"]), attempt)
            if m
            else (Compaction(0, 0, attempt))
        )
    name = type(error).__name__
    raise CompactionConflict(
        f"Compacting {table} conflicted {attempts} times with concurrent writes ({name}: a "
        "DELETE, MERGE or overwrite committed while OPTIMIZE ran); nothing was changed. Appends "
        "never conflict: run the maintenance again, when no upsert or reset writes the table."
    )


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
