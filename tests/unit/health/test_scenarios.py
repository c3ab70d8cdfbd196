"""The health checks on the labelled scenarios of ``benchmarks/health_eval``: traces recorded once
on real Kafka and Spark (``tests/data/health_scenarios``), judged again here by the sensor's own
evaluation, without a JVM.

A healthy scenario passes every check at every moment of its recording; a faulty one is failed
(or warned, where that is the documented level) by the checks that watch its cause, within their
documented number of batches, with a remedy naming the cause, and passes every other check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.health_eval.fixture import Fixture, declared
from benchmarks.health_eval.markdown import PAGE, page
from benchmarks.health_eval.matrix import seen
from benchmarks.health_eval.model import Scenario
from benchmarks.health_eval.replay import replay, replay_all
from benchmarks.health_eval.scenarios import FAULTY, HEALTHY, SCENARIOS

REPO = Path(__file__).resolve().parents[3]
FIXTURE_BYTES = 200 * 1024  # fixtures are committed: a recording must stay small


def test_the_suite_is_labelled_half_healthy_half_faulty_with_one_name_each() -> None:
    assert len(HEALTHY) == len(FAULTY) >= 12
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)
    assert all(s.healthy and not s.expect for s in HEALTHY)
    assert all(
        not s.healthy and s.cause and any(e.detects for e in s.expect.values()) for s in FAULTY
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_each_fixture_is_small_and_recorded_from_its_scenario(scenario: Scenario) -> None:
    fixture = Fixture.of(scenario.name)
    assert fixture.exists, f"record it: benchmarks/health_eval/record.py --only {scenario.name}"
    facts = fixture.facts()
    assert (facts.stream, facts.run.status) == (scenario.stream, scenario.run.status)
    assert facts.declared == declared(scenario.judged())
    assert (facts.fault_at is None) == scenario.healthy
    size = sum(p.stat().st_size for p in fixture.folder.rglob("*") if p.is_file())
    assert size <= FIXTURE_BYTES


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_every_check_gives_the_scenarios_expected_verdict(scenario: Scenario) -> None:
    outcome = replay(scenario)
    problems = "\n".join(outcome.problems())

    verdicts = {check: j.shown.status for check, j in outcome.judged.items()}
    expected = {check: scenario.expected(check).status for check in outcome.judged}
    assert verdicts == expected, problems
    late = {check: seen(j) for check, j in outcome.judged.items() if j.in_time is False}
    assert late == {}, problems
    unnamed = {check: j.final.remedy for check, j in outcome.judged.items() if j.remedy_ok is False}
    assert unnamed == {}, problems


def test_the_published_page_is_what_the_checks_give_today() -> None:
    committed = (REPO / PAGE).read_text()
    assert committed == page(replay_all(SCENARIOS)), "run `make health-eval` and commit the page"
