"""late_data: rows the watermark refused are kept and counted; lost or too many, it fails."""

from __future__ import annotations

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.late_data import judge_late_data
from tests.unit.health.factories import batches, counted, started


def test_no_late_rows_pass_with_the_watermark_delay():
    verdict = judge_late_data([*batches(10), *(counted(i) for i in range(10))])
    assert verdict.status is Status.PASS
    assert verdict.summary == (
        "no late rows among 10,000 over 10 batches; watermark 2 min behind the wall clock"
    )


def test_rows_spark_dropped_but_the_platform_did_not_keep_are_lost_and_fail():
    records = [
        *batches(10, dropped=[0] * 9 + [5]),
        *(counted(i, late=3 if i == 9 else 0) for i in range(10)),
    ]
    verdict = judge_late_data(records, stream="events")
    assert verdict.status is Status.FAIL
    assert verdict.summary.startswith(
        "2 rows dropped by the watermark over 10 batches were not kept in late_events: they are lost"
    )
    assert verdict.evidence["spark_dropped_rows"] == 5


def test_kept_late_rows_above_the_fraction_fail_and_below_it_warn():
    many = [
        *batches(10, dropped=[0] * 9 + [20]),
        *(counted(i, late=20 if i == 9 else 0) for i in range(10)),
    ]
    verdict = judge_late_data(many, stream="events")
    assert verdict.status is Status.FAIL
    assert verdict.summary.startswith(
        "20 of 10,000 rows (0.20%) over 10 batches arrived after the watermark: they are in "
        "late_events, not in the table of events"
    )
    assert "raise the stream's watermark delay" in verdict.remedy
    few = [
        *batches(10, dropped=[0] * 9 + [3]),
        *(counted(i, late=3 if i == 9 else 0) for i in range(10)),
    ]
    assert judge_late_data(few, stream="events").status is Status.WARN


def test_a_watermark_ahead_of_the_clock_fails_naming_the_reset():
    verdict = judge_late_data(batches(3, watermark_delay=-7200.0), stream="events")
    assert verdict.status is Status.FAIL
    assert (
        "the watermark is 2 h ahead of the wall clock: every on-time row is now late"
        in verdict.summary
    )
    assert "platform stream reset-watermark events" in verdict.remedy


def test_a_watermark_far_behind_the_wall_clock_warns():
    verdict = judge_late_data(batches(3, watermark_delay=7200.0))
    assert (verdict.status, verdict.evidence["watermark_delay_seconds"]) == (Status.WARN, 7200.0)
    assert "event time is 2 h behind the wall clock" in verdict.summary


def test_without_batch_records_spark_counts_stand_for_the_late_rows():
    assert judge_late_data(batches(10, dropped=[0] * 9 + [20])).status is Status.FAIL  # 0.2%
    assert judge_late_data(batches(10, dropped=[0] * 9 + [2])).status is Status.WARN  # 0.02%


def test_a_watermark_a_little_ahead_of_the_clock_warns():
    verdict = judge_late_data(batches(3, watermark_delay=-30.0))
    assert verdict.status is Status.WARN
    assert verdict.summary.endswith("the watermark is 30 s ahead of the wall clock")


def test_no_watermark_and_no_batches_pass():
    assert judge_late_data(batches(3, watermark_delay=None)).summary == "no watermark"
    assert judge_late_data([started()]).summary == "no batches yet"
