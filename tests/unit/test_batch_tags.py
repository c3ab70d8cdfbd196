"""A replayed batch is found in the Delta log by the tag its first write left in the commit."""

from __future__ import annotations

import json
from pathlib import Path

from platform_pipelines.lakehouse.delta import batch_tag, written_already
from platform_pipelines.lakehouse.delta_log import commit_file, last_written_batch

MINUTE = 60_000


def commit(
    table: Path,
    version: int,
    at_ms: int,
    tag: str | None = None,
    txn: tuple[str, int] | None = None,
) -> None:
    info: dict = {"timestamp": at_ms, "operation": "WRITE"}
    if tag is not None:
        info["userMetadata"] = tag
    lines = [{"commitInfo": info}, {"add": {"path": f"part-{version}.parquet", "dataChange": True}}]
    if txn is not None:
        lines.append({"txn": {"appId": txn[0], "version": txn[1], "lastUpdated": at_ms}})
    path = commit_file(table, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def test_the_newest_batch_of_a_writer_is_found_among_other_writers_commits(tmp_path):
    commit(tmp_path, 0, 10 * MINUTE, batch_tag("ledger/events/q1", 4))
    commit(tmp_path, 1, 11 * MINUTE, batch_tag("ledger/sessions/q2", 9))
    commit(tmp_path, 2, 12 * MINUTE, batch_tag("ledger/events/q1", 5))
    commit(tmp_path, 3, 13 * MINUTE, batch_tag("ledger/sessions/q2", 10))

    assert last_written_batch(tmp_path, "ledger/events/q1", 0) == 5
    assert last_written_batch(tmp_path, "ledger/sessions/q2", 0) == 10
    assert last_written_batch(tmp_path, "ledger/alerts/q3", 0) is None


def test_the_lookup_stops_at_the_first_commit_older_than_the_batch(tmp_path):
    commit(tmp_path, 0, 1 * MINUTE, batch_tag("raw/q1", 1))
    commit(tmp_path, 1, 10 * MINUTE, batch_tag("other/q9", 2))
    commit(tmp_path, 2, 30 * MINUTE, batch_tag("other/q9", 3))
    # Batch 2 was planned at minute 20: nothing it wrote can be older, so the scan ends at
    # version 1 (minute 10) without reading version 0, and batch 2 is not written yet.
    assert last_written_batch(tmp_path, "raw/q1", 20 * MINUTE) is None
    assert not written_already(tmp_path, "raw/q1", 2, 20 * MINUTE + 60_000)


def test_a_replay_is_recognised_and_a_new_batch_is_not(tmp_path):
    commit(tmp_path, 0, 5 * MINUTE, batch_tag("raw/q1", 7))
    assert written_already(tmp_path, "raw/q1", 7, 5 * MINUTE)  # the replay of batch 7
    assert written_already(tmp_path, "raw/q1", 6, 5 * MINUTE)
    assert not written_already(tmp_path, "raw/q1", 8, 5 * MINUTE)


def test_batches_written_by_delta_txn_actions_still_count(tmp_path):
    commit(tmp_path, 0, 5 * MINUTE, txn=("raw/q1", 3))  # written before batches were tagged
    assert last_written_batch(tmp_path, "raw/q1", 0) == 3


def test_a_table_without_commits_has_no_batch(tmp_path):
    assert last_written_batch(tmp_path / "missing", "raw/q1", 0) is None
