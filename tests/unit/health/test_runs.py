"""The run state of a stream, from its run's status and its records."""

from __future__ import annotations

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.health.runs import classify_run, run_state_from_records


def record(event: str, pid: int = 4242, error_class: str | None = None) -> ProgressRecord:
    import socket

    return ProgressRecord(1.0, event, "events", "1a2b3c4d-run", pid=pid, host=socket.gethostname(),
                          error_class=error_class)  # fmt: skip


ALIVE = {"alive": lambda pid: True}
GONE = {"alive": lambda pid: False}


def test_an_active_run_is_running_or_failed_when_its_process_is_gone():
    records = [record("started"), record("progress")]
    assert classify_run("STARTED", records, **ALIVE).status == "running"
    gone = classify_run("STARTED", records, **GONE)
    assert (gone.status, gone.detail, gone.process_gone) == (
        "failed", "run 1a2b3c4d: its process (pid 4242) is gone", True,
    )  # fmt: skip


def test_finished_runs_read_as_what_they_are():
    records = [record("started"), record("terminated")]
    assert classify_run("CANCELED", records, **ALIVE).detail == "run 1a2b3c4d was cancelled"
    assert classify_run("CANCELED", records, **ALIVE).status == "cancelled"
    assert classify_run("SUCCESS", records, **ALIVE).status == "stopped"
    failed = classify_run("FAILURE", records, "Stream 'events' failed: boom", **ALIVE)
    assert (failed.status, failed.detail) == (
        "failed",
        "run 1a2b3c4d failed: Stream 'events' failed: boom",
    )


def test_a_failed_run_killed_mid_batch_says_its_process_is_gone():
    state = classify_run(
        "FAILURE", [record("started"), record("progress")], "marked failed", **GONE
    )
    assert state.detail == "run 1a2b3c4d failed: its process (pid 4242) is gone"


def test_a_stream_without_records_never_ran_and_an_unknown_run_is_read_from_records():
    assert classify_run("STARTED", []).status == "never_run"
    assert classify_run(None, [record("started")], **ALIVE).status == "running"


def test_the_records_alone_tell_running_stopped_and_failed():
    assert (
        run_state_from_records([record("started"), record("progress")], **ALIVE).status == "running"
    )
    assert (
        run_state_from_records([record("started"), record("terminated")], **ALIVE).status
        == "stopped"
    )
    crashed = run_state_from_records([record("terminated", error_class="BOOM")], **ALIVE)
    assert (crashed.status, crashed.detail) == ("failed", "run 1a2b3c4d failed: BOOM")
    assert run_state_from_records([record("started")], **GONE).status == "failed"
