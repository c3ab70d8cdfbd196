"""A stream's life after its first start: composite keys, new input fields, declaration changes,
and rebuilding a stream (``platform reprocess``) against a clean run of the same input."""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import pytest
from pyspark import cloudpickle

from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.reprocess import plan_reprocess
from platform_pipelines.runtime.reprocess_rebuild import rebuild
from platform_pipelines.runtime.reprocess_switch import switch
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.settings import PlatformSettings
from platform_pipelines.state.keyed import Step
from platform_pipelines.streams.catalog import load_registry
from platform_pipelines.streams.declare import StatefulStream
from platform_pipelines.streams.evolution import DeclarationChanged
from platform_pipelines.streams.query import StreamContext
from platform_pipelines.streams.registry import StreamRegistry, declare_stream
from tests.integration.events import at
from tests.integration.helpers import ledger, table
from user_streams.running_count import STREAMS as COUNTS
from user_streams.running_count import RunningCount

pytestmark = [pytest.mark.spark, pytest.mark.kafka]
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def activity(user: str, what: str, minute: float, **extra: object) -> dict:
    return {"user_id": user, "activity": what, "event_time": iso(minute), **extra}


def iso(minute: float) -> str:
    return at(minute).isoformat().replace("+00:00", "Z")


def run(ctx: StreamContext, registry: StreamRegistry) -> None:
    run_streams(ctx, list(registry), RunOptions(mode="catch_up"), lambda *_: None)


def spans(spark, lake) -> dict[tuple[str, str], tuple]:
    return {
        (r["user_id"], r["activity"]): (r["first_seen"], r["last_seen"], r["events"])
        for r in table(spark, lake, "activity_spans")
    }


def test_a_composite_key_stream_keeps_one_row_per_user_and_activity_and_refuses_a_new_key(
    spark, kafka_broker, topic_factory, tmp_path
):
    # As the README says: name the module in PLATFORM_STREAM_MODULES.
    declared = load_registry(PlatformSettings(stream_modules="user_streams.activity_span"))
    example = declared.get("activity_spans")
    assert isinstance(example, StatefulStream) and example.keys == ("user_id", "activity")
    topic = topic_factory("activity", partitions=2)
    registry = StreamRegistry()
    declare_stream(registry, replace(example, source=replace(example.source, topic=topic)))
    ctx = StreamContext(spark, Lakehouse(tmp_path / "lake"), kafka_broker)

    produce_events(
        kafka_broker,
        topic,
        [
            activity("u1", "search", 0),
            activity("u1", "buy", 3),
            activity("u2", "search", 1),
            activity("u1", "search", 5, device="ios", ab={"arm": 2}),
        ],
    )
    run(ctx, registry)
    produce_events(kafka_broker, topic, [activity("u1", "search", 2), activity("u2", "buy", 4)])
    run(ctx, registry)
    # Two users share "search" and one user has two activities: four rows, none collapsed.
    assert spans(spark, ctx.lakehouse) == {
        ("u1", "search"): (at(0).replace(tzinfo=None), at(5).replace(tzinfo=None), 3),
        ("u1", "buy"): (at(3).replace(tzinfo=None), at(3).replace(tzinfo=None), 1),
        ("u2", "search"): (at(1).replace(tzinfo=None), at(1).replace(tzinfo=None), 1),
        ("u2", "buy"): (at(4).replace(tzinfo=None), at(4).replace(tzinfo=None), 1),
    }
    # Fields the schema does not declare are kept in bronze, with their JSON types.
    raw = {
        r["event_time"]: r["_rescued_data"]
        for r in table(spark, ctx.lakehouse, registry.names()[0])
    }
    assert json.loads(raw[at(5).replace(tzinfo=None)]) == {"device": "ios", "ab": {"arm": 2}}
    assert sum(v is not None for v in raw.values()) == 1

    # Keying the same checkpoint by the user alone is refused before any query starts.
    stream = registry.get("activity_spans")
    rekeyed = StreamRegistry(
        [
            registry.get(registry.names()[0]),
            replace(
                stream,
                key="user_id",
                output_schema={
                    "user_id": "string",
                    "activity": "string",
                    "first_seen": "timestamp",
                    "last_seen": "timestamp",
                    "events": "long",
                },
            ),
        ]
    )
    with pytest.raises(DeclarationChanged) as refused:
        run(ctx, rekeyed)
    assert "key: ['user_id', 'activity'] -> ['user_id']" in str(refused.value)
    assert "platform reprocess activity_spans" in str(refused.value)
    assert len(spans(spark, ctx.lakehouse)) == 4  # nothing was written


class DoubleCount(RunningCount):
    """A bad deploy: counts every event twice."""

    def on_events(self, key, state, events, clock):  # type: ignore[no-untyped-def]
        step = super().on_events(key, state, events, clock)
        return Step(step.state, [{**row, "count": row["count"] * 2} for row in step.outputs])


def keyed(key: str, minute: float) -> dict:
    return {"key": key, "event_time": iso(minute)}


def test_a_reprocess_with_the_fix_equals_a_clean_run_and_readers_left_out_are_refused(
    spark, kafka_broker, topic_factory, tmp_path
):
    topic = topic_factory("counts", partitions=2)
    fixed = replace(COUNTS[0], source=replace(COUNTS[0].source, topic=topic))
    registry, buggy = StreamRegistry(), StreamRegistry()
    declare_stream(registry, fixed)
    declare_stream(buggy, replace(fixed, logic=DoubleCount()))
    bronze = registry.names()[0]
    lake = Lakehouse(tmp_path / "lake")
    ctx = StreamContext(spark, lake, kafka_broker)
    produce_events(
        kafka_broker, topic, [keyed("a", 0), keyed("b", 1), keyed("a", 2), b"oops"], key_field="key"
    )
    run(ctx, buggy)
    counts = {r["key"]: r["count"] for r in table(spark, lake, "key_counts")}
    assert counts == {"a": 4, "b": 2}  # the bug

    # Rebuild key_counts with the fix from its bronze table; the buggy table serves meanwhile.
    plan = plan_reprocess(registry, "key_counts", "bronze", "notify")
    assert plan.streams == ("key_counts",) and plan.told == ()
    rebuilt = rebuild(spark, lake, kafka_broker, registry, plan)
    assert rebuilt.rows == {"key_counts": 2}
    assert {r["key"]: r["count"] for r in table(spark, lake, "key_counts")} == {"a": 4, "b": 2}
    switched = switch(spark, lake, registry, plan)
    assert switched.tables == {"key_counts": f"key_counts@{plan.rebuild_id}"}

    # The rebuilt stream runs on: new input is counted once, on top of the rebuild.
    produce_events(kafka_broker, topic, [keyed("a", 3), keyed("c", 4)], key_field="key")
    run(ctx, registry)
    clean_lake = Lakehouse(tmp_path / "clean")
    run(StreamContext(spark, clean_lake, kafka_broker), registry)
    assert same_tables(spark, lake, clean_lake, bronze)
    assert {r["key"]: r["count"] for r in table(spark, lake, "key_counts")} == {
        "a": 3,
        "b": 1,
        "c": 1,
    }
    assert ledger(spark, lake, "key_counts")["rows_in"] == 5  # the rebuilt 3, then 2 new

    # Rebuilding bronze alone leaves key_counts reading the old generation: refused, with the fix.
    plan = plan_reprocess(registry, bronze, "earliest", "notify", rebuild_id="bronze1")
    assert plan.streams == (bronze,) and plan.told == ("key_counts",)
    rebuild(spark, lake, kafka_broker, registry, plan)
    switch(spark, lake, registry, plan)
    with pytest.raises(DeclarationChanged, match="platform reprocess key_counts"):
        run(ctx, registry)
    plan = plan_reprocess(registry, "key_counts", "earliest", "notify", rebuild_id="counts2")
    rebuild(spark, lake, kafka_broker, registry, plan)
    switch(spark, lake, registry, plan)
    run(ctx, registry)
    assert same_tables(spark, lake, clean_lake, bronze)
    for stream in (bronze, "key_counts"):
        assert ledger(spark, lake, stream) == ledger(spark, clean_lake, stream), stream


def same_tables(spark, lake: Lakehouse, clean: Lakehouse, bronze: str) -> bool:
    """Every row equal to the clean run's (quarantine: all but the time it was quarantined)."""

    def rows(where: Lakehouse, name: str) -> list[str]:
        return sorted(
            str({k: v for k, v in r.items() if k != "quarantined_at"})
            for r in table(spark, where, name)
        )

    for name in ("key_counts", bronze, "quarantine"):
        assert rows(lake, name) == rows(clean, name), name
    return True
