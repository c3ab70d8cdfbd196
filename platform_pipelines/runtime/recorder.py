"""Persisting every query event of a run to the progress store, as it happens.

``ProgressRecorder`` is a ``StreamingQueryListener``: Spark calls it on its listener thread after
each micro-batch, when a trigger finds no data (idle) and when a query ends, so recording never
runs on the query's own thread. The runner also records the end of each query itself, because a
listener removed right after ``query.stop()`` may never see the terminated event.

Spark reaches it through ``_JavaListener``, which asks the JVM only for what a record holds (the
query's name, id and progress JSON). PySpark's own adapter first turns each event into Python
objects: dozens of calls into the JVM per event, and per observed metric a lookup of
``PythonSQLUtils`` that py4j answers by trying to load a class of that name from each imported
package, searching every jar. In a continuous run of the built-in streams that listener thread
took 7-10% of the driver JVM's CPU samples (Java Flight Recorder, the last 50 s of
``bench_reaction.py --quick``).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any, ClassVar

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
        self._java: Any = None  # the JVM listener that calls this one (``_jlistener``)

    def records(self, stream: str | None) -> bool:
        """Whether ``stream`` is one of this recorder's (the session may run others' queries)."""
        return stream in self._triggers

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

    # Spark's listener thread: through _JavaListener, or PySpark's events (Spark Connect)

    @property
    def _jlistener(self) -> Any:
        """What ``spark.streams.addListener`` registers in the JVM: ``_JavaListener`` in the
        wrapper PySpark uses for its own adapter (made once, so that removal finds it)."""
        if self._java is None:
            from pyspark import SparkContext

            wrapper = SparkContext._jvm.PythonStreamingQueryListenerWrapper  # type: ignore[union-attr]
            self._java = wrapper(_JavaListener(self))
        return self._java

    def started(self, query_id: str, name: str | None) -> None:
        if name in self._triggers:
            self._names[query_id] = name
            self.record(name, "started")

    def progressed(self, name: str | None, progress_json: str) -> None:
        if name in self._triggers:
            self.record(name, "progress", progress=json.loads(progress_json))

    def idled(self, query_id: str) -> None:
        if name := self._names.get(query_id):
            self.record(name, "idle")

    def terminated(
        self, query_id: str, run: str, error: str | None, error_class: str | None
    ) -> None:
        # Delivered asynchronously: it may arrive after the next run of the same query started,
        # so it is deduplicated by the query run, not by the stream.
        name = self._names.get(query_id)
        if not name:
            return
        with self._lock:
            if run in self._ended:
                return
            self._ended.add(run)
        if error:
            error_class = error_class or "Error"
            self.record(name, "terminated", error_class=error_class, error=_first_line(error))
        else:
            self.record(name, "terminated")

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        self.started(str(event.id), event.name)

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        self.progressed(event.progress.name, event.progress.json)

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        self.idled(str(event.id))

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        self.terminated(
            str(event.id), str(event.runId), event.exception, event.errorClassOnException
        )


class _JavaListener:
    """Spark's ``PythonStreamingQueryListener``, implemented with the few calls into the JVM
    that ``ProgressRecorder`` needs (py4j calls it on Spark's listener thread)."""

    def __init__(self, recorder: ProgressRecorder) -> None:
        self._recorder = recorder

    def onQueryStarted(self, event: Any) -> None:
        self._recorder.started(event.id().toString(), event.name())

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress()
        name = progress.name()
        if self._recorder.records(name):  # progress.json() only for streams it records
            self._recorder.progressed(name, progress.json())

    def onQueryIdle(self, event: Any) -> None:
        self._recorder.idled(event.id().toString())

    def onQueryTerminated(self, event: Any) -> None:
        error, error_class = event.exception(), event.errorClassOnException()
        self._recorder.terminated(
            event.id().toString(),
            event.runId().toString(),
            error.get() if error.isDefined() else None,
            error_class.get() if error_class.isDefined() else None,
        )

    class Java:
        implements: ClassVar[list[str]] = [
            "org.apache.spark.sql.streaming.PythonStreamingQueryListener"
        ]


def _first_line(error: object) -> str:
    text = str(error).strip()
    return next((line for line in text.splitlines() if line.strip()), text)[:500]
