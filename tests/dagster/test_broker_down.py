"""A broker that stops answering under a running stream is reported as such, within one sensor
tick: in the run's log, in the checks, and in `platform status` (lag "unknown", not 0)."""

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
from click.testing import CliRunner

from platform_pipelines.cli import main
from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.defs.health.sensor import health_tick
from platform_pipelines.health.evaluate import HealthConfig
from platform_pipelines.health.policy import checkpoint_expectations
from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.broker import LocalKafkaBroker
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import REPO_ROOT, PlatformSettings, get_settings
from platform_pipelines.spark.session import SparkOptions
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from tests.integration.events import U1_SHOPPING
from tests.waiting import wait_for

pytestmark = [pytest.mark.dagster, pytest.mark.spark, pytest.mark.kafka]
TOPIC = "down_clicks"


def test_an_unreachable_broker_is_named_in_the_run_log_the_checks_and_status(
    tmp_path: Path, monkeypatch
):
    broker = LocalKafkaBroker(tmp_path / "broker")
    address = broker.start()
    create_topics(address, {TOPIC: 1})
    produce_events(address, TOPIC, U1_SHOPPING)
    home, local = tmp_path / "home", tmp_path / "local"
    home.mkdir()
    shutil.copy(REPO_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    config = tmp_path / "run.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "ops": {
                    "run_stream_clickstream_raw": {
                        "config": {"mode": "continuous", "trigger_interval_seconds": 1}
                    }
                }
            }
        )
    )
    env = {
        "DAGSTER_HOME": str(home),
        "PLATFORM_LOCAL_DIR": str(local),
        "PLATFORM_JARS_DIR": str(get_settings().jars_dir),
        "PLATFORM_SPARK_MASTER": "local[2]",
        "PLATFORM_STATE_PARTITIONS": "2",
        "PLATFORM_SPARK_UI_ENABLED": "false",
        "PLATFORM_KAFKA_BOOTSTRAP_SERVERS": address,
        "PLATFORM_CLICKSTREAM_TOPIC": TOPIC,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dagster",
            "job",
            "execute",
            "-m",
            "platform_pipelines.definitions",
            "-j",
            "stream_clickstream_raw",
            "-c",
            str(config),
        ],
        env={**os.environ, **env},
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    store = ProgressStore(local / "progress")
    try:
        wait_for(
            lambda: [r for r in store.recent("clickstream_raw", 20) if r.event == "started"][1:],
            300,
            "the continuous phase of the bronze stream",
        )
        instance = dg.DagsterInstance.from_config(str(home))
        broker.stop()

        def logged(text: str) -> bool:
            assert run.poll() is None, run.stdout.read() if run.stdout else ""
            (dagster_run,) = instance.get_runs()
            return any(text in (e.message or "") for e in instance.all_logs(dagster_run.run_id))

        wait_for(
            lambda: logged(
                f"The Kafka broker at {address} does not answer: clickstream_raw cannot read"
            ),
            30,
            "the run log to name the broker",
        )

        settings = PlatformSettings()
        streams = [builtin_streams(BuiltinSettings(clickstream_topic=TOPIC)).get("clickstream_raw")]
        config_ = HealthConfig(
            expectations=checkpoint_expectations(SparkOptions.from_settings(settings))
        )
        tick = health_tick(
            instance, streams, Lakehouse(settings.lakehouse_dir), settings, config_, None
        )
        (health,) = tick.results
        down = f"the Kafka broker at {address} does not answer (connection refused)"
        assert health.verdict("falling_behind").summary == f"lag unknown: {down}"
        assert "lag_records" not in health.metrics
        status = CliRunner().invoke(main, ["status"], env={"COLUMNS": "200"})
        (row,) = [
            line for line in status.output.splitlines() if line.startswith("│ clickstream_raw")
        ]
        assert row.split("│")[5].strip() == "unknown"
        assert f"clickstream_raw fail falling_behind: lag unknown: {down}" in status.output

        LocalKafkaBroker(tmp_path / "broker").start()  # same data, same port as before
        wait_for(
            lambda: logged(f"The Kafka broker at {address} answers again"),
            60,
            "the run log to say the broker is back",
        )
    finally:
        if run.poll() is None:
            os.kill(run.pid, signal.SIGTERM)
            run.communicate(timeout=180)
        LocalKafkaBroker(tmp_path / "broker").stop()
    (dagster_run,) = instance.get_runs()
    assert dagster_run.status is dg.DagsterRunStatus.CANCELED
