"""The state_snapshot job through Dagster: a stream's state per key into the state_snapshots
Delta table, with the numbers on the materialization; a bad config refused by name."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from platform_pipelines.definitions import build_definitions
from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource
from platform_pipelines.defs.state import JOB, StateSnapshotConfig, state_definitions
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.state_snapshots import SNAPSHOT_TABLE
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.settings import get_settings
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext
from platform_pipelines.streams.registry import StreamRegistry, declare_stream
from tests.integration.events import at
from user_streams.running_count import STREAMS as USER_STREAMS

pytestmark = [pytest.mark.dagster, pytest.mark.spark]


def ms(minute: float) -> int:
    return int(at(minute).timestamp() * 1000)


def registry(alerts_topic: str = "alerts") -> StreamRegistry:
    """The built-in streams, security_alerts reading silver events, then the user streams."""
    streams = builtin_streams(BuiltinSettings(alerts_reads="bronze", alerts_topic=alerts_topic))
    for stream in USER_STREAMS:
        declare_stream(streams, stream)
    return streams


def snapshot_job(streams: StreamRegistry) -> dg.JobDefinition:
    resources = {
        "spark": SparkStreamingResource(state_partitions=2),
        "lakehouse": LakehouseResource(),
    }
    defs = dg.Definitions.merge(
        state_definitions(list(streams), get_settings()), dg.Definitions(resources=resources)
    )
    return defs.resolve_job_def(JOB)


def config(**values: object) -> dict:
    return {"ops": {SNAPSHOT_TABLE: {"config": values}}}


@pytest.fixture
def lake(tmp_path, monkeypatch) -> Lakehouse:
    lake = Lakehouse(tmp_path / "lake")
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", str(lake.root))
    return lake


def failure(event_id: str, user: str, minute: int) -> dict:
    """A silver ``events`` row: a failed login."""
    return {
        "event_id": event_id,
        "user_id": user,
        "event_type": "login_failed",
        "page": "/login",
        "event_time": at(minute),
    }


@pytest.mark.kafka  # security_alerts creates the topic it publishes to when it starts
def test_a_snapshot_writes_one_row_per_key_and_plots_keys_and_bytes(
    spark, kafka_broker, topic_factory, lake
):
    streams = registry(alerts_topic=topic_factory("snapshot-alerts"))
    alerts, events = streams.get("security_alerts"), streams.get("events")
    rows = [
        failure("f0", "u5", 0),
        failure("f1", "u5", 1),
        failure("f2", "u5", 2),
        failure("g0", "u6", 0),
    ]  # (hand-written silver rows; the broker gets only the alerts topic, which no alert reaches)
    spark.createDataFrame(rows, events.outputs[events.table]).write.format("delta").save(
        str(lake.table(events.table))
    )
    run_streams(
        StreamContext(spark, lake, kafka_broker),
        [alerts],
        RunOptions(mode="catch_up"),
        lambda *_: None,
    )

    def seen(*logins: tuple[str, int]) -> list[dict]:  # the ids the alerts deduplicate by
        return [{"event_id": i, "event_time_ms": ms(m)} for i, m in logins]

    u5 = {"failures_ms": [ms(0), ms(1), ms(2)], "seen": seen(("f0", 0), ("f1", 1), ("f2", 2))}
    u6 = {"failures_ms": [ms(0)], "seen": seen(("g0", 0))}
    # flatMapGroupsWithState (the alerts' Java port): the key, its groupState as JSON and the
    # 8-byte timeout
    sizes = {
        "u5": 2 + len(json.dumps(u5, separators=(",", ":"))) + 8,
        "u6": 2 + len(json.dumps(u6, separators=(",", ":"))) + 8,
    }
    job = snapshot_job(streams)

    first = job.execute_in_process(run_config=config(stream="security_alerts", top=0))
    second = job.execute_in_process(run_config=config(stream="security_alerts", top=1))

    table = spark.read.format("delta").load(str(lake.table(SNAPSHOT_TABLE)))
    written = sorted(table.collect(), key=lambda r: (r["snapshot_time"], r["key"]))
    assert [
        (r["stream"], r["batch_id"], r["key"], json.loads(r["value"]), r["timer"], r["bytes"])
        for r in written
    ] == [
        ("security_alerts", 1, "u5", u5, at(12).replace(tzinfo=None), sizes["u5"]),
        ("security_alerts", 1, "u6", u6, at(10).replace(tzinfo=None), sizes["u6"]),
        ("security_alerts", 1, "u5", u5, at(12).replace(tzinfo=None), sizes["u5"]),  # top=1
    ]  # (batch 1: the no-data batch that moved the watermark)
    assert len({r["snapshot_time"] for r in written}) == 2
    for result in (first, second):
        (event,) = result.asset_materializations_for_node(SNAPSHOT_TABLE)
        assert {
            k: event.metadata[k].value for k in ("keys", "total_bytes", "biggest_key_bytes")
        } == {"keys": 2, "total_bytes": sizes["u5"] + sizes["u6"], "biggest_key_bytes": sizes["u5"]}
        assert "| `u5` |" in event.metadata["biggest_keys_security_alerts"].value


def test_a_stream_that_is_not_stateful_is_refused_naming_the_field_and_the_choices(lake):
    result = snapshot_job(registry()).execute_in_process(
        run_config=config(stream="clickstream_raw"), raise_on_error=False
    )

    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    message = failure.step_failure_data.error.message
    assert "stream: 'clickstream_raw' is not a stateful stream; use one of: events, " in message
    assert "key_counts (or leave it empty for every stateful stream)." in message


def test_a_negative_top_is_refused_naming_the_field_and_the_fix():
    with pytest.raises(ValueError, match=r"top is -1; set it to 0 \(every key\) or a whole number"):
        StateSnapshotConfig(top=-1)
    assert StateSnapshotConfig().top == 1000 and StateSnapshotConfig().stream == ""


def test_the_snapshot_asset_and_job_merge_into_the_code_location_with_descriptions():
    defs = build_definitions()  # the code location includes the state definitions

    dg.Definitions.validate_loadable(defs)
    asset = defs.resolve_assets_def(SNAPSHOT_TABLE)
    assert asset.descriptions_by_key[asset.key] and defs.resolve_job_def(JOB).description
    assert {k.to_user_string() for k in asset.dependency_keys} == {
        "events",
        "user_sessions",
        "security_alerts",
        "service_status",
        "key_counts",
    }
