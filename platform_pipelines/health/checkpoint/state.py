"""The state store folders: per operator and partition, which versions, snapshots and changelogs
exist, and whether Spark could read each one back (zips, LZ4 end blocks, the SSTs a snapshot names)."""

from __future__ import annotations

import json
import re
import zipfile
import zlib
from pathlib import Path

from platform_pipelines.health.checkpoint.files import (
    MISSING,
    as_int,
    batch_ids,
    file_size,
    folder_size,
    listdir,
    numbered_dirs,
    parse_log_entry,
    read_checked,
    relative,
)
from platform_pipelines.health.checkpoint.model import DamagedFile, OperatorFacts, StoreFacts

_VERSION_FILE = re.compile(r"^(\d+)(?:_[^.]+)?\.(zip|changelog|snapshot|delta)$")
_SNAPSHOT_KINDS = {"zip", "snapshot"}
_NOT_STORES = {"SSTs", "logs"}  # RocksDB data files shared by a store's snapshots
_LZ4_MAGIC = b"LZ4Block"
_LZ4_END_LENGTH = 21  # magic, token, then compressed length, length and checksum all zero


def inspect_state(root: Path) -> dict[str, OperatorFacts]:
    return {op.name: _inspect_operator(root, op) for op in numbered_dirs(root / "state")}


def _inspect_operator(root: Path, op_dir: Path) -> OperatorFacts:
    damaged: list[DamagedFile] = []
    name, metadata_partitions = _operator_metadata(root, op_dir, damaged)
    partition_dirs = numbered_dirs(op_dir)
    stores = [s for p in partition_dirs for s in _inspect_partition(root, p, damaged)]
    return OperatorFacts(
        operator_id=op_dir.name,
        name=name,
        partitions=tuple(int(p.name) for p in partition_dirs),
        metadata_partitions=metadata_partitions,
        stores=tuple(stores),
        damaged=tuple(damaged),
        total_bytes=folder_size(op_dir)[0],
    )


def _operator_metadata(
    root: Path, op_dir: Path, damaged: list[DamagedFile]
) -> tuple[str, int | None]:
    """Operator name and partition count from ``_metadata/metadata`` (v1) or the newest
    ``_metadata/v2/<batch>``."""
    v2 = batch_ids(op_dir / "_metadata" / "v2")
    path = op_dir / "_metadata" / "v2" / str(v2[-1]) if v2 else op_dir / "_metadata" / "metadata"
    data, problem = read_checked(path)
    if problem == MISSING:
        return "", None
    try:
        if problem is None:
            meta, _ = parse_log_entry(data.decode())
            stores = meta.get("stateStoreInfo") or [{}]
            return str(meta["operatorInfo"]["operatorName"]), as_int(stores[0].get("numPartitions"))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError, AttributeError) as err:
        problem = f"is unreadable operator metadata ({err!r})"
    damaged.append(DamagedFile(relative(root, path), str(problem)))
    return "", None


def _inspect_partition(root: Path, partition: Path, damaged: list[DamagedFile]) -> list[StoreFacts]:
    """The ``default`` store (files in the partition folder) and any named store in subfolders."""
    named = [
        p
        for p in listdir(partition)
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
    for file in listdir(folder):
        match = _VERSION_FILE.match(file.name)
        if not match or not file.is_file():
            continue
        version, kind = int(match[1]), match[2]
        found = snapshots if kind in _SNAPSHOT_KINDS else changelogs
        found[version] = found.get(version, 0) + file_size(file)
        problem = _state_file_problem(file, kind, folder)
        if problem:
            damaged.append(DamagedFile(relative(root, file), problem))
    return StoreFacts(
        path=relative(root, folder),
        partition=partition,
        name=name,
        snapshots=tuple(sorted(snapshots)),
        changelogs=tuple(sorted(changelogs)),
        snapshot_bytes=sum(snapshots.values()),
        changelog_bytes=sum(changelogs.values()),
    )


def _state_file_problem(file: Path, kind: str, store: Path) -> str | None:
    """What keeps Spark from reading a state file back (None when it looks whole)."""
    data, problem = read_checked(file)
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
        with file.open("rb") as raw, zipfile.ZipFile(raw) as archive:  # a Path or an S3 UPath
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
        if size is not None and file_size(path) != size:
            return f"needs {folder}/{name} of {size} bytes, found {file_size(path)}"
    return None
