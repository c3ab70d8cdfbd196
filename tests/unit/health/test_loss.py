"""no_silent_loss: rows in = out + late + quarantined + absorbed, every term counted twice."""

from __future__ import annotations

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.loss import Counted, LedgerTotals, judge_balance

DEDUP = LedgerTotals(rows_in=100, rows_out=90, rows_late=4)
COUNTED = Counted(consumed=100, ledger_consumed=100, table_rows=90, late_rows=4)


def test_a_balanced_stream_passes_with_its_equation():
    verdict = judge_balance(DEDUP, COUNTED, "duplicates removed")
    assert (verdict.status, verdict.summary) == (
        Status.PASS, "100 in = 90 out + 4 late + 0 quarantined + 6 duplicates removed",
    )  # fmt: skip
    assert verdict.evidence["rows_absorbed"] == 6


def test_every_disagreement_is_named():
    counted = Counted(consumed=103, ledger_consumed=100, table_rows=89, late_rows=3)
    verdict = judge_balance(DEDUP, counted, "duplicates removed")
    assert verdict.status is Status.FAIL
    assert verdict.summary.startswith(
        "103 consumed from its input but 100 counted by its batches; 89 rows in its table but 90 "
        "written by its batches; 3 rows in late_events but 4 written by its batches"
    )


def test_a_bronze_stream_absorbs_nothing_and_nothing_comes_out_of_thin_air():
    bronze = LedgerTotals(rows_in=10, rows_out=8, rows_quarantined=1)
    assert judge_balance(bronze, Counted(quarantined_rows=1), None).summary.startswith(
        "1 rows went in and never came out"
    )
    more = judge_balance(LedgerTotals(rows_in=5, rows_out=7), Counted(), "duplicates removed")
    assert more.summary.startswith("2 more rows came out than went in")
