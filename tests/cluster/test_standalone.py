"""The pipeline on a real Spark standalone cluster (a master and two workers started from the
pyspark installation) writes the same tables as a local[2] run of the same input, even with one
executor SIGKILLed in the middle of a batch.

The cluster run is a driver process of its own (``tests.cluster.driver``), pointed at the master
with ``PLATFORM_SPARK_MASTER``: jars, the Python executable and the platform's code reach the
executors the way a deployment's would, nothing installed by hand. It runs once for the module
(``cluster_run``); each test reads one side of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest

from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream, produce
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import REPO_ROOT, get_settings
from platform_pipelines.spark.cluster import ClusterError, LocalSparkCluster
from platform_pipelines.spark.cluster_config import ClusterSpec
from platform_pipelines.spark.cluster_state import find_running_cluster, master_state
from tests.cluster.executor_kill import (
    EXECUTOR_CLASS,
    SESSIONS_FIRST_COMMIT,
    ExecutorKiller,
    KilledExecutor,
    crash_point_conf,
)
from tests.integration.helpers import run_catch_up, table
from tests.sockets import beyond_loopback, listening

STREAMS = ["clickstream_raw", "events", "user_sessions", "security_alerts"]
INPUT = ClickstreamConfig(
    events=500,
    users=20,
    duplicate_rate=0.03,
    late_rate=0.06,
    malformed_rate=0.02,
    stale_share=0.2,
    seed=12,
    start_time=datetime(2026, 11, 1, 8, 0, tzinfo=UTC),
)
# Columns that legitimately differ between two runs: when a row was judged or written (the
# processing clock), and the checkpoint's query id (each run has its own checkpoints).
RUN_COLUMNS = {"quarantined_at", "detected_at", "written_at", "query_id"}
DRIVER_TIMEOUT_S = 600
# The run's driver and executors live for a minute over a few hundred records: C2's compiles cost
# them more CPU than they return (the cluster run: 103 s with them, 54-73 s with C1 only, 2 cores).
SHORT_LIVED_JVMS = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -Xss4m",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -Xss4m",
}
TABLES = [
    "clickstream_raw",
    "quarantine",
    "events",
    "late_events",
    "user_sessions",
    "security_alerts",
    "stream_ledger",
]


class ClusterDriver:
    """The pipeline's driver process on the cluster (``tests.cluster.driver``), started now, with
    ``extra_conf`` for its application; meanwhile a thread notes every socket the driver, the
    daemons and their executors listen on (the executors live only as long as the application)."""

    def __init__(
        self,
        cluster: LocalSparkCluster,
        local_dir: Path,
        bootstrap: str,
        topic: str,
        extra_conf: dict[str, str],
    ):
        self.local_dir, self.report = local_dir, local_dir / "report.json"
        conf = {"spark.sql.streaming.pollingDelay": "10ms", **SHORT_LIVED_JVMS, **extra_conf}
        env = {
            **os.environ,
            "PLATFORM_SPARK_MASTER": str(cluster.master_url),
            "PLATFORM_LOCAL_DIR": str(local_dir),
            "PLATFORM_JARS_DIR": str(get_settings().jars_dir),
            "PLATFORM_STATE_PARTITIONS": "2",
            "PLATFORM_DRIVER_MEMORY": "1g",
            "PLATFORM_SPARK_UI_ENABLED": "false",
            "PLATFORM_SPARK_EXTRA_CONF": json.dumps(conf),
        }
        command = [
            sys.executable,
            "-m",
            "tests.cluster.driver",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--report",
            str(self.report),
        ]
        local_dir.mkdir(parents=True)
        with (local_dir / "driver.log").open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        self.seen: set[tuple[str, int, str]] = set()
        self.off_loopback: set[tuple[str, int, str]] = set()
        roots = [self.process.pid, *cluster.pids.values()]
        self._watcher = threading.Thread(target=self._watch, args=(roots,), daemon=True)
        self._watcher.start()

    def _watch(self, roots: list[int]) -> None:
        while self.process.poll() is None:
            for pid in roots:
                with contextlib.suppress(psutil.Error):
                    self.seen.update(listening(pid))
                    self.off_loopback.update(beyond_loopback(pid))
            time.sleep(1)

    def finish(self) -> tuple[dict, str]:
        """Wait for the driver to end; its report (application id, master, where the executors
        imported the platform from, timings) and its log."""
        try:
            self.process.wait(DRIVER_TIMEOUT_S)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        self._watcher.join(30)
        # Its Spark output goes to the platform's log file when the platform writes one.
        logs = [self.local_dir / "driver.log", *sorted(self.local_dir.glob("logs/*.log"))]
        output = "".join(log.read_text(errors="replace") for log in logs)
        assert self.process.returncode == 0, f"the cluster driver failed:\n{output[-5000:]}"
        return json.loads(self.report.read_text()), output


@dataclass(frozen=True)
class ClusterRun:
    """The pipeline's run on the cluster, with one executor killed mid-batch, and the local[2]
    run of the same input."""

    report: dict
    driver_log: str
    on_cluster: Lakehouse
    reference: Lakehouse
    killed: KilledExecutor | None
    resumed: list[Path]
    seen: set[tuple[str, int, str]]
    off_loopback: set[tuple[str, int, str]]


@pytest.fixture(scope="module")
def cluster_run(
    spark, spark_cluster_daemons, kafka_broker, tmp_path_factory: pytest.TempPathFactory
) -> ClusterRun:
    """Run the four clickstream streams on the cluster while the executor that holds the first
    commit of ``user_sessions``' state partition 1 is killed; then the same input on local[2]."""
    topic = f"cluster-{uuid.uuid4().hex[:10]}"
    create_topics(kafka_broker, {topic: 3})
    produce(kafka_broker, topic, generate_clickstream(INPUT))
    folder = tmp_path_factory.mktemp("cluster-run")
    cluster = spark_cluster_daemons
    work_dirs = {n: cluster.work_dir(n) for n in range(1, cluster.spec.workers + 1)}
    killer = ExecutorKiller(work_dirs)
    try:
        conf = crash_point_conf(SESSIONS_FIRST_COMMIT)
        driver = ClusterDriver(cluster, folder / "cluster", kafka_broker, topic, conf)
        report, driver_log = driver.finish()
    finally:
        killer.stop()
    # One after the other: at once, the two runs' Python workers starve each other on 2 cores
    # (Spark gives a starting Python worker 10 s to connect back).
    reference = Lakehouse(folder / "local" / "lakehouse")
    run_catch_up(spark, reference, kafka_broker, topic, STREAMS)
    return ClusterRun(
        report=report,
        driver_log=driver_log,
        on_cluster=Lakehouse(folder / "cluster" / "lakehouse"),
        reference=reference,
        killed=killer.killed,
        resumed=killer.resumed,
        seen=driver.seen,
        off_loopback=driver.off_loopback,
    )


def rows(spark, lake: Lakehouse, name: str) -> list[tuple]:
    """The table's rows without the run's own columns, sorted: equal lists are equal tables."""
    kept = [
        {k: v for k, v in row.items() if k not in RUN_COLUMNS} for row in table(spark, lake, name)
    ]
    return sorted(tuple(sorted((k, repr(v)) for k, v in row.items())) for row in kept)


def tasks_per_worker(cluster: LocalSparkCluster, app_id: str) -> dict[int, int]:
    """Tasks each worker's executors finished for ``app_id``, from the executors' own logs."""
    found = {}
    for n in range(1, cluster.spec.workers + 1):
        logs = (cluster.work_dir(n) / app_id).glob("*/stderr")
        found[n] = sum(log.read_text(errors="replace").count("Finished task") for log in logs)
    return found


@pytest.mark.cluster
@pytest.mark.spark
@pytest.mark.kafka
def test_the_pipeline_on_a_standalone_cluster_writes_the_tables_of_a_local_run(
    spark, cluster_run: ClusterRun
):
    reference = {name: rows(spark, cluster_run.reference, name) for name in TABLES}
    for name in TABLES:
        assert rows(spark, cluster_run.on_cluster, name) == reference[name], name
    # Not empty tables compared: every kind of row is there (late_events stays empty: one
    # catch-up batch per stream leaves no row behind a previous watermark).
    counts = {name: len(reference[name]) for name in TABLES}
    assert counts["events"] > 300 and counts["user_sessions"] > 30, counts
    assert counts["quarantine"] > 0 and counts["security_alerts"] > 0, counts


@pytest.mark.cluster
@pytest.mark.spark
@pytest.mark.kafka
def test_an_executor_killed_mid_batch_is_replaced_and_its_task_retried(
    spark_cluster_daemons, cluster_run: ClusterRun
):
    killed = cluster_run.killed
    assert killed is not None, "no executor's task reached the crash point"
    assert killed.app_id == cluster_run.report["application_id"]
    assert killed.held_write.endswith("/checkpoints/user_sessions/state/0/1/1.changelog")
    assert not psutil.pid_exists(killed.pid)
    # The driver saw its running task fail with the executor (SIGKILL: exit code 137) ...
    lost = f"ExecutorLostFailure (executor {killed.executor_id} exited caused by one of the running tasks)"
    assert lost in cluster_run.driver_log, cluster_run.driver_log[-5000:]
    # ... the task's retry ran in another executor (it paused at the same point, was let go) ...
    assert cluster_run.resumed, "the killed task was not retried"
    assert all(d.name != killed.executor_id for d in cluster_run.resumed)
    # ... and the worker started a new executor for the application in place of the dead one.
    app_dir = spark_cluster_daemons.work_dir(killed.worker) / killed.app_id
    assert len([d for d in app_dir.iterdir() if d.is_dir()]) == 2, sorted(app_dir.iterdir())


@pytest.mark.cluster
@pytest.mark.spark
@pytest.mark.kafka
def test_the_cluster_ran_the_work_on_every_worker_with_the_shipped_code_on_loopback_only(
    spark_cluster, spark_cluster_daemons, cluster_run: ClusterRun
):
    report = cluster_run.report
    # The master lists the finished application, and the executors of both workers finished
    # tasks for it.
    app_id = report["application_id"]
    assert report["master"] == spark_cluster
    state = master_state(spark_cluster_daemons.webui_url)
    assert [(a["id"], a["state"]) for a in state["completedapps"] if a["id"] == app_id] == [
        (app_id, "FINISHED")
    ]
    per_worker = tasks_per_worker(spark_cluster_daemons, app_id)
    assert all(n > 0 for n in per_worker.values()), per_worker
    # Everything the run started listened on loopback only, the executors included.
    assert any(EXECUTOR_CLASS in s[2] for s in cluster_run.seen), cluster_run.seen
    assert cluster_run.off_loopback == set()
    # The executors imported the platform from the zip the driver shipped, not from .venv.
    assert all(
        ".zip" in origin and "/code-" in origin for origin in report["platform_imported_from"]
    ), report


@pytest.mark.cluster
def test_a_daemon_that_dies_on_start_is_named_with_its_log_and_nothing_is_left_running(tmp_path):
    cluster = LocalSparkCluster(tmp_path / "bad", ClusterSpec(workers=1, memory="plenty"))

    with pytest.raises(ClusterError) as failure:
        cluster.start()

    message = str(failure.value)
    assert "The Spark worker-1 of the local cluster in" in message
    assert "exited with code 1" in message
    assert f"Last lines of {tmp_path / 'bad' / 'worker-1' / 'worker.log'}" in message
    assert "Usage: Worker [options] <master>" in message  # what the worker said before dying
    assert find_running_cluster(tmp_path / "bad") is None
    assert [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if str(tmp_path / "bad") in " ".join(p.info["cmdline"] or [])
    ] == []
