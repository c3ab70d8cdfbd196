"""The run state of a stream, from its run's status, its records and whether its process lives."""

from __future__ import annotations

import os
import socket

import pytest

from platform_pipelines.core.records import EventKind, ProgressRecord
from platform_pipelines.health.runs import (
    RunState,
    classify_run,
    pid_alive,
    process_gone,
    run_state_from_records,
)

RUN = "1a2b3c4d-5e6f-7a8b"  # shown by its first 8 characters
HERE = socket.gethostname()


def record(
    event: EventKind,
    ts: float = 1.0,
    *,
    pid: int = 4242,
    host: str = HERE,
    error_class: str | None = None,
) -> ProgressRecord:
    return ProgressRecord(ts, event, "events", RUN, pid=pid, host=host, error_class=error_class)


def alive(pid: int) -> bool:
    return True


def gone(pid: int) -> bool:
    return False


RUNNING = [record("started", 1.0), record("progress", 2.0)]
ENDED = [record("started", 1.0), record("progress", 2.0), record("terminated", 3.0)]
CRASHED = [record("started", 1.0), record("terminated", 3.0, error_class="STATE_STORE_CORRUPTED")]


@pytest.mark.parametrize("status", ["QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"])
def test_an_active_run_whose_process_lives_is_running(status: str):
    assert classify_run(status, RUNNING, alive=alive) == RunState(
        "running", f"run 1a2b3c4d is {status.lower()}", RUN
    )


def test_an_active_run_whose_process_is_gone_has_failed_and_says_so():
    assert classify_run("STARTED", RUNNING, alive=gone) == RunState(
        "failed", "run 1a2b3c4d: its process (pid 4242) is gone", RUN, process_gone=True
    )


def test_an_active_run_whose_query_ended_cleanly_is_finishing():
    assert classify_run("STARTED", ENDED, alive=alive) == RunState(
        "stopped", "run 1a2b3c4d is finishing", RUN
    )


def test_an_active_run_whose_query_died_still_runs_until_its_run_fails():
    assert classify_run("STARTED", CRASHED, alive=alive) == RunState(
        "running", "run 1a2b3c4d is started", RUN
    )


def test_a_failed_run_fails_with_its_failure():
    state = classify_run("FAILURE", ENDED, "Stream 'events' failed: boom", alive=alive)

    assert state == RunState("failed", "run 1a2b3c4d failed: Stream 'events' failed: boom", RUN)


def test_a_failed_run_without_a_failure_names_its_querys_error_class():
    assert classify_run("FAILURE", CRASHED, alive=gone) == RunState(
        "failed", "run 1a2b3c4d failed: STATE_STORE_CORRUPTED", RUN
    )


def test_a_failed_run_with_nothing_to_say_fails_plainly():
    assert classify_run("FAILURE", ENDED, alive=alive) == RunState(
        "failed", "run 1a2b3c4d failed", RUN
    )


def test_a_failed_run_killed_mid_batch_says_its_process_is_gone():
    state = classify_run("FAILURE", RUNNING, "marked failed", alive=gone)

    assert state == RunState("failed", "run 1a2b3c4d failed: its process (pid 4242) is gone", RUN)
    assert not state.process_gone  # it is already marked failed: nothing to mark


def test_a_cancelled_run_is_cancelled():
    assert classify_run("CANCELED", ENDED, alive=alive) == RunState(
        "cancelled", "run 1a2b3c4d was cancelled", RUN
    )


def test_a_successful_run_stopped():
    assert classify_run("SUCCESS", ENDED, alive=alive) == RunState(
        "stopped", "run 1a2b3c4d finished (success)", RUN
    )


def test_a_stream_without_records_never_ran():
    assert classify_run("STARTED", []) == RunState("never_run", "no run has started it yet")


def test_an_unknown_run_is_read_from_the_records_alone():
    assert classify_run(None, RUNNING, alive=alive) == RunState("running", "run 1a2b3c4d", RUN)
    assert classify_run(None, CRASHED, alive=alive) == RunState(
        "failed", "run 1a2b3c4d failed: STATE_STORE_CORRUPTED", RUN
    )


def test_a_process_on_another_host_is_not_judged_gone():
    elsewhere = [record("started", host="worker-7")]

    assert classify_run("STARTED", elsewhere, alive=gone).status == "running"


def test_the_records_alone_tell_running_stopped_and_failed():
    assert run_state_from_records(RUNNING, alive) == RunState("running", "run 1a2b3c4d", RUN)
    assert run_state_from_records(ENDED, alive) == RunState("stopped", "run 1a2b3c4d stopped", RUN)
    assert run_state_from_records(CRASHED, alive) == RunState(
        "failed", "run 1a2b3c4d failed: STATE_STORE_CORRUPTED", RUN
    )
    assert run_state_from_records([], alive) == RunState("never_run", "no progress recorded")


def test_from_the_records_a_running_query_whose_process_is_gone_failed():
    assert run_state_from_records(RUNNING, gone) == RunState(
        "failed", "the process of run 1a2b3c4d (pid 4242) is gone", RUN
    )


def test_from_the_records_a_last_batch_recorded_after_the_end_does_not_revive_the_query():
    # The listener is asynchronous: the last batch's progress may land after the query's end.
    records = [*ENDED, record("progress", 4.0)]

    assert run_state_from_records(records, gone) == RunState("stopped", "run 1a2b3c4d stopped", RUN)


def test_from_the_records_a_restarted_query_runs_again():
    records = [*CRASHED, record("started", 5.0), record("progress", 6.0)]

    assert run_state_from_records(records, alive) == RunState("running", "run 1a2b3c4d", RUN)


def test_a_process_is_gone_only_when_it_ran_here_and_no_longer_exists():
    assert process_gone(record("progress"), gone)
    assert not process_gone(record("progress"), alive)
    assert not process_gone(record("progress", host="worker-7"), gone)
    assert not process_gone(record("progress", pid=0), gone)  # an unknown pid
    assert not process_gone(None, gone)


def test_this_process_is_alive():
    assert pid_alive(os.getpid())


def test_a_failed_run_whose_last_batch_was_recorded_after_its_error_fails_with_its_failure():
    records = [*CRASHED, record("progress", 4.0)]

    state = classify_run("FAILURE", records, "Stream 'events' failed: boom", alive=gone)

    assert state == RunState("failed", "run 1a2b3c4d failed: Stream 'events' failed: boom", RUN)


def waiting(ts: float = 1.0, topic: str = "service_heartbeats") -> ProgressRecord:
    return ProgressRecord(
        ts, "waiting", "service_status", RUN, pid=4242, host=HERE, waiting_for=topic
    )


def test_an_active_run_that_waits_for_the_topic_runs_and_says_what_it_waits_for():
    assert classify_run("STARTED", [waiting()], alive=alive) == RunState(
        "running",
        "run 1a2b3c4d is started, waiting for Kafka topic service_heartbeats",
        RUN,
        waiting_for="service_heartbeats",
    )
    assert run_state_from_records([waiting()], alive) == RunState(
        "running",
        "run 1a2b3c4d, waiting for Kafka topic service_heartbeats",
        RUN,
        waiting_for="service_heartbeats",
    )


def test_a_wait_in_a_new_run_is_newer_than_the_end_of_the_last_one():
    records = [*ENDED, waiting(4.0)]

    assert classify_run("STARTED", records, alive=alive).waiting_for == "service_heartbeats"


def test_once_the_topic_exists_the_started_query_ends_the_wait():
    records = [waiting(1.0), record("started", 2.0), record("progress", 3.0)]

    assert classify_run("STARTED", records, alive=alive) == RunState(
        "running", "run 1a2b3c4d is started", RUN
    )


def test_a_run_that_ended_while_waiting_is_stopped_or_gone_like_any_other():
    ended = [waiting(1.0), record("terminated", 2.0)]

    assert classify_run("SUCCESS", ended, alive=alive).status == "stopped"
    assert run_state_from_records(ended, alive).status == "stopped"
    assert run_state_from_records([waiting()], gone).status == "failed"  # its process died
