"""Restoring a savepoint: a stopped stream's checkpoint and tables put back to it, together.

If a deploy writes wrong rows, ``restore_savepoint`` puts the stream back to a savepoint and a
rerun with the fix recomputes what came after, with no loss and no duplicates: the current
checkpoint's files move to ``checkpoints/_archive/`` and the copy replaces them; the stream's own
tables are rolled back with Delta ``RESTORE``; from the shared tables (``late_events``,
``stream_ledger``, ``quarantine``) only this stream's rows written after the savepoint are deleted.
The rolled-back batches' tagged commits stay in the logs, where the exactly-once writers look for
their batch: ``lakehouse.savepoint_tables`` tags the rollback so that the rerun still writes them,
and the restore checks it did.

A restore is refused before anything changes when another declared stream reads one of the
stream's tables (a RESTORE is not an append: its Delta source would re-read the rolled-back rows,
then fail with ``DELTA_SOURCE_IGNORE_DELETE``), or a version to restore was vacuumed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from platform_pipelines.core.storage import require_local
from platform_pipelines.lakehouse.checkpoints import query_id_of
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import last_written_batch, latest_version
from platform_pipelines.lakehouse.savepoint_manifest import (
    CHECKPOINT_COPY,
    Manifest,
    TableMark,
    rebuilt_since,
    swap_checkpoint,
)
from platform_pipelines.lakehouse.savepoint_tables import (
    SHARED_TABLES,
    TableRestore,
    forget_rows_after,
    restore_version,
    rolled_back,
    unrestorable,
)
from platform_pipelines.runtime.savepoints import (
    RESTORING_FILE,
    SavepointRefused,
    find_savepoint,
    locked,
    stream_folders,
)
from platform_pipelines.streams.declare import StatefulStream, Stream
from platform_pipelines.streams.sink import writer_ids


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did: the archived checkpoint, and each table's rollback."""

    manifest: Manifest
    archived: Path
    tables: list[TableRestore]


def readers_of(
    lakehouse: Lakehouse, stream: Stream, declared: Sequence[Stream], tables: set[str]
) -> list[str]:
    """The other declared streams that read one of ``tables`` as a Delta stream and have a
    checkpoint (one that starts later reads the table's state then, not its history)."""
    return [
        s.name
        for s in declared
        if isinstance(s, StatefulStream)
        and s.name != stream.name
        and s.upstream in tables
        and lakehouse.checkpoint(s.name).exists()
    ]


def restore_savepoint(
    lakehouse: Lakehouse,
    stream: Stream,
    declared: Sequence[Stream],
    session: Callable[[], SparkSession],
    name: str | None = None,
) -> RestoreResult:
    """Put ``stream``'s checkpoint and tables back to savepoint ``name`` (None: the newest).

    ``session`` gives the SparkSession, called only when a table must change. ``declared`` are
    every declared stream: one that reads a table this restore would roll back refuses it.

    Raises:
        SavepointRefused: no such savepoint, the stream runs, another stream reads its tables,
            or a version to restore is gone (vacuumed, or out of the log).
    """
    require_local(lakehouse.root, "Savepoints")
    savepoint = find_savepoint(lakehouse, stream.name, name)
    manifest = savepoint.manifest
    _refuse_readers(lakehouse, stream, declared, manifest)
    if moved := rebuilt_since(manifest, stream_folders(lakehouse, stream)):
        raise SavepointRefused(
            f"Savepoint {manifest.name!r} of {stream.name!r} was taken before "
            f"the stream was rebuilt ({moved}). Nothing was changed; take "
            "savepoints of the rebuilt stream."
        )
    _refuse_superseded(lakehouse, manifest)
    checkpoint = lakehouse.checkpoint(stream.name)
    with locked(stream.name, checkpoint, "restore"):
        current = query_id_of(checkpoint)
        rolled = [m for m in manifest.own if latest_version(lakehouse.table(m.table)) != m.version]
        forgotten = [
            m
            for m in _shared(stream, manifest)
            if current != manifest.query_id or _written_after(lakehouse, m, manifest)
        ]
        spark = session() if rolled or forgotten else None
        for mark in rolled:
            assert spark is not None
            if problem := unrestorable(spark, lakehouse.table(mark.table), mark.version):
                raise SavepointRefused(
                    f"Savepoint {manifest.name!r} of {stream.name!r} cannot be restored: {problem} "
                    "Nothing was changed. Reprocess the stream from its input instead."
                )
        journal = savepoint.folder.parent / RESTORING_FILE
        journal.write_text(json.dumps({"savepoint": manifest.name}) + "\n")
        stamp = f"{manifest.stream}-{time.time_ns() // 1_000_000}-before-{manifest.name}"
        archived = lakehouse.root / "checkpoints" / "_archive" / stamp
        swap_checkpoint(checkpoint, savepoint.folder / CHECKPOINT_COPY, archived)
        done = [
            restore_version(spark, lakehouse.table(m.table), m, manifest.batch)
            for m in rolled
            if spark is not None
        ]
        done += [
            forget_rows_after(spark, lakehouse.table(m.table), m, manifest)
            for m in forgotten
            if spark is not None
        ]
        _check_tags(lakehouse, manifest, [*manifest.own, *_shared(stream, manifest)])
        journal.unlink()
    return RestoreResult(manifest, archived, done)


def _refuse_readers(
    lakehouse: Lakehouse, stream: Stream, declared: Sequence[Stream], manifest: Manifest
) -> None:
    own = {m.table for m in manifest.own}
    readers = readers_of(lakehouse, stream, declared, own)
    if readers:
        names, tables = ", ".join(readers), ", ".join(sorted(own))
        raise SavepointRefused(
            f"Refused: {names} read{'s' if len(readers) == 1 else ''} {tables} as a stream. "
            f"Rolling {tables} back is not an append: their Delta source would re-read the "
            "rolled-back rows, then stop with DELTA_SOURCE_IGNORE_DELETE. Nothing was changed. "
            f"Restore the downstream streams ({names}) from their own savepoints if only they "
            f"went wrong, or fix forward and reprocess {names} from their input."
        )


def _written_after(lakehouse: Lakehouse, mark: TableMark, manifest: Manifest) -> bool:
    """Whether the stream's writer tagged a batch after the savepoint's in ``mark``'s table."""
    last = last_written_batch(lakehouse.table(mark.table), mark.app_id, manifest.since_ms)
    return last is not None and last > manifest.batch


def _shared(stream: Stream, manifest: Manifest) -> list[TableMark]:
    """The shared tables of the savepoint, and any the stream writes now (a watermark added
    since): its rows written there after the savepoint go too."""
    saved = {m.table for m in manifest.tables}
    now = [
        TableMark(t, None, True, app)
        for t, app in writer_ids(stream, manifest.query_id).items()
        if t in SHARED_TABLES and t not in saved
    ]
    return [*manifest.shared, *now]


def _refuse_superseded(lakehouse: Lakehouse, manifest: Manifest) -> None:
    """A savepoint taken before a restore to an earlier one saved rows recomputed since."""
    for mark in manifest.own:
        if why := rolled_back(lakehouse.table(mark.table), mark):
            raise SavepointRefused(
                f"Savepoint {manifest.name!r} of {manifest.stream!r} was taken before the stream "
                f"was restored to an earlier point ({why}): what it saved was recomputed since, "
                "so it cannot be restored consistently. Nothing was changed; restore a savepoint "
                "taken after that restore."
            )


def _check_tags(lakehouse: Lakehouse, manifest: Manifest, marks: list[TableMark]) -> None:
    """The rerun's writers must find no tag after the savepoint's batch, or they would skip."""
    for mark in marks:
        last = last_written_batch(lakehouse.table(mark.table), mark.app_id, manifest.since_ms)
        if last is not None and last > manifest.batch:
            raise RuntimeError(
                f"Restore of {manifest.stream!r} incomplete: table {mark.table} still records "
                f"batch {last} of writer {mark.app_id} as its newest, after the savepoint's batch "
                f"{manifest.batch}; a rerun would skip batches {manifest.batch + 1}-{last}. Do not "
                "start the stream; run the restore again, or reprocess the stream."
            )
