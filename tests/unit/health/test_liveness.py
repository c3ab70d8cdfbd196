"""liveness: is the query alive while its owner says it should be, and if not, why?"""

from __future__ import annotations

import pytest

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.liveness import judge_liveness, stale_after_seconds
from platform_pipelines.health.policy import HealthPolicy
from platform_pipelines.health.runs import RunState
from tests.unit.health.factories import (
    RUNNING,
    T0,
    batch,
    batches,
    idle,
    real_records,
    started,
    terminated,
)

BROKER_DOWN = "the Kafka broker at 127.0.0.1:9092 does not answer (connection refused)"
HUNG = (
    "The query is hung, starved of cores, or its driver is gone: in the run's Spark UI "
    "(port 4040 or the next free one), a job of this stream that still completes tasks "
    "is slow or starved (give the run more cores or run fewer streams beside it: a "
    "restart throws its work away); otherwise check the run's logs, then restart the run."
)


def test_a_healthy_stream_passes_with_the_age_of_its_last_batch():
    records = [started(), *batches(10)]

    live = judge_liveness(records, RUNNING, records[-1].ts + 4)

    assert (live.status, live.summary, live.remedy) == (Status.PASS, "last batch 4 s ago", "")
    assert live.evidence == {
        "age_seconds": 4.0,
        "stale_after_seconds": 60.0,
        "trigger_seconds": 10.0,
        "last_batch_age_seconds": 4.0,
        "last_batch_id": 9,
    }


def test_a_batch_recorded_after_now_was_taken_is_zero_seconds_old_not_negative():
    records = [started(), *batches(10)]

    live = judge_liveness(records, RUNNING, records[-1].ts - 1.6)

    assert (live.status, live.summary) == (Status.PASS, "last batch 0 s ago")
    assert (live.evidence["age_seconds"], live.evidence["last_batch_age_seconds"]) == (0.0, 0.0)


def test_a_running_run_is_alive_up_to_the_stale_limit_and_stalled_past_it():
    records = [started(), *batches(5)]
    last = records[-1].ts

    at_limit = judge_liveness(records, RUNNING, last + 60)  # limit max(3 * 10 s, 60 s)
    stalled = judge_liveness(records, RUNNING, last + 61)

    assert (at_limit.status, at_limit.summary) == (Status.PASS, "last batch 1 min ago")
    assert (stalled.status, stalled.summary, stalled.remedy) == (
        Status.FAIL,
        "no progress for 1 min 1 s (trigger every 10 s)",
        HUNG,
    )
    assert stalled.evidence == {
        "age_seconds": 61.0,
        "stale_after_seconds": 60.0,
        "trigger_seconds": 10.0,
        "last_batch_age_seconds": 61.0,
        "last_batch_id": 4,
    }


def test_a_lower_minimum_leaves_three_triggers_as_the_stale_limit():
    records = [started(), *batches(5)]
    slow = HealthPolicy(min_stale_seconds=10)

    verdict = judge_liveness(records, RUNNING, records[-1].ts + 31, slow)

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "no progress for 31 s (trigger every 10 s)",
    )
    assert verdict.evidence["stale_after_seconds"] == 30.0


def test_a_stalled_stream_names_the_known_cause_instead_of_calling_it_hung():
    records = [started(), *batches(5)]

    verdict = judge_liveness(records, RUNNING, records[-1].ts + 90, cause=BROKER_DOWN)

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        f"no progress for 1 min 30 s: {BROKER_DOWN}",
        "Bring the broker back (or point the stream at one that runs); the query resumes from its "
        "checkpoint.",
    )
    assert verdict.evidence["age_seconds"] == 90.0


def test_a_known_cause_does_not_fail_a_stream_that_still_makes_progress():
    records = [started(), *batches(5)]

    verdict = judge_liveness(records, RUNNING, records[-1].ts + 4, cause=BROKER_DOWN)

    assert (verdict.status, verdict.summary) == (Status.PASS, "last batch 4 s ago")


def test_long_batches_stretch_the_stale_limit():
    records = batches(5, rows_in=8000, processed_rate=200.0)  # 40 s batches on a 10 s trigger
    last = records[-1].ts

    alive = judge_liveness(records, RUNNING, last + 100)
    stalled = judge_liveness(records, RUNNING, last + 121)

    assert (alive.status, alive.evidence["stale_after_seconds"]) == (Status.PASS, 120.0)
    assert (stalled.status, stalled.summary) == (
        Status.FAIL,
        "no progress for 2 min 1 s (trigger every 10 s)",
    )


def test_the_stale_limit_is_three_of_the_longer_of_trigger_and_batch_with_a_minimum():
    policy = HealthPolicy()

    assert stale_after_seconds([], policy) == 60.0
    assert stale_after_seconds(batches(3), policy) == 60.0  # 3 * 10 s is under the minimum
    assert stale_after_seconds(batches(3, trigger=30.0), policy) == 90.0
    assert stale_after_seconds(batches(3, trigger=0.0, rows_in=8000), policy) == 120.0  # 40 s
    assert stale_after_seconds(batches(3, trigger=30.0), HealthPolicy(stale_after_triggers=5)) == (
        150.0
    )


def test_only_the_newest_window_of_batches_stretches_the_stale_limit():
    long_then_short = [batch(0, rows_in=8000), *[batch(i) for i in range(1, 12)]]

    assert stale_after_seconds(long_then_short, HealthPolicy()) == 60.0
    assert stale_after_seconds(long_then_short, HealthPolicy(window_batches=12)) == 120.0


def test_a_started_query_without_batches_is_alive_until_stale():
    alive = judge_liveness([started(T0)], RUNNING, T0 + 30)
    stalled = judge_liveness([started(T0)], RUNNING, T0 + 61)

    assert (alive.status, alive.summary) == (
        Status.PASS,
        "running, no batch yet (started 30 s ago)",
    )
    assert alive.evidence == {
        "age_seconds": 30.0,
        "stale_after_seconds": 60.0,
        "trigger_seconds": 10.0,
    }
    assert (stalled.status, stalled.summary) == (
        Status.FAIL,
        "no progress for 1 min 1 s (trigger every 10 s)",
    )


def test_idle_triggers_keep_a_stream_without_new_data_alive():
    records = [started(), *batches(3), idle(T0 + 80)]

    verdict = judge_liveness(records, RUNNING, T0 + 100)

    assert (verdict.status, verdict.summary) == (Status.PASS, "last batch 1 min 20 s ago")
    assert verdict.evidence == {
        "age_seconds": 20.0,
        "stale_after_seconds": 60.0,
        "trigger_seconds": 10.0,
        "last_batch_age_seconds": 80.0,
        "last_batch_id": 2,
    }


def test_a_failed_run_fails_with_its_detail():
    verdict = judge_liveness(batches(2), RunState("failed", "run 1a2b failed: OOM"), T0 + 20)

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "run failed: run 1a2b failed: OOM",
        "Read the run's error, fix its cause and launch the stream again.",
    )


def test_a_failed_run_without_detail_fails_plainly():
    verdict = judge_liveness(batches(2), RunState("failed"), T0 + 20)

    assert (verdict.status, verdict.summary) == (Status.FAIL, "run failed")


def test_a_query_terminated_with_an_error_fails_naming_its_class():
    dead = terminated(T0 + 25, "STATE_STORE_CORRUPTED", "checksum mismatch")

    verdict = judge_liveness([*batches(3), dead], RUNNING, T0 + 30, cause=BROKER_DOWN)

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "query terminated with STATE_STORE_CORRUPTED: checksum mismatch",
        "Fix the cause of the error and restart the run; the checkpoint resumes the stream.",
    )
    assert verdict.evidence == {
        "age_seconds": 5.0,
        "stale_after_seconds": 60.0,
        "trigger_seconds": 10.0,
        "last_batch_age_seconds": 10.0,
        "last_batch_id": 2,
        "error_class": "STATE_STORE_CORRUPTED",
    }


def test_a_query_terminated_with_an_error_without_a_message_names_only_its_class():
    verdict = judge_liveness([*batches(3), terminated(T0 + 25, "Error")], RUNNING, T0 + 30)

    assert (verdict.status, verdict.summary) == (Status.FAIL, "query terminated with Error")


def test_a_query_that_ended_cleanly_passes_while_its_run_goes_on_then_warns():
    records = [*batches(3), terminated(T0 + 25)]

    going_on = judge_liveness(records, RUNNING, T0 + 30)
    stuck = judge_liveness(records, RUNNING, T0 + 100)

    assert (going_on.status, going_on.summary) == (
        Status.PASS,
        "query ended cleanly 5 s ago; its run goes on",
    )
    assert (stuck.status, stuck.summary, stuck.remedy) == (
        Status.WARN,
        "query ended 1 min 15 s ago but its run still says running",
        "Check the run: its query is gone; stop the run and launch it again.",
    )


@pytest.mark.parametrize(
    ("run", "summary"),
    [
        (
            RunState("stopped", "run 1a2b finished (success)"),
            "not running: run 1a2b finished (success)",
        ),
        (RunState("cancelled", "run 1a2b was cancelled"), "not running: run 1a2b was cancelled"),
        (RunState("cancelled"), "not running: cancelled"),
        (RunState("never_run"), "not running: never run"),
    ],
)
def test_a_stream_whose_run_is_not_running_passes_saying_why(run: RunState, summary: str):
    verdict = judge_liveness(batches(2), run, T0 + 9e5)

    assert (verdict.status, verdict.summary, verdict.evidence) == (Status.PASS, summary, {})


def test_a_running_run_with_nothing_recorded_warns():
    verdict = judge_liveness([], RUNNING, T0)

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "the run is running but the query has recorded nothing yet",
        "Check the run's logs: the query may not have started.",
    )


@pytest.mark.parametrize("name", ["kafka_running_count", "kafka_window_count", "rate_dedup_window"])
def test_a_real_live_query_is_alive(name: str):
    records = real_records(name)

    verdict = judge_liveness(records, RUNNING, records[-1].ts + 2)

    assert (verdict.status, verdict.summary) == (Status.PASS, "last batch 2 s ago")
    assert verdict.evidence["last_batch_id"] == len(records) - 1


def test_a_stream_waiting_for_its_topic_warns_with_the_command_that_creates_it():
    wait = ProgressRecord(T0, "waiting", "orders", "1a2b", waiting_for="service_heartbeats")
    run = RunState("running", "run 1a2b", waiting_for="service_heartbeats")

    verdict = judge_liveness([wait], run, T0 + 150)

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "waiting for Kafka topic service_heartbeats to exist (for 2 min 30 s): the run starts the "
        "stream once it does",
        "Create the topic with `platform kafka create-topic service_heartbeats` (or start the "
        "producer that writes it, if it creates its topics); nothing else is needed.",
    )
    assert verdict.evidence == {"waiting_seconds": 150.0}


def test_a_stream_whose_wait_ended_with_its_run_is_not_running():
    wait = ProgressRecord(T0, "waiting", "orders", "1a2b", waiting_for="service_heartbeats")

    verdict = judge_liveness([wait], RunState("stopped", "run 1a2b stopped"), T0 + 9e5)

    assert (verdict.status, verdict.summary) == (Status.PASS, "not running: run 1a2b stopped")
