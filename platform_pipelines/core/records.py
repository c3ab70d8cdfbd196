"""What a running stream persists for the health layer: one JSON line per query event.

The running op appends these (see ``store.py``); sensors and the CLI read them without a JVM.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

EventKind = Literal["started", "waiting", "progress", "batch", "idle", "terminated"]


@dataclass(frozen=True)
class ProgressRecord:
    """One event of a streaming query.

    Attributes:
        ts: when it was recorded, in seconds since the epoch (wall clock of the driver).
        event: ``started`` (the query started), ``waiting`` (the run holds the stream but
            cannot start its query yet: ``waiting_for``), ``progress`` (a micro-batch finished,
            as Spark reports it), ``batch`` (what the platform's writer did with a micro-batch's
            rows: ``counts``), ``idle`` (a trigger found no new data) or ``terminated`` (the
            query ended, or a run ended before the query could start).
        stream: the stream's name (the Spark query name).
        run_id: the Dagster run (or other owner) that ran the query; empty when unknown.
        progress: for ``progress``, Spark's StreamingQueryProgress as a dict (its JSON).
        trigger_seconds: the query's trigger interval, for liveness: 0 for a catch-up run, and
            for a continuous stream whose next batch starts as soon as there is input.
        phase: ``catch_up`` (the query reads what is there and ends) or ``continuous`` (it runs
            until stopped), as the runner started it; None in records from before it was kept.
        error_class: for a ``terminated`` query that failed, Spark's error class (or exception
            type when Spark gives none); None when it stopped cleanly.
        error: for a failed query, the first line of its error.
        pid: the driver process that ran the query (so a reader on the same host can tell a
            killed run from a quiet one); 0 when unknown.
        host: the driver's host name.
        batch_id: for ``batch``, the micro-batch.
        counts: for ``batch``, ``rows_in``, ``rows_out``, ``rows_late`` and ``rows_quarantined``.
        waiting_for: for ``waiting``, the Kafka topic that does not exist yet (read by the
            stream, or by a stream upstream of it in the same run).
    """

    ts: float
    event: EventKind
    stream: str
    run_id: str = ""
    progress: Mapping[str, Any] | None = None
    trigger_seconds: float = 0.0
    error_class: str | None = None
    error: str | None = None
    pid: int = 0
    host: str = ""
    batch_id: int | None = None
    counts: Mapping[str, int] | None = None
    waiting_for: str | None = None
    phase: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {k: v for k, v in asdict(self).items() if v not in (None, "", 0)}, separators=(",", ":")
        )

    @classmethod
    def from_json(cls, line: str) -> ProgressRecord:
        data = json.loads(line)
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
