"""Reading a checkpoint's files as Spark would: logs, metadata, sizes and Hadoop checksums.

Every reader returns what it found and records what it could not read in ``damaged``; none raises.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from platform_pipelines.core.storage import file_sizes
from platform_pipelines.health.checkpoint.model import DamagedFile

MISSING = "is missing"
_CRC_MAGIC = b"crc\x00"


def batch_ids(folder: Path) -> list[int]:
    """Batch ids of a metadata log: the files named by a number (Spark's own filter)."""
    return sorted(int(p.name) for p in listdir(folder) if is_number(p.name) and p.is_file())


def numbered_dirs(folder: Path) -> list[Path]:
    """Sub-folders named by a number (operators, partitions), in numeric order."""
    dirs = [p for p in listdir(folder) if is_number(p.name) and p.is_dir()]
    return sorted(dirs, key=lambda p: int(p.name))


def listdir(folder: Path) -> list[Path]:
    """The entries of ``folder`` by name; none when it is missing or unreadable."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def is_number(name: str) -> bool:
    return name.isascii() and name.isdigit()


def read_log(
    root: Path, log: str, ids: Iterable[int], damaged: list[DamagedFile]
) -> dict[int, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each readable entry of ``offsets``/``commits``: its metadata JSON and its source lines."""
    entries = {}
    for batch in ids:
        rel = f"{log}/{batch}"
        data, problem = read_checked(root / rel)
        if problem is None:
            try:
                entries[batch] = parse_log_entry(data.decode())
            except (UnicodeDecodeError, ValueError) as err:
                problem = f"is unreadable ({err})"
        if problem is not None:
            damaged.append(DamagedFile(rel, problem))
    return entries


def parse_log_entry(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
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


def newest_header(
    entries: Mapping[int, tuple[dict[str, Any], Any]], ids: list[int]
) -> dict[str, Any]:
    """The batch metadata of the newest readable offsets file."""
    for batch in reversed(ids):
        if batch in entries:
            return entries[batch][0]
    return {}


def frozen_conf(header: Mapping[str, Any]) -> dict[str, str]:
    conf = header.get("conf")
    return {str(k): str(v) for k, v in conf.items()} if isinstance(conf, dict) else {}


def committed_sources(
    entries: Mapping[int, tuple[Any, list[dict[str, Any]]]], commits: list[int]
) -> list[dict[str, Any]]:
    """The source offsets of the newest committed batch (empty when its offsets are unreadable)."""
    if not commits or commits[-1] not in entries:
        return []
    return entries[commits[-1]][1]


def read_query_id(root: Path, damaged: list[DamagedFile]) -> str:
    data, problem = read_checked(root / "metadata")
    if problem is None:
        try:
            return str(json.loads(data.decode().splitlines()[0])["id"])
        except (ValueError, IndexError, KeyError, TypeError) as err:
            problem = f"is unreadable ({err!r})"
    if problem != MISSING:
        damaged.append(DamagedFile("metadata", problem))
    return ""


def folder_size(root: Path) -> tuple[int, int]:
    """Bytes and number of all files under ``root`` (unreadable folders are skipped)."""
    sizes = file_sizes(root)
    return sum(sizes), len(sizes)


def files_size(folder: Path, ids: Iterable[int]) -> int:
    return sum(file_size(folder / str(i)) for i in ids)


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_checked(path: Path) -> tuple[bytes, str | None]:
    """A file's bytes, and what is wrong with it: missing, unreadable, empty or not matching its
    Hadoop checksum (None when fine)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return b"", MISSING
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


def relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


# --- Kafka ----------------------------------------------------------------------------------------


def as_int(value: Any) -> int | None:
    """``value`` as an int (from JSON or a conf string); None when it is none."""
    try:
        return int(value) if isinstance(value, int | str) and not isinstance(value, bool) else None
    except ValueError:
        return None
