"""The code location loads, and its asset graph shows the lineage from Kafka to gold."""

from __future__ import annotations

import os
import subprocess
import sys

import dagster as dg
import pytest

from platform_pipelines.definitions import ALL_STREAMS_JOB, defs
from platform_pipelines.defs.config import StreamRunConfig
from platform_pipelines.settings import REPO_ROOT
from platform_pipelines.streams.catalog import load_registry


@pytest.mark.dagster
def test_dagster_definitions_validate(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dagster",
            "definitions",
            "validate",
            "-m",
            "platform_pipelines.definitions",
        ],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All code locations passed validation" in result.stdout + result.stderr


def test_asset_graph_runs_from_the_topics_through_bronze_and_silver_to_gold():
    graph = defs.resolve_asset_graph()
    parents = {
        key.to_user_string(): sorted(p.to_user_string() for p in graph.get(key).parent_keys)
        for key in graph.get_all_asset_keys()
    }
    assert parents == {
        "clickstream": [],
        "service_heartbeats": [],
        "key_events": [],
        "clickstream_raw": ["clickstream"],
        "quarantine": ["clickstream", "key_events", "service_heartbeats"],
        "events": ["clickstream"],
        "user_sessions": ["events"],
        "security_alerts": ["clickstream"],
        "alerts": ["security_alerts"],
        "daily_engagement": ["user_sessions"],
        "service_heartbeats_raw": ["service_heartbeats"],
        "service_status": ["service_heartbeats_raw"],
        "key_events_raw": ["key_events"],
        "key_counts": ["key_events_raw"],
        "state_snapshots": [
            "events",
            "key_counts",
            "security_alerts",
            "service_status",
            "user_sessions",
        ],
        "late_events": ["clickstream", "events", "key_events_raw"],
    }
    kinds = {k.to_user_string(): graph.get(k).kinds for k in graph.get_all_asset_keys()}
    assert kinds["clickstream"] == kinds["alerts"] == {"kafka"}
    assert kinds["user_sessions"] == {"spark", "delta"}
    assert all(graph.get(k).description for k in graph.get_all_asset_keys())


def test_every_stream_has_its_own_job_and_all_streams_share_one():
    names = sorted(job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__"))
    streams = [
        "clickstream_raw",
        "events",
        "user_sessions",
        "security_alerts",
        "service_heartbeats_raw",
        "service_status",
        "key_events_raw",
        "key_counts",
    ]
    assert set(names) >= {ALL_STREAMS_JOB, *(f"stream_{s}" for s in streams)}
    assert all(defs.resolve_job_def(n).description for n in names)
    assert "dagster/max_runtime" not in defs.resolve_job_def(ALL_STREAMS_JOB).tags


def test_every_stream_table_declares_the_health_checks_and_the_sensors_and_schedule_exist():
    graph = defs.resolve_asset_graph()
    checks: dict[str, set[str]] = {}
    for key in graph.asset_check_keys:
        checks.setdefault(key.asset_key.to_user_string(), set()).add(key.name)
    per_stream = {
        "liveness",
        "falling_behind",
        "state_growth",
        "late_data",
        "checkpoint",
        "auto_restart",
        "freshness",
        "no_silent_loss",
    }
    for stream in load_registry():
        assert checks[stream.table] >= per_stream, stream.name
        # Streams that read Kafka also carry the topic's replication check.
        assert ("kafka_replication" in checks[stream.table]) == (stream.topic is not None)
    assert "state_metadata" in checks["user_sessions"]
    assert "state_metadata" not in checks["clickstream_raw"]  # bronze keeps no state
    assert "no_duplicate_event_id" in checks["events"]
    assert "sessions_valid" in checks["user_sessions"]
    assert "alerts_well_formed" in checks["security_alerts"]
    sensors = {s.name: s for s in defs.sensors or []}
    assert set(sensors) == {"stream_health_sensor", "stream_auto_restart", "table_files_sensor"}
    assert all(s.description for s in sensors.values())
    assert sensors["stream_health_sensor"].default_status == dg.DefaultSensorStatus.RUNNING
    (schedule,) = [s for s in defs.schedules or [] if s.name == "stream_health_check_schedule"]
    assert schedule.cron_schedule == "*/15 * * * *"
    assert defs.resolve_job_def("stream_health_check").description


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("trigger_interval_seconds", -1, "trigger_interval_seconds is -1; set it to 0 .the next"),
        ("max_offsets_per_trigger", -5, "max_offsets_per_trigger is -5; set it to a whole number"),
    ],
)
def test_launch_config_refuses_bad_values_naming_the_field_and_the_fix(field, value, message):
    with pytest.raises(ValueError, match=message):
        StreamRunConfig(**{field: value})


def test_launch_config_defaults_to_a_continuous_stream_on_its_declared_trigger():
    registry = load_registry()
    options = {s.name: StreamRunConfig().run_options(s) for s in registry}
    assert (options["events"].mode, options["events"].max_offsets_per_trigger) == (
        "continuous",
        200_000,
    )
    # the streams whose rows people wait for start a batch as soon as there is input
    waited_for = {"events", "security_alerts"}
    assert {n: o.processing_time for n, o in options.items() if n in waited_for} == dict.fromkeys(
        waited_for, "0 seconds"
    )
    # the clickstream's bronze and the sessions, which nobody waits on, run once a minute
    not_waited_on = {"clickstream_raw", "user_sessions"}
    assert {
        n: o.processing_time for n, o in options.items() if n in not_waited_on
    } == dict.fromkeys(not_waited_on, "60 seconds")
    assert options["service_heartbeats_raw"].processing_time == "10 seconds"
    # a silent service is stale one trigger after its timeout at most (plus a batch)
    assert options["service_status"].processing_time == "3 seconds"
    # ... and take the cores the others leave free (Spark's fair scheduler pools)
    assert {n for n, o in options.items() if o.pool == "bulk"} == not_waited_on


def test_per_stream_settings_override_the_job_and_can_disable_a_stream():
    registry = load_registry()
    config = StreamRunConfig(
        trigger_interval_seconds=20,
        streams={
            "events": {"trigger_interval_seconds": 3, "max_offsets_per_trigger": 7},
            "key_counts": {"enabled": False},
        },
    )
    assert config.run_options(registry.get("events")).processing_time == "3 seconds"
    assert config.run_options(registry.get("events")).max_offsets_per_trigger == 7
    assert config.run_options(registry.get("user_sessions")).processing_time == "20 seconds"
    # a stream triggered more often than once a minute is waited on: it runs in the react pool
    assert config.run_options(registry.get("user_sessions")).pool == "react"
    assert "key_counts" not in [s.name for s in config.selected(list(registry))]


def test_per_stream_settings_for_an_unknown_stream_are_refused_with_the_known_names():
    config = StreamRunConfig(streams={"evnets": {"enabled": False}})
    with pytest.raises(
        ValueError,
        match="streams: 'evnets' is not a stream of this job; use one of: clickstream_raw, events",
    ):
        config.selected(list(load_registry()))


def test_a_bad_launch_config_fails_the_run_before_any_query_starts():
    job = defs.resolve_job_def("stream_events")
    config = {"ops": {"run_stream_events": {"config": {"trigger_interval_seconds": -2}}}}
    with pytest.raises(Exception, match="trigger_interval_seconds is -2"):
        job.execute_in_process(run_config=config, instance=dg.DagsterInstance.ephemeral())
