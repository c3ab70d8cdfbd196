"""What a batch of a stream read from an upstream Delta table, told by the table's own log.

A stateful stream reads its upstream Delta table in whole versions (the platform sets no file
limit per trigger), so micro-batch ``n`` read exactly the rows that versions ``[start, end)`` of
that table added, where ``start``/``end`` come from the checkpoint's ``offsets/`` files. The Delta
log's commit files list those versions' added files with their row counts and min/max statistics,
so the platform counts a batch's input and knows whether any of its rows can be late without
reading a single data file.

Commit file lines (``_delta_log/<20-digit version>.json``), as Delta 4.4 writes them::

    {"add": {"path": "part-...parquet", "dataChange": true,
             "stats": "{\\"numRecords\\":1,\\"minValues\\":{\\"event_time\\":\\"2026-01-01T10:40:00.000Z\\"},...}"}}

Delta source offsets (a line of ``offsets/<n>``)::

    {"sourceVersion":1,"reservoirId":"...","reservoirVersion":3,"index":-1,"isStartingVersion":false}

``index == -1`` means "before the first file of ``reservoirVersion``": every version before it was
read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platform_pipelines.core.storage import location
from platform_pipelines.core.times import parse_iso


class PartialVersionError(RuntimeError):
    """A batch ended inside a Delta version: the stream was given a file limit per trigger."""


@dataclass(frozen=True)
class AddedFile:
    """A data file a commit added (with ``dataChange``: compaction rewrites are not new rows).

    Attributes:
        path: relative to the table.
        records: its row count; None when the writer collected no statistics.
        min_values: the minimum per column (ISO text for timestamps), from the statistics.
    """

    path: str
    records: int | None
    min_values: dict[str, Any]

    def min_epoch_seconds(self, column: str) -> float | None:
        """The smallest value of a timestamp column in the file; None when unknown."""
        return parse_iso(self.min_values.get(column))


def commit_file(table: Path, version: int) -> Path:
    return location(table) / "_delta_log" / f"{version:020d}.json"


def added_files(table: Path, start: int, end: int) -> list[AddedFile]:
    """The files that versions ``[start, end)`` of ``table`` added as new data."""
    files: list[AddedFile] = []
    for version in range(start, end):
        for line in commit_file(table, version).read_text().splitlines():
            add = json.loads(line).get("add") if line.strip() else None
            if not add or not add.get("dataChange", True):
                continue
            stats = json.loads(add["stats"]) if add.get("stats") else {}
            records = stats.get("numRecords")
            files.append(
                AddedFile(
                    add["path"],
                    None if records is None else int(records),
                    dict(stats.get("minValues") or {}),
                )
            )
    return files


def delta_source_offset(checkpoint: Path, batch_id: int) -> dict[str, Any] | None:
    """The (single) Delta source's end offset recorded for ``batch_id``; None when the batch has
    no offsets file or no Delta source."""
    try:
        lines = (location(checkpoint) / "offsets" / str(batch_id)).read_text().splitlines()
    except OSError:
        return None
    for line in lines[2:]:
        text = line.split(":", 1)[1] if line[:1].isdigit() and ":" in line else line
        try:
            offset = json.loads(text)
        except ValueError:
            continue
        if isinstance(offset, dict) and "reservoirVersion" in offset:
            return offset
    return None


def batch_versions(checkpoint: Path, batch_id: int, first_version: int = 0) -> tuple[int, int]:
    """The versions ``[start, end)`` of the upstream table that ``batch_id`` read.

    ``first_version`` is where the checkpoint started reading (0, or a ``startingVersion``).

    Raises:
        PartialVersionError: an offset points inside a version.
        RuntimeError: the batch has no Delta source offset.
    """
    end = _version(delta_source_offset(checkpoint, batch_id), checkpoint, batch_id)
    if batch_id == 0:
        return first_version, end
    previous = delta_source_offset(checkpoint, batch_id - 1)
    start = _version(previous, checkpoint, batch_id - 1) if previous else first_version
    return start, end


def _version(offset: dict[str, Any] | None, checkpoint: Path, batch_id: int) -> int:
    if offset is None:
        raise RuntimeError(f"Batch {batch_id} of {checkpoint} has no Delta source offset.")
    if int(offset.get("index", -1)) != -1:
        raise PartialVersionError(
            f"Batch {batch_id} of {checkpoint} ends inside version {offset['reservoirVersion']} "
            "of its upstream table: the platform reads whole versions, so remove any "
            "maxFilesPerTrigger/maxBytesPerTrigger option from the stream."
        )
    return int(offset["reservoirVersion"])


def last_written_batch(table: Path, app_id: str, not_before_ms: int) -> int | None:
    """The newest batch id that writer ``app_id`` committed to ``table``, looking back from the
    newest commit to the first commit made before ``not_before_ms``; None when there is none.

    A batch is recorded in its commit's ``commitInfo.userMetadata`` as ``{"appId": ..., "batch":
    ...}`` (``delta.append_exactly_once``); a Delta ``txn`` action (how older versions of the
    platform recorded it) counts too. A replayed batch was first written after it was planned, so
    looking back to its planning time (``not_before_ms``) is enough.
    """
    latest = latest_version(table)
    for version in range(latest if latest is not None else -1, -1, -1):
        try:
            lines = commit_file(table, version).read_text().splitlines()
        except FileNotFoundError:  # removed by the log retention: long before any replay
            return None
        batch, committed_ms = _batch_of(lines, app_id)
        if batch is not None:
            return batch
        if committed_ms is not None and committed_ms < not_before_ms:
            return None
    return None


def _batch_of(lines: list[str], app_id: str) -> tuple[int | None, int | None]:
    """(the batch ``app_id`` recorded in a commit or None, the commit's timestamp or None)."""
    batch = committed_ms = None
    for line in lines:
        action = json.loads(line) if line.strip() else {}
        if info := action.get("commitInfo"):
            committed_ms = info.get("timestamp")
            tag = json.loads(info["userMetadata"]) if info.get("userMetadata") else None
            if isinstance(tag, dict) and tag.get("appId") == app_id:
                batch = int(tag["batch"])
        elif (txn := action.get("txn")) and txn.get("appId") == app_id:
            batch = int(txn["version"])
    return batch, committed_ms


def latest_version(table: Path) -> int | None:
    """The newest committed version of ``table``; None when it has no commit."""
    log = location(table) / "_delta_log"
    if not log.is_dir():
        return None
    versions = [int(p.name[:20]) for p in log.glob("*.json") if p.name[:20].isdigit()]
    return max(versions, default=None)


def rows_behind(table: Path, next_version: int) -> int | None:
    """Rows ``table`` gained from ``next_version`` on (what a reader positioned there has not read
    yet); None when the table has no commit or its statistics have no row counts."""
    latest = latest_version(table)
    if latest is None:
        return None
    try:
        files = added_files(table, next_version, latest + 1)
    except OSError:  # commits cleaned up by the log retention: the lag cannot be counted
        return None
    if any(f.records is None for f in files):
        return None
    return sum(f.records or 0 for f in files)


def committed_version(checkpoint: Path) -> int | None:
    """The upstream version a stream's checkpoint will read next: the Delta source offset of its
    newest committed batch (None before the first commit or without a Delta source)."""
    commits = [
        int(p.name) for p in (location(checkpoint) / "commits").glob("[0-9]*") if p.name.isdigit()
    ]
    if not commits:
        return None
    offset = delta_source_offset(checkpoint, max(commits))
    return None if offset is None else int(offset["reservoirVersion"])


def table_id(table: Path) -> str | None:
    """The id Delta gave ``table`` when it was created (``metaData.id``): a Delta source's
    offsets name it as ``reservoirId``, and Spark refuses to read on from offsets of another
    table. None when the table has no log, or no readable metadata.

    The newest ``metaData`` action wins: in the commits after the newest checkpoint, else in that
    checkpoint's Parquet file, else in the oldest commit kept (version 0 before any checkpoint).
    """
    log = location(table) / "_delta_log"
    if not log.is_dir():
        return None
    commits = sorted(
        p for p in log.glob("*.json") if p.name[:20].isdigit() and p.name[20:] == ".json"
    )
    parts = sorted(p for p in log.glob("*.checkpoint*.parquet") if p.name[:20].isdigit())
    since = int(parts[-1].name[:20]) if parts else -1
    for commit in reversed([c for c in commits if int(c.name[:20]) > since]):
        if (found := _metadata_id(commit.read_text().splitlines())) is not None:
            return found
    for part in (p for p in parts if int(p.name[:20]) == since):  # a multi-part checkpoint
        if (found := _checkpoint_metadata_id(part)) is not None:
            return found
    return _metadata_id(commits[0].read_text().splitlines()) if commits else None


def _metadata_id(lines: list[str]) -> str | None:
    for line in lines:
        if '"metaData"' in line:
            metadata = json.loads(line).get("metaData") or {}
            return str(metadata["id"]) if "id" in metadata else None
    return None


def _checkpoint_metadata_id(part: Path) -> str | None:
    import pyarrow.parquet as pq  # only for a table whose first commits were cleaned up

    with part.open("rb") as handle:
        rows = pq.read_table(handle, columns=["metaData"]).column("metaData").to_pylist()
    return next((str(m["id"]) for m in rows if m and m.get("id")), None)
