"""falling_behind: rates over full batches, and one lag measured outside Spark."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.policy import HealthPolicy
from platform_pipelines.health.runs import RunState
from platform_pipelines.health.throughput import Lag, Rates, judge_falling_behind, window_rates
from tests.unit.health.factories import T0, batches, real_records

TOPIC = "Kafka topic clicks"
BROKER_DOWN = "the Kafka broker at 127.0.0.1:9092 does not answer (connection refused)"
LAG_REMEDY = (
    "The stream cannot keep up with its input: give it capacity (more cores or executors: "
    "PLATFORM_SPARK_MASTER) or cut its work per row; a lag that shrinks again needs nothing."
)
RATES = {  # of batches(n): 1000 rows at 100 rows/s in, 200 rows/s processed, 5 s of a 10 s trigger
    "input_rows_per_second": 100.0,
    "processed_rows_per_second": 200.0,
    "rate_batches": 10,
    "full_batches": 0,
}


def with_spark_lag(record: ProgressRecord, behind: int) -> ProgressRecord:
    """``record`` with Spark's own Kafka source metrics saying it is ``behind`` offsets behind."""
    progress = copy.deepcopy(dict(record.progress or {}))
    progress["sources"][0]["metrics"] = {
        "avgOffsetsBehindLatest": str(behind / 2),
        "maxOffsetsBehindLatest": str(behind),
        "minOffsetsBehindLatest": "0",
    }
    return replace(record, progress=progress)


def test_a_small_lag_passes_with_the_rates():
    verdict = judge_falling_behind(batches(10), Lag(TOPIC, 30))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.PASS,
        "processing 200.0 rows/s for 100.0 rows/s of input; 30 records behind its Kafka topic clicks",
        "",
    )
    assert verdict.evidence == {**RATES, "lag_records": 30}


@pytest.mark.parametrize(
    ("records", "status", "summary"),
    [
        (10_000, Status.PASS, "10,000 records behind its table events"),
        (10_001, Status.WARN, "10,001 records behind its table events (warn above 10,000)"),
        (1_000_000, Status.WARN, "1,000,000 records behind its table events (warn above 10,000)"),
        (
            1_000_001,
            Status.FAIL,
            "1,000,001 records behind its table events (fail above 1,000,000)",
        ),
    ],
)
def test_a_lag_above_the_warn_threshold_warns_and_above_the_fail_threshold_fails(
    records: int, status: Status, summary: str
):
    verdict = judge_falling_behind(batches(10), Lag("table events", records))

    assert verdict.status is status
    assert verdict.evidence == {**RATES, "lag_records": records}
    if status is Status.PASS:
        assert verdict.summary == f"processing 200.0 rows/s for 100.0 rows/s of input; {summary}"
    else:  # the rates pass and only what is wrong is shown
        assert (verdict.summary, verdict.remedy) == (summary, LAG_REMEDY)


def test_the_lag_thresholds_come_from_the_policy():
    # no allowance for the stream's rhythm: the thresholds are the policy's numbers
    policy = HealthPolicy(lag_warn_records=10, lag_fail_records=100, lag_warn_intervals=0)

    verdict = judge_falling_behind(batches(10), Lag(TOPIC, 101), policy)

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "101 records behind its Kafka topic clicks (fail above 100)",
    )


def test_an_unknown_lag_fails_naming_its_cause():
    verdict = judge_falling_behind(batches(10), Lag(TOPIC, None, BROKER_DOWN))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        f"lag unknown: {BROKER_DOWN}",
        "The stream cannot read its Kafka topic clicks: bring it back, or point the platform at "
        "one that runs.",
    )
    assert verdict.evidence == {**RATES, "lag": "unknown"}


def test_without_a_measured_lag_only_rates_are_judged():
    verdict = judge_falling_behind(batches(10), None)

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "processing 200.0 rows/s for 100.0 rows/s of input",
    )
    assert verdict.evidence == RATES


def test_sparks_own_source_lag_metrics_are_not_a_lag():
    records = [with_spark_lag(r, 5_000_000) for r in batches(10)]

    verdict = judge_falling_behind(records, None)

    assert (verdict.status, verdict.evidence) == (Status.PASS, RATES)


def test_input_above_processing_over_full_batches_is_falling_behind():
    # 3000 rows at 200 rows/s: 15 s batches on a 10 s trigger, so every batch is full.
    records = batches(10, rows_in=3000, input_rate=300.0, processed_rate=200.0)

    verdict = judge_falling_behind(records, None)

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "input arrives at 300.0 rows/s but is processed at 200.0 rows/s over 10 full batches",
        "Processing cannot keep up: add cores or executors, or cut the work per row.",
    )
    assert verdict.evidence == {
        "input_rows_per_second": 300.0,
        "processed_rows_per_second": 200.0,
        "rate_batches": 10,
        "full_batches": 10,
    }


def test_a_falling_behind_stream_with_a_failing_lag_shows_both():
    records = batches(10, rows_in=3000, input_rate=300.0, processed_rate=200.0)

    verdict = judge_falling_behind(records, Lag(TOPIC, 2_000_000))

    assert verdict.status is Status.FAIL
    assert verdict.summary == (
        "input arrives at 300.0 rows/s but is processed at 200.0 rows/s over 10 full batches; "
        "2,000,000 records behind its Kafka topic clicks (fail above 1,000,000)"
    )
    assert verdict.remedy == (
        "Processing cannot keep up: add cores or executors, or cut the work per row. " + LAG_REMEDY
    )


def test_batches_that_leave_idle_time_can_catch_up():
    # The same rates with 5 s batches: Spark idles half of each trigger.
    records = batches(10, rows_in=1000, input_rate=300.0, processed_rate=200.0)

    verdict = judge_falling_behind(records, None)

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "processing 200.0 rows/s for 300.0 rows/s of input",
    )


def test_input_within_the_behind_ratio_is_keeping_up():
    records = batches(10, rows_in=3000, input_rate=230.0, processed_rate=200.0)  # 1.15 < 1.2

    assert judge_falling_behind(records, None).status is Status.PASS
    assert judge_falling_behind(records, None, HealthPolicy(behind_ratio=1.1)).status is Status.WARN


def test_too_few_batches_with_input_say_nothing_about_falling_behind():
    records = batches(10, rows_in=3000, input_rate=300.0, processed_rate=200.0)

    verdict = judge_falling_behind(records[:2], None)

    assert (verdict.status, verdict.evidence["rate_batches"]) == (Status.PASS, 2)


def test_no_batch_with_input_is_nothing_to_judge():
    verdict = judge_falling_behind(batches(3, rows_in=0), None)

    assert (verdict.status, verdict.summary) == (Status.PASS, "no batch with input to judge")
    assert verdict.evidence == {
        "input_rows_per_second": 0.0,
        "processed_rows_per_second": 0.0,
        "rate_batches": 0,
        "full_batches": 0,
    }


def test_window_rates_weigh_batches_by_their_rows_and_skip_batches_without_rates():
    records = batches(4, rows_in=[0, 1000, 3000, 500], input_rate=[0.0, 100.0, 300.0, 0.0])

    # 4000 rows in 10 + 10 s of input and 5 + 15 s of processing; only the 15 s batch is full.
    assert window_rates(records) == Rates(
        input=200.0, processed=200.0, batches=2, full=1, rows=4000
    )


def test_every_batch_with_input_of_a_catch_up_run_is_full():
    assert window_rates(batches(3, trigger=0.0)) == Rates(
        100.0, 200.0, batches=3, full=3, rows=3000
    )


def test_only_the_newest_window_of_batches_is_judged():
    behind = batches(13, rows_in=[3000] * 10 + [1000] * 3, input_rate=300.0, processed_rate=200.0)

    assert judge_falling_behind(behind, None).status is Status.PASS  # 3 of 10 batches not full
    assert judge_falling_behind(behind, None, HealthPolicy(window_batches=3)).status is Status.PASS
    assert judge_falling_behind(behind[:10], None, HealthPolicy(window_batches=3)).status is (
        Status.WARN
    )


@pytest.mark.parametrize(
    ("name", "summary"),
    [
        ("kafka_running_count", "processing 236.6 rows/s for 85.8 rows/s of input"),
        ("kafka_window_count", "processing 189.2 rows/s for 121.9 rows/s of input"),
        ("rate_dedup_window", "processing 40.4 rows/s for 19.7 rows/s of input"),
    ],
)
def test_a_real_query_keeps_up(name: str, summary: str):
    verdict = judge_falling_behind(real_records(name), None)

    assert (verdict.status, verdict.summary) == (Status.PASS, summary)
    assert "lag_records" not in verdict.evidence  # its Kafka source metrics are not read


# Judged only while the stream runs, and only on the batches of its continuous query run.

STOPPED = RunState("stopped", "run 1a2b3c4d finished (success)", "1a2b3c4d")
RUNNING = RunState("running", "run 1a2b3c4d is started", "1a2b3c4d")
# What a catch-up reports: big backlog batches, each full, input measured faster than processed.
CATCH_UP = {"rows_in": 3000, "input_rate": 151.2, "processed_rate": 54.7, "query_run": "catch-up"}


def test_a_stopped_stream_is_not_judged_on_the_batches_of_its_last_run():
    records = batches(10, **CATCH_UP)

    verdict = judge_falling_behind(records, Lag(TOPIC, 1234), run=STOPPED)

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.PASS,
        "not judged: not running (run 1a2b3c4d finished (success)); 1,234 records behind its "
        "Kafka topic clicks",
        "",
    )
    assert verdict.evidence == {"lag_records": 1234}


def test_a_stopped_stream_whose_lag_is_unknown_is_not_failed_for_it():
    verdict = judge_falling_behind(batches(3), Lag(TOPIC, None, BROKER_DOWN), run=STOPPED)

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "not judged: not running (run 1a2b3c4d finished (success))",
    )


def test_a_stream_waiting_for_its_topic_is_not_judged():
    waiting = RunState("running", "run 1a2b3c4d", "1a2b3c4d", waiting_for="service_heartbeats")

    verdict = judge_falling_behind([], Lag(TOPIC, None, "no topic"), run=waiting)

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "not judged: waiting for Kafka topic service_heartbeats to exist",
    )


def test_a_continuous_run_is_judged_on_its_continuous_batches_not_its_catch_up():
    catch_up = batches(10, **CATCH_UP)
    keeping_up = [
        replace(r, ts=r.ts + 100) for r in batches(4, query_run="continuous", rows_in=1000)
    ]

    verdict = judge_falling_behind([*catch_up, *keeping_up], None, run=RUNNING)

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "processing 200.0 rows/s for 100.0 rows/s of input",
    )
    assert verdict.evidence["rate_batches"] == 4


def test_a_continuous_run_that_falls_behind_is_still_caught():
    behind = batches(10, rows_in=3000, input_rate=300.0, processed_rate=200.0, query_run="c")

    verdict = judge_falling_behind(behind, None, run=RUNNING)

    assert (verdict.status, verdict.summary) == (
        Status.WARN,
        "input arrives at 300.0 rows/s but is processed at 200.0 rows/s over 10 full batches",
    )


def test_a_running_catch_up_is_judged_by_its_lag_not_its_rates():
    records = batches(10, trigger=0.0, **CATCH_UP)

    calm = judge_falling_behind(records, Lag(TOPIC, 5000), run=RUNNING)
    far = judge_falling_behind(records, Lag(TOPIC, 2_000_000), run=RUNNING)

    assert (calm.status, calm.summary) == (
        Status.PASS,
        "catching up at 54.7 rows/s (a catch-up's rates are not judged); 5,000 records behind "
        "its Kafka topic clicks",
    )
    assert (far.status, far.summary) == (
        Status.FAIL,
        "2,000,000 records behind its Kafka topic clicks (fail above 1,000,000)",
    )


def test_a_continuous_stream_on_a_zero_trigger_is_judged_on_its_rates_not_taken_for_a_catch_up():
    """A stream whose next batch starts as soon as there is input (trigger 0) runs its batches
    back to back: each is full, and an input faster than it processes is falling behind."""
    behind = [
        replace(r, phase="continuous")
        for r in batches(10, trigger=0.0, input_rate=300.0, processed_rate=200.0, every=5.0)
    ]
    catching_up = [replace(r, phase="catch_up") for r in batches(10, trigger=0.0, **CATCH_UP)]

    continuous = judge_falling_behind(behind, None, run=RUNNING)
    catch_up = judge_falling_behind(catching_up, None, run=RUNNING)

    assert (continuous.status, continuous.summary) == (
        Status.WARN,
        "input arrives at 300.0 rows/s but is processed at 200.0 rows/s over 10 full batches",
    )
    assert (catch_up.status, catch_up.summary) == (
        Status.PASS,
        "catching up at 54.7 rows/s (a catch-up's rates are not judged)",
    )


def slow_trigger() -> list[ProgressRecord]:
    """A stream on a 60 s trigger that keeps up with 2,000 rows/s: 120,000 rows a batch, each
    processed in 10 s."""
    return batches(
        10, every=60.0, trigger=60.0, rows_in=120_000, input_rate=2000.0, processed_rate=12_000.0
    )


@pytest.mark.parametrize("behind", [130_000, 140_000, 280_000])
def test_a_lag_within_twice_a_slow_triggers_rhythm_passes(behind: int):
    """Just before a commit it is behind by 70 s of input (the 60 s interval and the 10 s
    batch): 140,000 records; up to twice that is its rhythm, not a backlog."""
    verdict = judge_falling_behind(slow_trigger(), Lag(TOPIC, behind))

    assert verdict.status is Status.PASS
    assert verdict.summary.endswith(f"{behind:,} records behind its Kafka topic clicks")


def test_a_lag_beyond_twice_a_slow_triggers_rhythm_warns_and_says_why():
    verdict = judge_falling_behind(slow_trigger(), Lag(TOPIC, 280_001))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "280,001 records behind its Kafka topic clicks (warn above 280,000: twice the 140,000 "
        "it is behind before each commit when it keeps up)",
        LAG_REMEDY,
    )


def test_the_rhythm_factor_comes_from_the_policy():
    policy = HealthPolicy(lag_warn_intervals=1.5)

    verdict = judge_falling_behind(slow_trigger(), Lag(TOPIC, 210_001), policy)

    assert verdict.summary == (
        "210,001 records behind its Kafka topic clicks (warn above 210,000: 1.5x the 140,000 "
        "it is behind before each commit when it keeps up)"
    )


def test_a_fast_stream_keeps_the_fixed_warn_threshold():
    """100 rows/s on a 10 s trigger is behind by 1,500 before a commit: 10,000 still rules."""
    verdict = judge_falling_behind(batches(10), Lag(TOPIC, 10_001))

    assert verdict.summary == "10,001 records behind its Kafka topic clicks (warn above 10,000)"


def test_a_back_to_back_streams_rhythm_is_its_median_batch():
    """Trigger 0 at 2,000 rows/s in 5 s batches: behind by 20,000 before each commit."""
    back_to_back = batches(
        10, every=5.0, trigger=0.0, rows_in=10_000, input_rate=2000.0, processed_rate=2000.0
    )
    records = [replace(r, phase="continuous") for r in back_to_back]

    calm = judge_falling_behind(records, Lag(TOPIC, 30_000))
    far = judge_falling_behind(records, Lag(TOPIC, 40_001))

    assert calm.status is Status.PASS
    assert (far.status, far.summary) == (
        Status.WARN,
        "40,001 records behind its Kafka topic clicks (warn above 40,000: twice the 20,000 it "
        "is behind before each commit when it keeps up)",
    )


def test_batches_outgrowing_their_trigger_do_not_raise_the_warn_threshold():
    """A 10 s trigger at 2,000 rows/s whose batches grew to 30 s: counted as 10 s batches, so a
    backlog of 80,001 warns (twice 2,000 x (10 + 10))."""
    records = batches(
        10, every=30.0, trigger=10.0, rows_in=60_000, input_rate=2000.0, processed_rate=2000.0
    )

    verdict = judge_falling_behind(records, Lag(TOPIC, 80_001))

    assert verdict.status is Status.WARN
    assert "(warn above 80,000: twice the 40,000" in verdict.summary


def first_batch(seconds: float) -> list[ProgressRecord]:
    """The first batch of a continuous query on a 60 s trigger: Spark reports no input rate."""
    rows = int(seconds * 1000)
    only = batches(1, trigger=60.0, rows_in=rows, input_rate=0.0, processed_rate=1000.0)
    return [replace(r, phase="continuous") for r in only]


def test_before_a_triggers_rhythm_is_known_its_lag_is_not_warned():
    """In the minute after a start, a 60 s stream builds a minute of input before its second
    batch: not a backlog, but nothing says so yet."""
    verdict = judge_falling_behind(first_batch(5), Lag(TOPIC, 120_000))

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "no batch with input to judge; 120,000 records behind its Kafka topic clicks (warned "
        "from its second batch with input, once its rhythm is known)",
    )


def test_a_first_batch_that_outlasts_its_trigger_already_says_it_lags():
    verdict = judge_falling_behind(first_batch(61), Lag(TOPIC, 120_000))

    assert (verdict.status, verdict.summary) == (
        Status.WARN,
        "120,000 records behind its Kafka topic clicks (warn above 10,000)",
    )


def test_a_fast_stream_on_a_long_trigger_is_not_failed_before_every_commit():
    """12,000 rows/s on a 60 s trigger with 10 s batches: 840,000 behind before each commit, so
    it warns above 1,680,000 and fails above twice that, not at the fixed 1,000,000."""
    records = batches(
        10, every=60.0, trigger=60.0, rows_in=720_000, input_rate=12_000.0, processed_rate=72_000.0
    )

    calm = judge_falling_behind(records, Lag(TOPIC, 1_500_000))
    far = judge_falling_behind(records, Lag(TOPIC, 3_360_001))

    assert calm.status is Status.PASS
    assert (far.status, far.summary) == (
        Status.FAIL,
        "3,360,001 records behind its Kafka topic clicks (fail above 3,360,000: twice the "
        "warning threshold, twice the 840,000 it is behind before each commit when it keeps up)",
    )


# batches(10): 100 rows/s on a 10 s trigger, 5 s batches; the newest started at T0 + 85 s and
# is committed. A stream that keeps up is 1,500 records behind before each commit at that rate.
SURGE = 40_000  # records behind after the input rose to 2,000 rows/s (20 s of it)


def test_a_lag_that_grew_with_its_input_passes_while_the_stream_commits_in_its_rhythm():
    # measured 20 s after the newest batch started: 2,000 rows/s arrive now; at that rate a
    # stream that keeps up is 30,000 records behind before each commit
    verdict = judge_falling_behind(batches(10), Lag(TOPIC, SURGE, measured_at=T0 + 105))

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "processing 200.0 rows/s for 100.0 rows/s of input; 40,000 records behind its Kafka "
        "topic clicks",
    )


def test_the_same_lag_warns_once_the_stream_takes_twice_its_rhythm_to_commit_it():
    # measured 40 s after the newest batch started: longer than twice its 15 s rhythm, so the
    # input's rate now (1,000 rows/s) says a stream that kept up would be 15,000 behind
    verdict = judge_falling_behind(batches(10), Lag(TOPIC, SURGE, measured_at=T0 + 125))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "40,000 records behind its Kafka topic clicks (warn above 30,000: twice the 15,000 it "
        "is behind before each commit when it keeps up)",
        LAG_REMEDY,
    )


def test_a_catch_up_is_judged_against_the_fail_threshold_alone_whenever_its_lag_is_measured():
    records = [
        replace(r, phase="catch_up", trigger_seconds=0.0)
        for r in batches(10, rows_in=200_000, processed_rate=20_000.0)
    ]

    verdict = judge_falling_behind(records, Lag(TOPIC, 2_000_000, measured_at=T0 + 91))

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "2,000,000 records behind its Kafka topic clicks (fail above 1,000,000)",
    )


def test_the_lag_after_a_catch_up_is_not_taken_as_the_rate_input_arrives_at():
    # the continuous phase started (its start record is the newest) but has run no batch: the
    # window is the catch-up's, whose capped batches left a backlog that did not all arrive since
    catch_up = [replace(r, phase="catch_up", trigger_seconds=0.0) for r in batches(10)]
    start = replace(catch_up[-1], event="started", phase="continuous", progress=None, ts=T0 + 92)

    verdict = judge_falling_behind([*catch_up, start], Lag(TOPIC, SURGE, measured_at=T0 + 105))

    assert (verdict.status, verdict.summary) == (
        Status.WARN,
        "40,000 records behind its Kafka topic clicks (warn above 10,000)",
    )
