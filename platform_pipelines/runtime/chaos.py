"""Fault injection: kill the running pipeline at random moments and prove nothing was lost.

Each trial produces a synthetic clickstream into a fresh topic while the pipeline runs in its own
process (``chaos_worker``), SIGKILLs that process and its JVM at random moments (the first kill
often during the first start: JVM, table creation, first batches), relaunches it, lets the last
launch catch up and stop gracefully, and compares every table with a clean catch-up run over the
same input: rows missing from the trial are lost, rows it holds too often are duplicated.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.health.checkpoint import inspect_checkpoint, kafka_committed_offsets
from platform_pipelines.kafka.admin import create_topics, end_offsets
from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream, produce
from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.lakehouse.delta_log import committed_version, latest_version
from platform_pipelines.runtime.chaos_worker import STREAMS
from platform_pipelines.runtime.crash_points import CrashPoints, pauses
from platform_pipelines.runtime.runner import RunOptions, run_streams
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext

TABLES = (
    "clickstream_raw",
    "quarantine",
    "events",
    "user_sessions",
    "security_alerts",
    "late_events",
)
# Columns that say when or by which attempt a row was written, not what it is.
VOLATILE = {
    "quarantined_at",
    "detected_at",
    "query_id",
    "batch_id",
    "watermark",
    "reason",
    "late_by_seconds",
}
# A relaunch starts a JVM and catches up before its first batch is recorded: seconds when the
# machine is free, minutes when other JVMs compete for its cores.
FIRST_BATCH_TIMEOUT_S = 600
UPSTREAM = {"events": "clickstream_raw", "user_sessions": "events", "security_alerts": "events"}
# Writes of a first start to crash at (``runtime.crash_points``): a checkpoint's first offsets and
# commit as temporary files and renamed, and a stateful stream's first state files.
FIRST_START_POINTS = [
    *(
        f"{phase}:/{s}/{log}/0$"
        for s in STREAMS
        for phase in ("temp", "done")
        for log in ("offsets", "commits")
    ),
    *(f"done:/{s}/state/0/_metadata/metadata$" for s in STREAMS[1:]),
    *(f"done:/{s}/state/0/0/1.changelog$" for s in STREAMS[1:]),
]


@dataclass(frozen=True)
class ChaosConfig:
    """A chaos run.

    Attributes:
        trials: independent trials, each on its own topic and lakehouse.
        events: records produced per trial (malformed, late and duplicate ones included).
        rate_per_sec: how fast they are produced, while the pipeline runs.
        kills: the fewest and most SIGKILLs per trial.
        kill_window: a kill comes this many seconds (uniformly drawn) after a launch.
        first_start: the first kill of a trial lands at a checkpoint write of the first start,
            drawn from ``FIRST_START_POINTS`` (the pipeline pauses there, then is killed).
        seed: seeds the kill moments and the input.
        parallel: trials whose pipelines run at once (each its own process, JVM and topic); the
            comparisons with clean runs follow one by one.
    """

    trials: int = 3
    events: int = 1500
    rate_per_sec: float = 150.0
    kills: tuple[int, int] = (1, 3)
    kill_window: tuple[float, float] = (0.5, 25.0)
    first_start: bool = True
    seed: int = 1
    parallel: int = 1


@dataclass
class TrialResult:
    """What one trial saw."""

    trial: int
    kill_after_seconds: list[float] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    restart_seconds: list[float] = field(default_factory=list)
    lost: dict[str, int] = field(default_factory=dict)
    duplicated: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(self.lost.values()) and not any(self.duplicated.values())


def input_config(trial: int, cfg: ChaosConfig) -> ClickstreamConfig:
    """The trial's input: many users (so event time advances slowly per record), duplicates
    re-sent within a few records, late records within the watermark, no stale ones."""
    return ClickstreamConfig(
        events=cfg.events,
        users=300,
        duplicate_rate=0.02,
        duplicate_window=20,
        late_rate=0.05,
        malformed_rate=0.01,
        stale_share=0.0,
        seed=cfg.seed * 1000 + trial,
        start_time=datetime(2026, 11, 1, 8, 0, tzinfo=UTC),
    )


def run_trials(
    cfg: ChaosConfig,
    spark: SparkSession,
    bootstrap: str,
    workdir: Path,
    say: Callable[[str], None] = lambda line: None,
) -> list[TrialResult]:
    """Every trial of ``cfg``: the pipelines of ``cfg.parallel`` trials are killed and relaunched
    at once, then each trial is compared with its clean catch-up run (in ``spark``)."""
    trials = range(1, cfg.trials + 1)
    with ThreadPoolExecutor(max_workers=max(cfg.parallel, 1)) as pool:
        tortured = list(pool.map(lambda t: _torture(t, cfg, bootstrap, workdir, say), trials))
    results = []
    for result, topic, began in tortured:
        say(f"trial {result.trial}: comparing with a clean catch-up run")
        lake_dir = workdir / f"trial-{result.trial}"
        _compare(result, spark, bootstrap, topic, lake_dir, workdir / f"reference-{result.trial}")
        result.seconds = round(time.monotonic() - began, 1)
        results.append(result)
    return results


def _torture(
    trial: int, cfg: ChaosConfig, bootstrap: str, workdir: Path, say: Callable[[str], None]
) -> tuple[TrialResult, str, float]:
    """Produce, kill and relaunch the pipeline, then let its last launch catch up and stop."""
    began, rng = time.monotonic(), random.Random(cfg.seed * 7919 + trial)
    result = TrialResult(trial)
    topic = f"chaos-{trial}-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, {topic: 3})
    lake_dir = workdir / f"trial-{trial}"
    producer = threading.Thread(
        target=produce,
        args=(bootstrap, topic, generate_clickstream(input_config(trial, cfg))),
        kwargs={"rate_per_sec": cfg.rate_per_sec},
        daemon=True,
    )
    producer.start()
    for kill in range(rng.randint(*cfg.kills)):
        point = rng.choice(FIRST_START_POINTS) if kill == 0 and cfg.first_start else None
        crash = CrashPoints(lake_dir / f"crash-{kill}", (point,)) if point else None
        worker, launched = launch_worker(lake_dir, bootstrap, topic, crash), time.monotonic()
        if kill:
            result.restart_seconds.append(first_batch_after(lake_dir, launched, worker))
        if crash is not None:
            wait = _until_paused(crash, worker, lake_dir)
            result.faults.append(f"SIGKILL at the first start's {point}")
        else:
            wait = rng.uniform(*cfg.kill_window)
            time.sleep(wait)  # a random moment, by design
            result.faults.append(f"SIGKILL {wait:.1f} s after a launch")
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        result.kill_after_seconds.append(round(wait, 1))
        say(
            f"trial {trial}: killed the pipeline {wait:.1f} s after its launch ({result.faults[-1]})"
        )
    producer.join()
    worker, launched = launch_worker(lake_dir, bootstrap, topic), time.monotonic()
    result.restart_seconds.append(first_batch_after(lake_dir, launched, worker))
    _wait_caught_up(Lakehouse(lake_dir / "lakehouse"), bootstrap, topic, worker)
    os.kill(worker.pid, signal.SIGTERM)  # the Python driver only: it stops its JVM's queries
    if worker.wait(120) != 0:
        raise RuntimeError(
            f"trial {trial}: the last launch did not stop cleanly; see {lake_dir}/worker.log"
        )
    say(f"trial {trial}: caught up")
    return result, topic, began


def launch_worker(
    lake_dir: Path, bootstrap: str, topic: str, crash: CrashPoints | None = None
) -> subprocess.Popen[bytes]:
    """The chaos worker on ``lake_dir``, in its own process group (driver and JVM), paused at
    ``crash``'s points when given."""
    lake_dir.mkdir(parents=True, exist_ok=True)
    log = (lake_dir / "worker.log").open("ab")
    command = [sys.executable, "-m", "platform_pipelines.runtime.chaos_worker"]
    command += ["--lake", str(lake_dir), "--bootstrap", bootstrap, "--topic", topic]
    command += ["--alerts-topic", f"{topic}-alerts"]
    if crash is not None:
        command += ["--crash-dir", str(crash.folder)]
        command += [arg for point in crash.pause_at for arg in ("--pause-at", point)]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _until_paused(crash: CrashPoints, worker: subprocess.Popen[bytes], lake_dir: Path) -> float:
    """Seconds until the worker paused at its crash point.

    Raises:
        RuntimeError: it exited first, or never got there (the log says why).
    """
    began = time.monotonic()
    while not pauses(crash.folder):
        if worker.poll() is not None or time.monotonic() - began > FIRST_BATCH_TIMEOUT_S:
            raise RuntimeError(
                f"the pipeline never reached its crash point {crash.pause_at[0]} "
                f"(exit code {worker.poll()}); see {lake_dir / 'worker.log'}"
            )
        time.sleep(0.02)
    return time.monotonic() - began


def first_batch_after(lake_dir: Path, since: float, worker: subprocess.Popen[bytes]) -> float:
    """Seconds from a launch to its first recorded batch (of any stream)."""
    store, wall = ProgressStore(lake_dir / "progress"), time.time() - (time.monotonic() - since)
    deadline = since + FIRST_BATCH_TIMEOUT_S
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise RuntimeError(
                f"the pipeline exited with {worker.returncode}; see {lake_dir}/worker.log"
            )
        newest = [r.ts for s in STREAMS for r in store.recent(s, 5) if r.event == "progress"]
        if any(ts > wall for ts in newest):
            return round(time.monotonic() - since, 1)
        time.sleep(0.2)
    raise RuntimeError(
        f"no batch within {FIRST_BATCH_TIMEOUT_S} s of a launch (a starved or hung "
        f"pipeline); see {lake_dir}/worker.log"
    )


def _caught_up(lake: Lakehouse, bootstrap: str, topic: str) -> bool:
    committed = kafka_committed_offsets(inspect_checkpoint(lake.checkpoint("clickstream_raw")))
    if committed.get(topic) != end_offsets(bootstrap, topic):
        return False
    return all(
        committed_version(lake.checkpoint(s)) == (latest_version(lake.table(t)) or 0) + 1
        for s, t in UPSTREAM.items()
    )


def _wait_caught_up(
    lake: Lakehouse, bootstrap: str, topic: str, worker: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + 600
    while not _caught_up(lake, bootstrap, topic):
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the last launch did not catch up (exit {worker.poll()})")
        time.sleep(1)


def _catch_up(spark: SparkSession, lake: Lakehouse, bootstrap: str, topic: str) -> None:
    settings = BuiltinSettings(clickstream_topic=topic, alerts_topic=f"{topic}-alerts")
    run_streams(
        StreamContext(spark, lake, bootstrap),
        [builtin_streams(settings).get(s) for s in STREAMS],
        RunOptions(mode="catch_up", max_offsets_per_trigger=50_000),
        lambda *_: None,
    )


def _compare(
    result: TrialResult,
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    lake_dir: Path,
    reference_dir: Path,
) -> None:
    trial, reference = Lakehouse(lake_dir / "lakehouse"), Lakehouse(reference_dir)
    _catch_up(spark, trial, bootstrap, topic)  # the last watermark-driven emissions settle
    _catch_up(spark, reference, bootstrap, topic)
    for table in TABLES:
        ours, theirs = _rows(spark, trial, table), _rows(spark, reference, table)
        result.lost[table] = sum((theirs - ours).values())
        result.duplicated[table] = sum((ours - theirs).values())
        result.rows[table] = sum(theirs.values())


def _rows(spark: SparkSession, lake: Lakehouse, table: str) -> Counter[tuple[tuple[str, str], ...]]:
    path = lake.table(table)
    if not has_commit(path):
        return Counter()
    df = spark.read.format("delta").load(str(path))
    kept = [c for c in df.columns if c not in VOLATILE]
    return Counter(
        tuple(sorted((k, str(v)) for k, v in r.asDict().items()))
        for r in df.select(*kept).collect()
    )
