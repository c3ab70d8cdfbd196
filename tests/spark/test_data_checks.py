"""The deep health checks on real Delta tables: exact verdicts and evidence, and the scheduled
health-check job run end to end in process."""

from __future__ import annotations

import shutil
import time

import dagster as dg
import pytest
from pyspark.sql import Row

from platform_pipelines.core.verdict import Status
from platform_pipelines.definitions import defs
from platform_pipelines.defs.resources import (
    KafkaResource,
    LakehouseResource,
    SparkStreamingResource,
)
from platform_pipelines.lakehouse import quality
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.state.alerts import ALERT_FIELDS
from platform_pipelines.streams.schemas import EVENTS, struct_of
from platform_pipelines.streams.sessions import SESSION_SCHEMA
from tests.integration.events import at

pytestmark = pytest.mark.spark


def session(user: str, sid: str, start: float, end: float) -> Row:
    return Row(
        user_id=user,
        session_id=sid,
        session_start=at(start),
        session_end=at(end),
        duration_seconds=(end - start) * 60.0,
        event_count=1,
        last_pages=["/"],
        reached_checkout=False,
        purchased=False,
        revenue=0.0,
        close_reason="timeout",
    )


def event(event_id: str) -> Row:
    values = {name: None for name in EVENTS.fieldNames()}
    values.update(event_id=event_id, user_id="u1", event_type="page_view", event_time=at(0))
    return Row(**values)


def write(spark, lake: Lakehouse, name: str, rows: list, schema) -> None:
    spark.createDataFrame(rows, schema).write.format("delta").mode("overwrite").save(
        str(lake.table(name))
    )


@pytest.mark.hand_written_sessions
def test_duplicates_overlaps_and_malformed_alerts_are_failed_with_their_counts(spark, tmp_path):
    lake = Lakehouse(tmp_path / "lake")
    write(spark, lake, "events", [event("a"), event("b"), event("a")], EVENTS)
    write(
        spark,
        lake,
        "user_sessions",
        [
            session("u1", "s1", 0, 10),
            session("u1", "s2", 5, 20),  # overlaps s1
            session("u2", "s3", 30, 20),  # ends before it starts
            session("u3", "s4", 0, 10),
            session("u3", "s5", 50, 60),  # fine
        ],
        SESSION_SCHEMA,
    )
    alerts = struct_of(ALERT_FIELDS)
    write(
        spark,
        lake,
        "security_alerts",
        [
            Row(
                alert_id="x",
                user_id="u1",
                first_failure_time=at(0),
                last_failure_time=at(4),
                failure_count=5,
                alert_type="failed_logins",
            ),
            Row(
                alert_id="y",
                user_id=None,
                first_failure_time=at(9),
                last_failure_time=at(1),
                failure_count=0,
                alert_type="failed_logins",
            ),
        ],
        alerts,
    )

    dupes = quality.no_duplicate_event_ids(spark, lake.table("events"))
    assert dupes.status is Status.FAIL
    assert dupes.evidence == {"rows": 3, "distinct_event_ids": 2, "duplicates": 1}
    sessions = quality.sessions_valid(spark, lake.table("user_sessions"))
    assert sessions.status is Status.FAIL
    assert sessions.evidence == {"sessions": 5, "end_before_start": 1, "overlapping": 1}
    malformed = quality.alerts_well_formed(spark, lake.table("security_alerts"))
    assert malformed.status is Status.FAIL
    assert malformed.evidence == {
        "alerts": 2,
        "duplicate_ids": 0,
        "missing_ids_or_users": 1,
        "without_failures": 1,
        "times_reversed": 1,
    }
    assert quality.freshness(lake.table("events"), 3600).status is Status.PASS
    assert quality.freshness(lake.table("events"), 60, now=time.time() + 120).status is Status.WARN
    assert quality.freshness(lake.table("missing"), 60).summary == "the table was never written"

    write(spark, lake, "events", [event("a"), event("b")], EVENTS)
    assert quality.no_duplicate_event_ids(spark, lake.table("events")).status is Status.PASS


@pytest.mark.dagster
def test_the_scheduled_health_check_job_runs_every_check_in_process(spark, tmp_path, monkeypatch):
    lake = Lakehouse(tmp_path / "lake")
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", str(lake.root))
    monkeypatch.setenv("PLATFORM_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    write(spark, lake, "events", [event("a"), event("a")], EVENTS)
    shutil.copytree("tests/unit/data/checkpoints/service_status", lake.checkpoint("service_status"))
    job = defs.resolve_job_def("stream_health_check")
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(
            instance=instance,
            resources={
                "spark": SparkStreamingResource(state_partitions=2),
                "kafka": KafkaResource(),
                "lakehouse": LakehouseResource(),
            },
            raise_on_error=False,
        )
    evaluations = {
        (e.asset_key.to_user_string(), e.check_name): e
        for e in result.get_asset_check_evaluations()
    }
    assert result.success
    assert not evaluations[("events", "no_duplicate_event_id")].passed
    assert evaluations[("events", "no_duplicate_event_id")].metadata["duplicates"].value == 1
    assert evaluations[("user_sessions", "sessions_valid")].passed  # no table yet
    assert not evaluations[("user_sessions", "freshness")].passed  # never written
    # The real checkpoint was created with 4 state partitions; service_status now declares its
    # own 1 (the job's session has 2): Spark's own reader finds the difference, and the check
    # says how to resolve it.
    state = evaluations[("service_status", "state_metadata")]
    assert not state.passed and state.severity == dg.AssetCheckSeverity.WARN
    assert "transformWithStateInPySparkExec#0 has 4; configured: 1" in state.description
    assert {c for _, c in evaluations} >= {"liveness", "checkpoint", "freshness", "state_metadata"}
