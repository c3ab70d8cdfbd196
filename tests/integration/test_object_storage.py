"""Tables and checkpoints on an S3 API (moto's server, through Hadoop's S3A): the pipeline (bronze,
dedup, sessions) run in two catch-ups, a restart between them, writes exactly the tables of the
same two runs on local disk.

The S3 runs are driver processes of their own (``tests.cluster.driver``) with the deployment's
settings only (``PLATFORM_LAKEHOUSE_DIR=s3a://...``, ``PLATFORM_S3_*``, the stream locks in
PostgreSQL): the S3A jars, RocksDB's state uploads, the Delta log, the checkpoint declarations
and the exactly-once writers' reads of the log all go through the S3 API.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream, produce
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import REPO_ROOT, get_settings
from tests.fixtures.postgres import fresh_database
from tests.integration.helpers import run_catch_up, table

STREAMS = ["clickstream_raw", "events", "user_sessions"]
TABLES = [
    "clickstream_raw",
    "quarantine",
    "events",
    "late_events",
    "user_sessions",
    "stream_ledger",
]
# What differs between two runs of the same input: when rows were judged or written, and the
# checkpoint's query id.
RUN_COLUMNS = {"quarantined_at", "detected_at", "written_at", "query_id"}
START = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
FIRST = ClickstreamConfig(
    events=400,
    users=30,
    duplicate_rate=0.03,
    late_rate=0.06,
    malformed_rate=0.02,
    seed=31,
    start_time=START,
)
# The same users half an hour later: their open sessions continue from the restored state.
SECOND = ClickstreamConfig(
    events=400,
    users=30,
    duplicate_rate=0.03,
    late_rate=0.06,
    malformed_rate=0.02,
    seed=32,
    start_time=datetime(2026, 11, 1, 8, 30, tzinfo=UTC),
)
DRIVER_TIMEOUT_S = 900


def on_s3(env: dict[str, str], bootstrap: str, topic: str, report: Path) -> dict:
    """One catch-up of the pipeline in a driver process whose lakehouse is on S3."""
    command = [
        sys.executable,
        "-m",
        "tests.cluster.driver",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--report",
        str(report),
        "--tables",
        *TABLES,
        "--streams",
        *STREAMS,
    ]
    # Run from an empty folder: a lakehouse path that fell back to a local one would show there.
    result = subprocess.run(
        command,
        cwd=report.parent,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT_S,
    )
    assert result.returncode == 0, (
        f"the S3 driver failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    )
    return json.loads(report.read_text())


def comparable(rows: list[dict]) -> list[tuple]:
    """Rows without the run's own columns, sorted: equal lists are equal tables."""
    return sorted(
        tuple(sorted((k, v) for k, v in row.items() if k not in RUN_COLUMNS)) for row in rows
    )


def local_rows(spark, lake: Lakehouse, name: str) -> list[tuple]:
    return comparable([{k: repr(v) for k, v in row.items()} for row in table(spark, lake, name)])


@pytest.mark.s3
@pytest.mark.spark
@pytest.mark.kafka
def test_the_pipeline_on_s3_equals_a_local_run_across_a_restart(
    spark, kafka_broker, topic_factory, s3_bucket, postgres_server, tmp_path
):
    topic = topic_factory("s3", partitions=3)
    database = fresh_database(postgres_server, "locks")
    env = {
        **s3_bucket.env("lakehouse"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "PLATFORM_LOCK_DATABASE_URL": database.url,
        "PLATFORM_LOCAL_DIR": str(tmp_path / "driver"),
        "PLATFORM_JARS_DIR": str(get_settings().jars_dir),
        "PLATFORM_SPARK_MASTER": "local[2]",
        "PLATFORM_STATE_PARTITIONS": "2",
        "PLATFORM_DRIVER_MEMORY": "1g",
        "PLATFORM_SPARK_UI_ENABLED": "false",
        "PLATFORM_SPARK_EXTRA_CONF": '{"spark.sql.streaming.pollingDelay": "10ms"}',
    }
    reference = Lakehouse(tmp_path / "local" / "lakehouse")

    produce(kafka_broker, topic, generate_clickstream(FIRST))
    (tmp_path / "runs").mkdir()
    first = on_s3(env, kafka_broker, topic, tmp_path / "runs" / "first.json")
    run_catch_up(spark, reference, kafka_broker, topic, STREAMS)
    produce(kafka_broker, topic, generate_clickstream(SECOND))
    second = on_s3(env, kafka_broker, topic, tmp_path / "runs" / "second.json")
    run_catch_up(spark, reference, kafka_broker, topic, STREAMS)

    for name in TABLES:
        assert comparable(second["tables"][name]) == local_rows(spark, reference, name), name
    counts = {name: len(rows) for name, rows in second["tables"].items()}
    assert counts["events"] > 600 and counts["user_sessions"] > 30, counts
    assert counts["quarantine"] > 0 and counts["stream_ledger"] > 0, counts
    # The restart went on from the checkpoints on S3, which the health layer reads there.
    sessions = (first["checkpoints"]["user_sessions"], second["checkpoints"]["user_sessions"])
    assert sessions[0]["path"] == f"s3a://{s3_bucket.bucket}/lakehouse/checkpoints/user_sessions"
    assert sessions[1]["commits"][: len(sessions[0]["commits"])] == sessions[0]["commits"]
    assert len(sessions[1]["commits"]) > len(sessions[0]["commits"])
    assert sessions[1]["state_bytes"] > 0 and sessions[1]["damaged"] == []
    # Everything is in the bucket; nothing of the lakehouse on the driver's disk.
    keys = s3_bucket.keys("lakehouse/")
    assert "lakehouse/tables/events/_delta_log/00000000000000000000.json" in keys
    assert any(k.startswith("lakehouse/checkpoints/user_sessions/state/") for k in keys)
    assert not (tmp_path / "driver" / "lakehouse").exists()
    assert [p for p in (tmp_path / "runs").rglob("*") if "s3a" in p.name] == []
