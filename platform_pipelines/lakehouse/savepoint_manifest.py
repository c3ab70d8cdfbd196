"""Savepoints on disk: the folder and manifest that name one, and the checkpoint copy it holds.

A savepoint ``<name>`` of stream ``<stream>`` is the folder ``<lakehouse>/savepoints/<stream>/<name>/``:

- ``checkpoint/``: the stream's checkpoint as of its last committed batch (without the lock file,
  and without the offsets of a batch that was planned but never committed: that batch is planned
  again after a restore);
- ``manifest.json``: when it was taken, that batch and the checkpoint's query id, and for every
  table the stream writes the Delta version it had then and the writer id its commits are tagged
  with (``TableMark``); for a bronze stream, the Kafka offsets its checkpoint had reached.

Everything here is file I/O without Spark: taking and listing savepoints starts no JVM.

Example:
    >>> check_savepoint_name("before-deploy-42")
    'before-deploy-42'
    >>> default_name(1_795_341_600_000)
    '20261122T100000Z'
    >>> savepoint_name_problem("name", "../x")
    "name: '../x' is not a valid savepoint name; use letters, digits, '.', '-' and '_', starting with a letter or digit, at most 100 characters (e.g. 'x')."
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from platform_pipelines.core.storage import location
from platform_pipelines.core.times import from_ms

MANIFEST_FILE = "manifest.json"
CHECKPOINT_COPY = "checkpoint"
FORMAT = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SKIPPED = {".platform.lock"}  # the live checkpoint's lock: never part of a copy


class SavepointNameError(ValueError):
    """A savepoint name that may not become a folder; the message names the rule."""


def savepoint_name_problem(field_name: str, value: object) -> str | None:
    """Why ``value`` may not name a savepoint (None when it may)."""
    if isinstance(value, str) and _NAME.match(value) and ".." not in value:
        return None
    suggestion = re.sub(r"[^A-Za-z0-9._-]+", "-", str(value)).replace("..", "").strip(".-_")
    return (
        f"{field_name}: {str(value)[:80]!r} is not a valid savepoint name; use letters, "
        "digits, '.', '-' and '_', starting with a letter or digit, at most 100 characters "
        f"(e.g. {suggestion[:100] or 'before-deploy'!r})."
    )


def check_savepoint_name(name: str) -> str:
    """``name`` if it may name a savepoint folder, else ``SavepointNameError``."""
    problem = savepoint_name_problem("name", name)
    if problem:
        raise SavepointNameError(problem)
    return name


def default_name(at_ms: int) -> str:
    """The name of a savepoint taken at ``at_ms`` when none is given: its UTC time."""
    return from_ms(at_ms).strftime("%Y%m%dT%H%M%SZ")


def savepoints_dir(root: Path, stream: str) -> Path:
    """``<lakehouse>/savepoints/<stream>``: every savepoint of one stream."""
    return location(root) / "savepoints" / stream


@dataclass(frozen=True)
class TableMark:
    """One table a stream writes, as it was when the savepoint was taken.

    Attributes:
        table: the table's name.
        version: its Delta version holding exactly the stream's batches up to the savepoint's
            (None: the table had no commit yet).
        shared: written by other streams too (``late_events``, ``stream_ledger``,
            ``quarantine``): never restored as a whole, only this stream's later rows removed.
        app_id: the writer id this stream's commits to the table are tagged with.
    """

    table: str
    version: int | None
    shared: bool
    app_id: str


@dataclass(frozen=True)
class Manifest:
    """What a savepoint holds (``manifest.json``).

    Attributes:
        stream: the stream's name.
        name: the savepoint's name.
        created_ms: when it was taken (epoch milliseconds).
        query_id: the checkpoint's query id (the writer ids of its tables contain it).
        batch: the checkpoint's last committed batch: a restore resumes after it.
        tables: every table the stream writes (``TableMark``), its own tables first.
        kafka_offsets: for a bronze stream, ``{topic: {partition: offset}}`` its checkpoint
            had read up to (its quarantined rows at or after these came later).
        checkpoint_bytes: the size of the checkpoint copy.
        since_ms: no write of a batch after ``batch`` is older than this (the planning time of
            a batch left uncommitted, else ``created_ms``, less a minute of clock skew): how far
            back a restore looks for such writes in the tables' logs.
        folders: the generation folder of the checkpoint (``checkpoint``) and of each own table
            when the savepoint was taken (``lakehouse.pointers``): a rebuild since then moved
            them, and the versions saved belong to the old generation.
    """

    stream: str
    name: str
    created_ms: int
    query_id: str
    batch: int
    tables: tuple[TableMark, ...]
    kafka_offsets: dict[str, dict[str, int]] = field(default_factory=dict)
    checkpoint_bytes: int = 0
    since_ms: int = 0
    folders: dict[str, str] = field(default_factory=dict)

    @property
    def own(self) -> list[TableMark]:
        return [t for t in self.tables if not t.shared]

    @property
    def shared(self) -> list[TableMark]:
        return [t for t in self.tables if t.shared]

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **asdict(self)}, indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> Manifest:
        data: dict[str, Any] = json.loads(text)
        tables = tuple(TableMark(**t) for t in data["tables"])
        return Manifest(
            str(data["stream"]),
            str(data["name"]),
            int(data["created_ms"]),
            str(data["query_id"]),
            int(data["batch"]),
            tables,
            {
                topic: {p: int(o) for p, o in parts.items()}
                for topic, parts in (data.get("kafka_offsets") or {}).items()
            },
            int(data.get("checkpoint_bytes", 0)),
            int(data.get("since_ms", data["created_ms"])),
            dict(data.get("folders") or {}),
        )


def write_manifest(folder: Path, manifest: Manifest) -> None:
    location(folder).mkdir(parents=True, exist_ok=True)
    (location(folder) / MANIFEST_FILE).write_text(manifest.to_json())


def read_manifest(folder: Path) -> Manifest:
    return Manifest.from_json((location(folder) / MANIFEST_FILE).read_text())


def list_manifests(root: Path, stream: str | None = None) -> list[tuple[Manifest, Path]]:
    """Every complete savepoint (of ``stream``, or of all streams), oldest first."""
    base = location(root) / "savepoints"
    folders = base.glob(f"{stream}/*" if stream else "*/*")
    found = [
        (read_manifest(f), f)
        for f in folders
        if not f.name.startswith(".") and (f / MANIFEST_FILE).is_file()
    ]
    return sorted(found, key=lambda item: (item[0].created_ms, item[0].name))


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under ``folder``."""
    return sum(p.stat().st_size for p in location(folder).rglob("*") if p.is_file())


def copy_checkpoint(source: Path, target: Path, last_batch: int) -> None:
    """Copy a checkpoint's files into ``target``, leaving out the lock file and the offsets (and
    commits) of batches after ``last_batch``."""

    def skipped(folder: str, names: list[str]) -> set[str]:
        if location(folder).name not in ("offsets", "commits"):
            return {n for n in names if n in _SKIPPED}
        return {n for n in names if (b := _batch_of_file(n)) is not None and b > last_batch}

    shutil.copytree(source, target, ignore=skipped)


def swap_checkpoint(checkpoint: Path, copy: Path, archived: Path) -> None:
    """Move a checkpoint's files to ``archived`` and copy ``copy``'s in their place. The lock
    file stays where it is: whoever holds the lock keeps holding it throughout."""
    archived.mkdir(parents=True)
    for child in checkpoint.iterdir():
        if child.name not in _SKIPPED:
            shutil.move(str(child), str(archived / child.name))
    for child in copy.iterdir():
        if child.is_dir():
            shutil.copytree(child, checkpoint / child.name)
        else:
            shutil.copy2(child, checkpoint / child.name)


def _batch_of_file(name: str) -> int | None:
    """``7`` or ``.7.crc`` -> 7; anything else None."""
    core = name[1:-4] if name.startswith(".") and name.endswith(".crc") else name
    return int(core) if core.isdigit() else None


def kafka_offsets(checkpoint: Path, batch: int) -> dict[str, dict[str, int]]:
    """The Kafka offsets ``offsets/<batch>`` of a checkpoint reached, ``{topic: {partition:
    offset}}`` (empty when the batch read no Kafka source)."""
    try:
        lines = (location(checkpoint) / "offsets" / str(batch)).read_text().splitlines()
    except OSError:
        return {}
    found: dict[str, dict[str, int]] = {}
    for line in lines[2:]:
        try:
            offset = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(offset, dict)
            and offset
            and all(isinstance(v, dict) for v in offset.values())
        ):
            for topic, parts in offset.items():
                found[topic] = {str(p): int(o) for p, o in parts.items()}
    return found


def commit_tag(table: Path, version: int) -> dict[str, Any]:
    """The ``commitInfo`` of one Delta commit, with its tag parsed (``tag``: the ``{"appId",
    "batch"}`` the platform's writers record, or None)."""
    path = location(table) / "_delta_log" / f"{version:020d}.json"
    for line in path.read_text().splitlines():
        info = json.loads(line).get("commitInfo") if line.strip() else None
        if info is not None:
            try:
                tag = json.loads(info.get("userMetadata") or "null")
            except ValueError:
                tag = None
            return {**info, "tag": tag if isinstance(tag, dict) else None}
    return {"tag": None}


def version_at_batch(table: Path, app_id: str, batch: int, latest: int) -> int:
    """The newest version of ``table`` (at most ``latest``) that holds none of ``app_id``'s writes
    of batches after ``batch``: the commits a planned but uncommitted batch left are stepped over."""
    version = latest
    while version > 0:
        tag = commit_tag(table, version)["tag"]
        if not (tag and tag.get("appId") == app_id and int(tag.get("batch", -1)) > batch):
            break
        version -= 1
    return version


def rolled_back_past(table: Path, version: int) -> tuple[int, int] | None:
    """``(restore commit, version restored to)`` of the first RESTORE after ``version`` that went
    back before it; None when the table never went back past ``version``."""
    log = location(table) / "_delta_log"
    newer = sorted(
        v for p in log.glob("*.json") if (v := _version_of(p.name)) is not None and v > version
    )
    for commit in newer:
        info = commit_tag(table, commit)
        target = (info.get("operationParameters") or {}).get("version")
        if info.get("operation") == "RESTORE" and target is not None and int(target) < version:
            return commit, int(target)
    return None


def _version_of(name: str) -> int | None:
    return int(name[:20]) if name[:20].isdigit() and name.endswith(".json") else None


def rebuilt_since(manifest: Manifest, folders: dict[str, str]) -> str | None:
    """What a rebuild (``platform reprocess``) moved since the savepoint: ``folders`` are the
    current generation folders, as ``Manifest.folders``. None when nothing moved.

    >>> rebuilt_since(Manifest("s", "n", 0, "q", 1, (), folders={"checkpoint": "s"}),
    ...               {"checkpoint": "s@r1"})
    'checkpoint now in s@r1 (the savepoint saved s)'
    """
    moved = [
        f"{what} now in {folders[what]} (the savepoint saved {saved})"
        for what, saved in manifest.folders.items()
        if what in folders and folders[what] != saved
    ]
    return "; ".join(moved) or None
