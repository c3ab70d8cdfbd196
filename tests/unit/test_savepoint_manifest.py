"""Savepoints without Spark: names, the manifest, the checkpoint copy, and every refusal that
comes before a table is touched (checkpoints and Delta logs written by hand)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from platform_pipelines.lakehouse.delta import Lakehouse, batch_tag
from platform_pipelines.lakehouse.delta_log import commit_file
from platform_pipelines.lakehouse.savepoint_manifest import (
    Manifest,
    SavepointNameError,
    TableMark,
    check_savepoint_name,
    copy_checkpoint,
    kafka_offsets,
    read_manifest,
    swap_checkpoint,
    version_at_batch,
)
from platform_pipelines.runtime.lock import CheckpointLocks, locked_streams
from platform_pipelines.runtime.savepoint_create import create_savepoint
from platform_pipelines.runtime.savepoint_restore import restore_savepoint
from platform_pipelines.runtime.savepoints import (
    SavepointRefused,
    find_savepoint,
    list_savepoints,
    restore_pending,
)
from platform_pipelines.streams.registry import StreamRegistry, declare_stream
from user_streams.running_count import STREAMS

T = 1_795_341_600_000  # 2026-11-22T10:00:00Z


def commit(table: Path, version: int, tag: str | None = None) -> None:
    info: dict = {"timestamp": T + version, "operation": "WRITE"}
    if tag is not None:
        info["userMetadata"] = tag
    commit_file(table, version).parent.mkdir(parents=True, exist_ok=True)
    commit_file(table, version).write_text(json.dumps({"commitInfo": info}) + "\n")


def batch(checkpoint: Path, n: int, committed: bool = True, offset: int = 0) -> None:
    """``offsets/n`` (Kafka source at ``offset``) and, if committed, ``commits/n``."""
    for log in ("offsets", "commits") if committed else ("offsets",):
        (checkpoint / log).mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": T + n * 1000}
    lines = ["v1", json.dumps(meta), json.dumps({"key_events": {"0": offset}})]
    (checkpoint / "offsets" / str(n)).write_text("\n".join(lines))
    (checkpoint / "offsets" / f".{n}.crc").write_text("crc")
    if committed:
        (checkpoint / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')


@pytest.fixture
def registry() -> StreamRegistry:
    registry = StreamRegistry()
    declare_stream(registry, STREAMS[0])  # key_events_raw (bronze), then key_counts
    return registry


@pytest.fixture
def lake(tmp_path) -> Lakehouse:
    """key_counts after batches 0 and 1 (query q1), and batch 2 planned, written, not committed."""
    lake = Lakehouse(tmp_path / "lake")
    checkpoint = lake.checkpoint("key_counts")
    checkpoint.mkdir(parents=True)
    (checkpoint / "metadata").write_text('{"id":"q1"}\n')
    for n in (0, 1):
        batch(checkpoint, n)
    batch(checkpoint, 2, committed=False)
    counts, ledger = lake.table("key_counts"), lake.table("stream_ledger")
    commit(counts, 0)  # created empty
    for n in (0, 1, 2):
        commit(counts, n + 1, batch_tag("key_counts/q1", n))
        commit(ledger, n, batch_tag("stream_ledger/key_counts/q1", n))
    return lake


def never() -> None:
    raise AssertionError("no Spark session may be needed")


@pytest.mark.parametrize("name", ["before-deploy-42", "20261122T101500Z", "v1.2_fix"])
def test_plain_names_are_savepoint_names(name):
    assert check_savepoint_name(name) == name


@pytest.mark.parametrize("name", ["../x", "a/b", "", "-x", "a..b", "x" * 101, "with space"])
def test_names_that_could_leave_the_folder_are_refused_with_the_rule(name):
    with pytest.raises(SavepointNameError, match="is not a valid savepoint name; use letters"):
        check_savepoint_name(name)


def test_a_manifest_reads_back_as_written(tmp_path):
    manifest = Manifest(
        "key_events_raw",
        "n",
        T,
        "q1",
        3,
        (
            TableMark("key_events_raw", 4, False, "key_events_raw/q1/raw"),
            TableMark("quarantine", None, True, "key_events_raw/q1/quarantine"),
        ),
        {"key_events": {"0": 7, "1": 9}},
        2048,
        T - 60_000,
    )
    (tmp_path / "manifest.json").write_text(manifest.to_json())

    assert read_manifest(tmp_path) == manifest
    assert [t.table for t in manifest.own] == ["key_events_raw"]
    assert [t.table for t in manifest.shared] == ["quarantine"]


def test_the_copy_leaves_out_the_lock_and_batches_never_committed(lake, tmp_path):
    checkpoint = lake.checkpoint("key_counts")
    (checkpoint / ".platform.lock").write_text("{}")

    copy_checkpoint(checkpoint, tmp_path / "copy", last_batch=1)

    names = sorted(str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*"))
    assert names == [
        "commits",
        "commits/0",
        "commits/1",
        "metadata",
        "offsets",
        "offsets/.0.crc",
        "offsets/.1.crc",
        "offsets/0",
        "offsets/1",
    ]
    assert kafka_offsets(checkpoint, 1) == {"key_events": {"0": 0}}


def test_a_swap_archives_the_checkpoint_and_keeps_its_lock_file(tmp_path):
    live, copy = tmp_path / "live", tmp_path / "copy"
    for folder, text in ((live, "new"), (copy, "old")):
        (folder / "offsets").mkdir(parents=True)
        (folder / "offsets" / "0").write_text(text)
    (live / ".platform.lock").write_text("held")

    swap_checkpoint(live, copy, tmp_path / "archive")

    assert (live / "offsets" / "0").read_text() == "old"
    assert (live / ".platform.lock").read_text() == "held"
    assert sorted(p.name for p in (tmp_path / "archive").iterdir()) == ["offsets"]


def test_the_saved_version_steps_over_the_write_of_a_batch_never_committed(lake):
    assert version_at_batch(lake.table("key_counts"), "key_counts/q1", 1, latest=3) == 2


def test_a_savepoint_records_the_last_committed_batch_and_each_tables_version(lake, registry):
    saved = create_savepoint(lake, registry.get("key_counts"), "before", now_ms=T + 10_000)

    assert (saved.batch, saved.query_id) == (1, "q1")
    assert saved.tables == (
        TableMark("key_counts", 2, False, "key_counts/q1"),
        TableMark("late_events", None, True, "late_events/q1/key_counts"),
        TableMark("stream_ledger", 2, True, "stream_ledger/key_counts/q1"),
    )
    assert saved.since_ms == T + 2000 - 60_000  # batch 2 was planned then: it may have written
    assert [s.manifest for s in list_savepoints(lake)] == [saved]
    assert locked_streams([("key_counts", lake.checkpoint("key_counts"))]) == []


def test_a_second_savepoint_of_the_same_name_and_one_with_nothing_to_save_are_refused(
    lake, registry
):
    create_savepoint(lake, registry.get("key_counts"), "before")

    with pytest.raises(SavepointRefused, match="already has a savepoint named 'before'"):
        create_savepoint(lake, registry.get("key_counts"), "before")
    with pytest.raises(SavepointRefused, match="'key_events_raw' has not committed a batch"):
        create_savepoint(lake, registry.get("key_events_raw"))
    assert not lake.checkpoint("key_events_raw").exists()


def test_a_running_stream_is_neither_saved_nor_restored(lake, registry):
    create_savepoint(lake, registry.get("key_counts"), "before")
    checkpoint = lake.checkpoint("key_counts")

    with CheckpointLocks({"key_counts": checkpoint}, owner="run 1a2b3c4d of stream_key_counts"):
        with pytest.raises(
            SavepointRefused,
            match=r"Cannot take a savepoint of stream 'key_counts'"
            r" while it runs: run 1a2b3c4d of stream_key_counts \(pid",
        ):
            create_savepoint(lake, registry.get("key_counts"), "again")
        with pytest.raises(SavepointRefused, match="Stop it first"):
            restore_savepoint(lake, registry.get("key_counts"), list(registry), never)


def test_an_unknown_savepoint_is_refused_naming_those_there_are(lake, registry):
    with pytest.raises(SavepointRefused, match="has no savepoint; take one with `platform savep"):
        find_savepoint(lake, "key_counts")
    create_savepoint(lake, registry.get("key_counts"), "before")

    with pytest.raises(SavepointRefused, match="no savepoint named 'typo'; it has: before"):
        restore_savepoint(lake, registry.get("key_counts"), list(registry), never, "typo")


def test_restoring_a_table_another_stream_reads_is_refused_before_anything_changes(
    tmp_path, registry
):
    lake = Lakehouse(tmp_path / "lake")
    raw = lake.checkpoint("key_events_raw")
    raw.mkdir(parents=True)
    (raw / "metadata").write_text('{"id":"q9"}\n')
    batch(raw, 0, offset=5)
    commit(lake.table("key_events_raw"), 0, batch_tag("key_events_raw/q9/raw", 0))
    saved = create_savepoint(lake, registry.get("key_events_raw"), "bronze")
    assert saved.kafka_offsets == {"key_events": {"0": 5}}
    commit(lake.table("key_events_raw"), 1, batch_tag("key_events_raw/q9/raw", 1))
    lake.checkpoint("key_counts").mkdir(parents=True)  # the reader has started

    with pytest.raises(
        SavepointRefused,
        match=r"Refused: key_counts reads key_events_raw as a "
        r"stream.*DELTA_SOURCE_IGNORE_DELETE.*reprocess key_counts",
    ):
        restore_savepoint(lake, registry.get("key_events_raw"), list(registry), never)
    assert not (lake.root / "checkpoints" / "_archive").exists()


def test_a_restore_with_nothing_written_since_swaps_the_checkpoint_without_spark(lake, registry):
    stream = registry.get("key_counts")
    for table, version in (("key_counts", 3), ("stream_ledger", 2)):  # batch 2 wrote nothing
        commit_file(lake.table(table), version).unlink()
    create_savepoint(lake, stream, "before")

    done = restore_savepoint(lake, stream, list(registry), never, "before")

    assert done.tables == []
    assert sorted(p.name for p in (lake.checkpoint("key_counts") / "offsets").iterdir()) == [
        ".0.crc",
        ".1.crc",
        "0",
        "1",
    ]  # (batch 2 is planned again)
    assert sorted(p.name for p in (done.archived / "offsets").iterdir())[-1] == "2"
    assert restore_pending(lake, "key_counts") is None


def test_the_cli_creates_lists_and_restores_a_savepoint(lake, monkeypatch):
    from click.testing import CliRunner

    from platform_pipelines.cli.savepoint import savepoint

    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", str(lake.root))
    monkeypatch.setenv("COLUMNS", "200")
    for table, version in (("key_counts", 3), ("stream_ledger", 2)):  # batch 2 wrote nothing
        commit_file(lake.table(table), version).unlink()
    cli = CliRunner()

    created = cli.invoke(savepoint, ["create", "key_counts", "--name", "before"])
    listed = cli.invoke(savepoint, ["list"])
    restored = cli.invoke(savepoint, ["restore", "key_counts", "--yes"])
    unknown = cli.invoke(savepoint, ["restore", "key_count", "--yes"])

    assert created.exit_code == 0 and re.search(r"after batch\s+│ 1 ", created.output)
    assert "│ key_counts │ before │" in listed.output and "key_counts@2" in listed.output
    assert restored.exit_code == 0, restored.output
    assert "nothing was written after the savepoint" in restored.output
    assert unknown.exit_code == 1 and "No stream named 'key_count'; declared streams:" in (
        unknown.output
    )


def test_a_savepoint_taken_before_a_restore_to_an_earlier_one_is_refused(lake, registry):
    stream = registry.get("key_counts")
    create_savepoint(lake, stream, "later")  # key_counts at version 2
    restore = {"timestamp": T, "operation": "RESTORE", "operationParameters": {"version": 1}}
    commit_file(lake.table("key_counts"), 4).write_text(json.dumps({"commitInfo": restore}))

    with pytest.raises(
        SavepointRefused,
        match=r"taken before the stream was restored to an "
        r"earlier point \(table key_counts went back to version 1 at version 4\)",
    ):
        restore_savepoint(lake, stream, list(registry), never, "later")
