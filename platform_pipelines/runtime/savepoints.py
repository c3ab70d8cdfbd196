"""What saving and restoring a stream share: finding its savepoints, and the lock they hold.

A savepoint is a stream's checkpoint and its tables' versions, saved together and put back
together: ``runtime.savepoint_create`` takes one before a risky deploy, ``runtime.savepoint_restore``
puts it back if the deploy writes wrong rows, so that a rerun with the fix recomputes what came
after, with no loss and no duplicates. Both hold the stream's checkpoint lock (a running stream is
refused) and refuse with ``SavepointRefused``, whose message says why and what to do instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.savepoint_manifest import (
    Manifest,
    folder_bytes,
    list_manifests,
    savepoints_dir,
)
from platform_pipelines.lakehouse.savepoint_tables import SHARED_TABLES
from platform_pipelines.runtime.lock import (
    CheckpointBusyError,
    CheckpointLocks,
    describe_holder,
    holder,
)
from platform_pipelines.streams.declare import Stream

RESTORING_FILE = "_restoring.json"  # in savepoints/<stream>/ while a restore is under way


class SavepointRefused(RuntimeError):
    """The savepoint cannot be taken or restored; the message says why and what to do instead."""


@dataclass(frozen=True)
class Savepoint:
    """A savepoint on disk: its manifest, folder and size."""

    manifest: Manifest
    folder: Path
    bytes: int


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


def restore_pending(lakehouse: Lakehouse, stream: str) -> str | None:
    """The savepoint an unfinished restore of ``stream`` was putting back (None when none is):
    run that restore again before starting the stream."""
    try:
        text = (savepoints_dir(lakehouse.root, stream) / RESTORING_FILE).read_text()
    except OSError:
        return None
    return str(json.loads(text)["savepoint"])


def stream_folders(lakehouse: Lakehouse, stream: Stream) -> dict[str, str]:
    """The folder names of ``stream``'s checkpoint and own tables, which a rebuild changes."""
    own = [t for t in stream.outputs if t not in SHARED_TABLES]
    return {
        "checkpoint": lakehouse.checkpoint(stream.name).name,
        **{t: lakehouse.table(t).name for t in own},
    }


@contextmanager
def locked(stream: str, checkpoint: Path, doing: str) -> Iterator[None]:
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
