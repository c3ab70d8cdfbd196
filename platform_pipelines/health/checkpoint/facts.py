"""``inspect_checkpoint``: a checkpoint folder turned into plain ``CheckpointFacts``."""

from __future__ import annotations

from pathlib import Path

from platform_pipelines.core.storage import location
from platform_pipelines.health.checkpoint.files import (
    as_int,
    batch_ids,
    committed_sources,
    files_size,
    folder_size,
    frozen_conf,
    newest_header,
    read_log,
    read_query_id,
)
from platform_pipelines.health.checkpoint.model import CheckpointFacts, DamagedFile
from platform_pipelines.health.checkpoint.state import inspect_state


def inspect_checkpoint(path: Path) -> CheckpointFacts:
    """Read a checkpoint folder into facts. Never raises: a missing folder has ``exists=False``,
    unreadable or damaged files are listed in ``damaged``."""
    path = location(path)
    if not path.exists():
        return CheckpointFacts(str(path), exists=False)
    if not path.is_dir():
        return CheckpointFacts(str(path), True, damaged=[DamagedFile(".", "is not a folder")])
    damaged: list[DamagedFile] = []
    offsets = batch_ids(path / "offsets")
    commits = batch_ids(path / "commits")
    entries = read_log(path, "offsets", offsets, damaged)
    read_log(path, "commits", commits, damaged)
    header = newest_header(entries, offsets)
    total_bytes, file_count = folder_size(path)
    operators = inspect_state(path)
    return CheckpointFacts(
        path=str(path),
        exists=True,
        query_id=read_query_id(path, damaged),
        offsets=offsets,
        commits=commits,
        total_bytes=total_bytes,
        file_count=file_count,
        log_bytes=files_size(path / "offsets", offsets) + files_size(path / "commits", commits),
        state_bytes=sum(op.total_bytes for op in operators.values()),
        checkpoint_conf=frozen_conf(header),
        latest_batch_timestamp_ms=as_int(header.get("batchTimestampMs")),
        watermark_ms=as_int(header.get("batchWatermarkMs")),
        latest_source_offsets=committed_sources(entries, commits),
        operators=operators,
        damaged=damaged,
    )
