"""no_silent_loss: rows in = out + late + quarantined + absorbed, every term counted twice."""

from __future__ import annotations

import pytest

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.loss import Counted, LedgerTotals, judge_balance

REMEDY = (
    "Rows were lost or written twice: compare the stream's ledger with its tables, then reprocess "
    "the stream from its input."
)
# A deduplicating stream: 1,000 rows read, 950 written, 30 late, 20 duplicates removed.
LEDGER = LedgerTotals(rows_in=1000, rows_out=950, rows_late=30)
MATCHING = Counted(consumed=1000, ledger_consumed=1000, table_rows=950, late_rows=30)
EQUATION = "1,000 in = 950 out + 30 late + 0 quarantined + 20 duplicates removed"
# A bronze stream: every row is written or quarantined.
BRONZE = LedgerTotals(rows_in=12_000, rows_out=11_990, rows_quarantined=10)
BRONZE_COUNTED = Counted(
    consumed=12_000, ledger_consumed=12_000, table_rows=11_990, quarantined_rows=10
)


def test_absorbed_rows_are_what_went_in_and_did_not_come_out():
    assert LEDGER.absorbed == 20
    assert BRONZE.absorbed == 0
    assert LedgerTotals(rows_in=5, rows_out=7).absorbed == -2


def test_a_balanced_stream_passes_with_its_equation():
    verdict = judge_balance(LEDGER, MATCHING, "duplicates removed")

    assert (verdict.status, verdict.summary, verdict.remedy) == (Status.PASS, EQUATION, "")
    assert verdict.evidence == {
        "rows_in": 1000,
        "rows_out": 950,
        "rows_late": 30,
        "rows_quarantined": 0,
        "rows_absorbed": 20,
    }


def test_a_balanced_bronze_stream_absorbs_nothing_and_passes():
    verdict = judge_balance(BRONZE, BRONZE_COUNTED, None)

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "12,000 in = 11,990 out + 0 late + 10 quarantined + 0 absorbed",
    )


def test_counts_that_do_not_apply_are_not_compared():
    verdict = judge_balance(LEDGER, Counted(), "duplicates removed")

    assert (verdict.status, verdict.summary) == (Status.PASS, EQUATION)


def test_a_consumed_count_needs_both_sides_to_be_compared():
    verdict = judge_balance(LEDGER, Counted(consumed=999), "duplicates removed")

    assert verdict.status is Status.PASS


@pytest.mark.parametrize(
    ("counted", "problem"),
    [
        (
            Counted(consumed=1003, ledger_consumed=1000),
            "1,003 consumed from its input but 1,000 counted by its batches",
        ),
        (Counted(table_rows=949), "949 rows in its table but 950 written by its batches"),
        (Counted(table_rows=951), "951 rows in its table but 950 written by its batches"),
        (Counted(late_rows=29), "29 rows in late_events but 30 written by its batches"),
        (Counted(quarantined_rows=2), "2 rows in quarantine but 0 written by its batches"),
    ],
)
def test_each_disagreement_fails_naming_both_counts(counted: Counted, problem: str):
    verdict = judge_balance(LEDGER, counted, "duplicates removed")

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        f"{problem} ({EQUATION})",
        REMEDY,
    )
    assert verdict.evidence["rows_absorbed"] == 20


def test_every_disagreement_is_named_in_order():
    counted = Counted(
        consumed=1003, ledger_consumed=1000, table_rows=949, late_rows=29, quarantined_rows=1
    )

    verdict = judge_balance(LEDGER, counted, "duplicates removed")

    assert verdict.summary == (
        "1,003 consumed from its input but 1,000 counted by its batches; "
        "949 rows in its table but 950 written by its batches; "
        "29 rows in late_events but 30 written by its batches; "
        "1 rows in quarantine but 0 written by its batches "
        f"({EQUATION})"
    )


def test_a_bronze_stream_that_absorbs_rows_fails():
    lossy = LedgerTotals(rows_in=12_000, rows_out=11_989, rows_quarantined=10)

    verdict = judge_balance(lossy, Counted(), None)

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "1 rows went in and never came out "
        "(12,000 in = 11,989 out + 0 late + 10 quarantined + 1 absorbed)",
    )


def test_more_rows_out_than_in_fails_whatever_the_stream_may_absorb():
    more = LedgerTotals(rows_in=5, rows_out=7)

    verdict = judge_balance(more, Counted(), "duplicates removed")

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "2 more rows came out than went in "
        "(5 in = 7 out + 0 late + 0 quarantined + -2 duplicates removed)",
    )
    assert verdict.evidence["rows_absorbed"] == -2


def test_a_table_mismatch_and_an_impossible_balance_are_both_named():
    more = LedgerTotals(rows_in=5, rows_out=7)

    verdict = judge_balance(more, Counted(table_rows=6), None)

    assert verdict.summary == (
        "6 rows in its table but 7 written by its batches; 2 more rows came out than went in "
        "(5 in = 7 out + 0 late + 0 quarantined + -2 absorbed)"
    )
