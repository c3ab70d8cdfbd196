"""falling_behind: rates over full batches, and one lag measured outside Spark."""

from __future__ import annotations

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.throughput import Lag, judge_falling_behind
from tests.unit.health.factories import batches


def test_a_small_lag_passes_with_the_rates():
    verdict = judge_falling_behind(batches(10), Lag("Kafka topic clicks", 30))
    assert verdict.status is Status.PASS
    assert verdict.summary == (
        "processing 200.0 rows/s for 100.0 rows/s of input; 30 records behind its Kafka topic clicks"
    )
    assert verdict.evidence["lag_records"] == 30


def test_a_lag_above_the_thresholds_warns_then_fails():
    warn = judge_falling_behind(batches(3), Lag("table events", 12_001))
    assert (warn.status, warn.summary) == (
        Status.WARN,
        "12,001 records behind its table events (warn above 10,000)",
    )
    fail = judge_falling_behind(batches(3), Lag("Kafka topic clicks", 2_000_000))
    assert fail.status is Status.FAIL
    assert fail.summary == "2,000,000 records behind its Kafka topic clicks (fail above 1,000,000)"


def test_an_unknown_lag_fails_with_its_cause():
    lag = Lag("Kafka topic clicks", None, "the Kafka broker at 127.0.0.1:9092 does not answer")
    verdict = judge_falling_behind(batches(3), lag)
    assert verdict.status is Status.FAIL
    assert verdict.summary == "lag unknown: the Kafka broker at 127.0.0.1:9092 does not answer"
    assert verdict.remedy.startswith("The stream cannot read its Kafka topic clicks")
    assert verdict.evidence["lag"] == "unknown"


def test_without_a_lag_only_rates_are_judged():
    verdict = judge_falling_behind(batches(10), None)
    assert verdict.passed and "lag_records" not in verdict.evidence
    assert verdict.evidence["rate_batches"] == 10


def test_input_above_processing_over_full_batches_is_falling_behind():
    # 3000 rows at 200 rows/s: 15 s batches on a 10 s trigger, so every batch is full.
    records = batches(10, rows_in=3000, input_rate=300.0, processed_rate=200.0)
    verdict = judge_falling_behind(records, None)
    assert verdict.status is Status.WARN
    assert verdict.summary == (
        "input arrives at 300.0 rows/s but is processed at 200.0 rows/s over 10 full batches"
    )
    short = batches(10, rows_in=1000, input_rate=300.0, processed_rate=200.0)  # idles half
    assert judge_falling_behind(short, None).passed
    close = batches(10, rows_in=3000, input_rate=230.0, processed_rate=200.0)  # 1.15 < 1.2
    assert judge_falling_behind(close, None).passed
    assert judge_falling_behind(records[:2], None).passed  # too few batches to say
