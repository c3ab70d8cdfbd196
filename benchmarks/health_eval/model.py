"""What a scenario is: its label, the run facts a recording cannot hold, and the expected verdicts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from platform_pipelines.core.verdict import Status
from platform_pipelines.streams.declare import Stream

# The checks the health sensor judges from files and the broker (``health.evaluate``), in the
# order they are shown; ``kafka_replication`` only for a stream that reads a Kafka topic.
CHECKS = (
    "liveness",
    "falling_behind",
    "state_growth",
    "late_data",
    "checkpoint",
    "kafka_replication",
)


@dataclass(frozen=True)
class RunFacts:
    """What Dagster says about the run that wrote a stream's newest record: a recording has the
    records, not the run's status, so the scenario states it (as the sensor would read it).

    Attributes:
        status: the Dagster run status name (``STARTED``, ``SUCCESS``, ``CANCELED``, ``FAILURE``).
        failure: the first line of a failed run's error; for ``FAILURE`` the recording fills it in
            with what the runner raised.
    """

    status: str = "STARTED"
    failure: str = ""


@dataclass(frozen=True)
class Expect:
    """The verdict one check must give on a scenario.

    Attributes:
        status: the verdict at the moment of judgement.
        within_batches: a fault must be judged ``status`` (or worse) after at most this many
            batches recorded from the fault's start (the bound the check's documentation states).
        within_seconds: ...or within this many seconds of the fault's start (for checks that
            judge silence, which no batch measures)...
        within_stale: ...or within the silence the liveness check allows the stream
            (``stale_after_seconds`` of its records, from its last record on).
        remedy_names: the remedy must name one of these (case-insensitive): the cause injected.
    """

    status: Status
    within_batches: int | None = None
    within_seconds: float | None = None
    within_stale: bool = False
    remedy_names: tuple[str, ...] = ()

    @property
    def detects(self) -> bool:
        """Whether this check is one that must see the scenario's fault."""
        bounded = self.within_batches is not None or self.within_seconds is not None
        return self.status is not Status.PASS and (bounded or self.within_stale)


PASSES = Expect(Status.PASS)


@dataclass(frozen=True)
class Scenario:
    """One labelled scenario.

    Attributes:
        name: what an operator would call it, as an identifier (also the fixture's folder).
        healthy: the label: healthy scenarios must pass every check at every moment.
        summary: what happens, in one line.
        streams: the scenario's stream declarations, upstream first (given the topic's name).
        stream: the stream judged.
        cause: for a faulty scenario, the cause injected.
        expect: for a faulty scenario, the checks that must not pass (unlisted checks must pass).
        run: the run facts at the moment of judgement.
        judged_after: seconds between the end of the recording and the judgement (time that
            passes without any new record: a stuck query, a broker that stays down).
    """

    name: str
    healthy: bool
    summary: str
    streams: Callable[[str], Sequence[Stream]]
    stream: str
    cause: str = ""
    expect: Mapping[str, Expect] = field(default_factory=dict)
    run: RunFacts = RunFacts()
    judged_after: float = 0.0

    @property
    def topic(self) -> str:
        """The Kafka topic the scenario's producer writes: one per scenario."""
        return f"health-{self.name.replace('_', '-')}"

    @property
    def label(self) -> str:
        return "healthy" if self.healthy else "faulty"

    def expected(self, check: str) -> Expect:
        return self.expect.get(check, PASSES)

    def judged(self) -> Stream:
        """The declaration of the judged stream."""
        return next(s for s in self.streams(self.topic) if s.name == self.stream)
