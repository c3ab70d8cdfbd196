"""The code location loads, and its asset graph shows the lineage from Kafka to gold."""

from __future__ import annotations

import os
import subprocess
import sys

import dagster as dg
import pytest

from platform_pipelines.definitions import ALL_STREAMS_JOB, defs
from platform_pipelines.defs.jobs import StreamRunConfig
from platform_pipelines.settings import REPO_ROOT


@pytest.mark.dagster
def test_dagster_definitions_validate(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate",
         "-m", "platform_pipelines.definitions"],
        env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All code locations passed validation" in result.stdout + result.stderr


def test_asset_graph_runs_from_the_topic_through_bronze_and_silver_to_gold():
    graph = defs.resolve_asset_graph()
    parents = {key.to_user_string(): sorted(p.to_user_string() for p in graph.get(key).parent_keys)
               for key in graph.get_all_asset_keys()}  # fmt: skip
    assert parents == {
        "clickstream": [],
        "clickstream_raw": ["clickstream"],
        "quarantine": ["clickstream"],
        "events": ["clickstream_raw"],
        "user_sessions": ["events"],
    }
    kinds = {k.to_user_string(): graph.get(k).kinds for k in graph.get_all_asset_keys()}
    assert kinds["clickstream"] == {"kafka"}
    assert kinds["user_sessions"] == {"spark", "delta"}
    assert all(graph.get(k).description for k in graph.get_all_asset_keys())


def test_every_stream_has_its_own_job_and_all_streams_share_one():
    names = sorted(job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__"))
    assert names == sorted([ALL_STREAMS_JOB, "stream_clickstream_raw", "stream_events",
                            "stream_user_sessions"])  # fmt: skip
    assert all(defs.resolve_job_def(n).description for n in names)
    assert "dagster/max_runtime" not in defs.resolve_job_def(ALL_STREAMS_JOB).tags


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("trigger_interval_seconds", 0, "trigger_interval_seconds is 0; set it to a whole number"),
        ("max_offsets_per_trigger", -5, "max_offsets_per_trigger is -5; set it to a positive"),
    ],
)
def test_launch_config_refuses_bad_values_naming_the_field_and_the_fix(field, value, message):
    with pytest.raises(ValueError, match=message):
        StreamRunConfig(**{field: value})


def test_launch_config_defaults_are_a_continuous_stream():
    options = StreamRunConfig().run_options()
    assert (options.mode, options.processing_time, options.max_offsets_per_trigger) == (
        "continuous", "10 seconds", 50_000,
    )  # fmt: skip


def test_a_bad_launch_config_fails_the_run_before_any_query_starts():
    job = defs.resolve_job_def("stream_events")
    config = {"ops": {"run_stream_events": {"config": {"trigger_interval_seconds": 0}}}}
    with pytest.raises(Exception, match="trigger_interval_seconds is 0"):
        job.execute_in_process(run_config=config, instance=dg.DagsterInstance.ephemeral())
