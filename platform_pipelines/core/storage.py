"""The few file operations that differ between a local lakehouse and one on an S3 API.

Tables and checkpoints are ``pathlib.Path`` objects locally and ``upath.UPath`` objects on S3
(``PlatformSettings.lakehouse_dir``); both have ``Path``'s API, so most code reads and writes
them alike. What an object store cannot do like a disk lives here: removing a tree, replacing a
file atomically, walking a folder's files.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, cast

from platform_pipelines.settings import get_settings, is_uri


def on_object_store(path: object) -> bool:
    """Whether ``path`` lives on an object store (an ``s3a://`` UPath or URI string).

    >>> on_object_store(Path("/data/lakehouse")), on_object_store("s3a://bucket/lakehouse")
    (False, True)
    """
    return is_uri(path)


def location(value: Path | str) -> Path:
    """``value`` as a path object: a Path or UPath is kept as it is (its S3 options with it), an
    ``s3a://`` string becomes a UPath with the deployment's S3 settings, anything else a Path."""
    if isinstance(value, Path) or not isinstance(value, str):
        return value
    if not is_uri(value):
        return Path(value)
    from upath import UPath

    return cast(Path, UPath(value, **get_settings().s3_storage_options()))


def _fs_path(path: Path) -> tuple[Any, str]:
    """The fsspec file system and the path within it of a UPath."""
    return path.fs, path.path  # type: ignore[attr-defined]


def remove_tree(path: Path) -> None:
    """Delete ``path`` and everything under it (nothing when it does not exist)."""
    if not on_object_store(path):
        shutil.rmtree(path, ignore_errors=True)
        return
    fs, key = _fs_path(path)
    if fs.exists(key):
        fs.rm(key, recursive=True)


def replace_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old content or the new, never a part.

    Locally: a temporary file renamed over the old one. On S3 a PUT already replaces an object
    atomically (readers get the old or the new object, and S3 reads are strongly consistent).
    """
    if on_object_store(path):
        path.write_text(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.new")
    temporary.write_text(text)
    os.replace(temporary, path)


def file_sizes(root: Path) -> list[int]:
    """The size of every file under ``root`` (empty when it does not exist)."""
    if not on_object_store(root):
        return [_size(os.path.join(top, name)) for top, _, names in os.walk(root) for name in names]
    fs, key = _fs_path(root)
    if not fs.exists(key):
        return []
    found = fs.find(key, detail=True)
    return [int(info.get("size") or 0) for info in found.values() if info.get("type") == "file"]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class NeedsLocalLakehouse(RuntimeError):
    """An operation that is built on local file-system guarantees was asked for on S3."""


def require_local(root: Path, operation: str) -> None:
    """Refuse ``operation`` (e.g. "Savepoints") when the lakehouse ``root`` is on an object store:
    it copies folders, renames or takes file locks the way only a file system can."""
    if on_object_store(root):
        raise NeedsLocalLakehouse(
            f"{operation} need the lakehouse on a file system (local disk, or a shared mount such "
            f"as NFS or EFS), but PLATFORM_LAKEHOUSE_DIR is {root}. The streams and their checks "
            "run on S3; for this, run it where the lakehouse is a folder (README: Object "
            "storage)."
        )
