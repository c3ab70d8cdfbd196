"""The table maintenance jobs and the files_healthy checks through Dagster: a job compacts its
tables and reports what it did; the check reads the Delta log and names the job when it fails."""

from __future__ import annotations

import json
from datetime import datetime

import dagster as dg
import pytest
from pydantic import ValidationError

from platform_pipelines.defs.assets import all_specs
from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource
from platform_pipelines.defs.table_maintenance import (
    TableMaintenanceConfig,
    maintenance_definitions,
)
from platform_pipelines.health.files import FILES_HEALTHY
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import get_settings
from platform_pipelines.streams.builtin import builtin_streams

STREAMS = list(builtin_streams())
EVENTS = builtin_streams().get("events").outputs["events"]


def definitions(*more: dg.Definitions) -> dg.Definitions:
    """The maintenance definitions with the resources the code location's root provides."""
    resources = {
        "spark": SparkStreamingResource(state_partitions=2),
        "lakehouse": LakehouseResource(),
    }
    return dg.Definitions.merge(
        maintenance_definitions(STREAMS, get_settings()), dg.Definitions(resources=resources), *more
    )


def test_a_job_per_layer_on_a_daily_schedule_and_a_files_check_on_every_table(monkeypatch):
    monkeypatch.setenv("PLATFORM_MAINTENANCE_SCHEDULE_RUNNING", "false")
    defs = definitions()

    jobs = {job.name for job in defs.resolve_all_job_defs() if job.name != "__ASSET_JOB"}
    assert sorted(jobs) == [
        "table_maintenance_bronze",
        "table_maintenance_gold",
        "table_maintenance_silver",
    ]
    schedules = {s.name: (s.cron_schedule, s.default_status) for s in defs.schedules or []}
    stopped = dg.DefaultScheduleStatus.STOPPED
    assert schedules == {
        "table_maintenance_bronze_schedule": ("0 3 * * *", stopped),
        "table_maintenance_silver_schedule": ("20 3 * * *", stopped),
        "table_maintenance_gold_schedule": ("40 3 * * *", stopped),
    }
    (checks,) = defs.asset_checks or []
    assert sorted(k.asset_key.to_user_string() for k in checks.check_keys) == sorted(
        [
            "clickstream_raw",
            "quarantine",
            "events",
            "late_events",
            "user_sessions",
            "security_alerts",
            "service_heartbeats_raw",
            "service_status",
        ]
    )
    assert {k.name for k in checks.check_keys} == {FILES_HEALTHY}


def test_a_retention_under_an_hour_and_unknown_tables_are_refused_before_any_work():
    with pytest.raises(ValidationError, match=r"retention_hours is 0\.5; use at least 1"):
        TableMaintenanceConfig(retention_hours=0.5)
    with pytest.raises(ValueError, match="'nope' is not maintained by this job; use some of"):
        TableMaintenanceConfig(tables=["nope"]).selected(["events"])


def test_the_files_sensor_reports_a_table_when_its_verdict_changes_not_on_every_tick(
    tmp_path, monkeypatch
):
    lake = Lakehouse(tmp_path / "lake")
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", str(lake.root))
    (sensor,) = definitions().sensors or []
    log = lake.table("events") / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{0:020d}.crc").write_text(json.dumps({"numFiles": 40_000, "tableSizeBytes": 8e7}))
    (log / f"{0:020d}.json").write_text(json.dumps({"commitInfo": {"timestamp": 0}}) + "\n")

    with dg.build_sensor_context() as context:
        first = sensor(context)
    with dg.build_sensor_context(cursor=first.cursor) as context:
        second = sensor(context)

    reported = {e.asset_key.to_user_string(): e for e in first.asset_events}
    assert len(reported) == 8  # every table asset, once
    assert not reported["events"].passed
    assert reported["events"].description.startswith("warn files_healthy: events has 40,000 files")
    assert "table_maintenance_silver" in reported["events"].description
    assert second.asset_events == []  # nothing changed


@pytest.mark.dagster
@pytest.mark.spark
def test_the_silver_job_compacts_events_and_reports_the_files_and_the_check(
    spark, tmp_path, monkeypatch
):
    lake = Lakehouse(tmp_path / "lake")
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", str(lake.root))
    path = lake.ensure_table(spark, "events", EVENTS)
    for n in range(3):
        row = (f"e{n}", "u1", "page_view", "/home", None, datetime(2026, 11, 22, 10, n))
        spark.createDataFrame([row], EVENTS).write.format("delta").mode("append").save(str(path))

    result = definitions().resolve_job_def("table_maintenance_silver").execute_in_process()

    assert result.success
    (observation,) = result.asset_observations_for_node("maintain_silver_tables")
    numbers = {k: v.value for k, v in observation.metadata.items()}
    assert (numbers["files_before"], numbers["files_after"]) == (3, 1)
    assert (numbers["retention_hours"], numbers["retention_reason"]) == (168.0, "configured")
    (evaluation,) = result.get_asset_check_evaluations()
    assert (evaluation.check_name, evaluation.passed) == (FILES_HEALTHY, True)
    assert evaluation.metadata["files"].value == 1

    checks = dg.define_asset_job("files", dg.AssetSelection.all_asset_checks())
    checked = (
        definitions(dg.Definitions(assets=all_specs(STREAMS, lake), jobs=[checks]))
        .resolve_job_def("files")
        .execute_in_process()
    )
    verdicts = {e.asset_key.to_user_string(): e for e in checked.get_asset_check_evaluations()}
    assert verdicts["events"].passed and verdicts["events"].metadata["files"].value == 1
    assert verdicts["user_sessions"].description == (
        "pass files_healthy: user_sessions has no commit yet"
    )
