"""A checkpoint whose first batch was never planned: what a crash during a first start leaves.

Spark writes every checkpoint file to a temporary file and renames it, in this order on a first
start: ``metadata`` (the query id), ``sources/`` (a Kafka source's first offsets), ``offsets/0``
(batch 0 planned), the state store's schema, operator metadata and changelogs, the sink's
commits, then ``commits/0``. A start killed before ``offsets/0`` was renamed can leave a
temporary file in ``offsets/`` (``.0.<uuid>.tmp`` and its ``.crc``), and Spark refuses to start
a new query on a checkpoint whose ``offsets``, ``commits`` or ``state`` folder is not empty
(``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``, since Spark 4.1).

No batch was planned, so nothing was read and nothing was written to any sink: those folders hold
nothing that a new start needs, and clearing them loses nothing (the input is still in Kafka or in
the upstream table). A checkpoint with ``offsets/0`` is left alone: Spark runs that batch again
with the same offsets, and the sinks skip what a crashed attempt already committed.
"""

from __future__ import annotations

from pathlib import Path

from platform_pipelines.core.storage import location, remove_tree
from platform_pipelines.lakehouse.checkpoints import batch_ids

# The folders Spark requires to be empty when it starts a query without a planned batch.
FIRST_BATCH_FOLDERS = ("offsets", "commits", "state")


def unplanned_leftovers(checkpoint: Path) -> list[Path]:
    """What a first start killed before planning its first batch left in ``checkpoint``: its
    non-empty ``offsets``, ``commits`` and ``state`` folders, when none holds a batch.

    Empty for a checkpoint that planned a batch, for a new one, and for one that holds only
    ``metadata`` and ``sources`` (Spark starts on those).
    """
    root = location(checkpoint)
    if batch_ids(root, "offsets") or batch_ids(root, "commits"):
        return []
    folders = [root / name for name in FIRST_BATCH_FOLDERS]
    return [folder for folder in folders if folder.is_dir() and any(folder.iterdir())]


def clear_unplanned_first_start(checkpoint: Path) -> list[str]:
    """Remove ``unplanned_leftovers(checkpoint)``; returns what was removed, as
    ``folder/file`` names, for the run log (empty when there was nothing to clear).

    Call it only while holding the checkpoint's lock: a query running on the checkpoint could be
    planning its first batch.
    """
    removed = []
    for folder in unplanned_leftovers(checkpoint):
        removed += sorted(f"{folder.name}/{child.name}" for child in folder.iterdir())
        remove_tree(folder)
    return removed
