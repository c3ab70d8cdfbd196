"""Do a stream's rows balance? (check ``no_silent_loss``)

Every row a stream reads is written to its table, kept in ``late_events``, quarantined, or
absorbed by its logic (a duplicate removed, an event folded into a session). Each micro-batch's
writer records those counts in ``stream_ledger``; this judgement holds the ledger against what
can be counted independently of it:

- the rows the stream consumed (Kafka offsets it committed, or the upstream Delta versions it
  read), for its current checkpoint;
- the rows of its table (append streams), of ``late_events`` and of ``quarantine``.

Any difference means a row was lost or written twice without a trace.
"""

from __future__ import annotations

from dataclasses import dataclass

from platform_pipelines.core.units import count
from platform_pipelines.core.verdict import Verdict, failed, passed

NO_SILENT_LOSS = "no_silent_loss"


@dataclass(frozen=True)
class LedgerTotals:
    """``stream_ledger`` summed over a stream's batches."""

    rows_in: int = 0
    rows_out: int = 0
    rows_late: int = 0
    rows_quarantined: int = 0

    @property
    def absorbed(self) -> int:
        return self.rows_in - self.rows_out - self.rows_late - self.rows_quarantined


@dataclass(frozen=True)
class Counted:
    """What was counted outside the ledger; None where a count does not apply.

    Attributes:
        consumed: rows the current checkpoint consumed; ``ledger_consumed`` is what the ledger
            says the same checkpoint's batches read.
        table_rows: rows in the stream's table (append streams only).
        late_rows: rows of ``late_events`` for the stream.
        quarantined_rows: rows of ``quarantine`` from the stream's topic (bronze only).
    """

    consumed: int | None = None
    ledger_consumed: int | None = None
    table_rows: int | None = None
    late_rows: int | None = None
    quarantined_rows: int | None = None


def judge_balance(ledger: LedgerTotals, counted: Counted, absorbs: str | None) -> Verdict:
    """Rows in = out + late + quarantined + absorbed, with every term counted twice.

    ``absorbs`` names what the stream's logic may absorb (``"duplicates removed"``, ``"events
    folded into state"``); None for a stream that must absorb nothing (bronze)."""
    problems = []
    if counted.consumed is not None and counted.ledger_consumed is not None:
        problems += _differ(
            "consumed from its input",
            counted.consumed,
            "counted by its batches",
            counted.ledger_consumed,
        )
    pairs = (
        ("rows in its table", counted.table_rows, ledger.rows_out),
        ("rows in late_events", counted.late_rows, ledger.rows_late),
        ("rows in quarantine", counted.quarantined_rows, ledger.rows_quarantined),
    )
    for what, actual, recorded in pairs:
        if actual is not None:
            problems += _differ(what, actual, "written by its batches", recorded)
    if ledger.absorbed < 0:
        problems.append(f"{count(-ledger.absorbed)} more rows came out than went in")
    elif ledger.absorbed and absorbs is None:
        problems.append(f"{count(ledger.absorbed)} rows went in and never came out")
    evidence = {
        "rows_in": ledger.rows_in,
        "rows_out": ledger.rows_out,
        "rows_late": ledger.rows_late,
        "rows_quarantined": ledger.rows_quarantined,
        "rows_absorbed": ledger.absorbed,
    }
    equation = (
        f"{count(ledger.rows_in)} in = {count(ledger.rows_out)} out + "
        f"{count(ledger.rows_late)} late + {count(ledger.rows_quarantined)} quarantined + "
        f"{count(ledger.absorbed)} {absorbs or 'absorbed'}"
    )
    if problems:
        return failed(
            NO_SILENT_LOSS,
            "; ".join(problems) + f" ({equation})",
            "Rows were lost or written twice: compare the stream's ledger with its "
            "tables, then reprocess the stream from its input.",
            evidence,
        )
    return passed(NO_SILENT_LOSS, equation, evidence)


def _differ(what: str, actual: int, recorded_as: str, recorded: int) -> list[str]:
    if actual == recorded:
        return []
    return [f"{count(actual)} {what} but {count(recorded)} {recorded_as}"]
