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
from platform_pipelines.streams.batch_gate import BatchGate


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


def test_a_query_no_batch_ended_is_stopped_outright_between_batches(
    told: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = BatchGate()
    gate.register("q-status")
    ends, query = CatchUpEnds(gate, patience=30.0), CatchingUp()
    now = [1000.0]
    monkeypatch.setattr(catch_up_end.time, "monotonic", lambda: now[0])
    ends.end("service_status", query)

    now[0] += 31
    query.running = True  # a batch is being planned: not cut
    ends.end("service_status", query)
    assert query.calls == []
    query.running = False
    ends.end("service_status", query)
    ends.settle("service_status", query)

    assert query.calls == [
        "stop (batch running: False)",
        "awaitTermination",
        "stop (batch running: False)",
    ]
    assert (told, gate.armed(query.id)) == ([], False)


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
