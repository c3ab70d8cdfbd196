"""One maintenance run per table: which tables there are and their layers, the table's lock, its
live files counted from the log, and no compaction under a running upsert."""

from __future__ import annotations

import pytest

from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.table_files import table_files
from platform_pipelines.runtime.lock import CheckpointLocks
from platform_pipelines.runtime.maintainer import (
    MaintenanceBusy,
    MaintenanceOptions,
    _compact,
    table_layers,
    table_lock,
)
from platform_pipelines.streams.builtin import builtin_streams
from platform_pipelines.streams.registry import declare_stream
from tests.unit.runtime.test_vacuum_retention import NOW_MS, commit
from user_streams.running_count import STREAMS as USER_STREAMS

RUNNING_COUNT = USER_STREAMS[0]
STREAMS = list(builtin_streams())


def test_every_table_is_maintained_with_its_layer_the_shared_ones_as_platform():
    assert table_layers(STREAMS) == {
        "clickstream_raw": "bronze",
        "quarantine": "platform",
        "events": "silver",
        "late_events": "platform",
        "user_sessions": "gold",
        "security_alerts": "gold",
        "service_heartbeats_raw": "bronze",
        "service_status": "gold",
        "stream_ledger": "platform",
    }


def test_one_maintenance_per_table_at_a_time_and_the_refusal_names_the_holder(tmp_path):
    lake = Lakehouse(tmp_path)

    with table_lock(lake, "events", "run 1a2b3c4d of table_maintenance_silver"):
        busy = pytest.raises(MaintenanceBusy, match="being maintained by run 1a2b3c4d of table_")
        with busy, table_lock(lake, "events", "platform table maintain"):
            pass
        with table_lock(lake, "user_sessions", "platform table maintain"):
            pass  # another table: free
    with table_lock(lake, "events", "platform table maintain"):
        pass  # free again


def test_live_files_are_counted_from_the_commits_when_there_is_no_checksum(tmp_path):
    table = tmp_path / "events"
    commit(table, 0, NOW_MS, adds=("a", "b"))
    commit(table, 1, NOW_MS, adds=("c",), removes=("a",))

    found = table_files(table)

    assert found is not None and (found.version, found.files, found.bytes) == (1, 2, 200)
    assert table_files(tmp_path / "nothing") is None


def test_a_table_a_running_stream_upserts_is_not_compacted_and_the_note_says_why(tmp_path):
    registry = builtin_streams()
    declare_stream(registry, RUNNING_COUNT)  # key_counts: output_mode="update", a MERGE a batch
    lake = Lakehouse(tmp_path)

    with CheckpointLocks({"key_counts": lake.checkpoint("key_counts")}, owner="run 1"):
        compaction, note = _compact(None, lake, list(registry), "key_counts", MaintenanceOptions())  # type: ignore[arg-type]

    assert compaction is None
    assert note == (
        "not compacted: key_counts upserts it and runs; its MERGE would fail if "
        "OPTIMIZE committed meanwhile. Run this while it is stopped"
    )
