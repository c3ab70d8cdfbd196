"""`platform status`: one table of every stream, from progress records, checkpoints and the
broker only (no JVM)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time

from click.testing import CliRunner

from platform_pipelines.cli import main
from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.settings import REPO_ROOT

DATA = REPO_ROOT / "tests" / "unit" / "data"
SAMPLES = DATA / "progress" / "kafka_running_count.json"


def rows_of(output: str) -> dict[str, list[str]]:
    """The table's rows by stream: the cells of each line that starts with a stream name."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").split("│")[1:-1]]
        if cells and cells[0]:
            rows[cells[0]] = cells
    return rows


def test_status_prints_every_stream_with_its_run_lag_state_and_health(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATFORM_LOCAL_DIR", str(tmp_path))
    monkeypatch.setenv("PLATFORM_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")  # no broker there
    monkeypatch.setenv("COLUMNS", "200")
    store = ProgressStore(tmp_path / "progress")
    now = time.time()
    for i, progress in enumerate(json.loads(SAMPLES.read_text())):  # key_counts runs: this process
        store.append(
            ProgressRecord(
                now - 10 + i,
                "progress",
                "key_counts",
                "run12345abc",
                progress,
                1.0,
                pid=os.getpid(),
                host=os.uname().nodename,
            )
        )
    store.append(
        ProgressRecord(
            now - 600, "terminated", "events", "run99", error_class="BOOM", error="it broke"
        )
    )
    for name in ("service_status", "clickstream_raw"):
        shutil.copytree(DATA / "checkpoints" / name, tmp_path / "lakehouse" / "checkpoints" / name)

    result = CliRunner().invoke(main, ["status", "--strict"])

    rows = rows_of(result.output)
    header = ["stream", "run", "last batch", "rows/s", "lag", "state rows", "checkpoint", "health"]
    assert rows["stream"] == header
    key_counts = dict(zip(header, rows["key_counts"], strict=True))
    assert (key_counts["run"], key_counts["state rows"]) == ("running", "30")
    assert re.fullmatch(r"[67](\.\d)? s", key_counts["last batch"])  # 6 s ago, as people read it
    assert key_counts["health"] == "pass"
    assert rows["events"][1] == "failed" and rows["events"][-1] == "fail"
    assert rows["user_sessions"][1:5] == ["never run", "-", "-", "-"]
    assert rows["clickstream_raw"][4] == "unknown"  # the broker does not answer: not 0
    assert rows["service_status"][6].endswith("KiB")  # its checkpoint's size
    assert "events fail liveness: run failed: run run99 failed: BOOM" in result.output
    # A stream that does not run is not judged on its lag; the outage still shows.
    assert "clickstream_raw fail falling_behind" not in result.output
    assert (
        "clickstream_raw warn kafka_replication: replication of clickstream unknown: the Kafka "
        "broker at 127.0.0.1:1 does not answer (connection refused)"
    ) in result.output
    assert result.exit_code == 1  # --strict: a stream fails a check
