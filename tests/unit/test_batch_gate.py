"""The batch gate ends a query only from inside a batch's ``foreachBatch``: at once when the
stop comes during one, else at the start of the next; never between batches."""

from __future__ import annotations

import threading
import time

import pytest

from platform_pipelines.streams.batch_gate import BatchGate, GatedBatch


def test_a_stop_between_batches_is_armed_and_ends_the_query_as_its_next_batch_starts() -> None:
    gate, events = BatchGate(), []
    batch = GatedBatch("q1", lambda df, batch_id: events.append(f"wrote {batch_id}"), gate)

    assert gate.end_query("q1", lambda: events.append("end")) is False
    assert (events, gate.armed("q1")) == ([], True)
    batch(None, 7)

    assert (events, gate.armed("q1")) == (["end", "wrote 7"], False)
    batch(None, 8)  # an end is used once
    assert events == ["end", "wrote 7", "wrote 8"]


def test_a_stop_during_a_batch_ends_the_query_at_once() -> None:
    gate, events = BatchGate(), []

    def write(df: object, batch_id: int) -> None:
        events.append("writing")
        ended = gate.end_query("q1", lambda: events.append("end"))
        events.append(f"ended at once: {ended}")

    GatedBatch("q1", write, gate)(None, 3)

    assert events == ["writing", "end", "ended at once: True"]
    assert not gate.armed("q1")


def test_a_query_without_a_gated_writer_is_ended_at_once_and_a_disarmed_one_not_at_all() -> None:
    gate, events = BatchGate(), []
    assert gate.end_query("not-gated", lambda: events.append("end")) is True
    assert events == ["end"]

    batch = GatedBatch("q1", lambda df, batch_id: events.append("wrote"), gate)
    gate.end_query("q1", lambda: events.append("end q1"))
    gate.disarm("q1")
    batch(None, 0)
    assert events == ["end", "wrote"]


def test_a_failing_batch_leaves_the_gate_closed_for_the_next_stop() -> None:
    gate, ends = BatchGate(), []

    def fail(df: object, batch_id: int) -> None:
        raise RuntimeError("the sink refused")

    batch = GatedBatch("q1", fail, gate)
    with pytest.raises(RuntimeError, match="the sink refused"):
        batch(None, 0)
    # no batch runs now: the stop is armed, not called between batches
    assert gate.end_query("q1", lambda: ends.append("end")) is False
    assert ends == []


def test_stops_racing_batches_end_the_query_only_inside_a_batch() -> None:
    """A thread runs batches back to back while another asks for stops: every end is called
    within a batch's ``foreachBatch`` call (between "enter" and "exit"), by the stopper while the
    batch works, or by the batch's own thread before its work when the end was armed."""
    gate = BatchGate()
    events: list[tuple[str, str]] = []  # (thread, what)
    ends = [0]
    record = threading.Lock()

    def note(what: str) -> None:
        with record:
            events.append((threading.current_thread().name, what))
            ends[0] += what == "end"

    def work(df: object, batch_id: int) -> None:
        note("work")
        time.sleep(0)  # a batch's work lets other threads run, as Spark's jobs do

    batch = GatedBatch("q1", work, gate)
    done = threading.Event()

    def batches() -> None:
        # Until 50 stops ended the query (each a race won somewhere): counted, not a fixed number
        # of batches, which a busy machine's thread switches can let pass without a stop.
        deadline, n = time.monotonic() + 60, 0
        while ends[0] < 50 and time.monotonic() < deadline:
            note("enter")  # Spark calls the foreachBatch function
            batch(None, n)
            note("exit")  # and it returned
            n += 1
        done.set()

    runner = threading.Thread(target=batches, name="batch")
    runner.start()
    while not done.is_set():
        gate.end_query("q1", lambda: note("end"))
    runner.join()

    assert sum(what == "end" for _, what in events) >= 50
    inside = worked = False
    for i, (who, what) in enumerate(events):
        if what == "end":
            assert inside, events[max(i - 3, 0) : i + 3]
            assert who == "MainThread" or not worked, events[max(i - 3, 0) : i + 3]
        else:
            inside = what in ("enter", "work")
            worked = what == "work"
