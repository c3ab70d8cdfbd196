"""The published result: per check, a confusion matrix over the scenarios; per scenario, every
verdict against what it must be; and whether the suite's targets are met.

Rows of a check's matrix: the healthy scenarios (the worst verdict each showed), the faulty ones
whose cause the check watches (its verdict when judged, and after how many batches it first did
not pass), and the faulty ones whose cause another check watches (it must pass those).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.health_eval.model import CHECKS
from benchmarks.health_eval.replay import Judged, Outcome
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.policy import HealthPolicy

ROWS = ("healthy", "faulty, its cause", "faulty, other cause")
STATUSES = tuple(Status)
STYLE = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "red"}


def row_of(outcome: Outcome, judged: Judged) -> str:
    if outcome.scenario.healthy:
        return ROWS[0]
    return ROWS[1] if judged.expected.detects else ROWS[2]


def matrix(outcomes: Sequence[Outcome]) -> dict[str, dict[str, dict[str, int]]]:
    """``{check: {row: {status: scenarios}}}``."""
    counts = {c: {r: dict.fromkeys((s.value for s in STATUSES), 0) for r in ROWS} for c in CHECKS}
    for outcome in outcomes:
        for check, judged in outcome.judged.items():
            counts[check][row_of(outcome, judged)][judged.shown.status.value] += 1
    return counts


def detections(outcomes: Sequence[Outcome], check: str) -> list[str]:
    """``scenario: 5 batches (bound 5)`` for every faulty scenario ``check`` must see."""
    found = []
    for outcome in outcomes:
        judged = outcome.judged.get(check)
        if judged is None or not judged.expected.detects:
            continue
        found.append(f"{outcome.scenario.name}: {seen(judged)}")
    return found


def seen(judged: Judged) -> str:
    """``after 5 batches, 41 s (bound 5 batches)``, or ``never (...)``."""
    if judged.batches is None or judged.seconds is None:
        return f"never (bound {judged.bound})"
    batches = f"{judged.batches} batch{'' if judged.batches == 1 else 'es'}"
    return f"after {batches}, {judged.seconds:.0f} s (bound {judged.bound})"


def targets(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The issue's targets: no warning or failure on a healthy scenario; every fault seen at its
    documented level within its bound; every remedy naming the cause."""
    healthy = [o for o in outcomes if o.scenario.healthy]
    faulty = [o for o in outcomes if not o.scenario.healthy]
    false_alarms = [
        f"{o.scenario.name}/{j.check}: {j.shown.status}"
        for o in healthy
        for j in o.judged.values()
        if j.shown.status is not Status.PASS
    ]
    detecting = [(o, j) for o in faulty for j in o.judged.values() if j.expected.detects]
    seen_in_time = [o.scenario.name for o in faulty if _all_seen(o)]
    remedies = [(o, j) for o, j in detecting if j.remedy_ok is not None]
    named = [f"{o.scenario.name}/{j.check}" for o, j in remedies if j.remedy_ok]
    return {
        "healthy_scenarios": len(healthy),
        "healthy_warned_or_failed": false_alarms,
        "faulty_scenarios": len(faulty),
        "faulty_seen_at_level_in_time": len(seen_in_time),
        "faulty_missed": sorted({o.scenario.name for o in faulty} - set(seen_in_time)),
        "remedies_checked": len(remedies),
        "remedies_naming_the_cause": len(named),
        "scenarios_as_expected": sum(o.ok for o in outcomes),
        "met": all(o.ok for o in outcomes) and len(outcomes) > 0,
    }


def _all_seen(outcome: Outcome) -> bool:
    detecting = [j for j in outcome.judged.values() if j.expected.detects]
    return bool(detecting) and all(j.status_ok and j.in_time for j in detecting)


def document(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The results file's content."""
    versions = sorted({o.facts.spark_version for o in outcomes})
    return {
        "suite": "health_eval",
        "recorded_with": {"spark": versions},
        "policy": asdict(HealthPolicy()),
        "targets": targets(outcomes),
        "matrix": matrix(outcomes),
        "scenarios": [_scenario(o) for o in outcomes],
    }


def _scenario(outcome: Outcome) -> dict[str, Any]:
    scenario = outcome.scenario
    return {
        "name": scenario.name,
        "label": scenario.label,
        "summary": scenario.summary,
        "cause": scenario.cause,
        "batches": outcome.batches,
        "as_expected": outcome.ok,
        "problems": outcome.problems(),
        "checks": {check: _check(j) for check, j in outcome.judged.items()},
    }


def _check(judged: Judged) -> dict[str, Any]:
    shown = judged.shown
    result: dict[str, Any] = {
        "expected": judged.expected.status.value,
        "verdict": shown.status.value,
        "summary": shown.summary,
        "remedy": shown.remedy,
    }
    if judged.expected.detects:
        result.update(
            detected_after_batches=judged.batches,
            detected_after_seconds=None if judged.seconds is None else round(judged.seconds, 1),
            within_batches=judged.expected.within_batches,
            within_seconds=None if judged.limit_seconds is None else round(judged.limit_seconds, 1),
            in_time=judged.in_time,
        )
    if judged.remedy_ok is not None:
        result.update(remedy_names_cause=judged.remedy_ok, cause_names=judged.expected.remedy_names)
    return result


def print_matrix(console: Console, outcomes: Sequence[Outcome]) -> None:
    """The confusion matrices, one row per check."""
    counts = matrix(outcomes)
    table = Table(title="Health checks against the labelled scenarios (scenarios per verdict)")
    table.add_column("check", style="bold")
    for row in ROWS:
        table.add_column(f"{row}\npass / warn / fail", justify="center")
    table.add_column("faulty, its cause: seen")
    for check in CHECKS:
        cells = [
            " / ".join(_count(counts[check][row][s.value], s, row) for s in STATUSES)
            for row in ROWS
        ]
        table.add_row(check, *cells, "\n".join(detections(outcomes, check)) or "-")
    console.print(table)


def _count(n: int, status: Status, row: str) -> str:
    bad = (row != ROWS[1] and status is not Status.PASS) or (
        row == ROWS[1] and status is Status.PASS
    )
    return f"[{'bold red' if bad and n else 'dim' if not n else STYLE[status]}]{n}[/]"


def print_scenarios(console: Console, outcomes: Sequence[Outcome]) -> None:
    """One row per scenario: every check's verdict (expected one in brackets when it differs)."""
    table = Table(title="Verdicts per scenario (healthy: the worst over the recording)")
    table.add_column("scenario", style="bold")
    table.add_column("label")
    for check in CHECKS:
        table.add_column(check.replace("_", " "), justify="center")
    table.add_column("as expected", justify="center")
    for o in outcomes:
        cells = []
        for check in CHECKS:
            j = o.judged.get(check)
            if j is None:
                cells.append("[dim]-[/]")
                continue
            status = j.shown.status
            text = f"[{STYLE[status]}]{status.value}[/]"
            if not j.ok:
                text += (
                    f" [bold red](≠ {j.expected.status.value})[/]"
                    if not j.status_ok
                    else " [bold red]![/]"
                )
            cells.append(text)
        table.add_row(
            o.scenario.name, o.scenario.label, *cells, "yes" if o.ok else "[bold red]no[/]"
        )
    console.print(table)


def print_targets(console: Console, outcomes: Sequence[Outcome]) -> None:
    t = targets(outcomes)
    alarms = t["healthy_warned_or_failed"]
    console.print(
        f"Healthy: {len(alarms)} warn/fail verdicts on {t['healthy_scenarios']} scenarios (target 0)"
        + (f": {', '.join(alarms)}" if alarms else "")
    )
    missed = t["faulty_missed"]
    console.print(
        f"Faulty: {t['faulty_seen_at_level_in_time']} of {t['faulty_scenarios']} seen at their "
        "level within their bound" + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    console.print(
        f"Remedies naming the cause: {t['remedies_naming_the_cause']} of {t['remedies_checked']}"
    )
    for o in outcomes:
        for line in o.problems():
            console.print(f"  [red]{o.scenario.name}[/] {line}")
    console.print("[bold green]targets met[/]" if t["met"] else "[bold red]targets not met[/]")
