"""The VACUUM retention rule, from files alone: what a reader's checkpoint may still read, when that
version was committed, and the retention that keeps it."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from platform_pipelines.lakehouse.checkpoints import StartPlan, write_plan
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.maintainer import MaintenanceOptions
from platform_pipelines.runtime.vacuum_retention import (
    ReaderHold,
    oldest_read_version,
    reader_holds,
    retention_for,
)
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams

HOUR_MS = 3_600_000
NOW_MS = 1_795_000_000_000
# security_alerts reading events (not the topic, the default): two readers of one table.
STREAMS = list(builtin_streams(BuiltinSettings(alerts_reads="bronze")))


def commit(
    table: Path, version: int, at_ms: int, adds: tuple[str, ...] = (), removes: tuple[str, ...] = ()
) -> None:
    """A Delta commit file with its timestamp, the files it adds and those it removes."""
    lines = [{"commitInfo": {"timestamp": at_ms, "operation": "WRITE"}}]
    lines += [{"add": {"path": p, "size": 100, "dataChange": True}} for p in adds]
    lines += [{"remove": {"path": p, "deletionTimestamp": at_ms}} for p in removes]
    (table / "_delta_log").mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (table / "_delta_log" / f"{version:020d}.json").write_text(text)


def offsets(checkpoint: Path, batch: int, version: int) -> None:
    """``offsets/<batch>`` of a stream reading a Delta table, ending before ``version``."""
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    source = {
        "sourceVersion": 1,
        "reservoirId": "t",
        "reservoirVersion": version,
        "index": -1,
        "isStartingVersion": False,
    }
    text = "v1\n" + json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0}) + "\n"
    (checkpoint / "offsets" / str(batch)).write_text(text + json.dumps(source) + "\n")


def test_a_retained_first_batch_holds_the_snapshot_it_read_later_ones_their_end_offset(tmp_path):
    offsets(tmp_path / "a", 0, 5)
    offsets(tmp_path / "a", 1, 7)
    offsets(tmp_path / "b", 3, 7)  # batches 0-2 purged
    offsets(tmp_path / "b", 4, 9)

    assert oldest_read_version(tmp_path / "a") == (4, "the snapshot its offsets/0 read")
    assert oldest_read_version(tmp_path / "b") == (7, "offsets/3")
    assert oldest_read_version(tmp_path / "never_ran") is None


def test_a_start_plan_holds_its_starting_version_until_its_first_batch_is_purged(tmp_path):
    write_plan(tmp_path / "new", StartPlan(starting_version=2))
    write_plan(tmp_path / "running", StartPlan(starting_version=2))
    offsets(tmp_path / "running", 0, 6)
    write_plan(tmp_path / "old", StartPlan(starting_version=2))
    offsets(tmp_path / "old", 5, 9)

    assert oldest_read_version(tmp_path / "new") == (2, "its start plan")
    assert oldest_read_version(tmp_path / "running") == (2, "its start plan")
    assert oldest_read_version(tmp_path / "old") == (9, "offsets/5")


def test_every_reader_of_a_table_holds_the_commit_time_of_what_it_may_still_read(tmp_path):
    lake = Lakehouse(tmp_path)
    events = lake.table("events")
    for version in range(6):
        commit(events, version, NOW_MS - (50 - version) * HOUR_MS)
    offsets(lake.checkpoint("user_sessions"), 7, 3)  # stopped two days ago
    offsets(lake.checkpoint("security_alerts"), 9, 6)  # read everything: version 6 is not written
    rebuild = tmp_path / "reprocess" / "r1" / "checkpoints" / "user_sessions"
    write_plan(rebuild, StartPlan(starting_version=1))  # a rebuild not switched in yet

    holds = reader_holds(lake, STREAMS, "events", NOW_MS)

    assert sorted(holds, key=lambda h: h.version) == [
        ReaderHold("user_sessions", 1, NOW_MS - 49 * HOUR_MS, "its start plan"),
        ReaderHold("user_sessions", 3, NOW_MS - 47 * HOUR_MS, "offsets/7"),
        ReaderHold("security_alerts", 6, NOW_MS, "offsets/9"),
    ]
    assert reader_holds(lake, STREAMS, "user_sessions", NOW_MS) == []  # nobody reads it


def test_a_version_the_log_retention_removed_holds_the_oldest_commit_still_there(tmp_path):
    lake = Lakehouse(tmp_path)
    commit(lake.table("events"), 40, NOW_MS - 30 * 24 * HOUR_MS)
    commit(lake.table("events"), 41, NOW_MS - HOUR_MS)
    offsets(lake.checkpoint("user_sessions"), 3, 12)

    (hold,) = reader_holds(lake, STREAMS, "events", NOW_MS)

    assert (hold.version, hold.committed_ms) == (12, NOW_MS - 30 * 24 * HOUR_MS)


def test_the_retention_is_the_largest_need_in_whole_hours_and_says_whose():
    options = MaintenanceOptions(retention=timedelta(hours=168))
    stopped = ReaderHold("user_sessions", 3, NOW_MS - 200 * HOUR_MS - 60_000, "offsets/7")
    recent = ReaderHold("security_alerts", 9, NOW_MS - 60_000, "offsets/9")

    assert retention_for(options, [recent], NOW_MS).reason == "configured"
    chosen = retention_for(options, [recent, stopped], NOW_MS)

    assert chosen.duration == timedelta(hours=202)  # 200 h 1 min + 1 h margin, rounded up
    assert chosen.reason == (
        "user_sessions may still read version 3 (offsets/7), committed 8 d 8 h ago, + 1 h margin"
    )


def test_a_configured_retention_under_the_floor_is_raised_to_it():
    options = MaintenanceOptions(retention=timedelta(0), min_retention=timedelta(hours=1))

    chosen = retention_for(options, [], NOW_MS)

    assert (chosen.duration, chosen.reason) == (
        timedelta(hours=1),
        "the floor: files being written are unlisted",
    )
