"""Compacting a Delta table's small files into large ones (``OPTIMIZE``), retried on conflicts.

Its commit has ``dataChange=false``, which streaming readers skip. Appends never conflict with it;
a concurrent DELETE, MERGE or overwrite can, and is retried. The files it replaced stay on disk
until ``lakehouse.vacuum`` deletes them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession


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
