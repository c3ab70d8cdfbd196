"""A recorded scenario judged again, without a JVM, by the health sensor's own evaluation.

``evaluate_stream`` (what the sensor runs on every tick) is called on the fixture's checkpoint
and records as they stood at a moment ``t``: the records written by then (the newest
``RECORDS_PER_EVALUATION``, as the sensor reads them), the run state ``classify_run`` gives for
the scenario's run facts, and the broker's answer at ``t``. The checkpoint and the run facts are
those of the moment of judgement.

The broker's end offsets were asked for once a second while the recording ran. As the checkpoint
on disk is the one at the moment of judgement, the end offsets of ``t`` are moved on by what the
stream committed between ``t`` and then: the lag the sensor counts against that checkpoint is
the lag at ``t``. The broker's own answer at the end (its replicas, or why it did not answer)
stands for every moment.

A healthy scenario is judged at every batch and every few seconds from its first record to the
moment of judgement: what an operator sees is the worst verdict of that timeline. A faulty one is
judged at the moment of judgement, and from the fault's start on to find how many batches (or
seconds) each check needed to see it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.health_eval.fixture import Facts, Fixture, Offsets, offsets_from_json
from benchmarks.health_eval.model import CHECKS, Expect, Scenario
from platform_pipelines.core.spark_progress import started_at
from platform_pipelines.core.verdict import Status, Verdict
from platform_pipelines.health.checkpoint import (
    CheckpointExpectations,
    inspect_checkpoint,
    kafka_committed_offsets,
)
from platform_pipelines.health.evaluate import (
    RECORDS_PER_EVALUATION,
    Broker,
    HealthConfig,
    evaluate_stream,
)
from platform_pipelines.health.liveness import stale_after_seconds
from platform_pipelines.health.policy import HealthPolicy
from platform_pipelines.health.runs import classify_run

TIMELINE_STEP_SECONDS = 5.0  # a healthy recording is judged this often, and at every batch
DETECTION_STEP_SECONDS = 1.0  # from a fault's start on, until every check that must has seen it
MAX_STEPS = 300  # a long wait (a stream stopped for an hour) is judged at this many moments


@dataclass(frozen=True)
class Judged:
    """One check on one scenario.

    Attributes:
        final: the verdict at the moment of judgement.
        worst: the worst verdict of the timeline (healthy scenarios; else ``final``).
        worst_at: seconds after the first record when ``worst`` was first given.
        batches: for a check that must detect the fault, batches recorded from the fault's start
            to the first moment it did not pass (None: it never did).
        seconds: ...and the seconds from the fault's start to that moment.
        limit_seconds: the bound in seconds, for a check bounded by time (resolved for the
            recording when it is the liveness check's stale limit).
    """

    check: str
    expected: Expect
    final: Verdict
    worst: Verdict
    worst_at: float = 0.0
    batches: int | None = None
    seconds: float | None = None
    limit_seconds: float | None = None

    @property
    def shown(self) -> Verdict:
        """The verdict the matrix counts: the worst seen on a healthy scenario, else the final."""
        return self.worst

    @property
    def status_ok(self) -> bool:
        return self.shown.status is self.expected.status

    @property
    def in_time(self) -> bool | None:
        """Whether the fault was seen within the documented bound (None: not a detecting check)."""
        expected = self.expected
        if not expected.detects:
            return None
        if self.batches is None or self.seconds is None:
            return False
        if expected.within_batches is not None:
            return self.batches <= expected.within_batches
        return self.limit_seconds is not None and self.seconds <= self.limit_seconds

    @property
    def remedy_ok(self) -> bool | None:
        """Whether the remedy names the injected cause (None: nothing to name)."""
        names = self.expected.remedy_names
        if not names:
            return None
        remedy = self.final.remedy.lower()
        return any(name.lower() in remedy for name in names)

    @property
    def ok(self) -> bool:
        return self.status_ok and self.in_time is not False and self.remedy_ok is not False

    @property
    def bound(self) -> str:
        """``5 batches`` or ``62 s``: how soon the fault had to be seen."""
        if self.expected.within_batches is not None:
            return f"{self.expected.within_batches} batches"
        return f"{self.limit_seconds or 0:.0f} s"


@dataclass(frozen=True)
class Outcome:
    """Every check of one scenario, and what the fixture measured."""

    scenario: Scenario
    facts: Facts
    judged: dict[str, Judged]
    batches: int

    @property
    def ok(self) -> bool:
        return all(j.ok for j in self.judged.values())

    def problems(self) -> list[str]:
        """One line per check that did not give what the scenario expects."""
        lines = []
        for check, j in self.judged.items():
            if not j.status_ok:
                when = (
                    f" ({j.worst_at:.0f} s after the first record)" if self.scenario.healthy else ""
                )
                lines.append(f"{check}: expected {j.expected.status}, got {j.shown.line()}{when}")
            if j.in_time is False:
                seen = (
                    "never"
                    if j.batches is None
                    else f"after {j.batches} batches, {j.seconds:.0f} s"
                )
                lines.append(f"{check}: fault seen {seen}; bound {j.bound}")
            if j.remedy_ok is False:
                names = " or ".join(repr(n) for n in j.expected.remedy_names)
                lines.append(f"{check}: remedy does not name {names}: {j.final.remedy!r}")
        return lines


class Replay:
    """A fixture, ready to be judged at any moment."""

    def __init__(self, scenario: Scenario, fixture: Fixture) -> None:
        self.scenario = scenario
        self.fixture = fixture
        self.facts = fixture.facts()
        self.records = sorted(fixture.records(), key=lambda r: r.ts)
        self.stream = scenario.judged()
        self.lakehouse = fixture.lakehouse
        checkpoint = inspect_checkpoint(self.lakehouse.checkpoint(self.stream.name))
        self.committed_final = kafka_committed_offsets(checkpoint)
        self.config = HealthConfig(
            expectations=CheckpointExpectations(
                state_partitions=self.facts.state_partitions,
                min_batches_to_retain=self.facts.min_batches_to_retain,
            )
        )

    @property
    def judged_at(self) -> float:
        return self.facts.ended_at + self.scenario.judged_after

    def at(self, now: float) -> dict[str, Verdict]:
        """Every check's verdict at ``now``, as the sensor would have given it."""
        seen = [r for r in self.records if r.ts <= now][-RECORDS_PER_EVALUATION:]
        run = self.facts.run
        state = classify_run(run.status, seen, run.failure, alive=lambda pid: True)
        broker = self.broker_at(now)
        health = evaluate_stream(self.stream, self.lakehouse, seen, state, broker, now, self.config)
        return {v.check: v for v in health.verdicts if v.check in CHECKS}

    def broker_at(self, now: float) -> Broker | None:
        """The broker's answer at ``now``: its end offsets then (moved on by what the stream
        committed since, see the module doc), or that it did not answer."""
        final, series = self.facts.broker, self.facts.end_offsets
        if final is None or not series or now >= self.facts.ended_at:
            return final
        _, ends = max((x for x in series if x[0] <= now), key=lambda x: x[0], default=series[0])
        if ends is None:
            return Broker(final.address, None, final.error or "connection refused")
        committed = self.committed_at(now)
        moved = {
            topic: {
                p: end
                + self.committed_final.get(topic, {}).get(p, 0)
                - committed.get(topic, {}).get(p, 0)
                for p, end in parts.items()
            }
            for topic, parts in ends.items()
        }
        return Broker(final.address, moved, replication=final.replication)

    def committed_at(self, now: float) -> Offsets:
        """The Kafka offsets the stream had committed at ``now``: the end offsets of its newest
        batch recorded by then."""
        done = [r for r in self.records if r.event == "progress" and r.ts <= now]
        for record in reversed(done):
            for source in (record.progress or {}).get("sources") or []:
                end = source.get("endOffset")
                if isinstance(end, dict) and self.stream.topic in end:
                    return offsets_from_json(end)
        return {}

    def moments(self, start: float, end: float, step: float = TIMELINE_STEP_SECONDS) -> list[float]:
        """Each batch's record time in ``[start, end]``, every ``step`` seconds (fewer over a
        long wait), and ``end``."""
        step = max(step, (end - start) / MAX_STEPS)
        steps = int((end - start) // step) + 1
        times = {start + i * step for i in range(steps)} | {end}
        times |= {r.ts for r in self.records if r.event == "progress" and start <= r.ts <= end}
        return sorted(t for t in times if start <= t <= end)

    def batches_between(self, start: float, end: float) -> int:
        """Batches that started at or after ``start`` (so could see what happened then) and
        were recorded by ``end``."""
        return sum(
            1
            for r in self.records
            if r.event == "progress"
            and r.ts <= end
            and (started_at(r.progress or {}) or r.ts) >= start
        )


def replay(scenario: Scenario, fixture: Fixture | None = None) -> Outcome:
    """Judge a recorded scenario: every check's verdict, how soon a fault was seen."""
    r = Replay(scenario, fixture or Fixture.of(scenario.name))
    final = r.at(r.judged_at)
    worst: dict[str, tuple[Verdict, float]] = {c: (v, r.judged_at) for c, v in final.items()}
    if scenario.healthy:
        first = r.records[0].ts if r.records else r.judged_at
        worst = _worst_over(r, r.moments(first, r.judged_at), worst)
    detected = _detection(r, scenario, final)
    first_ts = r.records[0].ts if r.records else r.judged_at
    judged = {
        check: Judged(
            check,
            scenario.expected(check),
            final[check],
            worst[check][0],
            worst[check][1] - first_ts,
            *detected.get(check, (None, None)),
            limit_seconds=_limit(r, scenario.expected(check)),
        )
        for check in CHECKS
        if check in final
    }
    return Outcome(scenario, r.facts, judged, sum(1 for x in r.records if x.event == "progress"))


def _limit(r: Replay, expected: Expect) -> float | None:
    """The time bound of a check, in seconds from the fault's start: stated, or the silence the
    liveness check allows (its stale limit, counted from the stream's last record; plus the
    step at which it is looked for)."""
    if expected.within_seconds is not None:
        return expected.within_seconds
    if not expected.within_stale:
        return None
    start = r.facts.fault_at if r.facts.fault_at is not None else r.judged_at
    seen = [x for x in r.records if x.ts <= r.judged_at]
    silent_from = max((x.ts for x in seen), default=start)
    limit = stale_after_seconds(seen, HealthPolicy())
    return max(0.0, silent_from - start) + limit + DETECTION_STEP_SECONDS


def _worst_over(
    r: Replay, moments: Sequence[float], worst: dict[str, tuple[Verdict, float]]
) -> dict[str, tuple[Verdict, float]]:
    """The worst verdict of each check over ``moments`` (the first of the worst; the final
    verdict when all pass)."""
    result: dict[str, tuple[Verdict, float]] = {}
    for now in moments:
        for check, verdict in r.at(now).items():
            held = result.get(check)
            if held is None or verdict.status.rank > held[0].status.rank:
                result[check] = (verdict, now)
    return {
        check: held if held[0].status is not Status.PASS else worst[check]
        for check, held in {**worst, **result}.items()
    }


def _detection(
    r: Replay, scenario: Scenario, final: dict[str, Verdict]
) -> dict[str, tuple[int, float]]:
    """For each check that must detect the fault: batches and seconds from the fault's start
    to the first moment it did not pass."""
    checks = [c for c in final if scenario.expected(c).detects]
    start = r.facts.fault_at
    if not checks or start is None:
        return {}
    found: dict[str, tuple[int, float]] = {}
    for now in r.moments(start, r.judged_at, DETECTION_STEP_SECONDS):
        for check, verdict in r.at(now).items():
            if check in checks and check not in found and verdict.status is not Status.PASS:
                found[check] = (r.batches_between(start, now), now - start)
        if len(found) == len(checks):
            break
    return found


def replay_all(scenarios: Sequence[Scenario]) -> list[Outcome]:
    """Every scenario that has a fixture."""
    return [replay(s) for s in scenarios if Fixture.of(s.name).exists]
