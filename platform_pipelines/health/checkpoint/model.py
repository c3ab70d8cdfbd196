"""The plain facts ``inspect_checkpoint`` reads out of a checkpoint folder."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain, islice, pairwise
from typing import Any


@dataclass(frozen=True)
class Missing:
    """Numbers missing from a range (batch ids, versions, partitions): how many, the first few."""

    count: int
    first: tuple[int, ...]

    def __str__(self) -> str:
        shown = ", ".join(map(str, self.first))
        return f"{shown} ... ({self.count} in all)" if self.count > len(self.first) else shown


def missing_between(present: Iterable[int], start: int, end: int, limit: int = 5) -> Missing:
    """Which of ``start..end`` are not in ``present``, without building the range (a stray file
    named ``99999999999`` must not cost memory)."""
    inside = sorted({n for n in present if start <= n <= end})
    gaps = (range(a + 1, b) for a, b in pairwise([start - 1, *inside, end + 1]))
    count = max(0, end - start + 1 - len(inside))
    return Missing(count, tuple(islice(chain.from_iterable(gaps), limit)))


@dataclass(frozen=True)
class DamagedFile:
    """A file Spark could not read back: its path inside the checkpoint and what is wrong with it,
    phrased to follow the path (``state/0/1/7.zip is empty (0 bytes)``)."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path} {self.problem}"


@dataclass(frozen=True)
class StoreFacts:
    """One state store: one partition of one operator (``default``, or a subfolder's name).

    Attributes:
        snapshots: versions with a full snapshot (``.zip``, or ``.snapshot`` for HDFS).
        changelogs: versions with a changelog (``.changelog``, or ``.delta`` for HDFS).
        snapshot_bytes, changelog_bytes: their sizes in bytes.
    """

    path: str
    partition: int
    name: str = "default"
    snapshots: tuple[int, ...] = ()
    changelogs: tuple[int, ...] = ()
    snapshot_bytes: int = 0
    changelog_bytes: int = 0

    @property
    def newest_snapshot(self) -> int:
        """The newest snapshot version, 0 when there is none (replay starts from empty state)."""
        return max(self.snapshots, default=0)

    @property
    def newest_version(self) -> int:
        return max((*self.snapshots, *self.changelogs), default=0)

    @property
    def snapshot_lag(self) -> int:
        """Changelogs a restart replays on top of the newest snapshot."""
        return self.newest_version - self.newest_snapshot

    @property
    def retained_versions(self) -> int:
        versions = (*self.snapshots, *self.changelogs)
        return max(versions) - min(versions) + 1 if versions else 0

    @property
    def missing_changelogs(self) -> Missing:
        """Changelogs the newest version is rebuilt from (after the newest snapshot) that are gone."""
        return missing_between(self.changelogs, self.newest_snapshot + 1, self.newest_version)

    @property
    def bytes_per_version(self) -> float:
        """What one state version adds: a changelog, or a snapshot without changelog checkpointing."""
        if self.changelogs:
            return self.changelog_bytes / len(self.changelogs)
        return self.snapshot_bytes / len(self.snapshots) if self.snapshots else 0.0


@dataclass(frozen=True)
class OperatorFacts:
    """One stateful operator: ``state/<operator_id>/``.

    Attributes:
        name: Spark's operator name from the operator metadata ("" when not recorded).
        partitions: the numeric partition folders found.
        metadata_partitions: ``numPartitions`` from the operator metadata (None when not recorded).
        stores: every store found, by partition.
        damaged: state files Spark could not read back.
        total_bytes: size of everything under ``state/<operator_id>/``.
    """

    operator_id: str
    name: str = ""
    partitions: tuple[int, ...] = ()
    metadata_partitions: int | None = None
    stores: tuple[StoreFacts, ...] = ()
    damaged: tuple[DamagedFile, ...] = ()
    total_bytes: int = 0


@dataclass(frozen=True)
class CheckpointFacts:
    """Everything read from one checkpoint folder, as plain data.

    Attributes:
        path: the checkpoint folder.
        exists: whether it exists (a stream never run has none).
        query_id: the id in ``metadata`` ("" when missing or unreadable).
        offsets, commits: the batch ids with an offsets / commits file, ascending.
        total_bytes, file_count: size and number of every file, checksums included.
        log_bytes: size of the offsets and commits files (without checksums).
        state_bytes: size of everything under ``state/``.
        checkpoint_conf: the ``conf`` of the newest readable offsets file.
        latest_batch_timestamp_ms, watermark_ms: of the newest readable offsets file.
        latest_source_offsets: one dict per source, from the offsets of the newest committed batch.
        operators: the stateful operators by id.
        damaged: files outside ``state/`` Spark could not read back.
    """

    path: str
    exists: bool
    query_id: str = ""
    offsets: list[int] = field(default_factory=list)
    commits: list[int] = field(default_factory=list)
    total_bytes: int = 0
    file_count: int = 0
    log_bytes: int = 0
    state_bytes: int = 0
    checkpoint_conf: dict[str, str] = field(default_factory=dict)
    latest_batch_timestamp_ms: int | None = None
    watermark_ms: int | None = None
    latest_source_offsets: list[dict[str, Any]] = field(default_factory=list)
    operators: dict[str, OperatorFacts] = field(default_factory=dict)
    damaged: list[DamagedFile] = field(default_factory=list)

    @property
    def stores(self) -> list[StoreFacts]:
        return [store for op in self.operators.values() for store in op.stores]

    @property
    def all_damaged(self) -> list[DamagedFile]:
        return [*self.damaged, *(d for op in self.operators.values() for d in op.damaged)]

    @property
    def bytes_per_batch(self) -> int:
        """Bytes one batch writes: its offsets and commit, plus one state version of every store
        (snapshots and SSTs are written only now and then, and are left out)."""
        logs = self.log_bytes / len(self.offsets) if self.offsets else 0.0
        return round(logs + sum(store.bytes_per_version for store in self.stores))


# --- reading the folder ---------------------------------------------------------------------------
