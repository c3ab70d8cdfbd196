"""What the owner of a stream says about it: the run state, decided from plain facts.

The Dagster wiring gathers the facts (the run's status, the newest progress records, whether the
run's process still exists) and ``classify_run`` decides; ``run_state_from_records`` decides from
the records alone when there is no run to ask (the CLI).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from platform_pipelines.core.records import ProgressRecord

RunStatus = Literal["running", "stopped", "cancelled", "failed", "never_run"]
# Dagster's run statuses, as text, grouped by what they mean for a stream.
ACTIVE_RUN_STATUSES = frozenset({"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"})


@dataclass(frozen=True)
class RunState:
    """What the owner of the stream (the Dagster run, or the process) says about it.

    Attributes:
        status: ``running``, ``stopped`` (ended without error), ``cancelled``, ``failed`` or
            ``never_run``.
        detail: one line for people, e.g. ``"run 1a2b3c4d was cancelled"``.
        run_id: the run that owns (or last owned) the stream; empty when unknown.
        process_gone: the run says it is active, but its process no longer exists: the caller
            should mark the run failed.
        waiting_for: the run is active but waits for this Kafka topic to exist before it starts
            the stream's query (its newest record is ``waiting``); empty otherwise.
    """

    status: RunStatus
    detail: str = ""
    run_id: str = ""
    process_gone: bool = False
    waiting_for: str = ""


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a killed run worker stays a zombie
    until its parent, often the code server the sensor runs in, reaps it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def process_gone(record: ProgressRecord | None, alive: Callable[[int], bool] = pid_alive) -> bool:
    """Whether the driver that wrote ``record`` ran on this host and no longer exists."""
    return (
        record is not None
        and bool(record.pid)
        and record.host == socket.gethostname()
        and not alive(record.pid)
    )


def classify_run(
    run_status: str | None,
    records: Sequence[ProgressRecord],
    failure: str = "",
    alive: Callable[[int], bool] = pid_alive,
) -> RunState:
    """The run state of a stream from its newest run's status (a Dagster status name such as
    ``"STARTED"``; None when the run is unknown to the caller), its records and, for a failed
    run, the first line of its failure."""
    if not records:
        return RunState("never_run", "no run has started it yet")
    if run_status is None:
        return run_state_from_records(records, alive)
    last = newest_turn(records)
    run, short = last.run_id, last.run_id[:8]
    if run_status in ACTIVE_RUN_STATUSES:
        if process_gone(last, alive):
            why = f"run {short}: its process (pid {last.pid}) is gone"
            return RunState("failed", why, run, process_gone=True)
        if last.event == "terminated" and not last.error_class:
            return RunState("stopped", f"run {short} is finishing", run)
        return _running(last, f"run {short} is {run_status.lower()}")
    if run_status == "FAILURE":
        if last.event != "terminated" and process_gone(last, alive):
            return RunState(
                "failed", f"run {short} failed: its process (pid {last.pid}) is gone", run
            )
        why = failure or last.error_class or ""
        return RunState("failed", f"run {short} failed" + (f": {why}" if why else ""), run)
    if run_status == "CANCELED":
        return RunState("cancelled", f"run {short} was cancelled", run)
    return RunState("stopped", f"run {short} finished ({run_status.lower()})", run)


def run_state_from_records(
    records: Sequence[ProgressRecord], alive: Callable[[int], bool] = pid_alive
) -> RunState:
    """The run state as the records alone tell it (for the CLI, which has no run status)."""
    if not records:
        return RunState("never_run", "no progress recorded")
    last = newest_turn(records)
    run, short = last.run_id, last.run_id[:8]
    if last.event == "terminated":
        if last.error_class:
            return RunState("failed", f"run {short} failed: {last.error_class}", run)
        return RunState("stopped", f"run {short} stopped", run)
    if process_gone(last, alive):
        return RunState("failed", f"the process of run {short} (pid {last.pid}) is gone", run)
    return _running(last, f"run {short}")


def newest_turn(records: Sequence[ProgressRecord]) -> ProgressRecord:
    """The newest record that says what the run did with the query: started it, waits to start
    it, or saw it end (the newest record when there is none of those). The listener records
    asynchronously, so a query's last batch may land after its end: it is not such a record."""
    turns = ("started", "waiting", "terminated")
    return next((r for r in reversed(records) if r.event in turns), records[-1])


def _running(last: ProgressRecord, detail: str) -> RunState:
    if last.event == "waiting" and last.waiting_for:
        topic = last.waiting_for
        return RunState(
            "running", f"{detail}, waiting for Kafka topic {topic}", last.run_id, waiting_for=topic
        )
    return RunState("running", detail, last.run_id)
