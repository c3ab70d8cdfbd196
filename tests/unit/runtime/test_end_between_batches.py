"""Telling a query seen between batches to start no new batch: told when its batch thread is
asleep, ended or finishing a trigger; left alone (state set back) when a trigger passed Spark's
look just before. The JVM objects are stand-ins that play Spark 4.2's batch thread; the real one
is covered by tests/spark/test_stop_at_batch_boundary.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from platform_pipelines.runtime import query_state
from platform_pipelines.runtime.query_state import end_between_batches


@dataclass
class Thread:
    """Spark's batch thread as each look sees it: ``states`` in turn (the last one stays)."""

    states: list[str]
    queued: list[bool]
    alive: bool = True
    interrupted: bool = False  # a stop() came meanwhile

    def isInterrupted(self) -> bool:
        return self.interrupted

    def isAlive(self) -> bool:
        return self.alive

    def getState(self) -> Thread:
        return self

    def name(self) -> str:
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


@dataclass
class Lock:
    thread: Thread
    free: bool = True
    held: bool = False

    def tryLock(self) -> bool:
        self.held = self.free
        return self.free

    def unlock(self) -> None:
        assert self.held
        self.held = False

    def hasQueuedThread(self, thread: Thread) -> bool:
        queued = self.thread.queued
        return queued.pop(0) if len(queued) > 1 else queued[0]


@dataclass
class Query:
    """A query whose status shows ``active`` in turn (whether a trigger is active)."""

    thread: Thread
    active: list[bool]
    lock: Lock = field(init=False)
    states: list[str] = field(default_factory=list)  # what its state was set to

    def __post_init__(self) -> None:
        self.lock = Lock(self.thread)

    @property
    def _jsq(self) -> Query:
        return self

    def streamingQuery(self) -> Query:
        return self

    def awaitProgressLock(self) -> Lock:
        return self.lock

    def queryExecutionThread(self) -> Thread:
        return self.thread

    @property
    def status(self) -> dict:
        active = self.active.pop(0) if len(self.active) > 1 else self.active[0]
        return {"isTriggerActive": active, "message": "Waiting for next trigger"}


@pytest.fixture(autouse=True)
def states_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    def set_state(engine: Query, name: str, expected: str | None = None) -> None:
        assert engine.lock.held, "the state is only set while the progress lock is held"
        engine.states.append(name if expected is None else f"{name} if {expected}")

    monkeypatch.setattr(query_state, "_set_state", set_state)


def test_a_query_asleep_until_its_next_trigger_is_told() -> None:
    query = Query(Thread(["TIMED_WAITING"], [False]), active=[False])
    assert end_between_batches(query) is True  # type: ignore[arg-type]
    assert (query.states, query.lock.held) == (["TERMINATED"], False)


def test_a_trigger_that_passed_its_look_just_before_is_let_go_on() -> None:
    """The thread was past Spark's look, on its way to the lock: it queues with its trigger
    active. The state is set back while the lock is still held."""
    query = Query(Thread(["RUNNABLE"], [False, False, True]), active=[False, True])
    assert end_between_batches(query) is False  # type: ignore[arg-type]
    assert (query.states, query.lock.held) == (["TERMINATED", "ACTIVE if TERMINATED"], False)


def test_a_thread_finishing_its_trigger_or_ending_is_told() -> None:
    finishing = Query(Thread(["RUNNABLE"], [True]), active=[False])
    ended = Query(Thread(["RUNNABLE"], [False], alive=False), active=[False])
    assert end_between_batches(finishing) is True  # type: ignore[arg-type]
    assert end_between_batches(ended) is True  # type: ignore[arg-type]
    assert finishing.states == ended.states == ["TERMINATED"]


@pytest.mark.parametrize(
    ("free", "active"), [(False, False), (True, True)], ids=["lock held", "trigger active"]
)
def test_a_query_choosing_offsets_committing_or_in_a_trigger_is_left_alone(
    free: bool, active: bool
) -> None:
    query = Query(Thread(["RUNNABLE"], [False]), active=[active])
    query.lock.free = free
    assert end_between_batches(query) is False  # type: ignore[arg-type]
    assert (query.states, query.lock.held) == ([], False)


def test_a_thread_that_shows_nothing_within_the_settle_time_is_let_go_on() -> None:
    """Stalled on its way to the lock (say, a long pause of its JVM), it may have passed its
    look: the state is set back; a later look tells it."""
    query = Query(Thread(["RUNNABLE"], [False]), active=[False])
    assert end_between_batches(query, settle_seconds=0.05) is False  # type: ignore[arg-type]
    assert (query.states, query.lock.held) == (["TERMINATED", "ACTIVE if TERMINATED"], False)


def test_a_query_stopped_meanwhile_stays_stopped() -> None:
    query = Query(Thread(["RUNNABLE"], [True], interrupted=True), active=[False, True])
    assert end_between_batches(query) is False  # type: ignore[arg-type]
    assert (query.states, query.lock.held) == (["TERMINATED"], False)


def test_without_a_jvm_thread_per_python_thread_the_lock_is_not_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ended: list[Query] = []
    monkeypatch.setenv("PYSPARK_PIN_THREAD", "false")
    monkeypatch.setattr(query_state, "end_after_batch", ended.append)
    query = Query(Thread(["RUNNABLE"], [False]), active=[False])
    assert end_between_batches(query) is True  # type: ignore[arg-type]
    assert (ended, query.lock.held, query.states) == ([query], False, [])
