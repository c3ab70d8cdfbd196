"""The supervisor reports each batch that ran once, and never a trigger that found no data; a
stop waits for a running batch, unless a second request came.

The queries are recorded ones: their ``recentProgress`` is what Spark 4.2 reported for a query
with a processing-time trigger (an idle trigger, then the batch that read the new rows). They
cannot be told to end after their batch (that is a JVM call): the real one is covered by
tests/dagster/test_terminal_stop.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from platform_pipelines.runtime.interrupts import StopRequest
from platform_pipelines.runtime.supervisor import Supervisor

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
        return {"isTriggerActive": self.running}

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
