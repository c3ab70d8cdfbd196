"""When did a row become visible in a Delta table? Read from the table's own log, without Spark.

A row is visible once the commit that added its data file is published: the commit file
``_delta_log/<version>.json`` appears (Delta writes it atomically). Its modification time is
that moment. Each ``add`` action of a commit names a file; reading that file's key column
(pyarrow) maps every key to the first commit that made it visible.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote


def _commits(table: Path) -> list[Path]:
    log = table / "_delta_log"
    return sorted(log.glob("[0-9]" * 20 + ".json")) if log.is_dir() else []


def _adds(commit: Path) -> list[dict[str, object]]:
    adds = []
    for line in commit.read_text().splitlines():
        if line.strip():
            action = json.loads(line)
            if "add" in action and action["add"].get("dataChange", True):
                adds.append(action["add"])
    return adds


def visible_rows(table: Path) -> int:
    """Rows added so far, from the commits' statistics (no data file is read)."""
    total = 0
    for commit in _commits(table):
        for add in _adds(commit):
            stats = json.loads(str(add.get("stats") or "{}"))
            total += int(stats.get("numRecords") or 0)
    return total


def first_visible_ms(table: Path, key: str = "event_id") -> dict[str, float]:
    """Each ``key`` value -> when (epoch ms) the first commit holding it was published."""
    import pyarrow.parquet as pq

    seen: dict[str, float] = {}
    for commit in _commits(table):
        published = commit.stat().st_mtime_ns / 1e6
        for add in _adds(commit):
            column = pq.read_table(table / unquote(str(add["path"])), columns=[key]).column(key)
            for value in column.to_pylist():
                if value is not None and value not in seen:
                    seen[value] = published
    return seen


def latencies(
    sent_ms: dict[str, float], visible_ms: dict[str, float], until_ms: float | None = None
) -> list[float]:
    """Seconds from each key's first send to its first visibility, in the order they were sent.
    A key never seen counts as seen at ``until_ms`` (the end of the wait: a lower bound, so a
    pipeline that falls behind cannot look fast by leaving its slowest rows out); without
    ``until_ms`` it is left out."""
    found = []
    for key, sent in sorted(sent_ms.items(), key=lambda item: item[1]):
        seen = visible_ms.get(key, until_ms)
        if seen is not None:
            found.append((seen - sent) / 1000)
    return found
