"""A bad deploy, a restore, a rerun with the fix: no loss and no duplicates against a clean run.

Two copies of the README's running count read the same bronze table: ``key_counts`` (the one
deployed, savepointed, broken and restored) and ``key_counts_clean`` (always the right logic, the
clean run it is compared with: same input, same batches)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace

import pytest
from pyspark import cloudpickle

from platform_pipelines.core.times import to_ms
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import last_written_batch
from platform_pipelines.lakehouse.savepoint_manifest import Manifest
from platform_pipelines.lakehouse.savepoint_tables import rows_after
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.runtime.savepoint_create import create_savepoint
from platform_pipelines.runtime.savepoint_restore import restore_savepoint
from platform_pipelines.runtime.savepoints import SavepointRefused
from platform_pipelines.state.keyed import Clock, Event, State, Step
from platform_pipelines.streams.query import StreamContext
from platform_pipelines.streams.registry import StreamRegistry, declare_stream
from tests.integration.events import T0, at
from tests.integration.helpers import table
from tests.integration.test_user_stream import keyed
from user_streams.running_count import STREAMS, RunningCount

cloudpickle.register_pickle_by_value(sys.modules[__name__])
pytestmark = [pytest.mark.spark]


class CountsTwice(RunningCount):
    """The bad deploy: every event counted twice."""

    def on_events(
        self, key: str, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        return super().on_events(key, state, [*events, *events], clock)


def declared(topic: str, logic: RunningCount) -> StreamRegistry:
    example = STREAMS[0]
    deployed = replace(example, source=replace(example.source, topic=topic), logic=logic)
    registry = StreamRegistry()
    declare_stream(registry, deployed)
    declare_stream(registry, replace(deployed, name="key_counts_clean", logic=RunningCount()))
    return registry


def run(ctx: StreamContext, registry: StreamRegistry, names: list[str] | None = None) -> None:
    streams = [registry.get(n) for n in names] if names else list(registry)
    run_streams(ctx, streams, RunOptions(mode="catch_up"), lambda *_: None)


def outcomes(spark, lake: Lakehouse) -> dict[str, dict[str, list]]:
    """Everything each stream left: its table, its ledger rows, its late rows (less what names
    the stream, its query id or the wall clock)."""
    ledger, late = table(spark, lake, "stream_ledger"), table(spark, lake, "late_events")
    found = {}
    for stream in ("key_counts", "key_counts_clean"):
        found[stream] = {
            "table": sorted(
                (r["key"], r["count"], r["last_seen"]) for r in table(spark, lake, stream)
            ),
            "ledger": sorted(
                (r["batch_id"], r["rows_in"], r["rows_out"], r["rows_late"], r["watermark"])
                for r in ledger
                if r["stream"] == stream
            ),
            "late": sorted(
                (
                    r["batch_id"],
                    r["event_time"],
                    r["watermark"],
                    r["row"],
                    r["reason"].replace(stream, "<stream>"),
                )
                for r in late
                if r["stream"] == stream
            ),
        }
    return found


@pytest.mark.kafka
def test_a_bad_deploy_is_undone_by_a_restore_and_a_rerun_with_the_fix(
    spark, kafka_broker, topic_factory, tmp_path
):
    topic = topic_factory("savepoint", partitions=1)
    good, bad = declared(topic, RunningCount()), declared(topic, CountsTwice())
    lake = Lakehouse(tmp_path / "lake")
    ctx = StreamContext(spark, lake, kafka_broker)
    produce_events(
        kafka_broker,
        topic,
        [keyed("a", 0), keyed("b", 1), keyed("a", 30), b"oops"],
        key_field="key",
    )
    run(ctx, good)
    saved = create_savepoint(lake, good.get("key_counts"), "before-deploy")

    produce_events(
        kafka_broker, topic, [keyed("a", 31), keyed("c", 32), keyed("b", 5)], key_field="key"
    )  # (b at minute 5 is behind the watermark: late)
    run(ctx, bad)  # the bad deploy
    counts = {r["key"]: r["count"] for r in table(spark, lake, "key_counts")}
    assert counts == {"a": 4, "b": 1, "c": 2}  # B's events counted twice (b at 5 is late)

    done = restore_savepoint(lake, good.get("key_counts"), list(good), lambda: spark)

    assert {t.table: (t.action, t.version) for t in done.tables} == {
        "key_counts": ("restored", saved.own[0].version),
        "late_events": ("rows deleted", None),
        "stream_ledger": ("rows deleted", None),
    }
    assert {t.table: t.rows for t in done.tables if t.version is None} == {
        "late_events": 1,
        "stream_ledger": 1,
    }
    for mark in saved.tables:  # the newest tag of each writer is the savepoint's batch again
        assert last_written_batch(lake.table(mark.table), mark.app_id, 0) == saved.batch
    run(ctx, good, ["key_counts"])  # the fix deployed: the restored checkpoint replays batch B
    found = outcomes(spark, lake)
    assert found["key_counts"] == found["key_counts_clean"]
    clean = found["key_counts_clean"]
    # b at minute 5 is behind the watermark: in late_events and not counted (the logic runs in
    # event time because the stream declares a watermark, so Spark's operator drops it).
    assert [(key, n) for key, n, _ in clean["table"]] == [("a", 3), ("b", 1), ("c", 1)]
    assert [(rows_in, late) for _, rows_in, _, late, _ in clean["ledger"]] == [(3, 0), (3, 1)]
    assert [row[0] for row in clean["late"]] == [clean["ledger"][1][0]]  # B's batch

    _vacuum(spark, lake.table("key_counts"))
    with pytest.raises(SavepointRefused, match=r"version \d+ of table key_counts was vacuumed"):
        restore_savepoint(lake, good.get("key_counts"), list(good), lambda: spark)


def _vacuum(spark, path) -> None:
    """VACUUM with no retention: what a week of the default retention does to old versions."""
    from delta.tables import DeltaTable

    check = "spark.databricks.delta.retentionDurationCheck.enabled"
    spark.conf.set(check, "false")
    try:
        DeltaTable.forPath(spark, str(path)).vacuum(0)
    finally:
        spark.conf.unset(check)


def test_the_rows_written_after_a_savepoint_are_told_apart_in_the_shared_tables(spark):
    manifest = Manifest("s", "n", to_ms(T0), "q1", 3, (), {"t": {"0": 5, "1": 2}})  # taken at T0
    quarantine = spark.createDataFrame(
        [("t", 0, 4), ("t", 0, 5), ("t", 1, 1), ("t", 1, 2), ("t", 2, 0), ("u", 0, 9)],
        "source string, kafka_partition int, kafka_offset long",
    )
    ledger = spark.createDataFrame(
        [
            ("s", "q1", 3, at(-1)),
            ("s", "q1", 4, at(1)),
            ("s", "q2", 0, at(2)),
            ("s", "q0", 9, at(-5)),
            ("x", "q1", 4, at(1)),
        ],
        "stream string, query_id string, batch_id long, written_at timestamp",
    )

    def after(df, table: str) -> list[tuple]:
        return sorted(tuple(r)[:3] for r in df.where(rows_after(table, manifest)).collect())

    # Rows of the bronze topic at or after its offsets (a partition it had not read: all).
    assert after(quarantine, "quarantine") == [("t", 0, 5), ("t", 1, 2), ("t", 2, 0)]
    # The checkpoint's later batches, and a newer checkpoint's (q2, a reset since) rows.
    assert after(ledger, "stream_ledger") == [("s", "q1", 4), ("s", "q2", 0)]
