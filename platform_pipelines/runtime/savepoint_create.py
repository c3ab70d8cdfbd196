"""Taking a savepoint: a stopped stream's checkpoint copied, its tables' Delta versions recorded.

Before a risky deploy, ``create_savepoint`` copies the stream's checkpoint as of its last
committed batch and records the Delta version of every table it writes, so that
``runtime.savepoint_restore`` can put both back together. It needs no Spark.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import NoReturn

from platform_pipelines.core.storage import require_local
from platform_pipelines.lakehouse.checkpoints import batch_ids, offsets_metadata, query_id_of
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import latest_version
from platform_pipelines.lakehouse.savepoint_manifest import (
    CHECKPOINT_COPY,
    Manifest,
    TableMark,
    check_savepoint_name,
    copy_checkpoint,
    default_name,
    folder_bytes,
    kafka_offsets,
    savepoints_dir,
    version_at_batch,
    write_manifest,
)
from platform_pipelines.lakehouse.savepoint_tables import SHARED_TABLES
from platform_pipelines.runtime.savepoints import SavepointRefused, locked, stream_folders
from platform_pipelines.streams.declare import IngestStream, Stream
from platform_pipelines.streams.sink import writer_ids

_CLOCK_SKEW_MS = 60_000


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
    with locked(stream.name, checkpoint, "take a savepoint of"):
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
            stream_folders(lakehouse, stream),
        )
        write_manifest(partial, manifest)
        partial.rename(folder)  # a savepoint is complete, or absent
    return manifest


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
