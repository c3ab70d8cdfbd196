"""Resetting a stream whose watermark is ahead of the clock, with no loss and no duplicates.

Such a watermark makes every on-time row late (they are kept in ``late_events``); it lives in the
checkpoint and survives restarts. A reset:

1. holds the stream's checkpoint lock (the stream must not run);
2. finds the first batch judged by a watermark ahead of its own clock (``health.watermark``);
   its rows, and everything after, are replayed;
3. moves the checkpoint to ``checkpoints/_archive/`` and writes a start plan for the new one:
   read the upstream table from that batch's first version, and drop output rows the table
   already holds until the watermark passes the old one's newest event (the stream's
   ``unique_key``);
4. removes the replayed batches' rows from ``late_events`` and ``stream_ledger``: the replay
   counts them again.

The poisoned watermark had already evicted the stream's state (every timer fired at it), so the
new checkpoint's empty state loses nothing the old one still held.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from platform_pipelines.core.storage import require_local
from platform_pipelines.health.watermark import BatchTimes, first_poisoned_batch
from platform_pipelines.lakehouse.checkpoints import (
    StartPlan,
    batch_clock,
    batch_ids,
    offsets_metadata,
    query_id_of,
    write_plan,
)
from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.lakehouse.delta_log import batch_versions
from platform_pipelines.lakehouse.tables import LATE_TABLE, LEDGER_TABLE
from platform_pipelines.runtime.lock import CheckpointLocks
from platform_pipelines.streams.declare import StatefulStream


class ResetRefused(RuntimeError):
    """The reset cannot be done; the message says why and what to do instead."""


@dataclass(frozen=True)
class ResetResult:
    """What a reset did."""

    archived: Path
    first_batch: int
    starting_version: int
    late_rows_returned: int


def reset_watermark(
    spark: SparkSession, lakehouse: Lakehouse, stream: StatefulStream, force: bool = False
) -> ResetResult:
    """Reset ``stream`` onto a new checkpoint that replays what the bad watermark refused."""
    require_local(lakehouse.root, "Resetting a watermark (it moves the checkpoint folder)")
    if stream.watermark is None:
        raise ResetRefused(f"Stream {stream.name!r} has no watermark: nothing to reset.")
    if stream.topic:
        raise ResetRefused(
            f"Stream {stream.name!r} reads its Kafka topic itself (reads='kafka'), "
            "and a reset replays upstream table versions. Rebuild it from a time "
            f"before the bad watermark instead: `platform reprocess {stream.name} "
            "--from timestamp --timestamp <ISO time>`."
        )
    checkpoint = lakehouse.checkpoint(stream.name)
    with CheckpointLocks({stream.name: checkpoint}, owner="platform stream reset-watermark"):
        first = _first_replayed_batch(checkpoint, force)
        start, _ = batch_versions(checkpoint, first)
        old = query_id_of(checkpoint)
        guard = _guard_until(checkpoint, first, stream)
        returned = _forget(spark, lakehouse, stream.name, old, first)
        archived = lakehouse.root / "checkpoints" / "_archive" / f"{stream.name}-{int(time.time())}"
        archived.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(checkpoint), str(archived))
        write_plan(checkpoint, StartPlan(start, guard, old))
    return ResetResult(archived, first, start, returned)


def _first_replayed_batch(checkpoint: Path, force: bool) -> int:
    ids = [b for b in batch_ids(checkpoint) if b > 0]
    committed = set(batch_ids(checkpoint, "commits"))
    times = [
        BatchTimes(b, c.timestamp_ms, c.late_until_ms)
        for b in ids
        if b in committed and (c := batch_clock(checkpoint, b))
    ]
    first = first_poisoned_batch(times)
    if first is None and not force:
        raise ResetRefused(
            f"The watermark in {checkpoint} is not ahead of the clock: nothing to reset (use "
            "--force to restart the stream on a new checkpoint from its last batch anyway)."
        )
    if first is None:
        return max(committed) + 1 if committed else 0
    if first - 1 not in ids and first > 0:
        raise ResetRefused(
            f"The checkpoint no longer holds the batch before the watermark went wrong (batch "
            f"{first - 1} was purged): reprocess the stream from its upstream table instead."
        )
    return first


def _guard_until(checkpoint: Path, first: int, stream: StatefulStream) -> int:
    """The newest sane event time the old checkpoint knew, plus the watermark delay: after the
    new checkpoint's watermark passes it, no replayed row can be one the table already holds."""
    meta = offsets_metadata(checkpoint, first - 1) if first > 0 else None
    sane = int((meta or {}).get("batchTimestampMs", 0))
    delay = int(stream.watermark.total_seconds() * 1000) if stream.watermark else 0
    return sane + 2 * delay


def _forget(
    spark: SparkSession, lakehouse: Lakehouse, stream: str, query_id: str, first: int
) -> int:
    """Remove the replayed batches' late rows and ledger rows; return the late rows removed."""
    replayed = (
        (F.col("stream") == stream) & (F.col("query_id") == query_id) & (F.col("batch_id") >= first)
    )
    returned = 0
    for table in (LATE_TABLE, LEDGER_TABLE):
        path = lakehouse.table(table)
        if not has_commit(path):
            continue
        if table == LATE_TABLE:
            returned = spark.read.format("delta").load(str(path)).where(replayed).count()
        DeltaTable.forPath(spark, str(path)).delete(replayed)
    return returned
