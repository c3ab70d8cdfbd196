"""When a chaos trial's last launch may be stopped: not while a stream will still run the batch
that applies the watermark its rows imply (stopped before it, its sessions would wait for input
that never comes), and not while its progress is behind its checkpoint; but a launch that has
run no batch owes nothing it would pay."""

from __future__ import annotations

from pathlib import Path

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.chaos_launch import watermarks_owed


def _batch(n: int, watermark: str, newest: str | None, run: str = "run-1") -> dict:
    times = {"watermark": watermark, **({"max": newest} if newest else {})}
    return {"batchId": n, "runId": run, "eventTime": times, "stateOperators": [{}]}


def _trial(tmp_path: Path, records: list[ProgressRecord], committed: int) -> Path:
    """A trial folder: ``user_sessions``' progress records and its checkpoint's commits."""
    store = ProgressStore(tmp_path / "progress")
    for record in records:
        store.append(record)
    commits = Lakehouse(tmp_path / "lakehouse").checkpoint("user_sessions") / "commits"
    commits.mkdir(parents=True)
    for n in range(committed + 1):
        (commits / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return tmp_path


def _progress(n: int, watermark: str, newest: str | None, run: str = "run-1") -> ProgressRecord:
    return ProgressRecord(
        ts=1.0 + n,
        event="progress",
        stream="user_sessions",
        progress=_batch(n, watermark, newest, run),
    )


STARTED = ProgressRecord(ts=0.5, event="started", stream="user_sessions")
DATA = _progress(1, "2026-11-06T09:30:00.000Z", "2026-11-06T10:00:00.000Z")


def test_a_data_batch_owes_its_watermark_until_the_no_data_batch_after_it_runs(tmp_path):
    trial = _trial(tmp_path, [STARTED, DATA], committed=1)
    assert watermarks_owed(trial) == {
        "user_sessions": "its batches ran to the watermark 2026-11-06T09:30:00.000Z, "
        "2026-11-06T09:50:00.000Z is owed"
    }

    paid = _progress(2, "2026-11-06T09:50:00.000Z", None)
    assert watermarks_owed(_trial(tmp_path / "paid", [STARTED, DATA, paid], committed=2)) == {}


def test_a_committed_batch_whose_progress_is_not_recorded_yet_is_waited_for(tmp_path):
    paid = _progress(2, "2026-11-06T09:50:00.000Z", None)
    trial = _trial(tmp_path, [STARTED, DATA, paid], committed=3)
    assert watermarks_owed(trial) == {
        "user_sessions": "batch 3 committed, its progress not recorded yet"
    }


def test_a_relaunch_that_ran_no_batch_owes_nothing_an_earlier_launch_left(tmp_path):
    relaunched = ProgressRecord(ts=9.0, event="started", stream="user_sessions")
    assert watermarks_owed(_trial(tmp_path, [STARTED, DATA, relaunched], committed=1)) == {}
