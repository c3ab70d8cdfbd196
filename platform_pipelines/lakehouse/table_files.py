"""A Delta table's live files and commit times, read from its log and folder alone (no JVM).

Every micro-batch adds files to each table it writes, so a table fed every 10 s gains thousands
of small files a day (``health.files`` judges that; ``lakehouse.compaction`` and
``lakehouse.vacuum`` shrink them). ``table_files`` counts the live files of the newest version:
from the version's checksum file (``<version>.crc``, which Delta writes after a commit) when there
is one, else from the newest checkpoint and the commits after it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from platform_pipelines.core.storage import location
from platform_pipelines.lakehouse.delta_log import commit_file, latest_version

_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d{10}\.\d{10}|\.[0-9a-f-]{36})?\.parquet$")


@dataclass(frozen=True)
class TableFiles:
    """The live files of one version of a table (what a reader of that version opens)."""

    version: int
    files: int
    bytes: int

    @property
    def avg_bytes(self) -> float:
        return self.bytes / self.files if self.files else 0.0


def table_files(table: Path) -> TableFiles | None:
    """The newest version's live files and bytes; None when the table has no commit."""
    version = latest_version(table)
    if version is None:
        return None
    return _from_checksum(location(table), version) or _replay(location(table), version)


def _from_checksum(table: Path, version: int) -> TableFiles | None:
    try:
        checksum = json.loads((table / "_delta_log" / f"{version:020d}.crc").read_text())
        return TableFiles(version, int(checksum["numFiles"]), int(checksum["tableSizeBytes"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _replay(table: Path, version: int) -> TableFiles:
    """Live files from the newest checkpoint at or before ``version`` plus the commits after."""
    live: dict[str, int] = {}
    checkpoint = _newest_checkpoint(table / "_delta_log", version)
    for part in checkpoint[1] if checkpoint else []:
        live.update(_checkpoint_adds(part))
    for v in range(checkpoint[0] + 1 if checkpoint else 0, version + 1):
        for line in commit_file(table, v).read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            if add := action.get("add"):
                live[add["path"]] = int(add.get("size") or 0)
            elif remove := action.get("remove"):
                live.pop(remove["path"], None)
    return TableFiles(version, len(live), sum(live.values()))


def _newest_checkpoint(log: Path, version: int) -> tuple[int, list[Path]] | None:
    """The newest complete checkpoint at or before ``version``: its version and its files."""
    found: dict[int, list[Path]] = {}
    for path in log.iterdir():
        if (match := _CHECKPOINT.match(path.name)) and int(match[1]) <= version:
            found.setdefault(int(match[1]), []).append(path)
    for v in sorted(found, reverse=True):
        parts = sorted(found[v])
        multi = [p for p in parts if p.name.count(".") == 4]  # <v>.checkpoint.<i>.<n>.parquet
        if not multi or len(multi) == int(multi[0].name.split(".")[3]):
            return v, multi or parts[:1]
    return None


def _checkpoint_adds(part: Path) -> dict[str, int]:
    """``path -> size`` of the files a checkpoint part (and its V2 sidecars) lists as live."""
    import pyarrow.parquet as pq

    names = set(pq.read_schema(part).names)
    rows = pq.read_table(part, columns=[c for c in ("add", "sidecar") if c in names]).to_pylist()
    adds = {r["add"]["path"]: int(r["add"]["size"] or 0) for r in rows if r.get("add")}
    for row in rows:
        if sidecar := row.get("sidecar"):
            adds.update(_checkpoint_adds(part.parent / "_sidecars" / sidecar["path"]))
    return adds


def commit_timestamp(table: Path, version: int) -> int | None:
    """When ``version`` was committed (epoch ms, the writer's clock, as VACUUM compares it);
    None when its commit file is gone (cleaned up by the log retention) or never existed."""
    path = commit_file(table, version)
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        if info := (json.loads(line) if line.strip() else {}).get("commitInfo"):
            stamp = info.get("inCommitTimestamp") or info.get("timestamp")
            if stamp is not None:
                return int(stamp)
    return int(path.stat().st_mtime * 1000)


def oldest_commit(table: Path) -> int | None:
    """The oldest version whose commit file is still in the log."""
    log = location(table) / "_delta_log"
    versions = [int(p.name[:20]) for p in log.glob("*.json") if p.name[:20].isdigit()]
    return min(versions, default=None)


def data_files(table: Path) -> dict[str, int]:
    """``relative path -> bytes`` of every data file in the folder, live or not (what VACUUM
    may delete); the log, hidden files and checksums are left out."""
    found, root = {}, location(table)
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for name in files:
            if not name.startswith(("_", ".")) and name.endswith(".parquet"):
                path = Path(folder) / name
                found[str(path.relative_to(root))] = path.stat().st_size
    return found
