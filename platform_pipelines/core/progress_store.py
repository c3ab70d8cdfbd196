"""The progress store: one append-only JSON-lines file per stream, read by sensors and the CLI.

``<root>/<stream>.jsonl`` holds the newest records. When it passes ``max_bytes`` it is renamed to
``<stream>.1.jsonl`` (replacing the older segment), so a stream never keeps more than two segments:
old progress is pruned by size, and reading the newest records means reading one file's tail.
A reader may see a line that is still being written; it is skipped.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

from platform_pipelines.core.records import ProgressRecord

DEFAULT_MAX_BYTES = 4 * 1024 * 1024  # ~1,000 batches of a stateful query per segment
_TAIL_BYTES_PER_RECORD = 8 * 1024  # generous: a progress record is 1-4 KB


class ProgressStore:
    """Per-stream progress files under ``root`` (``.local/progress`` by default)."""

    def __init__(self, root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def path(self, stream: str) -> Path:
        return self.root / f"{stream}.jsonl"

    def append(self, record: ProgressRecord) -> None:
        """Append one record (thread-safe within a process; one writer per stream at a time,
        which the checkpoint lock guarantees)."""
        line = record.to_json() + "\n"
        path = self.path(record.stream)
        with self._lock:
            self.root.mkdir(parents=True, exist_ok=True)
            if path.exists() and path.stat().st_size + len(line) > self.max_bytes:
                os.replace(path, self.root / f"{record.stream}.1.jsonl")
            with path.open("a", encoding="utf-8") as out:
                out.write(line)

    def streams(self) -> list[str]:
        """Every stream with recorded progress."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name[: -len(".jsonl")]
            for p in self.root.glob("*.jsonl")
            if not p.name.endswith(".1.jsonl")
        )

    def recent(self, stream: str, limit: int = 50) -> list[ProgressRecord]:
        """The newest ``limit`` records of ``stream``, oldest first (empty if it never ran)."""
        records = list(_tail(self.path(stream), limit))
        if len(records) < limit:
            older = list(_tail(self.root / f"{stream}.1.jsonl", limit - len(records)))
            records = older + records
        return records

    def latest(self, stream: str) -> ProgressRecord | None:
        found = self.recent(stream, 1)
        return found[-1] if found else None


def _tail(path: Path, limit: int) -> Iterator[ProgressRecord]:
    """The last ``limit`` complete records of a file, reading only its end."""
    if limit <= 0 or not path.exists():
        return iter(())
    with path.open("rb") as file:
        size = file.seek(0, os.SEEK_END)
        start = max(0, size - limit * _TAIL_BYTES_PER_RECORD)
        file.seek(start)
        lines = file.read().split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line is cut by the seek
    records = []
    for raw in lines:
        if raw.strip():
            try:
                records.append(ProgressRecord.from_json(raw.decode("utf-8")))
            except (ValueError, TypeError, KeyError):
                continue  # a line being written right now, or damaged: skip it
    return iter(records[-limit:])
