"""Savepoints: a stream's checkpoint and its tables' versions, saved together, put back together.

Before a risky deploy, ``create_savepoint`` copies the stream's checkpoint as of its last
committed batch and records the Delta version of every table it writes. If the deploy writes wrong
rows, ``restore_savepoint`` puts both back and a rerun with the fix recomputes what came after,
with no loss and no duplicates: the current checkpoint's files move to ``checkpoints/_archive/``
and the copy replaces them; the stream's own tables are rolled back with Delta ``RESTORE``; from
the shared tables (``late_events``, ``stream_ledger``, ``quarantine``) only this stream's rows
written after the savepoint are deleted. The rolled-back batches' tagged commits stay in the
logs, where the exactly-once writers look for their batch: ``lakehouse.savepoint_tables`` tags
the rollback so that the rerun still writes them, and the restore checks it did.

Both hold the stream's checkpoint lock (a running stream is refused). A restore is refused before
anything changes when another declared stream reads one of the stream's tables (a RESTORE is not
an append: its Delta source would re-read the rolled-back rows, then fail with
``DELTA_SOURCE_IGNORE_DELETE``), or a version to restore was vacuumed.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from pyspark.sql import SparkSession

from platform_pipelines.core.storage import require_local
from platform_pipelines.lakehouse.checkpoints import batch_ids, offsets_metadata, query_id_of
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import last_written_batch, latest_version
from platform_pipelines.lakehouse.savepoint_manifest import (
    CHECKPOINT_COPY,
    Manifest,
    TableMark,
    check_savepoint_name,
    copy_checkpoint,
    default_name,
    folder_bytes,
    kafka_offsets,
    list_manifests,
    rebuilt_since,
    savepoints_dir,
    swap_checkpoint,
    version_at_batch,
    write_manifest,
)
from platform_pipelines.lakehouse.savepoint_tables import (
    SHARED_TABLES,
    TableRestore,
    forget_rows_after,
    restore_version,
    rolled_back,
    unrestorable,
)
from platform_pipelines.runtime.lock import (
    CheckpointBusyError,
    CheckpointLocks,
    describe_holder,
    holder,
)
from platform_pipelines.streams.declare import IngestStream, StatefulStream, Stream
from platform_pipelines.streams.sink import writer_ids

RESTORING_FILE = "_restoring.json"  # in savepoints/<stream>/ while a restore is under way
_CLOCK_SKEW_MS = 60_000


class SavepointRefused(RuntimeError):
    """The savepoint cannot be taken or restored; the message says why and what to do instead."""


@dataclass(frozen=True)
class Savepoint:
    """A savepoint on disk: its manifest, folder and size."""

    manifest: Manifest
    folder: Path
    bytes: int


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did: the archived checkpoint, and each table's rollback."""

    manifest: Manifest
    archived: Path
    tables: list[TableRestore]


def create_savepoint(
    lakehouse: Lakehouse, stream: Stream, name: str | None = None, now_ms: int | None = None
) -> Manifest:
    """Save ``stream``'s checkpoint and its tables' versions as savepoint ``name`` (default: the
    UTC time). Needs no Spark.

    Raises:
        SavepointRefused: the stream runs, has committed no batch, or the name is taken.
        SavepointNameError: ``name`` may not name a folder.
    """
    require_local(lakehouse.root, "Savepoints")
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    name = check_savepoint_name(name or default_name(now_ms))
    folder = savepoints_dir(lakehouse.root, stream.name) / name
    if folder.exists():
        raise SavepointRefused(
            f"Stream {stream.name!r} already has a savepoint named {name!r} ({folder}); choose "
            "another name (or delete that folder first)."
        )
    checkpoint = lakehouse.checkpoint(stream.name)
    if not batch_ids(checkpoint, "commits"):  # before the lock, which would create the folder
        _nothing_to_save(stream.name, checkpoint)
    with _locked(stream.name, checkpoint, "take a savepoint of"):
        committed = batch_ids(checkpoint, "commits")
        if not committed:
            _nothing_to_save(stream.name, checkpoint)
        batch, query_id = committed[-1], query_id_of(checkpoint)
        marks = tuple(
            _mark(lakehouse, table, app, batch)
            for table, app in writer_ids(stream, query_id).items()
        )
        planned = offsets_metadata(checkpoint, batch + 1)  # a batch left without its commit
        since = int(planned["batchTimestampMs"]) if planned else now_ms
        partial = folder.parent / f".{name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        copy_checkpoint(checkpoint, partial / CHECKPOINT_COPY, batch)
        offsets = kafka_offsets(checkpoint, batch) if isinstance(stream, IngestStream) else {}
        manifest = Manifest(
            stream.name,
            name,
            now_ms,
            query_id,
            batch,
            marks,
            offsets,
            folder_bytes(partial / CHECKPOINT_COPY),
            min(since, now_ms) - _CLOCK_SKEW_MS,
            _folders(lakehouse, stream),
        )
        write_manifest(partial, manifest)
        partial.rename(folder)  # a savepoint is complete, or absent
    return manifest


def _folders(lakehouse: Lakehouse, stream: Stream) -> dict[str, str]:
    own = [t for t in stream.outputs if t not in SHARED_TABLES]
    return {
        "checkpoint": lakehouse.checkpoint(stream.name).name,
        **{t: lakehouse.table(t).name for t in own},
    }


def _nothing_to_save(stream: str, checkpoint: Path) -> NoReturn:
    raise SavepointRefused(
        f"Stream {stream!r} has not committed a batch yet ({checkpoint}): there is nothing to "
        "save. Run it first (its job, or all_streams), then take the savepoint."
    )


def _mark(lakehouse: Lakehouse, table: str, app_id: str, batch: int) -> TableMark:
    path = lakehouse.table(table)
    latest = latest_version(path)
    shared = table in SHARED_TABLES
    if latest is not None and not shared:
        latest = version_at_batch(path, app_id, batch, latest)
    return TableMark(table, latest, shared, app_id)


def list_savepoints(lakehouse: Lakehouse, stream: str | None = None) -> list[Savepoint]:
    """The savepoints of ``stream`` (or of every stream), oldest first."""
    return [
        Savepoint(m, folder, folder_bytes(folder))
        for m, folder in list_manifests(lakehouse.root, stream)
    ]


def find_savepoint(lakehouse: Lakehouse, stream: str, name: str | None = None) -> Savepoint:
    """Savepoint ``name`` of ``stream`` (None: the newest one), else ``SavepointRefused``
    listing those there are."""
    found = list_savepoints(lakehouse, stream)
    if not found:
        raise SavepointRefused(
            f"Stream {stream!r} has no savepoint; take one with `platform savepoint create "
            f"{stream}` (or the savepoint_create job) before a risky deploy."
        )
    if name is None:
        return found[-1]
    for savepoint in found:
        if savepoint.manifest.name == name:
            return savepoint
    known = ", ".join(s.manifest.name for s in found)
    raise SavepointRefused(
        f"Stream {stream!r} has no savepoint named {name!r}; it has: {known} "
        f"(`platform savepoint list {stream}`)."
    )


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
    if moved := rebuilt_since(manifest, _folders(lakehouse, stream)):
        raise SavepointRefused(
            f"Savepoint {manifest.name!r} of {stream.name!r} was taken before "
            f"the stream was rebuilt ({moved}). Nothing was changed; take "
            "savepoints of the rebuilt stream."
        )
    _refuse_superseded(lakehouse, manifest)
    checkpoint = lakehouse.checkpoint(stream.name)
    with _locked(stream.name, checkpoint, "restore"):
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


def restore_pending(lakehouse: Lakehouse, stream: str) -> str | None:
    """The savepoint an unfinished restore of ``stream`` was putting back (None when none is):
    run that restore again before starting the stream."""
    try:
        text = (savepoints_dir(lakehouse.root, stream) / RESTORING_FILE).read_text()
    except OSError:
        return None
    return str(json.loads(text)["savepoint"])


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


@contextmanager
def _locked(stream: str, checkpoint: Path, doing: str) -> Iterator[None]:
    """Hold the stream's checkpoint lock, or refuse naming who holds it."""
    try:
        locks = CheckpointLocks({stream: checkpoint}, owner=f"platform savepoint ({doing})")
        locks.__enter__()
    except CheckpointBusyError:
        who = describe_holder(holder(checkpoint))
        raise SavepointRefused(
            f"Cannot {doing} stream {stream!r} while it runs: {who} holds its "
            f"checkpoint {checkpoint}. Stop it first (cancel its run in Dagster, "
            "or Ctrl-C its command), then try again."
        ) from None
    try:
        yield
    finally:
        locks.release()
