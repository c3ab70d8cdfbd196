"""Ctrl-C and SIGTERM of a run started from a terminal stop its queries at a batch boundary,
say so in one line, and end the run CANCELED (not FAILURE); the checkpoint stays consistent."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.checkpoints import batch_ids
from platform_pipelines.settings import REPO_ROOT, get_settings
from tests.fixtures.dagster import run_story
from tests.integration.events import U1_SHOPPING, ev
from tests.waiting import wait_for

pytestmark = [pytest.mark.dagster, pytest.mark.spark, pytest.mark.kafka]


@pytest.mark.parametrize(
    ("sig", "to_group"), [(signal.SIGINT, True), (signal.SIGTERM, False)], ids=["ctrl-c", "sigterm"]
)
def test_a_terminal_run_stops_gracefully_on_ctrl_c_and_sigterm(
    kafka_broker, tmp_path: Path, sig, to_group
):
    topic = f"graceful-{sig.name.lower()}"
    create_topics(kafka_broker, {topic: 2})
    produce_events(kafka_broker, topic, U1_SHOPPING)
    home, local = tmp_path / "home", tmp_path / "local"
    home.mkdir()
    shutil.copy(REPO_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    config = tmp_path / "run.yaml"
    others = [
        "user_sessions",
        "security_alerts",
        "service_heartbeats_raw",
        "service_status",
        "key_events_raw",
        "key_counts",
    ]
    config.write_text(
        yaml.safe_dump(
            {
                "ops": {
                    "run_all_streams": {
                        "config": {
                            "mode": "continuous",
                            "trigger_interval_seconds": 1,
                            "streams": {name: {"enabled": False} for name in others},
                        }
                    }
                }
            }
        )
    )
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "PLATFORM_LOCAL_DIR": str(local),
        "PLATFORM_JARS_DIR": str(get_settings().jars_dir),
        "PLATFORM_SPARK_MASTER": "local[2]",
        "PLATFORM_STATE_PARTITIONS": "2",
        "PLATFORM_SPARK_UI_ENABLED": "false",
        "PLATFORM_KAFKA_BOOTSTRAP_SERVERS": kafka_broker,
        "PLATFORM_CLICKSTREAM_TOPIC": topic,
    }
    command = [
        sys.executable,
        "-m",
        "dagster",
        "job",
        "execute",
        "-m",
        "platform_pipelines.definitions",
        "-j",
        "all_streams",
        "-c",
        str(config),
    ]
    run = subprocess.Popen(
        command,
        env=env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    store = ProgressStore(local / "progress")

    def starts() -> list:
        assert run.poll() is None, run.stdout.read() if run.stdout else ""
        return [r for r in store.recent("events", 50) if r.event == "started"]

    def continuous_batch() -> bool:
        return any(
            r.event == "progress"
            and r.ts > starts()[-1].ts
            and r.progress
            and r.progress["numInputRows"]
            for r in store.recent("events", 50)
        )

    wait_for(lambda: len(starts()) >= 2, 300, "the events stream's continuous phase to start")
    produce_events(kafka_broker, topic, [ev("later", "u7", "page_view", 30)])
    wait_for(continuous_batch, 120, "a continuous batch of the events stream")
    if to_group:
        os.killpg(run.pid, sig)  # what a terminal's Ctrl-C does
    else:
        os.kill(run.pid, sig)
    output, _ = run.communicate(timeout=180)

    instance = dg.DagsterInstance.from_config(str(home))
    (dagster_run,) = instance.get_runs()
    assert dagster_run.status is dg.DagsterRunStatus.CANCELED, _story(instance, dagster_run, output)
    messages = [e.message for e in instance.all_logs(dagster_run.run_id) if e.message]
    (line,) = [m for m in messages if m.startswith("Stopped gracefully on")]
    # the run process forwards a SIGTERM to the step process as an interrupt (SIGINT)
    assert line.startswith("Stopped gracefully on SIGINT: clickstream_raw after batch ")
    assert ", events after batch " in line
    assert "reentrant call" not in output
    events = instance.all_logs(dagster_run.run_id)
    kinds = {e.dagster_event.event_type for e in events if e.dagster_event}
    assert dg.DagsterEventType.STEP_FAILURE not in kinds, _story(instance, dagster_run, output)
    assert "Traceback" not in "\n".join(messages)
    for stream in ("clickstream_raw", "events"):  # the running batches committed
        checkpoint = local / "lakehouse" / "checkpoints" / stream
        offsets, commits = batch_ids(checkpoint), batch_ids(checkpoint, "commits")
        # A SIGTERM of bare `dagster job execute` was seen (1 run of the CI suite) to leave the
        # newest batch planned but not committed: Spark replays it on the next start, exactly
        # once. `platform run` (tests/dagster/test_terminal_stop.py) leaves none.
        assert offsets[: len(commits)] == commits and len(offsets) - len(commits) <= 1


def _story(instance: dg.DagsterInstance, run: dg.DagsterRun, output: str) -> str:
    """The run's own event log, then the end of the terminal output."""
    return "\n".join([run_story(instance, run.run_id), "--- terminal output ---", output[-2000:]])
