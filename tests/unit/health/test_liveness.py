"""liveness: is the query alive while its owner says it should be, and if not, why?"""

from __future__ import annotations

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.liveness import judge_liveness
from platform_pipelines.health.policy import HealthPolicy
from platform_pipelines.health.runs import RunState
from tests.unit.health.factories import RUNNING, T0, batches, started


def test_a_healthy_stream_passes_with_the_age_of_its_last_batch():
    records = [started(), *batches(10)]
    live = judge_liveness(records, RUNNING, records[-1].ts + 4)
    assert (live.status, live.summary) == (Status.PASS, "last batch 4 s ago")
    assert live.evidence == {"age_seconds": 4.0, "stale_after_seconds": 60.0,
                             "trigger_seconds": 10.0, "last_batch_age_seconds": 4.0,
                             "last_batch_id": 9}  # fmt: skip


def test_a_running_run_whose_last_record_is_too_old_is_stalled():
    records = [started(), *batches(5)]
    last = records[-1].ts
    assert judge_liveness(records, RUNNING, last + 60).passed  # limit max(3 * 10 s, 60 s)
    verdict = judge_liveness(records, RUNNING, last + 61)
    assert verdict.status is Status.FAIL
    assert verdict.summary == "no progress for 1 min 1 s (trigger every 10 s)"
    assert "hung or its driver is gone" in verdict.remedy
    slow = HealthPolicy(min_stale_seconds=10)
    assert judge_liveness(records, RUNNING, last + 31, slow).summary == (
        "no progress for 31 s (trigger every 10 s)"
    )


def test_a_stalled_stream_names_the_cause_when_it_is_known():
    records = [started(), *batches(5)]
    cause = "the Kafka broker at 127.0.0.1:9092 does not answer (connection refused)"
    verdict = judge_liveness(records, RUNNING, records[-1].ts + 90, cause=cause)
    assert verdict.status is Status.FAIL
    assert verdict.summary == f"no progress for 1 min 30 s: {cause}"
    assert verdict.remedy.startswith("Bring the broker back")


def test_long_batches_stretch_the_stale_limit():
    records = batches(5, rows_in=8000, processed_rate=200.0)  # 40 s batches on a 10 s trigger
    last = records[-1].ts
    verdict = judge_liveness(records, RUNNING, last + 100)
    assert verdict.passed and verdict.evidence["stale_after_seconds"] == 120.0
    assert judge_liveness(records, RUNNING, last + 121).status is Status.FAIL


def test_a_started_query_without_batches_is_alive_until_stale():
    assert judge_liveness([started(T0)], RUNNING, T0 + 30).summary == (
        "running, no batch yet (started 30 s ago)"
    )
    assert judge_liveness([started(T0)], RUNNING, T0 + 61).status is Status.FAIL


def test_a_failed_run_fails_with_its_detail():
    verdict = judge_liveness(batches(2), RunState("failed", "run 1a2b failed: OOM"), T0 + 20)
    assert (verdict.status, verdict.summary) == (Status.FAIL, "run failed: run 1a2b failed: OOM")


def test_a_query_terminated_with_an_error_fails_naming_its_class():
    dead = ProgressRecord(T0 + 25, "terminated", "orders", "1a2b", trigger_seconds=10.0,
                          error_class="STATE_STORE_CORRUPTED", error="checksum mismatch")  # fmt: skip
    verdict = judge_liveness([*batches(3), dead], RUNNING, T0 + 30)
    assert verdict.status is Status.FAIL
    assert verdict.summary == "query terminated with STATE_STORE_CORRUPTED: checksum mismatch"
    assert verdict.evidence["error_class"] == "STATE_STORE_CORRUPTED"


def test_a_query_that_ended_cleanly_passes_while_its_run_goes_on_then_warns():
    ended = ProgressRecord(T0 + 25, "terminated", "orders", "1a2b", trigger_seconds=10.0)
    records = [*batches(3), ended]
    assert judge_liveness(records, RUNNING, T0 + 30).summary == (
        "query ended cleanly 5 s ago; its run goes on"
    )
    late = judge_liveness(records, RUNNING, T0 + 100)
    assert (late.status, late.summary) == (
        Status.WARN,
        "query ended 1 min 15 s ago but its run still says running",
    )


def test_stopped_cancelled_and_never_run_streams_pass():
    cancelled = judge_liveness(
        batches(2), RunState("cancelled", "run 1a2b was cancelled"), T0 + 9e5
    )
    assert (cancelled.status, cancelled.summary) == (
        Status.PASS,
        "not running: run 1a2b was cancelled",
    )
    assert judge_liveness([], RunState("never_run"), T0).summary == "not running: never run"


def test_a_running_run_with_nothing_recorded_warns():
    assert judge_liveness([], RUNNING, T0).status is Status.WARN
