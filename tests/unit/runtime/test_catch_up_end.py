"""A caught-up catch-up query is ended by its next batch (through the gate), and only then let
go of once its last batch committed; stopped outright only when no batch came.

The query is a stand-in: telling it to end after its batch (a JVM call) records when it came, and
its batch thread "ends" when ``awaitTermination`` is called. The real thing is covered by
``tests/spark/test_stop_at_batch_boundary.py``."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from platform_pipelines.runtime import catch_up_end
from platform_pipelines.runtime.catch_up_end import CatchUpEnds
from platform_pipelines.runtime.supervisor import Supervisor
from platform_pipelines.streams.batch_gate import GATE, BatchGate


@dataclass
class CatchingUp:
    """An availableNow query that has read everything and plans no-data batches."""

    id: str = "q-status"
    isActive: bool = True
    running: bool = False  # a batch runs now
    calls: list[str] = field(default_factory=list)

    @property
    def status(self) -> dict:
        message = "Processing new data" if self.running else "Waiting for data to arrive"
        return {"isTriggerActive": self.running, "message": message}

    def awaitTermination(self, timeout: float) -> bool:
        """Returns once the batch thread ended: its last batch committed."""
        self.calls.append("awaitTermination")
        self.running = False
        return True

    def stop(self) -> None:
        self.calls.append(f"stop (batch running: {self.running})")
        self.isActive = self.running = False


@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The queries told to end after their batch (``end_after_batch``), by id."""
    ended: list[str] = []

    def end_after_batch(query: CatchingUp) -> bool:
        ended.append(query.id)
        query.calls.append("told to end after this batch")
        query.isActive = False  # Spark says so at once; its batch still commits
        return True

    monkeypatch.setattr(catch_up_end, "end_after_batch", end_after_batch)
    return ended


def test_the_next_batch_ends_a_caught_up_query_and_its_end_waits_for_that_batch(
    told: list[str],
) -> None:
    gate = BatchGate()
    gate.register("q-status")  # its writer is gated, as every platform query's is
    ends, query = CatchUpEnds(gate), CatchingUp()

    ends.end("service_status", query)  # caught up, between two no-data batches
    assert (told, query.calls, gate.armed(query.id)) == ([], [], True)
    ends.end("service_status", query)  # still caught up at the next poll: nothing more
    assert told == []

    query.running = True
    gate.run(query.id, lambda: query.calls.append("the batch writes"))  # its foreachBatch
    assert told == ["q-status"]
    ends.settle("service_status", query)

    assert query.calls == [
        "told to end after this batch",
        "the batch writes",
        "awaitTermination",
        "stop (batch running: False)",
    ]
    assert not gate.armed(query.id)


def test_a_query_still_running_is_not_settled(told: list[str]) -> None:
    gate = BatchGate()
    gate.register("q-status")
    ends, query = CatchUpEnds(gate), CatchingUp()
    ends.end("service_status", query)

    ends.settle("service_status", query)  # armed, no batch yet: it runs
    ends.settle("other", CatchingUp(isActive=False))  # never told: not ours to settle

    assert query.calls == []


def test_a_query_whose_end_did_not_take_is_stopped_between_batches_then_outright(
    told: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The end did not take (a Spark without the internals it uses): after ``patience`` the
    query is stopped between two batches as a graceful stop does, outright after twice that."""
    gate = BatchGate()
    gate.register("idle")
    gate.register("busy")
    ends = CatchUpEnds(gate, patience=30.0)
    now = [1000.0]
    between: list[str] = []
    monkeypatch.setattr(catch_up_end.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(
        catch_up_end, "end_between_batches", lambda q: between.append(q.id) or q.id == "idle"
    )
    idle, busy = CatchingUp(id="idle"), CatchingUp(id="busy")
    ends.end("status_idle", idle)
    ends.end("status_busy", busy)

    now[0] += 29
    ends.end("status_idle", idle)  # within its patience: nothing
    assert (between, idle.calls) == ([], [])
    now[0] += 2
    busy.running = True  # a batch is being planned: not cut
    ends.end("status_busy", busy)
    ends.end("status_idle", idle)  # between batches: stopped as a graceful stop does
    assert between == ["idle"]
    assert (idle.calls, busy.calls) == (["stop (batch running: False)"], [])
    now[0] += 30
    ends.end("status_busy", busy)  # twice its patience, still in batches: outright

    assert busy.calls == ["stop (batch running: True)"]
    assert told == []


def test_a_query_started_again_forgets_the_end_armed_for_the_one_before(told: list[str]) -> None:
    gate = BatchGate()
    gate.register("q-status")
    ends, failed = CatchUpEnds(gate), CatchingUp()
    ends.end("service_status", failed)

    ends.forget("service_status", failed)
    again = CatchingUp()
    ends.end("service_status", again)  # caught up again: armed for the new query
    gate.run(again.id, lambda: None)

    assert told == ["q-status"] and again.calls == ["told to end after this batch"]
    assert failed.calls == []


def test_a_query_without_a_gated_writer_is_told_at_once(told: list[str]) -> None:
    ends, query = CatchUpEnds(BatchGate()), CatchingUp()

    ends.end("not_platform", query)
    ends.settle("not_platform", query)

    assert query.calls == [
        "told to end after this batch",
        "awaitTermination",
        "stop (batch running: False)",
    ]


@dataclass
class CaughtUpQuery(CatchingUp):
    """What the supervisor reads of a caught-up catch-up: its last batch read nothing."""

    id: str = "q-caught-up-supervised"
    recentProgress: list[dict] = field(default_factory=list)
    lastProgress: dict = field(default_factory=lambda: {"numInputRows": 0})

    @property
    def status(self) -> dict:
        return {**super().status, "isDataAvailable": False}

    def exception(self) -> None:
        return None


def test_the_supervisor_lets_the_last_batch_commit_before_anything_else_is_started(
    told: list[str],
) -> None:
    """The supervisor's watch (the topic wait, which starts the continuous phase) runs only
    after a caught-up query that was told to end has finished its last batch."""
    query, watched = CaughtUpQuery(), []
    GATE.register(query.id)
    supervisor = Supervisor(lambda n, p: None, watch=lambda: watched.append(list(query.calls)))
    supervisor.add("service_status", query, stop_when_caught_up=True)  # type: ignore[arg-type]
    try:
        supervisor.poll()  # caught up: armed for its next batch
        GATE.run(query.id, lambda: query.calls.append("the batch writes"))
        supervisor.poll()
    finally:
        GATE.disarm(query.id)

    assert watched == [
        [],
        [
            "told to end after this batch",
            "the batch writes",
            "awaitTermination",
            "stop (batch running: False)",
        ],
    ]
