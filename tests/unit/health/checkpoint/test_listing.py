"""The checkpoint check reads a folder that a running query writes into while it is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.checkpoint import facts
from tests.unit.health.checkpoint.test_checkpoint import healthy, judged


def test_a_batch_run_between_the_two_listings_is_no_commit_without_offsets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batch 3 runs (offsets file, then commit) after ``offsets/`` was listed and before
    ``commits/`` is: the reader lists again and sees batch 3 whole, not a lost offsets file."""
    cp = healthy(tmp_path)  # batches 0-2 committed
    listed = facts.batch_ids
    ran = []

    def query_runs_a_batch_first(folder: Path) -> list[int]:
        if folder.name == "commits" and not ran:
            cp.offsets(3)
            cp.commit(3)
            ran.append(3)
        return listed(folder)

    monkeypatch.setattr(facts, "batch_ids", query_runs_a_batch_first)

    batches = judged(cp)["checkpoint_batches"]

    assert ran == [3]
    assert batches.status is Status.PASS, batches.summary
    assert batches.summary == "batches 0-3, last committed 3"
