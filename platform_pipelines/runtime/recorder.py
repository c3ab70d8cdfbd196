"""Persisting every query event of a run to the progress store, as it happens.

``ProgressRecorder`` is a ``StreamingQueryListener``: Spark calls it on its listener thread after
each micro-batch, when a trigger finds no data (idle) and when a query ends, so recording never
runs on the query's own thread. The runner also records the end of each query itself, because a
listener removed right after ``query.stop()`` may never see the terminated event.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Mapping

from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.records import EventKind, ProgressRecord


class ProgressRecorder(StreamingQueryListener):
    """Writes a record per event of the queries named in ``trigger_seconds`` (others are ignored:
    one SparkSession may run queries of several owners)."""

    def __init__(
        self, store: ProgressStore, run_id: str, trigger_seconds: Mapping[str, float]
    ) -> None:
        self._store = store
        self._run_id = run_id
        self._triggers = dict(trigger_seconds)
        self._phases: dict[str, str] = {}  # stream -> the phase its current query runs
        self._names: dict[str, str] = {}  # query id -> stream name
        self._ended: set[str] = set()  # run ids of query runs whose end was recorded
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._host = socket.gethostname()
        self.failures = 0  # records that could not be written (never raised into Spark)

    def record(self, stream: str, event: EventKind, **fields: object) -> None:
        if stream not in self._triggers:
            return
        record = ProgressRecord(
            ts=time.time(),
            event=event,
            stream=stream,
            run_id=self._run_id,
            trigger_seconds=self._triggers[stream],
            phase=self._phases.get(stream),
            pid=self._pid,
            host=self._host,
            **fields,  # type: ignore[arg-type]
        )
        try:
            self._store.append(record)
        except OSError:
            self.failures += 1

    def start_phase(self, stream: str, phase: str) -> None:
        """The runner starts ``stream``'s query for ``phase`` (``catch_up`` or ``continuous``):
        every later record of the stream says so."""
        self._phases[stream] = phase

    def record_batch(self, stream: str, batch_id: int, counts: object) -> None:
        """What the stream's writer did with a micro-batch (``streams.sink.BatchCounts``)."""
        fields = {
            k: int(getattr(counts, k))
            for k in ("rows_in", "rows_out", "rows_late", "rows_quarantined")
        }
        self.record(stream, "batch", batch_id=batch_id, counts=fields)

    def record_end(self, stream: str, error: BaseException | None = None, run: str = "") -> None:
        """The query run ``run`` of ``stream`` ended (cleanly when ``error`` is None); recorded
        once, whether this call or the listener's terminated event comes first."""
        with self._lock:
            if run and run in self._ended:
                return
            self._ended.add(run)
        if error is None:
            self.record(stream, "terminated")
        else:
            error_class = getattr(error, "getCondition", lambda: None)() or type(error).__name__
            self.record(stream, "terminated", error_class=error_class, error=_first_line(error))

    # StreamingQueryListener callbacks (Spark's listener thread)

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        if event.name in self._triggers:
            self._names[str(event.id)] = event.name
            self.record(event.name, "started")

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        name = event.progress.name
        if name in self._triggers:
            self.record(name, "progress", progress=json.loads(event.progress.json))

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        name = self._names.get(str(event.id))
        if name:
            self.record(name, "idle")

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        # Delivered asynchronously: it may arrive after the next run of the same query started,
        # so it is deduplicated by the query run, not by the stream.
        name = self._names.get(str(event.id))
        if not name:
            return
        with self._lock:
            if str(event.runId) in self._ended:
                return
            self._ended.add(str(event.runId))
        if event.exception:
            self.record(
                name,
                "terminated",
                error_class=event.errorClassOnException or "Error",
                error=_first_line(event.exception),
            )
        else:
            self.record(name, "terminated")


def _first_line(error: object) -> str:
    text = str(error).strip()
    return next((line for line in text.splitlines() if line.strip()), text)[:500]
