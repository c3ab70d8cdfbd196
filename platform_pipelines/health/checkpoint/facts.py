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

# How often the two logs are listed again when a batch was planned while they were listed.
LISTING_ATTEMPTS = 5


def batch_logs(path: Path) -> tuple[list[int], list[int]]:
    """The batch ids of ``offsets/`` and ``commits/`` as one moment saw them.

    A running query writes a batch's offsets file, then its commit, then the next offsets file.
    Listing one folder after the other can see a commit whose offsets file was not there yet when
    ``offsets/`` was listed (a batch "committed without an offsets file"). So ``offsets/`` is listed
    before and after ``commits/``; when a batch was planned in between, all three are listed again.
    """
    offsets, commits = [], []
    for _ in range(LISTING_ATTEMPTS):
        offsets = batch_ids(path / "offsets")
        commits = batch_ids(path / "commits")
        if batch_ids(path / "offsets") == offsets:
            break
    return offsets, commits


def inspect_checkpoint(path: Path) -> CheckpointFacts:
    """Read a checkpoint folder into facts. Never raises: a missing folder has ``exists=False``,
    unreadable or damaged files are listed in ``damaged``."""
    path = location(path)
    if not path.exists():
        return CheckpointFacts(str(path), exists=False)
    if not path.is_dir():
        return CheckpointFacts(str(path), True, damaged=[DamagedFile(".", "is not a folder")])
    damaged: list[DamagedFile] = []
    offsets, commits = batch_logs(path)
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
