"""Stream jobs run through Dagster: in process, and launched/cancelled through webserver + daemon."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster import DagsterRunStatus

from platform_pipelines.defs.jobs import make_stream_job
from platform_pipelines.defs.resources import (
    KafkaResource,
    LakehouseResource,
    SparkStreamingResource,
)
from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from tests.integration.events import U1_SHOPPING, ev
from tests.sockets import beyond_loopback, listening
from tests.waiting import wait_for

pytestmark = [pytest.mark.dagster, pytest.mark.spark, pytest.mark.kafka]


def delta_rows(spark, path: Path) -> list[dict]:
    return [r.asDict() for r in spark.read.format("delta").load(str(path)).collect()]


def rows_so_far(spark, path: Path) -> int:
    """Rows in a table another process may still be creating (0 until its first commit)."""
    try:
        return len(delta_rows(spark, path))
    except Exception:
        return 0


def test_stream_job_run_through_dagster_writes_its_table_and_records_progress(
    spark, kafka_broker, topic_factory, tmp_path, monkeypatch
):
    topic = topic_factory("dagster_job")
    produce_events(kafka_broker, topic, [*U1_SHOPPING, U1_SHOPPING[0]])
    stream = builtin_streams(BuiltinSettings(clickstream_topic=topic)).get("clickstream_raw")
    job = make_stream_job("stream_clickstream_raw", [stream], "test")
    lake = Lakehouse(tmp_path / "lake")
    # Where the tables are and which broker to read are the deployment's, never run config.
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", str(lake.root))
    monkeypatch.setenv("PLATFORM_KAFKA_BOOTSTRAP_SERVERS", kafka_broker)
    instance = dg.DagsterInstance.ephemeral()

    result = job.execute_in_process(
        instance=instance,
        run_config={"ops": {"run_stream_clickstream_raw": {"config": {"mode": "catch_up"}}}},
        resources={
            "spark": SparkStreamingResource(state_partitions=2),
            "kafka": KafkaResource(),
            "lakehouse": LakehouseResource(),
        },
    )

    assert result.success
    assert sorted(r["event_id"] for r in delta_rows(spark, lake.table("clickstream_raw"))) == [
        "e1",
        "e1",
        "e2",
        "e3",
        "e4",
        "e5",
        "e6",
    ]
    started, finished = result.asset_materializations_for_node("run_stream_clickstream_raw")
    assert {started.asset_key.to_user_string(), finished.asset_key.to_user_string()} == {
        "clickstream_raw"
    }
    assert started.metadata["running"].value is True
    assert finished.metadata["running"].value is False
    assert finished.metadata["rows_read_in_run"].value == 7
    assert finished.metadata["run"].value == result.run_id
    messages = [e.user_message for e in instance.all_logs(result.run_id)]
    assert "All streams done: clickstream_raw 1 batch" in messages
    (progress,) = [m for m in messages if m.startswith("clickstream_raw: batch")]
    assert progress.startswith("clickstream_raw: batch 0 read 7 rows (")


def run_status(ui, run_id: str) -> DagsterRunStatus:
    return ui.client.get_run_status(run_id)


def test_cancelled_continuous_stream_ends_canceled_and_a_rerun_resumes_without_loss(
    spark, kafka_broker, dagster_ui
):
    topic = "ui_clickstream"  # the code location under `dagster dev` reads this topic
    first = [ev(f"c{i}", f"u{i % 3}", "page_view", i, f"/p/{i}") for i in range(20)]
    create_topics(kafka_broker, {topic: 1})
    produce_events(kafka_broker, topic, first)
    table = dagster_ui.local_dir / "lakehouse" / "tables" / "clickstream_raw"
    continuous = {
        "mode": "continuous",
        "trigger_interval_seconds": 2,
        "max_offsets_per_trigger": 5,
        "progress_log_interval_seconds": 5,
    }

    run_id = dagster_ui.client.submit_job_execution(
        "stream_clickstream_raw",
        run_config={"ops": {"run_stream_clickstream_raw": {"config": continuous}}},
    )
    wait_for(
        lambda: rows_so_far(spark, table) >= 5, 300, "the running stream to write its first rows"
    )
    # While the stream runs: the webserver, daemon, code server, run worker, its step process
    # and its Spark JVM (driver RPC, block manager, UI) listen on loopback only.
    sockets = listening(dagster_ui.pid)
    assert any(proc.endswith("SparkSubmit") for _, _, proc in sockets), sockets
    assert beyond_loopback(dagster_ui.pid) == []
    dagster_ui.client.terminate_run(run_id)

    status = wait_for(
        lambda: (
            run_status(dagster_ui, run_id) in (DagsterRunStatus.CANCELED, DagsterRunStatus.FAILURE)
            and run_status(dagster_ui, run_id)
        ),
        180,
        "the run to end after cancellation",
    )
    assert status == DagsterRunStatus.CANCELED
    ckpt = dagster_ui.local_dir / "lakehouse" / "checkpoints" / "clickstream_raw"
    offsets, commits = (
        sorted(int(p.name) for p in (ckpt / d).iterdir() if p.name.isdigit())
        for d in ("offsets", "commits")
    )
    assert offsets == commits  # the running batch committed before the query stopped

    second = [ev(f"d{i}", "u9", "page_view", 30 + i, "/late") for i in range(5)]
    produce_events(kafka_broker, topic, second)
    rerun = dagster_ui.client.submit_job_execution(
        "stream_clickstream_raw",
        run_config={"ops": {"run_stream_clickstream_raw": {"config": {"mode": "catch_up"}}}},
    )
    wait_for(
        lambda: (
            run_status(dagster_ui, rerun)
            in (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)
        ),
        300,
        "the rerun",
    )
    assert run_status(dagster_ui, rerun) == DagsterRunStatus.SUCCESS
    rows = delta_rows(spark, table)
    assert sorted(r["kafka_offset"] for r in rows) == list(range(25))  # each exactly once
    assert sorted(r["event_id"] for r in rows) == sorted(e["event_id"] for e in first + second)
    instance = dg.DagsterInstance.from_config(str(dagster_ui.home))
    assert instance.get_run_by_id(run_id).tags.get("platform/stream") == "stream_clickstream_raw"
