"""The supervisor reports each batch that ran once, and never a trigger that found no data; a
stop waits for a running batch, unless a second request came.

The queries are recorded ones: their ``recentProgress`` is what Spark 4.2 reported for a query
with a processing-time trigger (an idle trigger, then the batch that read the new rows). Telling
one to end after its batch is a JVM call, replaced here by a record of when it came: the real
one is covered by tests/spark/test_stop_at_batch_boundary.py and
tests/dagster/test_terminal_stop.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from platform_pipelines.runtime import supervisor as supervisor_module
from platform_pipelines.runtime.interrupts import StopRequest
from platform_pipelines.runtime.supervisor import StreamFailedError, Supervisor
from platform_pipelines.streams.batch_gate import BatchGate

RAN = {"addBatch": 120, "getBatch": 0, "latestOffset": 3, "triggerExecution": 400, "walCommit": 9}


def ran(batch_id: int, rows: int, at: str) -> dict:
    return {"batchId": batch_id, "numInputRows": rows, "timestamp": at, "durationMs": RAN}


def idle(batch_id: int, at: str) -> dict:
    """A trigger that found no new data: the id of the batch still to come, no rows, no
    ``addBatch`` time."""
    durations = {"latestOffset": 2, "triggerExecution": 2}
    return {"batchId": batch_id, "numInputRows": 0, "timestamp": at, "durationMs": durations}


@dataclass
class RecordedQuery:
    recentProgress: list[dict] = field(default_factory=list)
    isActive: bool = True
    running: bool = False  # a batch runs now
    stopped_running: bool | None = None  # whether a batch ran when stop() was called
    runId: str = "run-1"

    @property
    def status(self) -> dict:
        message = "Processing new data" if self.running else "Waiting for next trigger"
        return {"isTriggerActive": self.running, "message": message}

    def exception(self) -> None:
        return None

    def stop(self) -> None:
        if self.stopped_running is None:
            self.stopped_running = self.running
        self.isActive = self.running = False


def test_an_idle_trigger_does_not_hide_the_batch_that_runs_after_it() -> None:
    seen: list[tuple[str, int, int]] = []
    supervisor = Supervisor(lambda name, p: seen.append((name, p["batchId"], p["numInputRows"])))
    query = RecordedQuery([ran(0, 6, "2026-11-26T16:30:00.000Z")])
    supervisor.add("clickstream_raw", query)  # type: ignore[arg-type]

    supervisor.poll()
    query.recentProgress.append(idle(1, "2026-11-26T16:30:10.000Z"))
    supervisor.poll()
    query.recentProgress.append(ran(1, 221, "2026-11-26T16:30:20.000Z"))
    supervisor.poll()
    supervisor.poll()

    assert seen == [("clickstream_raw", 0, 6), ("clickstream_raw", 1, 221)]
    assert supervisor.last_batch == {"clickstream_raw": 1}


def test_a_second_request_stops_a_running_batch_at_once_and_names_it() -> None:
    stop = StopRequest()
    stop.note(2, 10.0)
    stop.note(2, 12.0)  # a second Ctrl-C, two seconds after the first
    supervisor = Supervisor(lambda name, p: None, stop=stop)
    busy = RecordedQuery([ran(3, 50, "2026-11-26T16:30:00.000Z")], running=True)
    idle_query = RecordedQuery([ran(8, 5, "2026-11-26T16:30:00.000Z")])
    supervisor.add("events", busy)  # type: ignore[arg-type]
    supervisor.add("clickstream_raw", idle_query)  # type: ignore[arg-type]

    stopped = supervisor.stop_all()

    assert stopped == {"events": 3, "clickstream_raw": 8}
    assert supervisor.abandoned == ["events"]
    assert (busy.stopped_running, idle_query.stopped_running) == (True, False)


def test_a_query_waiting_for_its_trigger_is_stopped_without_cutting_a_batch() -> None:
    supervisor = Supervisor(lambda name, p: None, stop=StopRequest(signal=2, count=1))
    query = RecordedQuery([ran(0, 6, "2026-11-26T16:30:00.000Z")])
    supervisor.add("events", query)  # type: ignore[arg-type]

    assert supervisor.stop_all() == {"events": 0}
    assert (supervisor.abandoned, query.stopped_running, query.isActive) == ([], False, False)


@dataclass
class StartingQuery(RecordedQuery):
    """A query whose trigger began just before it was told to end: the first look shows the new
    trigger's fresh status (not active yet), the next ones its batch running, then done."""

    looks: int = 0

    @property
    def status(self) -> dict:
        self.looks += 1
        if self.looks == 1:
            return {"isTriggerActive": False, "message": "Initializing StreamExecution"}
        self.running = self.looks < 4
        return super().status

    def stop(self) -> None:
        self.running = self.looks < 4  # the batch began at the first look, done after the 3rd
        super().stop()


def test_a_trigger_that_began_as_the_stop_came_is_let_commit_its_batch() -> None:
    supervisor = Supervisor(lambda name, p: None, stop=StopRequest(signal=2, count=1))
    query = StartingQuery([ran(2, 1, "2026-11-26T16:30:00.000Z")])
    supervisor.add("events", query)  # type: ignore[arg-type]

    supervisor.stop_all()

    assert (supervisor.abandoned, query.stopped_running) == ([], False)


@dataclass
class PlanningQuery(RecordedQuery):
    """A query whose batch is being planned as the stop comes (its trigger active); its
    ``foreachBatch`` runs at the third look, then the batch commits."""

    id: str = "q-planning"
    gate: BatchGate = field(default_factory=BatchGate)
    looks: int = 0
    ended_at_look: int | None = None

    @property
    def status(self) -> dict:
        self.looks += 1
        if self.looks == 3:
            self.gate.run(self.id, lambda: None)  # the batch's foreachBatch
        self.running = self.looks < 4
        return super().status


def test_a_batch_being_planned_is_told_to_end_only_from_its_foreach_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spark cuts a batch whose query it finds told to end when its planning ends: the end
    comes from the batch's ``foreachBatch`` (the third look), not when the stop came."""
    query = PlanningQuery([ran(4, 2, "2026-11-26T16:30:00.000Z")])
    query.gate.register(query.id)  # its writer is gated, as every platform query's is

    def end_after_batch(q: PlanningQuery) -> bool:
        q.ended_at_look = q.looks
        return True

    monkeypatch.setattr(supervisor_module, "GATE", query.gate)
    monkeypatch.setattr(supervisor_module, "end_after_batch", end_after_batch)
    supervisor = Supervisor(lambda name, p: None, stop=StopRequest(signal=2, count=1))
    supervisor.add("events", query)  # type: ignore[arg-type]

    assert supervisor.stop_all() == {"events": 4}
    assert (query.ended_at_look, query.stopped_running, supervisor.abandoned) == (3, False, [])
    assert not query.gate.armed(query.id)


class EndedThread:
    """What Spark says of a query whose batch thread ended: ``_jsq.streamingQuery()`` and so on."""

    def streamingQuery(self) -> EndedThread:
        return self

    def queryExecutionThread(self) -> EndedThread:
        return self

    def isAlive(self) -> bool:
        return False


@dataclass
class EndedQuery(RecordedQuery):
    """A query told to end while it was starting: its thread ended with the status it had."""

    _jsq: EndedThread = field(default_factory=EndedThread)

    @property
    def status(self) -> dict:
        return {"isTriggerActive": False, "message": "Initializing sources"}


def test_a_query_whose_thread_ended_is_stopped_without_waiting_for_a_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(supervisor_module, "STOP_AT_BATCH_BOUNDARY_SECONDS", 2.0)
    supervisor = Supervisor(lambda name, p: None, stop=StopRequest(signal=2, count=1))
    supervisor.add("events", EndedQuery())  # type: ignore[arg-type]

    assert supervisor.stop_all() == {"events": -1}
    assert supervisor.abandoned == []  # no batch ran: none was abandoned


BUSY = "Python worker failed to connect back."  # Spark's first line when a Python start times out


@dataclass
class FailedQuery(RecordedQuery):
    """A query that died of ``error``."""

    error: str = BUSY
    isActive: bool = False

    def exception(self) -> RuntimeError:  # type: ignore[override]
        return RuntimeError(self.error)


def restarting(queries: list[RecordedQuery], started: list[str]) -> Callable[[], RecordedQuery]:
    """A restart that hands out ``queries`` in turn and notes each call in ``started``."""

    def restart() -> RecordedQuery:
        started.append("restart")
        return queries.pop(0)

    return restart


def test_a_query_that_dies_of_a_busy_machine_starts_again_and_its_end_is_reported() -> None:
    ends: list[tuple[str, str, str]] = []
    notes: list[tuple[str, str]] = []
    started: list[str] = []
    supervisor = Supervisor(
        lambda name, p: None,
        on_end=lambda name, error, run: ends.append((name, str(error), run)),
        on_restart=lambda name, note: notes.append((name, note)),
    )
    again = RecordedQuery([ran(0, 4, "2026-11-26T16:30:00.000Z")], runId="run-2")
    supervisor.add("key_counts", FailedQuery(runId="run-1"), restart=restarting([again], started))  # type: ignore[arg-type]

    supervisor.poll()
    supervisor.poll()

    assert started == ["restart"]
    assert supervisor.query("key_counts") is again
    assert supervisor.restarts == {"key_counts": 1}
    assert supervisor.last_batch == {"key_counts": 0}  # the new query's batch is reported
    assert ends == [("key_counts", BUSY, "run-1")]
    assert notes == [
        (
            "key_counts",
            "Stream 'key_counts' stopped: a Python process Spark started did not connect back "
            "within Spark's fixed 10 s: the machine was busy; starting it again from its "
            "checkpoint (restart 1 of at most 2 in this run)",
        )
    ]


def test_the_third_failure_of_a_busy_machine_in_a_run_fails_the_run() -> None:
    started: list[str] = []
    supervisor = Supervisor(lambda name, p: None)
    more = [FailedQuery(runId="run-2"), FailedQuery(runId="run-3")]
    supervisor.add("key_counts", FailedQuery(), restart=restarting(more, started))  # type: ignore[arg-type]

    supervisor.poll()
    supervisor.poll()
    with pytest.raises(StreamFailedError, match="key_counts' failed: Python worker failed"):
        supervisor.poll()
    assert (started, supervisor.restarts) == (["restart", "restart"], {"key_counts": 2})


@pytest.mark.parametrize(
    ("error", "restart"),
    [("[DIVIDE_BY_ZERO] Division by zero.", True), (BUSY, False)],
    ids=["a failure of the data or the code", "no way to restart it"],
)
def test_other_failures_fail_the_run_without_a_restart(error: str, restart: bool) -> None:
    started: list[str] = []
    supervisor = Supervisor(lambda name, p: None)
    again = restarting([RecordedQuery()], started) if restart else None
    supervisor.add("events", FailedQuery(error=error), restart=again)  # type: ignore[arg-type]

    with pytest.raises(StreamFailedError, match=r"Stream 'events' failed: "):
        supervisor.poll()
    assert (started, supervisor.restarts) == ([], {})


def test_a_query_that_dies_of_a_busy_machine_after_a_stop_was_asked_for_is_not_started_again() -> (
    None
):
    started: list[str] = []
    supervisor = Supervisor(lambda name, p: None, stop=StopRequest(signal=15, count=1))
    supervisor.add("key_counts", FailedQuery(), restart=restarting([RecordedQuery()], started))  # type: ignore[arg-type]

    with pytest.raises(StreamFailedError, match="Python worker failed to connect back"):
        supervisor.poll()
    assert (started, supervisor.restarts) == ([], {})


class DyingQuery:
    """Active when first asked; by the next question it died of a busy machine."""

    runId = "run-1"

    def __init__(self) -> None:
        self.asked = 0
        self.recentProgress: list[dict] = []
        self.status = {"isTriggerActive": False, "message": "Waiting for next trigger"}

    @property
    def isActive(self) -> bool:
        self.asked += 1
        return self.asked == 1

    def exception(self) -> RuntimeError | None:
        return RuntimeError(BUSY) if self.asked > 1 else None

    def awaitTermination(self, seconds: float) -> None:
        return None

    def stop(self) -> None:
        return None


@dataclass
class EndingQuery(RecordedQuery):
    """Runs until awaited once, then ends cleanly."""

    def awaitTermination(self, seconds: float) -> None:
        self.isActive = False


def test_waiting_goes_on_for_a_query_started_again_after_the_others_ended() -> None:
    started: list[str] = []
    again = EndingQuery(runId="run-2")
    supervisor = Supervisor(lambda name, p: None, poll_seconds=0.01)
    supervisor.add("key_counts", DyingQuery(), restart=restarting([again], started))  # type: ignore[arg-type]

    supervisor.wait()

    assert started == ["restart"]
    assert supervisor.query("key_counts") is again and not again.isActive  # waited for its end
