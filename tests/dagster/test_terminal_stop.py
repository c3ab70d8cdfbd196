"""`platform run all_streams` in a terminal: Ctrl-C lets the running batches commit, then the run
ends CANCELED with one line, nothing on stderr and exit code 130; a second Ctrl-C stops at once,
without waiting for the running batch (which runs again on the next start).

The command runs in a pseudo-terminal and Ctrl-C is typed, as a person does it."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
import yaml

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.checkpoints import batch_ids
from platform_pipelines.settings import REPO_ROOT, get_settings
from tests.integration.events import U1_SHOPPING, ev
from tests.terminal import Terminal
from tests.waiting import wait_for

pytestmark = [pytest.mark.dagster, pytest.mark.spark, pytest.mark.kafka]
STREAMS = ("clickstream_raw", "events")
OTHERS = (
    "user_sessions",
    "security_alerts",
    "service_heartbeats_raw",
    "service_status",
    "key_events_raw",
    "key_counts",
)
LINE = re.compile(r"^(\w+): batch(?:es)? (\d+)(?:-(\d+))? read ([\d,]+) rows ")


def test_ctrl_c_lets_the_running_batches_commit_and_ends_with_one_line(
    kafka_broker: str, tmp_path: Path
) -> None:
    local, terminal = _start_run(kafka_broker, tmp_path, "once")
    terminal.type("\x03")
    code = terminal.wait(240)

    lines = _lines(terminal)
    assert (code, terminal.stderr) == (130, ""), terminal.stdout
    assert lines[0] == f"Dagster's own output goes to {local / 'logs' / 'platform.log'}"
    assert lines[1] == f"Spark's own output goes to {local / 'logs' / 'platform.log'}"
    (stop,) = [line for line in lines if line.startswith("Stopped")]
    assert stop == lines[-1]
    assert re.fullmatch(
        r"Stopped gracefully on SIGINT: clickstream_raw after batch \d+, events after batch \d+\. "
        r"The checkpoints are consistent; the next run resumes where these stopped\."
        # when the stop came right after events' batch of the later event
        r"( events stopped before the batch that moves its watermark to [\d\-T:.]+Z: .+\.)?",
        stop,
    )
    # every batch's rows are in the progress lines: the 6 events of the backlog and the later one
    assert _rows_read(lines) == {"clickstream_raw": 7, "events": 7}, terminal.stdout
    _assert_canceled_at_batch_boundaries(tmp_path / "home", local)


def test_a_second_ctrl_c_stops_the_queries_at_once(kafka_broker: str, tmp_path: Path) -> None:
    local, terminal = _start_run(kafka_broker, tmp_path, "twice", continuous=False)
    terminal.type("\x03")  # during the first batches (seconds each: their first plans)
    time.sleep(1.5)  # a second request, not the first one forwarded by Dagster
    terminal.type("\x03")
    code = terminal.wait(120)

    lines = _lines(terminal)
    assert (code, terminal.stderr) == (130, ""), terminal.stdout
    cut = re.fullmatch(
        r"Stopped on SIGINT without waiting for the running batch of ([\w, ]+) \(it runs again "
        r"on the next start\): .+\. The checkpoints are consistent; the next run resumes where "
        r"these stopped\.",
        lines[-1],
    )
    assert cut, terminal.stdout
    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    assert [run.status for run in instance.get_runs()] == [dg.DagsterRunStatus.CANCELED]
    for stream in cut.group(1).split(", "):  # planned and cut: it reruns on the next start
        offsets, commits = _batches(local, stream)
        assert offsets == [*commits, len(commits)], (stream, offsets, commits)


def _start_run(
    kafka_broker: str, tmp_path: Path, name: str, continuous: bool = True
) -> tuple[Path, Terminal]:
    """`platform run all_streams` (bronze and events, continuous, 1 s triggers) in a terminal,
    once its events stream read a batch in its continuous phase (else: once it started)."""
    topic = f"terminal-stop-{name}"
    create_topics(kafka_broker, {topic: 2})
    produce_events(kafka_broker, topic, U1_SHOPPING)
    home, local = tmp_path / "home", tmp_path / "local"
    home.mkdir()
    shutil.copy(REPO_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    config = tmp_path / "run.yaml"
    op_config = {
        "mode": "continuous",
        "trigger_interval_seconds": 1,
        "progress_log_interval_seconds": 5,
        "streams": {name: {"enabled": False} for name in OTHERS},
    }
    config.write_text(yaml.safe_dump({"ops": {"run_all_streams": {"config": op_config}}}))
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
    platform = str(Path(sys.executable).parent / "platform")
    terminal = Terminal([platform, "run", "all_streams", "-c", str(config)], env, REPO_ROOT)
    store = ProgressStore(local / "progress")

    def starts() -> list:
        assert terminal.process.poll() is None, terminal.stdout + terminal.stderr
        return [r for r in store.recent("events", 50) if r.event == "started"]

    def continuous_batch() -> bool:
        return any(
            r.event == "progress" and r.ts > starts()[-1].ts and r.progress["numInputRows"]
            for r in store.recent("events", 50)
            if r.progress
        )

    try:
        if not continuous:
            wait_for(lambda: len(starts()) >= 1, 300, "the events stream's start")
            return local, terminal
        wait_for(lambda: len(starts()) >= 2, 300, "the events stream's continuous phase")
        produce_events(kafka_broker, topic, [ev("later", "u7", "page_view", 30)])
        wait_for(continuous_batch, 120, "a continuous batch of the events stream")
    except BaseException:
        terminal.kill()
        raise
    return local, terminal


def _lines(terminal: Terminal) -> list[str]:
    """What the command printed, without the terminal's echo of each Ctrl-C (``^C``)."""
    return [line for line in terminal.stdout.replace("^C", "").splitlines() if line.strip()]


def _rows_read(lines: list[str]) -> dict[str, int]:
    """The rows each stream's progress lines say its batches read, and no batch twice."""
    rows: dict[str, int] = {}
    seen: dict[str, list[int]] = {}
    for line in lines:
        if match := LINE.match(line):
            name, first, last, read = match.groups()
            seen.setdefault(name, []).extend(range(int(first), int(last or first) + 1))
            rows[name] = rows.get(name, 0) + int(read.replace(",", ""))
    assert all(len(ids) == len(set(ids)) for ids in seen.values()), seen
    return rows


def _assert_canceled_at_batch_boundaries(home: Path, local: Path) -> None:
    """The run ended CANCELED without a failed step; every batch planned was committed, and no
    Spark task was killed (Spark logs a killed or aborted write at WARN or ERROR)."""
    instance = dg.DagsterInstance.from_config(str(home))
    (run,) = instance.get_runs()
    assert run.status is dg.DagsterRunStatus.CANCELED
    kinds = {e.dagster_event.event_type for e in instance.all_logs(run.run_id) if e.dagster_event}
    assert dg.DagsterEventType.STEP_FAILURE not in kinds
    for stream in STREAMS:
        offsets, commits = _batches(local, stream)
        assert offsets == commits, (stream, offsets, commits)
    spark_output = (local / "logs" / "platform.log").read_text(errors="replace")
    assert "Using incubator modules" in spark_output  # the JVM's output is there...
    for killed in ("TaskKilled", "Aborting job", "Lost task"):  # ...and no task was cut short
        assert killed not in spark_output, killed


def _batches(local: Path, stream: str) -> tuple[list[int], list[int]]:
    checkpoint = local / "lakehouse" / "checkpoints" / stream
    return batch_ids(checkpoint), batch_ids(checkpoint, "commits")
