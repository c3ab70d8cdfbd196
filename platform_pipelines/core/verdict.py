"""The result of one health judgement: a status, the numbers behind it and what to do."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

Evidence = Mapping[str, float | int | str]


class Status(StrEnum):
    """Ordered from best to worst: ``worst`` of several verdicts is the overall health."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}


@dataclass(frozen=True)
class Verdict:
    """One judgement on one stream.

    Attributes:
        check: the judgement's name, also the Dagster asset check's name (e.g. ``state_growth``).
        status: pass, warn or fail.
        summary: one line saying what was found, with the key number in it.
        evidence: the numbers the judgement was made on (plotted and shown in the UI).
        remedy: one line saying what to do; empty when the status is pass.
    """

    check: str
    status: Status
    summary: str
    evidence: Evidence = field(default_factory=dict)
    remedy: str = ""

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS

    def line(self) -> str:
        """``fail state_growth: <summary> -> <remedy>``: one readable line for logs and the CLI."""
        text = f"{self.status.value} {self.check}: {self.summary}"
        return f"{text} -> {self.remedy}" if self.remedy else text


def passed(check: str, summary: str, evidence: Evidence | None = None) -> Verdict:
    return Verdict(check, Status.PASS, summary, dict(evidence or {}))


def warned(check: str, summary: str, remedy: str, evidence: Evidence | None = None) -> Verdict:
    return Verdict(check, Status.WARN, summary, dict(evidence or {}), remedy)


def failed(check: str, summary: str, remedy: str, evidence: Evidence | None = None) -> Verdict:
    return Verdict(check, Status.FAIL, summary, dict(evidence or {}), remedy)


def worst(verdicts: Iterable[Verdict]) -> Status:
    """The worst status among ``verdicts`` (pass when there are none)."""
    return max((v.status for v in verdicts), key=lambda s: s.rank, default=Status.PASS)


def combine(check: str, verdicts: Iterable[Verdict]) -> Verdict:
    """Several judgements shown as one check: the worst status, the summaries of what is not
    fine (or all of them when everything passes), every remedy and all the evidence."""
    verdicts = list(verdicts)
    status = worst(verdicts)
    shown = [v for v in verdicts if v.status is not Status.PASS] or verdicts
    evidence: dict[str, float | int | str] = {}
    for v in verdicts:
        evidence.update(v.evidence)
    return Verdict(
        check,
        status,
        "; ".join(v.summary for v in shown) or "nothing to judge",
        evidence,
        " ".join(v.remedy for v in shown if v.remedy),
    )
