"""late_data: rows the watermark refused are kept and counted; lost or too many, it fails."""

from __future__ import annotations

import pytest

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.late_data import judge_late_data
from platform_pipelines.health.policy import HealthPolicy
from tests.unit.health.factories import T0, batches, counted, real_records, started

LOST_REMEDY = (
    "Replay them from the upstream table (reprocess the stream) and report the stream: its writer "
    "missed rows its operator dropped."
)
LATE_REMEDY = (
    "If they are valid, the watermark is too tight for the data: raise the stream's watermark "
    "delay, and reprocess to bring the kept rows in."
)
RESET_REMEDY = (
    "Run `platform stream reset-watermark events`: it restarts the stream on a new checkpoint from "
    "where it stands, with no loss and no duplicates."
)
AHEAD_REMEDY = "Event times are ahead of the processing clock: check the producers' clocks."
BEHIND_REMEDY = (
    "The stream reads old data or a source is stuck: check its lag and the producers' event "
    "timestamps."
)


def ten_batches(late_in_the_last: int, dropped: int | None = None) -> list[ProgressRecord]:
    """Ten batches of 1000 rows with their writer's counts: the last one kept
    ``late_in_the_last`` rows aside, and Spark dropped ``dropped`` (the same by default)."""
    dropped = late_in_the_last if dropped is None else dropped
    return [
        *batches(10, dropped=[0] * 9 + [dropped]),
        *(counted(i, late=late_in_the_last if i == 9 else 0) for i in range(10)),
    ]


def test_no_late_rows_pass_with_the_watermark_delay():
    verdict = judge_late_data(ten_batches(0), stream="events")

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.PASS,
        "no late rows among 10,000 over 10 batches; watermark 2 min behind the wall clock",
        "",
    )
    assert verdict.evidence == {"late_rows": 0, "rows_in": 10_000, "watermark_delay_seconds": 120.0}


def test_rows_spark_dropped_that_the_platform_did_not_keep_are_lost_and_fail():
    records = ten_batches(3, dropped=5)  # Spark dropped 5, the writer kept 3

    verdict = judge_late_data(records, stream="events")

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "2 rows dropped by the watermark over 10 batches were not kept in late_events: they are "
        "lost",
        LOST_REMEDY,
    )
    assert verdict.evidence == {
        "late_rows": 3,
        "rows_in": 10_000,
        "spark_dropped_rows": 5,
        "watermark_delay_seconds": 120.0,
    }


def test_kept_late_rows_above_the_fail_fraction_fail():
    verdict = judge_late_data(ten_batches(11), stream="events")  # 0.11% > 0.1%

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "11 of 10,000 rows (0.11%) over 10 batches arrived after the watermark: they are in "
        "late_events, not in the table of events",
        LATE_REMEDY,
    )
    assert verdict.evidence == {
        "late_rows": 11,
        "rows_in": 10_000,
        "watermark_delay_seconds": 120.0,
    }


@pytest.mark.parametrize(("late", "share"), [(10, "0.10%"), (1, "0.01%")])
def test_any_kept_late_row_up_to_the_fail_fraction_warns(late: int, share: str):
    verdict = judge_late_data(ten_batches(late), stream="events")

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        f"{late} of 10,000 rows ({share}) over 10 batches arrived after the watermark: they are in "
        "late_events, not in the table of events",
        LATE_REMEDY,
    )


def test_the_fail_fraction_comes_from_the_policy():
    lenient = HealthPolicy(late_rows_fail_fraction=0.01)

    assert judge_late_data(ten_batches(100), lenient).status is Status.WARN
    assert judge_late_data(ten_batches(101), lenient).status is Status.FAIL


def test_a_stream_without_a_name_speaks_of_its_table():
    verdict = judge_late_data(ten_batches(1))

    assert verdict.summary == (
        "1 of 10,000 rows (0.01%) over 10 batches arrived after the watermark: they are in "
        "late_events, not in the stream's table"
    )


def test_spark_counting_partial_aggregates_below_the_kept_rows_is_no_loss():
    # 40 late input rows of one key and window reach the operator as 1 partial aggregate.
    verdict = judge_late_data(ten_batches(40, dropped=1), stream="events")

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "40 of 10,000 rows (0.40%) over 10 batches arrived after the watermark: they are in "
        "late_events, not in the table of events",
    )
    assert "spark_dropped_rows" not in verdict.evidence


@pytest.mark.parametrize(
    ("dropped", "status", "share"), [(20, Status.FAIL, "0.20%"), (2, Status.WARN, "0.02%")]
)
def test_without_batch_records_sparks_drops_stand_for_the_kept_late_rows(
    dropped: int, status: Status, share: str
):
    verdict = judge_late_data(batches(10, dropped=[0] * 9 + [dropped]))

    assert (verdict.status, verdict.summary) == (
        status,
        f"{dropped} of 10,000 rows ({share}) over 10 batches arrived after the watermark: they are "
        "in late_events, not in the stream's table",
    )


def test_batch_records_of_batches_outside_the_window_are_not_counted():
    records = [*batches(15), counted(0, late=100), *(counted(i) for i in range(5, 15))]

    verdict = judge_late_data(records)

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "no late rows among 10,000 over 10 batches; watermark 2 min behind the wall clock",
    )


def test_a_watermark_far_ahead_of_the_clock_fails_naming_the_reset():
    verdict = judge_late_data(batches(3, watermark_delay=-7200.0), stream="events")

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "the watermark is 2 h ahead of the wall clock: every on-time row is now late",
        RESET_REMEDY,
    )
    assert verdict.evidence == {"late_rows": 0, "rows_in": 3000, "watermark_delay_seconds": -7200.0}


def test_the_reset_remedy_of_an_unnamed_stream_leaves_a_placeholder():
    verdict = judge_late_data(batches(3, watermark_delay=-7200.0))

    assert verdict.remedy.startswith("Run `platform stream reset-watermark <stream>`: ")


def test_a_watermark_a_little_ahead_of_the_clock_warns():
    verdict = judge_late_data(batches(3, watermark_delay=-30.0), stream="events")

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "the watermark is 30 s ahead of the wall clock",
        AHEAD_REMEDY,
    )


@pytest.mark.parametrize(("ahead", "status"), [(60.0, Status.WARN), (61.0, Status.FAIL)])
def test_a_watermark_fails_from_more_than_a_minute_ahead(ahead: float, status: Status):
    verdict = judge_late_data(batches(3, watermark_delay=-ahead), stream="events")

    assert verdict.status is status


def test_with_no_tolerance_any_watermark_ahead_of_the_clock_fails():
    strict = HealthPolicy(watermark_ahead_fail_seconds=0)

    verdict = judge_late_data(batches(3, watermark_delay=-1.0), strict, stream="events")

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "the watermark is 1 s ahead of the wall clock: every on-time row is now late",
    )


def test_a_watermark_far_behind_the_wall_clock_warns():
    verdict = judge_late_data(batches(3, watermark_delay=7200.0))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "event time is 2 h behind the wall clock",
        BEHIND_REMEDY,
    )
    assert verdict.evidence["watermark_delay_seconds"] == 7200.0


def test_a_watermark_up_to_the_warn_delay_behind_passes():
    verdict = judge_late_data(batches(3, watermark_delay=3600.0))

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "no late rows among 3,000 over 3 batches; watermark 1 h behind the wall clock",
    )


def test_only_the_newest_batchs_watermark_is_judged():
    verdict = judge_late_data(batches(3, watermark_delay=[-7200.0, 7200.0, 120.0]))

    assert verdict.status is Status.PASS


def test_late_rows_and_a_watermark_far_behind_are_both_shown():
    records = [
        *batches(10, dropped=[0] * 9 + [3], watermark_delay=7200.0),
        *(counted(i, late=3 if i == 9 else 0) for i in range(10)),
    ]

    verdict = judge_late_data(records, stream="events")

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "3 of 10,000 rows (0.03%) over 10 batches arrived after the watermark: they are in "
        "late_events, not in the table of events; event time is 2 h behind the wall clock",
        f"{LATE_REMEDY} {BEHIND_REMEDY}",
    )


def test_no_watermark_and_no_batches_pass():
    no_watermark = judge_late_data(batches(3, watermark_delay=None))
    no_batches = judge_late_data([started()])

    assert (no_watermark.status, no_watermark.summary, no_watermark.evidence) == (
        Status.PASS,
        "no watermark",
        {"late_rows": 0},
    )
    assert (no_batches.status, no_batches.summary) == (Status.PASS, "no batches yet")


@pytest.mark.parametrize(
    ("name", "status", "summary"),
    [
        (
            "kafka_running_count",
            Status.PASS,
            "no late rows among 2,495 over 5 batches; watermark 10 min 29 s behind the wall clock",
        ),
        (
            "rate_dedup_window",
            Status.PASS,
            "no late rows among 400 over 6 batches; watermark 7.5 s behind the wall clock",
        ),
        # Batch 7 held 40 rows two hours late (1 partial aggregate for Spark), and its producer
        # stamped events ahead of the driver's clock.
        (
            "kafka_window_count",
            Status.WARN,
            "1 of 3,050 rows (0.03%) over 9 batches arrived after the watermark: they are in "
            "late_events, not in the stream's table; the watermark is 33 s ahead of the wall clock",
        ),
    ],
)
def test_real_queries_late_rows_and_watermarks(name: str, status: Status, summary: str):
    verdict = judge_late_data(real_records(name))

    assert (verdict.status, verdict.summary) == (status, summary)


def test_a_batch_replayed_after_a_crash_is_counted_once():
    records = [
        *batches(10, dropped=[0] * 9 + [6]),
        *(counted(i) for i in range(9)),
        counted(9, late=6, ts=T0 + 89.0),  # the first attempt, before the driver died
        counted(9, late=6),  # the replay that Spark committed
    ]

    verdict = judge_late_data(records, stream="events")

    assert (verdict.status, verdict.summary) == (
        Status.WARN,
        "6 of 10,000 rows (0.06%) over 10 batches arrived after the watermark: they are in "
        "late_events, not in the table of events",
    )


# Late rows by cause: invalid event times are reported apart from rows late for the watermark.

YEAR_1 = -62_135_596_800.0  # 0001-01-01T00:00:00Z
INVALID_REMEDY = (
    "Quarantine them at the edge: keep min_event_time on the stream's KafkaSource (bronze then "
    "sets such rows aside with the reason), and fix the producer that writes them; do not raise "
    "the watermark for them."
)


def test_late_rows_dated_1970_and_year_1_are_invalid_times_not_a_tight_watermark():
    # The stream: 304 rows, of which one dated 1970-01-01 and one 0001-01-01.
    records = [
        *batches(2, rows_in=[300, 4], dropped=1, oldest_event=[0.0, YEAR_1]),
        counted(0, rows_in=300, late=1),
        counted(1, rows_in=4, late=1),
    ]

    verdict = judge_late_data(records, stream="events")

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "2 late rows came in 2 batches holding event times before 2000-01-01 (the oldest "
        "0001-01-01): invalid event times, which no watermark admits",
        INVALID_REMEDY,
    )
    assert verdict.evidence == {
        "late_rows": 2,
        "rows_in": 304,
        "invalid_time_late_rows": 2,
        "watermark_delay_seconds": 120.0,
    }


def test_rows_late_for_the_watermark_beside_invalid_times_are_still_judged():
    records = [
        *batches(2, rows_in=[1000, 4], dropped=[20, 1], oldest_event=[None, 0.0]),
        counted(0, late=20),
        counted(1, rows_in=4, late=1),
    ]

    verdict = judge_late_data(records, stream="events")

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "20 of 1,004 rows (1.99%) over 2 batches arrived after the watermark: they are in "
        "late_events, not in the table of events; 1 late row came in 1 batch holding event times "
        "before 2000-01-01 (the oldest 1970-01-01): invalid event times, which no watermark admits",
        f"{LATE_REMEDY} {INVALID_REMEDY}",
    )


def test_old_but_plausible_event_times_are_late_rows_like_any_other():
    records = [*batches(1, dropped=5, oldest_event=T0 - 86_400.0), counted(0, late=5)]

    verdict = judge_late_data(records, stream="events")

    assert (verdict.status, verdict.remedy) == (Status.FAIL, LATE_REMEDY)  # 0.5% > 0.1%
    assert "invalid_time_late_rows" not in verdict.evidence


def test_a_batch_with_invalid_times_but_no_late_row_is_no_cause_for_concern():
    # The floor is the source's job: a row Spark let in is judged by the watermark alone.
    verdict = judge_late_data(batches(3, oldest_event=0.0), stream="events")

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "no late rows among 3,000 over 3 batches; watermark 2 min behind the wall clock",
    )
