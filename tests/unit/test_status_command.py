"""`platform status`: one table of every stream, from progress records and checkpoints only."""

from __future__ import annotations

import json
import os
import shutil
import time

from click.testing import CliRunner

from platform_pipelines.cli import main
from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.settings import REPO_ROOT

SAMPLES = REPO_ROOT / "tests" / "unit" / "data" / "progress" / "kafka_running_count.json"


def test_status_prints_every_stream_with_its_health(tmp_path, monkeypatch):
    monkeypatch.setenv("PLATFORM_LOCAL_DIR", str(tmp_path))
    monkeypatch.setenv("PLATFORM_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")  # no broker: lag unknown
    monkeypatch.setenv("COLUMNS", "200")
    store = ProgressStore(tmp_path / "progress")
    samples = json.loads(SAMPLES.read_text())
    now = time.time()
    for i, progress in enumerate(samples):  # key_counts ran; its process is this one
        store.append(ProgressRecord(now - 10 + i, "progress", "key_counts", "run12345abc",
                                    progress, 1.0, pid=os.getpid(), host=os.uname().nodename))  # fmt: skip
    store.append(ProgressRecord(now - 600, "terminated", "events", "run99", error_class="BOOM",
                                error="it broke"))  # fmt: skip
    shutil.copytree(REPO_ROOT / "tests/unit/data/checkpoints/service_status",
                    tmp_path / "lakehouse/checkpoints/service_status")  # fmt: skip

    result = CliRunner().invoke(main, ["status", "--strict"])

    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines()
             if line.startswith("│") and line.split("│")[1].strip()}  # fmt: skip
    assert "running" in lines["key_counts"] and "pass" in lines["key_counts"]
    assert "failed" in lines["events"] and "fail" in lines["events"]
    assert "never run" in lines["clickstream_raw"]
    assert "KiB" in lines["service_status"]  # its checkpoint's size
    assert "events fail liveness: run failed: run run99 failed: BOOM" in result.output
    assert result.exit_code == 1  # --strict: a stream fails a check
