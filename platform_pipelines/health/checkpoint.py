"""What a stream's checkpoint folder holds, read without a JVM, and health judgements over it.

The layout Spark 4.2 writes (RocksDB state store with changelog checkpointing), under ``<checkpoint>/``:

``metadata``
    ``{"id": "<query id>"}``: compact JSON from Spark, or ``json.dumps`` plus a newline and no
    ``.crc`` when the platform wrote it first (``lakehouse.delta.checkpoint_query_id``).
``offsets/<n>``
    Written when batch ``n`` is planned. Line 1 the format (``v1``; ``v2`` exists too), line 2 the
    batch metadata ``{"batchWatermarkMs", "batchTimestampMs", "conf": {...}}`` where ``conf`` holds
    the SQL settings frozen into the checkpoint (``spark.sql.shuffle.partitions``,
    ``spark.sql.streaming.stateStore.providerClass``...; on restart Spark puts these back into the
    session, overriding what is configured). Then one line per source: Kafka
    ``{"topic":{"0":12,"1":7}}`` (per partition, the next offset to read), Delta
    ``{"sourceVersion":1,"reservoirId":..,"reservoirVersion":..,"index":..,"isStartingVersion":..}``,
    ``-`` for a source without an offset; ``v2`` lines are ``<sourceId>:<json>``.
``commits/<n>``
    Written when batch ``n`` is done: ``v1`` and ``{"nextBatchWatermarkMs":..}`` (``v2``/``v3`` add
    ``stateUniqueIds``/``sinkMetadataMap``). Offsets ``n`` without commit ``n`` is a batch in flight.
    Spark keeps the newest ``minBatchesToRetain + 1`` offsets and deletes older ones (and commits).
``sources/<i>/0``
    A Kafka source's initial offsets: a NUL byte, ``v1`` and JSON. Never purged.
``state/<op>/_metadata/metadata`` or ``state/<op>/_metadata/v2/<batch>``
    The stateful operator's name and, per store, ``numPartitions``. ``_stateSchema/`` holds schemas.
``state/<op>/<partition>/``
    One RocksDB store per shuffle partition (stores with other names, e.g. a join's, in subfolders):
    ``<v>.changelog`` the changes of state version ``v`` (written by batch ``v - 1``, every batch),
    ``<v>.zip`` a snapshot of version ``v`` (RocksDB's small files and a ``metadata`` entry naming the
    data files), ``SSTs/<n>-<uuid>.sst`` and ``logs/`` the data files snapshots share.
    Checkpoint format v2 names them ``<v>_<uniqueId>.zip``/``.changelog``; the HDFS-backed provider
    writes ``<v>.delta`` and ``<v>.snapshot`` instead. Snapshots are uploaded by the maintenance task
    (every ``minDeltasForSnapshot`` = 10 versions, checked every 60 s), so a store may have none yet.
    To load version ``v``, Spark reads the newest snapshot ``<= v`` and replays every changelog after it.
``.<name>.crc``
    Hadoop's checksum of ``<name>``: ``b"crc\\0"``, the chunk size (512) and a CRC32 per chunk.
    Hadoop verifies it on read, so a mismatch means Spark cannot read the file.

``inspect_checkpoint`` turns the folder into plain ``CheckpointFacts`` (never raising). It reads
every log, metadata and state version file (checksums, zips, LZ4 end blocks) but not the SST and
log data files, which can be large: only their presence and size, against the snapshots' metadata.

``judge_checkpoint`` judges the facts against ``CheckpointExpectations``; ``checkpoint_verdict``
combines the judgements into the one ``checkpoint`` check:

- ``checkpoint_batches``: fail for more than one batch with offsets but no commit (one is a batch
  in flight), a gap in the offsets or commits, or a commit newer than every offsets file.
- ``checkpoint_files``: fail for a file Spark cannot read back (empty, checksum mismatch, corrupt
  zip, snapshot missing an SST, changelog cut short) or a store missing a changelog after its
  newest snapshot.
- ``checkpoint_retention``: warn when far more batches or state versions are kept than Spark keeps.
- ``checkpoint_size``: evidence; warn only beyond ``max_total_bytes`` or ``max_bytes_per_batch``.
- ``checkpoint_snapshots``: warn when a store is more than ``snapshot_lag_warn`` versions past its
  newest snapshot.
- ``checkpoint_state_partitions``: fail when an operator's partition folders (or its metadata)
  disagree with the checkpoint's ``spark.sql.shuffle.partitions``.
- ``checkpoint_partition_config``: warn when a stateful checkpoint's partition count differs from
  the configured one (Spark keeps the checkpoint's).
- ``checkpoint_provider``: fail when a stateful checkpoint was written by another state store
  provider than the configured one (Spark keeps the checkpoint's).

A missing folder passes as "no checkpoint yet": a stream never run is not unhealthy.
"""

from __future__ import annotations

import json
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, islice, pairwise
from pathlib import Path
from typing import Any

from platform_pipelines.core.verdict import Verdict, combine, failed, passed, warned

CHECK = "checkpoint"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass"

_VERSION_FILE = re.compile(r"^(\d+)(?:_[^.]+)?\.(zip|changelog|snapshot|delta)$")
_SNAPSHOT_KINDS = {"zip", "snapshot"}
_NOT_STORES = {"SSTs", "logs"}  # RocksDB data files shared by a store's snapshots
_LZ4_MAGIC = b"LZ4Block"
_LZ4_END_LENGTH = 21  # magic, token, then compressed length, length and checksum all zero
_CRC_MAGIC = b"crc\x00"
_MISSING = "is missing"


@dataclass(frozen=True)
class CheckpointExpectations:
    """What the platform configures, and the thresholds the judgements use.

    Attributes:
        state_partitions: ``spark.sql.shuffle.partitions`` the platform configures now.
        min_batches_to_retain: ``spark.sql.streaming.minBatchesToRetain``.
        state_provider: ``spark.sql.streaming.stateStore.providerClass``.
        snapshot_lag_warn: state versions a store may be past its newest snapshot (a restart
            replays that many changelogs). 50 is what Spark's own coordinator reports as lagging:
            ``multiplierForMinVersionDiffToLog`` (5) x ``minDeltasForSnapshot`` (10).
        retention_slack: batches beyond the retention Spark keeps before over-retention is
            reported (Spark purges late: asynchronously, and state only every 30 % extra versions).
        max_total_bytes: a checkpoint bigger than this is reported (restarts and copies get slow).
        max_bytes_per_batch: batches writing more than this (offsets, commits and state changes)
            are reported: the state changes by that much every batch.
    """

    state_partitions: int = 4
    min_batches_to_retain: int = 20
    state_provider: str = ROCKSDB_PROVIDER
    snapshot_lag_warn: int = 50
    retention_slack: int = 10
    max_total_bytes: int = 10 * 1024**3
    max_bytes_per_batch: int = 256 * 1024**2

    @property
    def max_retained_batches(self) -> int:
        """Offsets (or commits) files beyond which old batches are not being purged."""
        return self.min_batches_to_retain + 1 + self.retention_slack

    @property
    def max_retained_state_versions(self) -> int:
        """State versions per store beyond which old versions are not being deleted: Spark keeps
        ``min_batches_to_retain`` versions plus those back to the snapshot they start from."""
        return self.min_batches_to_retain + self.snapshot_lag_warn + self.retention_slack


@dataclass(frozen=True)
class Missing:
    """Numbers missing from a range (batch ids, versions, partitions): how many, the first few."""

    count: int
    first: tuple[int, ...]

    def __str__(self) -> str:
        shown = ", ".join(map(str, self.first))
        return f"{shown} ... ({self.count} in all)" if self.count > len(self.first) else shown


def _missing(present: Iterable[int], start: int, end: int, limit: int = 5) -> Missing:
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
        return _missing(self.changelogs, self.newest_snapshot + 1, self.newest_version)

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


def inspect_checkpoint(path: Path) -> CheckpointFacts:
    """Read a checkpoint folder into facts. Never raises: a missing folder has ``exists=False``,
    unreadable or damaged files are listed in ``damaged``."""
    path = Path(path)
    if not path.exists():
        return CheckpointFacts(str(path), exists=False)
    if not path.is_dir():
        return CheckpointFacts(str(path), True, damaged=[DamagedFile(".", "is not a folder")])
    damaged: list[DamagedFile] = []
    offsets = _batch_ids(path / "offsets")
    commits = _batch_ids(path / "commits")
    entries = _read_log(path, "offsets", offsets, damaged)
    _read_log(path, "commits", commits, damaged)
    header = _newest_header(entries, offsets)
    total_bytes, file_count = _folder_size(path)
    operators = _inspect_state(path)
    return CheckpointFacts(
        path=str(path),
        exists=True,
        query_id=_query_id(path, damaged),
        offsets=offsets,
        commits=commits,
        total_bytes=total_bytes,
        file_count=file_count,
        log_bytes=_files_size(path / "offsets", offsets) + _files_size(path / "commits", commits),
        state_bytes=sum(op.total_bytes for op in operators.values()),
        checkpoint_conf=_conf(header),
        latest_batch_timestamp_ms=_int(header.get("batchTimestampMs")),
        watermark_ms=_int(header.get("batchWatermarkMs")),
        latest_source_offsets=_committed_sources(entries, commits),
        operators=operators,
        damaged=damaged,
    )


def _batch_ids(folder: Path) -> list[int]:
    """Batch ids of a metadata log: the files named by a number (Spark's own filter)."""
    return sorted(int(p.name) for p in _listdir(folder) if _is_number(p.name) and p.is_file())


def _numbered_dirs(folder: Path) -> list[Path]:
    """Sub-folders named by a number (operators, partitions), in numeric order."""
    dirs = [p for p in _listdir(folder) if _is_number(p.name) and p.is_dir()]
    return sorted(dirs, key=lambda p: int(p.name))


def _listdir(folder: Path) -> list[Path]:
    """The entries of ``folder`` by name; none when it is missing or unreadable."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _is_number(name: str) -> bool:
    return name.isascii() and name.isdigit()


def _read_log(
    root: Path, log: str, ids: Iterable[int], damaged: list[DamagedFile]
) -> dict[int, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each readable entry of ``offsets``/``commits``: its metadata JSON and its source lines."""
    entries = {}
    for batch in ids:
        rel = f"{log}/{batch}"
        data, problem = _read_checked(root / rel)
        if problem is None:
            try:
                entries[batch] = _parse_log_entry(data.decode())
            except (UnicodeDecodeError, ValueError) as err:
                problem = f"is unreadable ({err})"
        if problem is not None:
            damaged.append(DamagedFile(rel, problem))
    return entries


def _parse_log_entry(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``v<n>``, a metadata JSON line, then one offset per source (``-`` when it has none)."""
    lines = text.splitlines()
    if not lines or not re.fullmatch(r"v\d+", lines[0].strip()):
        raise ValueError("no v1/v2 version line at the start")
    v2 = lines[0].strip() == "v2"
    metadata = json.loads(lines[1]) if len(lines) > 1 and lines[1].strip() else {}
    if not isinstance(metadata, dict):
        raise ValueError("the metadata line is not a JSON object")
    sources = []
    for line in lines[2:]:
        offset = line.partition(":")[2] if v2 else line
        if offset.strip() not in ("", "-"):
            value = json.loads(offset)  # a source's own JSON: an object, or a number (LongOffset)
            sources.append(value if isinstance(value, dict) else {"offset": value})
    return metadata, sources


def _newest_header(
    entries: Mapping[int, tuple[dict[str, Any], Any]], ids: list[int]
) -> dict[str, Any]:
    """The batch metadata of the newest readable offsets file."""
    for batch in reversed(ids):
        if batch in entries:
            return entries[batch][0]
    return {}


def _conf(header: Mapping[str, Any]) -> dict[str, str]:
    conf = header.get("conf")
    return {str(k): str(v) for k, v in conf.items()} if isinstance(conf, dict) else {}


def _committed_sources(
    entries: Mapping[int, tuple[Any, list[dict[str, Any]]]], commits: list[int]
) -> list[dict[str, Any]]:
    """The source offsets of the newest committed batch (empty when its offsets are unreadable)."""
    if not commits or commits[-1] not in entries:
        return []
    return entries[commits[-1]][1]


def _query_id(root: Path, damaged: list[DamagedFile]) -> str:
    data, problem = _read_checked(root / "metadata")
    if problem is None:
        try:
            return str(json.loads(data.decode().splitlines()[0])["id"])
        except (ValueError, IndexError, KeyError, TypeError) as err:
            problem = f"is unreadable ({err!r})"
    if problem != _MISSING:
        damaged.append(DamagedFile("metadata", problem))
    return ""


def _folder_size(root: Path) -> tuple[int, int]:
    """Bytes and number of all files under ``root`` (unreadable folders are skipped)."""
    sizes = [_size(Path(top, name)) for top, _, names in os.walk(root) for name in names]
    return sum(sizes), len(sizes)


def _files_size(folder: Path, ids: Iterable[int]) -> int:
    return sum(_size(folder / str(i)) for i in ids)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_checked(path: Path) -> tuple[bytes, str | None]:
    """A file's bytes, and what is wrong with it: missing, unreadable, empty or not matching its
    Hadoop checksum (None when fine)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return b"", _MISSING
    except OSError as err:
        return b"", f"is unreadable ({err.strerror})"
    if not data:
        return data, "is empty (0 bytes)"
    return data, _checksum_problem(path, data)


def _checksum_problem(path: Path, data: bytes) -> str | None:
    """Compare ``data`` with Hadoop's ``.<name>.crc`` next to it (no checksum file: no problem)."""
    try:
        raw = path.with_name(f".{path.name}.crc").read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"has an unreadable .crc checksum file ({err.strerror})"
    try:
        (chunk,) = struct.unpack(">i", raw[4:8])
        expected = [crc for (crc,) in struct.iter_unpack(">I", raw[8:])]
    except struct.error:
        return "has a damaged .crc checksum file"
    if raw[:4] != _CRC_MAGIC or chunk <= 0:
        return "has a damaged .crc checksum file"
    actual = [zlib.crc32(data[i : i + chunk]) for i in range(0, len(data), chunk)]
    if actual != expected:
        return f"does not match its .crc checksum (changed or cut short; {len(data)} bytes now)"
    return None


# --- state ----------------------------------------------------------------------------------------


def _inspect_state(root: Path) -> dict[str, OperatorFacts]:
    return {op.name: _inspect_operator(root, op) for op in _numbered_dirs(root / "state")}


def _inspect_operator(root: Path, op_dir: Path) -> OperatorFacts:
    damaged: list[DamagedFile] = []
    name, metadata_partitions = _operator_metadata(root, op_dir, damaged)
    partition_dirs = _numbered_dirs(op_dir)
    stores = [s for p in partition_dirs for s in _inspect_partition(root, p, damaged)]
    return OperatorFacts(
        operator_id=op_dir.name,
        name=name,
        partitions=tuple(int(p.name) for p in partition_dirs),
        metadata_partitions=metadata_partitions,
        stores=tuple(stores),
        damaged=tuple(damaged),
        total_bytes=_folder_size(op_dir)[0],
    )


def _operator_metadata(
    root: Path, op_dir: Path, damaged: list[DamagedFile]
) -> tuple[str, int | None]:
    """Operator name and partition count from ``_metadata/metadata`` (v1) or the newest
    ``_metadata/v2/<batch>``."""
    v2 = _batch_ids(op_dir / "_metadata" / "v2")
    path = op_dir / "_metadata" / "v2" / str(v2[-1]) if v2 else op_dir / "_metadata" / "metadata"
    data, problem = _read_checked(path)
    if problem == _MISSING:
        return "", None
    try:
        if problem is None:
            meta, _ = _parse_log_entry(data.decode())
            stores = meta.get("stateStoreInfo") or [{}]
            return str(meta["operatorInfo"]["operatorName"]), _int(stores[0].get("numPartitions"))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError, AttributeError) as err:
        problem = f"is unreadable operator metadata ({err!r})"
    damaged.append(DamagedFile(_rel(root, path), str(problem)))
    return "", None


def _inspect_partition(root: Path, partition: Path, damaged: list[DamagedFile]) -> list[StoreFacts]:
    """The ``default`` store (files in the partition folder) and any named store in subfolders."""
    named = [
        p
        for p in _listdir(partition)
        if p.is_dir() and p.name not in _NOT_STORES and not p.name.startswith(("_", "."))
    ]
    default = _inspect_store(root, partition, int(partition.name), "default", damaged)
    stores = [_inspect_store(root, p, int(partition.name), p.name, damaged) for p in named]
    return [default, *stores] if default.newest_version or not stores else stores


def _inspect_store(
    root: Path, folder: Path, partition: int, name: str, damaged: list[DamagedFile]
) -> StoreFacts:
    snapshots: dict[int, int] = {}
    changelogs: dict[int, int] = {}
    for file in _listdir(folder):
        match = _VERSION_FILE.match(file.name)
        if not match or not file.is_file():
            continue
        version, kind = int(match[1]), match[2]
        found = snapshots if kind in _SNAPSHOT_KINDS else changelogs
        found[version] = found.get(version, 0) + _size(file)
        problem = _state_file_problem(file, kind, folder)
        if problem:
            damaged.append(DamagedFile(_rel(root, file), problem))
    return StoreFacts(
        path=_rel(root, folder),
        partition=partition,
        name=name,
        snapshots=tuple(sorted(snapshots)),
        changelogs=tuple(sorted(changelogs)),
        snapshot_bytes=sum(snapshots.values()),
        changelog_bytes=sum(changelogs.values()),
    )


def _state_file_problem(file: Path, kind: str, store: Path) -> str | None:
    """What keeps Spark from reading a state file back (None when it looks whole)."""
    data, problem = _read_checked(file)
    if problem:
        return problem
    if kind == "zip":
        return _zip_problem(file, store)
    if data.startswith(_LZ4_MAGIC) and not _lz4_complete(data):
        return "is cut short (its LZ4 stream has no end block)"
    return None


def _lz4_complete(data: bytes) -> bool:
    """Whether an LZ4 block stream (Spark's default state compression) ends with its end block."""
    end = data[-_LZ4_END_LENGTH:]
    return len(end) == _LZ4_END_LENGTH and end.startswith(_LZ4_MAGIC) and not any(end[9:])


def _zip_problem(file: Path, store: Path) -> str | None:
    """A RocksDB snapshot must be a whole zip with a ``metadata`` entry whose SST and log files exist."""
    try:
        with zipfile.ZipFile(file) as archive:
            bad = archive.testzip()
            if bad is not None:
                return f"is a corrupt zip (entry {bad} fails its CRC)"
            metadata = archive.read("metadata").decode()
    except KeyError:
        return "has no RocksDB metadata entry"
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        UnicodeDecodeError,
        ValueError,
    ) as err:
        return f"is a corrupt zip ({err})"
    return _missing_data_file(metadata, store)


def _missing_data_file(metadata: str, store: Path) -> str | None:
    """The first SST/log file a snapshot's metadata names that is missing or of another size."""
    try:
        meta = json.loads(metadata.splitlines()[-1])
        refs = [
            (folder, ref[key], ref.get("sizeBytes"))
            for files, folder, key in (
                ("sstFiles", "SSTs", "dfsSstFileName"),
                ("logFiles", "logs", "dfsLogFileName"),
            )
            for ref in meta.get(files, [])
        ]
    except (ValueError, IndexError, KeyError, TypeError, AttributeError) as err:
        return f"has unreadable snapshot metadata ({err!r})"
    for folder, name, size in refs:
        path = store / folder / name
        if not path.is_file():
            return f"needs {folder}/{name}, which is missing"
        if size is not None and _size(path) != size:
            return f"needs {folder}/{name} of {size} bytes, found {_size(path)}"
    return None


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


# --- Kafka ----------------------------------------------------------------------------------------


def kafka_committed_offsets(facts: CheckpointFacts) -> dict[str, dict[int, int]]:
    """Per Kafka topic and partition, the next offset to read: the end offsets of the newest
    committed batch. Two sources on one topic: the one further behind wins."""
    committed: dict[str, dict[int, int]] = {}
    for source in facts.latest_source_offsets:
        for topic, partitions in _kafka_offsets(source).items():
            known = committed.setdefault(topic, {})
            for partition, offset in partitions.items():
                known[partition] = min(offset, known.get(partition, offset))
    return committed


def _kafka_offsets(source: Mapping[str, Any]) -> dict[str, dict[int, int]]:
    """A Kafka source's offsets (``{"topic": {"0": 12}}``); empty for any other source."""
    if not source or not all(_is_partition_map(v) for v in source.values()):
        return {}
    return {topic: {int(p): int(o) for p, o in parts.items()} for topic, parts in source.items()}


def _is_partition_map(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and bool(value)
        and all(_is_number(k) and isinstance(v, int) for k, v in value.items())
    )


def kafka_lag(
    committed: Mapping[str, Mapping[int, int]], end_offsets: Mapping[str, Mapping[int, int]]
) -> int:
    """Records on the broker not processed yet: per partition of ``end_offsets`` the end offset
    minus the committed one (a partition the checkpoint does not know counts from 0), never
    negative, summed."""
    return sum(
        max(0, end - committed.get(topic, {}).get(partition, 0))
        for topic, partitions in end_offsets.items()
        for partition, end in partitions.items()
    )


# --- judgements -----------------------------------------------------------------------------------


def judge_checkpoint(
    facts: CheckpointFacts, expected: CheckpointExpectations = CheckpointExpectations()
) -> list[Verdict]:
    """Every judgement of one checkpoint, each a Verdict with its numbers (see the module doc)."""
    if not facts.exists:
        return [passed("checkpoint_folder", "no checkpoint yet", {"checkpoint_exists": 0})]
    return [
        _judge_batches(facts),
        _judge_files(facts),
        _judge_retention(facts, expected),
        _judge_size(facts, expected),
        _judge_snapshots(facts, expected),
        _judge_partition_dirs(facts),
        _judge_partition_config(facts, expected),
        _judge_provider(facts, expected),
    ]


def checkpoint_verdict(
    facts: CheckpointFacts, expected: CheckpointExpectations = CheckpointExpectations()
) -> Verdict:
    """All checkpoint judgements as one Verdict named ``checkpoint``."""
    return combine(CHECK, judge_checkpoint(facts, expected))


def _judge_batches(facts: CheckpointFacts) -> Verdict:
    """Offsets and commits must pair up: at most the newest batch may lack its commit, no gaps."""
    check = "checkpoint_batches"
    offsets, commits = facts.offsets, facts.commits
    committed, first_commit = set(commits), commits[0] if commits else 0
    # offsets older than the oldest commit left: purged out of the commit log, nothing to judge
    uncommitted = [b for b in offsets if b not in committed and b >= first_commit]
    offset_gaps, commit_gaps = _gaps(offsets), _gaps(commits)
    evidence = {
        "latest_offset_batch": offsets[-1] if offsets else -1,
        "latest_committed_batch": commits[-1] if commits else -1,
        "uncommitted_batches": len(uncommitted),
        "offset_gaps": offset_gaps.count,
        "commit_gaps": commit_gaps.count,
    }
    problems = [
        *_uncommitted_problem(uncommitted, commits),
        *_gap_problem("offsets", offset_gaps, offsets),
        *_gap_problem("commits", commit_gaps, commits),
        *_early_commit_problem(offsets, commits),
    ]
    if problems:
        remedies = dict.fromkeys(r for _, r in problems)  # once each, in order
        return failed(check, "; ".join(s for s, _ in problems), " ".join(remedies), evidence)
    if not offsets:
        return passed(check, "no batch planned yet", evidence)
    in_flight = f", batch {uncommitted[0]} in flight" if uncommitted else ""
    last = f"last committed {commits[-1]}" if commits else "none committed yet"
    return passed(check, f"batches {offsets[0]}-{offsets[-1]}, {last}{in_flight}", evidence)


def _uncommitted_problem(uncommitted: list[int], commits: list[int]) -> list[tuple[str, str]]:
    if len(uncommitted) <= 1:
        return []
    summary = f"{len(uncommitted)} batches ({_ids(uncommitted)}) have offsets but no commit"
    last = commits[-1] if commits else -1
    if all(b > last for b in uncommitted):
        skipped = _ids(uncommitted[:-1])
        remedy = (
            f"On restart Spark would count batch {skipped} as done without running it: stop the "
            f"stream and delete the offsets files newer than the last commit ({last}): "
            f"{_ids(uncommitted)}, so Spark plans those batches again; or start a new checkpoint."
        )
    else:
        remedy = "commits/ lost files: restore them from a backup or start a new checkpoint."
    return [(summary, remedy)]


def _early_commit_problem(offsets: list[int], commits: list[int]) -> list[tuple[str, str]]:
    """Commits newer than every offsets file: Spark writes offsets first, so those were lost."""
    early = [c for c in commits if not offsets or c > offsets[-1]]
    if not early:
        return []
    summary = f"{_count(len(early), 'batch')} ({_ids(early)}) committed without an offsets file"
    return [(summary, "offsets/ lost files: restore them from a backup or start a new checkpoint.")]


def _gap_problem(log: str, gaps: Missing, ids: list[int]) -> list[tuple[str, str]]:
    if not gaps.count:
        return []
    summary = (
        f"{log}/ is missing {_count(gaps.count, 'batch')} ({gaps}) between {ids[0]} and {ids[-1]}"
    )
    return [(summary, f"{log}/ lost files: restore them from a backup or start a new checkpoint.")]


def _judge_files(facts: CheckpointFacts) -> Verdict:
    """Every file Spark reads back must be whole, and every store must have the changelogs its
    newest version is rebuilt from."""
    check = "checkpoint_files"
    damaged = facts.all_damaged
    broken = [s for s in facts.stores if s.missing_changelogs.count]
    evidence = {"damaged_files": len(damaged), "stores_missing_versions": len(broken)}
    problems = []
    if damaged:
        problems.append(f"{_count(len(damaged), 'damaged file')}: {_listed(damaged)}")
    for store in broken[:3]:
        problems.append(
            f"{store.path} lacks changelog {store.missing_changelogs} needed to rebuild version "
            f"{store.newest_version} from snapshot {store.newest_snapshot}"
        )
    if problems:
        remedy = (
            "Spark cannot load state or batches from these files: restore them from a backup, "
            "or start a new checkpoint (reset the stream)."
        )
        return failed(check, "; ".join(problems), remedy, evidence)
    return passed(check, f"{facts.file_count} files readable", evidence)


def _judge_retention(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """Far more batches or state versions than Spark keeps means old ones are not deleted."""
    check = "checkpoint_retention"
    state_versions = max((s.retained_versions for s in facts.stores), default=0)
    evidence = {
        "retained_offsets": len(facts.offsets),
        "retained_commits": len(facts.commits),
        "retained_state_versions": state_versions,
        "min_batches_to_retain": expected.min_batches_to_retain,
    }
    problems = []
    log_limit, state_limit = expected.max_retained_batches, expected.max_retained_state_versions
    if max(len(facts.offsets), len(facts.commits)) > log_limit:
        problems.append(
            f"{len(facts.offsets)} offsets and {len(facts.commits)} commits kept (Spark keeps "
            f"{expected.min_batches_to_retain + 1}, warning above {log_limit})"
        )
    if state_versions > state_limit:
        problems.append(
            f"a state store keeps {state_versions} versions (warning above {state_limit})"
        )
    if problems:
        remedy = (
            "Old batches are not being deleted: check spark.sql.streaming.minBatchesToRetain "
            f"(expected {expected.min_batches_to_retain}) and that runs last longer than the state "
            "maintenance interval (spark.sql.streaming.stateStore.maintenanceInterval, 60 s), "
            "which deletes old state versions."
        )
        return warned(check, "; ".join(problems), remedy, evidence)
    kept = f", up to {state_versions} state versions" if facts.stores else ""
    return passed(check, f"{len(facts.offsets)} batches kept{kept}", evidence)


def _judge_size(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """Size is evidence; only a checkpoint or per-batch write beyond the configured maxima warns."""
    check = "checkpoint_size"
    per_batch = facts.bytes_per_batch
    evidence = {
        "total_bytes": facts.total_bytes,
        "file_count": facts.file_count,
        "state_bytes": facts.state_bytes,
        "bytes_per_batch": per_batch,
    }
    summary = (
        f"{_human(facts.total_bytes)} in {facts.file_count} files "
        f"(state {_human(facts.state_bytes)}), about {_human(per_batch)} written per batch"
    )
    if facts.total_bytes > expected.max_total_bytes:
        return warned(
            check,
            f"{summary}: over {_human(expected.max_total_bytes)}",
            "Find what grows (state/ or offsets/): unbounded state needs a watermark or state TTL.",
            evidence,
        )
    if per_batch > expected.max_bytes_per_batch:
        return warned(
            check,
            f"{summary}: over {_human(expected.max_bytes_per_batch)} per batch",
            "Each batch rewrites that much state: bound the state (watermark, TTL) or its keys.",
            evidence,
        )
    return passed(check, summary, evidence)


def _judge_snapshots(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """A store far past its newest snapshot makes restarts replay many changelogs."""
    check = "checkpoint_snapshots"
    stores = facts.stores
    lagging = [s for s in stores if s.snapshot_lag > expected.snapshot_lag_warn]
    worst = max((s.snapshot_lag for s in stores), default=0)
    evidence = {"max_snapshot_lag": worst, "lagging_stores": len(lagging)}
    if not stores:
        return passed(check, "no state snapshots to take", evidence)
    if lagging:
        summary = (
            f"{len(lagging)} of {len(stores)} state stores are up to {worst} versions past their "
            f"newest snapshot ({_listed(s.path for s in lagging)}; warning above "
            f"{expected.snapshot_lag_warn})"
        )
        remedy = (
            "State snapshots are not being written, so a restart replays that many changelogs: "
            "let runs outlast the maintenance interval (60 s) and look for snapshot upload errors "
            "in the executor logs."
        )
        return warned(check, summary, remedy, evidence)
    return passed(
        check, f"state stores at most {worst} versions past their newest snapshot", evidence
    )


def _judge_partition_dirs(facts: CheckpointFacts) -> Verdict:
    """Each operator must have one folder per state partition the checkpoint was created with."""
    check = "checkpoint_state_partitions"
    recorded = _int(facts.checkpoint_conf.get(SHUFFLE_PARTITIONS))
    evidence: dict[str, int | float | str] = {
        "checkpoint_partitions": recorded if recorded is not None else -1
    }
    evidence.update(
        {
            f"partition_dirs_op{op.operator_id}": len(op.partitions)
            for op in facts.operators.values()
        }
    )
    if not facts.operators:
        return passed(check, "stateless", evidence)
    if not facts.commits:
        return passed(check, "no committed state yet", evidence)
    if recorded is None:
        return passed(check, f"{SHUFFLE_PARTITIONS} is not recorded in the checkpoint", evidence)
    problems = [p for op in facts.operators.values() if (p := _partition_problem(op, recorded))]
    if problems:
        remedy = (
            f"The state does not match the {recorded} partitions this checkpoint was created with "
            "(folders lost or copied in): restore state/ from a backup or start a new checkpoint."
        )
        return failed(check, "; ".join(problems), remedy, evidence)
    return passed(check, f"{recorded} state partitions per operator", evidence)


def _partition_problem(op: OperatorFacts, recorded: int) -> str:
    """What is wrong with one operator's partition folders ("" when they match ``recorded``)."""
    absent = _missing(op.partitions, 0, recorded - 1)
    extra = [p for p in op.partitions if p >= recorded]
    details = [f"missing {absent}"] if absent.count else []
    details += [f"unexpected {_ids(extra)}"] if extra else []
    if op.metadata_partitions not in (None, recorded):
        details.append(f"its metadata records {op.metadata_partitions}")
    if not details:
        return ""
    head = f"operator {op.operator_id} has {len(op.partitions)} partition folders, the checkpoint records {recorded}"
    return f"{head} ({', '.join(details)})"


def _judge_partition_config(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """The checkpoint keeps its own partition count: a different configured one is not used."""
    check = "checkpoint_partition_config"
    recorded = _int(facts.checkpoint_conf.get(SHUFFLE_PARTITIONS))
    evidence = {"configured_partitions": expected.state_partitions}
    if recorded is None:
        return passed(check, f"{SHUFFLE_PARTITIONS} is not recorded in the checkpoint", evidence)
    if recorded == expected.state_partitions:
        return passed(check, f"{recorded} state partitions, as configured", evidence)
    if not facts.operators:
        return passed(
            check,
            f"stateless: {recorded} partitions recorded, {expected.state_partitions} configured",
            evidence,
        )
    summary = (
        f"checkpoint was created with {recorded} state partitions but {expected.state_partitions} "
        f"are configured; Spark keeps {recorded} for this stream"
    )
    remedy = (
        f"Keep state_partitions={recorded} for this stream, or start a new checkpoint (reset the "
        f"stream) to use {expected.state_partitions}."
    )
    return warned(check, summary, remedy, evidence)


def _judge_provider(facts: CheckpointFacts, expected: CheckpointExpectations) -> Verdict:
    """Spark runs a stateful checkpoint on the provider that wrote it, whatever is configured."""
    check = "checkpoint_provider"
    recorded = facts.checkpoint_conf.get(PROVIDER_CLASS)
    evidence = {
        "checkpoint_provider": _short(recorded or ""),
        "configured_provider": _short(expected.state_provider),
    }
    if recorded is None or recorded == expected.state_provider:
        return passed(check, f"state store provider {_short(expected.state_provider)}", evidence)
    if not facts.operators:
        return passed(check, f"stateless: provider {_short(recorded)} recorded, not used", evidence)
    summary = (
        f"checkpoint state was written by {_short(recorded)} but {_short(expected.state_provider)} "
        "is configured; Spark keeps the checkpoint's provider, so this stream does not run on the "
        "configured store"
    )
    remedy = (
        f"Start a new checkpoint (reset the stream) to move it to {_short(expected.state_provider)}, "
        f"or configure {_short(recorded)} for it."
    )
    return failed(check, summary, remedy, evidence)


# --- formatting -----------------------------------------------------------------------------------


def _gaps(ids: list[int]) -> Missing:
    """Batch ids missing between the smallest and the largest of ``ids`` (ascending)."""
    return _missing(ids, ids[0], ids[-1]) if ids else Missing(0, ())


def _ids(ids: Iterable[int], limit: int = 5) -> str:
    """``7, 8`` (the first ``limit`` ids, then how many in all)."""
    ids = list(ids)
    shown = ", ".join(str(i) for i in ids[:limit])
    return f"{shown} ... ({len(ids)} in all)" if len(ids) > limit else shown


def _listed(items: Iterable[object], limit: int = 3) -> str:
    items = list(items)
    shown = ", ".join(str(i) for i in items[:limit])
    return f"{shown} and {len(items) - limit} more" if len(items) > limit else shown


def _count(n: int, noun: str) -> str:
    """``1 batch``, ``2 batches``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}{'es' if noun.endswith(('ch', 's')) else 's'}"


def _human(n: float) -> str:
    """Bytes for people: ``512 B``, ``1.5 KiB``, ``2.0 GiB``."""
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            break
    return f"{n:.1f} {unit}"


def _int(value: Any) -> int | None:
    """``value`` as an int (from JSON or a conf string); None when it is none."""
    try:
        return int(value) if isinstance(value, int | str) and not isinstance(value, bool) else None
    except ValueError:
        return None


def _short(provider: str) -> str:
    """``...state.RocksDBStateStoreProvider`` -> ``RocksDBStateStoreProvider``."""
    return provider.rsplit(".", 1)[-1]
