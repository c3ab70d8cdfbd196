"""How long VACUUM must keep a table's replaced files: long enough for every declared reader.

A stream reading a table (``StatefulStream.source_table``) reads the files its upstream's commits
added after the version its checkpoint recorded, its writer opens them again for late rows
(``LateRows.find`` in ``streams.late_rows``), and ``platform stream reset-watermark`` may replay from the oldest batch
the checkpoint holds. For every declared reader, on its checkpoint and on any rebuild not switched
in yet, the oldest version it may read is in its oldest retained ``offsets/<n>``
(``oldest_read_version``); every file live at that version or added after was replaced after its
commit, so ``now - commit time + margin`` keeps them all. The retention used is the largest of the
configured one, a floor (files being written are not in the log yet, and VACUUM deletes unlisted
files older than the retention) and every reader's need (``retention_for``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Protocol

from platform_pipelines.core.units import duration
from platform_pipelines.lakehouse.checkpoints import batch_ids, read_plan
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import delta_source_offset, latest_version
from platform_pipelines.lakehouse.table_files import commit_timestamp, oldest_commit
from platform_pipelines.lakehouse.vacuum import whole_hours
from platform_pipelines.streams.declare import StatefulStream, Stream


class RetentionPolicy(Protocol):
    """The settings the retention is chosen from (``MaintenanceOptions`` has them)."""

    @property
    def retention(self) -> timedelta: ...

    @property
    def margin(self) -> timedelta: ...

    @property
    def min_retention(self) -> timedelta: ...


@dataclass(frozen=True)
class ReaderHold:
    """The oldest upstream version a stream's checkpoint may still read, and when it was
    committed (epoch ms; the oldest commit still in the log when that one is gone)."""

    stream: str
    version: int
    committed_ms: int
    where: str  # e.g. "offsets/12"


@dataclass(frozen=True)
class Retention:
    """The retention VACUUM used, why, and the readers that were considered."""

    duration: timedelta
    reason: str
    holds: tuple[ReaderHold, ...] = ()

    @property
    def hours(self) -> float:
        return self.duration.total_seconds() / 3600


def oldest_read_version(checkpoint: Path) -> tuple[int, str] | None:
    """The oldest upstream version whose files ``checkpoint`` may still read, and where that is
    recorded; None when it read nothing and has no start plan (it will read the table as it is).

    A retained first batch that read the table's snapshot (no start plan) may be replayed: it
    reads the version before its end offset. Any later replay reads the commits from the oldest
    retained end offset on (``platform stream reset-watermark`` replays no further back)."""
    ids, plan = batch_ids(checkpoint), read_plan(checkpoint)
    found: list[tuple[int, str]] = []
    if ids and (offset := delta_source_offset(checkpoint, ids[0])) is not None:
        version = int(offset["reservoirVersion"])
        if ids[0] == 0 and plan is None:
            found.append((max(version - 1, 0), "the snapshot its offsets/0 read"))
        else:
            found.append((version, f"offsets/{ids[0]}"))
    if plan is not None and (not ids or ids[0] == 0):
        found.append((plan.starting_version, "its start plan"))
    return min(found) if found else None


def reader_holds(
    lake: Lakehouse,
    streams: Iterable[Stream],
    table: str,
    now_ms: int,
) -> list[ReaderHold]:
    """What every declared reader of ``table`` may still read, on its checkpoint and on those of
    its rebuilds not switched in yet (``reprocess/<id>/checkpoints``)."""
    path, holds = lake.table(table), []
    for stream in streams:
        if not isinstance(stream, StatefulStream) or stream.upstream != table:
            continue
        rebuilds = sorted((lake.root / "reprocess").glob(f"*/checkpoints/{stream.name}"))
        for checkpoint in (lake.checkpoint(stream.name), *rebuilds):
            if (found := oldest_read_version(checkpoint)) is not None:
                version, where = found
                committed = _committed_ms(path, version, now_ms)
                holds.append(ReaderHold(stream.name, version, committed, where))
    return holds


def _committed_ms(table: Path, version: int, now_ms: int) -> int:
    """When ``version`` was committed; ``now_ms`` for a version not written yet; the oldest
    commit still in the log for one the log retention already removed."""
    stamp = commit_timestamp(table, version)
    if stamp is not None:
        return stamp
    latest, oldest = latest_version(table), oldest_commit(table)
    if latest is None or version > latest:
        return now_ms
    return (commit_timestamp(table, oldest) if oldest is not None else None) or now_ms


def retention_for(
    options: RetentionPolicy,
    holds: Iterable[ReaderHold],
    now_ms: int,
) -> Retention:
    """The largest of the configured retention, the floor and every reader's need, rounded up to
    whole hours (as VACUUM uses it)."""
    holds = tuple(holds)
    chosen, reason = options.retention, "configured"
    if chosen < options.min_retention:
        chosen, reason = options.min_retention, "the floor: files being written are unlisted"
    for hold in holds:
        age = timedelta(milliseconds=max(0, now_ms - hold.committed_ms))
        if age + options.margin > chosen:
            chosen = age + options.margin
            reason = (
                f"{hold.stream} may still read version {hold.version} ({hold.where}), "
                f"committed {duration(age.total_seconds())} ago, + "
                f"{duration(options.margin.total_seconds())} margin"
            )
    return Retention(whole_hours(chosen), reason, holds)
