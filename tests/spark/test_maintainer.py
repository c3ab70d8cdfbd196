"""Table maintenance on a real Delta table read by a real stream: compaction keeps every row in
one file, VACUUM deletes what nobody reads any more and keeps every file the downstream stream may
still read, and the stream then writes exactly what it writes without maintenance."""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from platform_pipelines.lakehouse.compaction import compact
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import added_files, commit_file, latest_version
from platform_pipelines.lakehouse.table_files import data_files, table_files
from platform_pipelines.runtime.maintainer import MaintenanceOptions, maintain_table
from platform_pipelines.streams.builtin import builtin_streams
from tests.integration.events import U1_SHOPPING, U2_BROWSING, U3_MUCH_LATER
from tests.integration.helpers import ledger, table

pytestmark = pytest.mark.spark
REGISTRY = builtin_streams()
EVENTS = REGISTRY.get("events").outputs["events"]
NO_RETENTION = MaintenanceOptions(
    retention=timedelta(0), min_retention=timedelta(0), margin=timedelta(0)
)


def append(spark: SparkSession, path: Path, events: list[dict[str, Any]]) -> None:
    rows = [
        (
            e["event_id"],
            e["user_id"],
            e["event_type"],
            e.get("page"),
            e.get("amount"),
            datetime.fromisoformat(e["event_time"].replace("Z", "+00:00")),
        )
        for e in events
    ]
    spark.createDataFrame(rows, EVENTS).write.format("delta").mode("append").save(str(path))


def run_sessions(spark: SparkSession, lake: Lakehouse) -> None:
    """user_sessions, alone, to the end of what events holds (no Kafka: it reads a table)."""
    from platform_pipelines.runtime.run_options import RunOptions
    from platform_pipelines.runtime.runner import run_streams
    from platform_pipelines.streams.query import StreamContext

    run_streams(
        StreamContext(spark, lake, "unused:9092"),
        [REGISTRY.get("user_sessions")],
        RunOptions(mode="catch_up"),
        lambda *_: None,
    )


def rows_of(spark: SparkSession, lake: Lakehouse, name: str) -> list[dict[str, Any]]:
    return sorted(table(spark, lake, name), key=repr)


def actions(path: Path, version: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in commit_file(path, version).read_text().splitlines()]


def age_removals(path: Path, version: int, hours: float) -> None:
    """Make the files ``version`` replaced look written and replaced ``hours`` ago: VACUUM
    judges by the removal's time and by the file's modification time."""
    log = commit_file(path, version)
    then, changed = time.time() - hours * 3600, actions(path, version)
    for action in changed:
        if "remove" in action:
            action["remove"]["deletionTimestamp"] = int(then * 1000)
            os.utime(path / action["remove"]["path"], (then, then))
    log.write_text("".join(json.dumps(a) + "\n" for a in changed))
    (log.parent / f".{log.name}.crc").unlink(missing_ok=True)  # the file system's checksum


def test_maintenance_compacts_and_keeps_every_file_a_downstream_stream_still_reads(spark, tmp_path):
    lake = Lakehouse(tmp_path / "lake")
    path = lake.ensure_table(spark, "events", EVENTS)
    append(spark, path, U1_SHOPPING[:3])
    append(spark, path, U1_SHOPPING[3:])
    first_files = {f.path for f in added_files(path, 1, 3)}
    compact(spark, path)  # version 3: the first two appends' files replaced by one
    age_removals(path, 3, hours=5)  # ...five hours ago
    compacted = {a["add"]["path"] for a in actions(path, 3) if "add" in a}
    append(spark, path, U2_BROWSING)  # version 4
    run_sessions(spark, lake)  # user_sessions reads the snapshot of version 4
    append(spark, path, U3_MUCH_LATER)  # version 5: not read yet
    unread = {f.path for f in added_files(path, 4, 6)}
    events = rows_of(spark, lake, "events")
    files = table_files(path)
    detail = DeltaTable.forPath(spark, str(path)).detail().first()
    assert files is not None and (files.files, files.bytes) == (detail.numFiles, detail.sizeInBytes)
    control = Lakehouse(tmp_path / "control")
    shutil.copytree(lake.root, control.root)  # the same lake, never maintained

    done = maintain_table(spark, lake, list(REGISTRY), "events", NO_RETENTION)

    assert done.before == files and files.files > 1
    assert done.after is not None and done.after.files == 1
    assert done.compaction is not None and done.compaction.files_removed == files.files
    assert rows_of(spark, lake, "events") == events
    assert done.retention.hours == 1  # the reader's need, in whole hours as VACUUM rounds
    assert done.retention.reason.startswith(
        "user_sessions may still read version 4 (the snapshot its offsets/0 read), committed"
    )
    on_disk = set(data_files(path))
    assert first_files.isdisjoint(on_disk)  # replaced before anything the reader may read
    assert compacted | unread <= on_disk  # what it may still read survives
    (path / "_delta_log" / f"{done.after.version:020d}.crc").unlink(missing_ok=True)
    assert table_files(path) == done.after  # counted again without the checksum file

    run_sessions(spark, lake)
    run_sessions(spark, control)

    sessions = rows_of(spark, lake, "user_sessions")
    assert sorted(s["user_id"] for s in sessions) == ["u1", "u2"]
    assert sessions == rows_of(spark, control, "user_sessions")
    assert ledger(spark, lake, "user_sessions") == ledger(spark, control, "user_sessions")
    # the upstream's OPTIMIZE and VACUUM commits gave the stream empty batches: nothing committed
    assert latest_version(lake.table("user_sessions")) == latest_version(
        control.table("user_sessions")
    )
