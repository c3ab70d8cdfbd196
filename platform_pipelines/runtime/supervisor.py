"""Watching running queries: report each new batch once, raise when one dies, stop them cleanly.

Nothing here knows Dagster: the owner passes callbacks for progress and query ends, and a
``StopRequest`` (set by Ctrl-C, SIGTERM or a Dagster cancel) that the wait loop checks every poll.
A query is reported as ended cleanly only when Spark says so: when its handle no longer answers
(its session or JVM is gone), the end is reported as a failure with that reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming.query import StreamingQuery

from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest

Progress = Mapping[str, Any]
ProgressCallback = Callable[[str, Progress], None]
EndCallback = Callable[[str, BaseException | None, str], None]  # name, error, query run id
STOP_AT_BATCH_BOUNDARY_SECONDS = 30.0
log = logging.getLogger(__name__)


class StreamFailedError(RuntimeError):
    """A streaming query died; the message is Spark's error, summarized."""


class QueryLostError(RuntimeError):
    """A query's handle stopped answering (its session or JVM is gone): how it ended is unknown,
    and an end nobody can vouch for is not a clean one."""


def summarize_failure(name: str, error: BaseException) -> str:
    """Spark's error reduced to what a person needs: the stream and the first line."""
    text = str(error).strip()
    first = next((line for line in text.splitlines() if line.strip()), type(error).__name__)
    return f"Stream {name!r} failed: {first[:500]}"


class Supervisor:
    """Watches running queries, reports each new progress once and raises when one fails."""

    def __init__(
        self,
        on_progress: ProgressCallback,
        on_end: EndCallback = lambda n, e, r: None,
        stop: StopRequest | None = None,
        poll_seconds: float = 1.0,
        watch: Callable[[], None] | None = None,
    ) -> None:
        self._on_progress = on_progress
        self._watch = watch
        self._on_end = on_end
        self._stop = stop or StopRequest()
        self._poll = poll_seconds
        self._queries: dict[str, StreamingQuery] = {}
        self._catch_up: set[str] = set()
        self._ended: set[str] = set()
        self.last_batch: dict[str, int] = {}

    def add(self, name: str, query: StreamingQuery, stop_when_caught_up: bool = False) -> None:
        """Watch ``query``; with ``stop_when_caught_up`` (an availableNow query with
        processing-time timers, which Spark would never end) it is stopped once caught up."""
        self._queries[name] = query
        self._ended.discard(name)
        self.last_batch.setdefault(name, -1)
        if stop_when_caught_up:
            self._catch_up.add(name)
        else:
            self._catch_up.discard(name)

    def wait(self, names: Sequence[str] | None = None) -> None:
        """Block until the named queries (default: all) end; raise if one fails.

        On a stop request every query is stopped at a batch boundary and ``GracefulStop`` is
        raised; on any other interrupt every query is stopped before it propagates.
        """
        watched = list(names or self._queries)
        try:
            while active := [n for n in watched if self._queries[n].isActive]:
                if self._stop.requested:
                    raise GracefulStop(self._stop.name, self.stop_all())
                try:
                    self._queries[active[0]].awaitTermination(self._poll)  # type: ignore[arg-type]  # seconds; PySpark takes floats
                except StreamingQueryException as error:
                    raise StreamFailedError(summarize_failure(active[0], error)) from error
                self.poll()
            self.poll()
        except GracefulStop:
            raise
        except BaseException:
            self.stop_all()
            raise
        finally:
            self._report_ends()

    def poll(self) -> None:
        """Report new progress of every query; raise StreamFailedError for a dead one."""
        if self._watch is not None:
            self._watch()
        for name, query in self._queries.items():
            for progress in query.recentProgress:
                if int(progress["batchId"]) > self.last_batch[name]:
                    self.last_batch[name] = int(progress["batchId"])
                    self._on_progress(name, progress)
            error = _query_error(name, query)
            if error is not None:
                self.stop_all()
                raise StreamFailedError(summarize_failure(name, error)) from error
            if name in self._catch_up and _caught_up(query):
                query.stop()

    def stop_all(self) -> dict[str, int]:
        """Stop every query, each at a batch boundary when it reaches one within 30 s (else the
        running batch is abandoned; the checkpoint stays valid and the batch reruns). A query
        that fails to stop does not keep the others running. Returns each stream's last batch."""
        deadline = time.monotonic() + STOP_AT_BATCH_BOUNDARY_SECONDS
        for name, query in self._queries.items():
            try:
                if query.isActive:
                    _wait_for_batch_boundary(query, deadline)
                    query.stop()
                for progress in query.recentProgress:
                    self.last_batch[name] = max(self.last_batch[name], int(progress["batchId"]))
            except Exception as error:  # whatever it is, the other queries must still stop
                log.warning(
                    "Stream %r: stopping its query failed (%s: %s); the other queries are "
                    "stopped regardless",
                    name,
                    type(error).__name__,
                    error,
                )
        self._report_ends()
        return {name: self.last_batch.get(name, -1) for name in self._queries}

    def _report_ends(self) -> None:
        for name, query in self._queries.items():
            if name in self._ended:
                continue
            try:
                active = query.isActive
            except Exception as error:  # runs in ``wait``'s finally: never mask its exception
                self._ended.add(name)
                lost = _lost(name, "asking whether its query runs", error)
                self._on_end(name, lost, _run_id(query))
                continue
            if not active:
                self._ended.add(name)
                self._on_end(name, _query_error(name, query), _run_id(query))


def _wait_for_batch_boundary(query: StreamingQuery, deadline: float) -> None:
    while time.monotonic() < deadline and query.status["isTriggerActive"]:
        time.sleep(0.1)


def _caught_up(query: StreamingQuery) -> bool:
    """An availableNow query whose last batch found nothing left to read.

    A query with processing-time timers always asks Spark for another (no-data) batch, so
    availableNow alone would never end it. Only such queries are judged by this: for others an
    empty progress between batches could stop a catch-up early.
    """
    if not query.isActive:
        return False
    last = query.lastProgress
    return last is not None and last["numInputRows"] == 0 and not query.status["isDataAvailable"]


def _run_id(query: StreamingQuery) -> str:
    try:
        return str(query.runId)
    except Py4JError:  # the JVM is gone: the end is recorded without its query run
        return ""


def _query_error(name: str, query: StreamingQuery) -> BaseException | None:
    """Spark's error when the query died, None when it did not; a ``QueryLostError`` when Spark
    cannot be asked: only Spark's word makes an end clean."""
    try:
        return query.exception()
    except Exception as error:  # returned, not raised: this runs in ``wait``'s finally too
        return _lost(name, "reading how its query ended", error)


def _lost(name: str, action: str, error: Exception) -> QueryLostError:
    """``error``, met while ``action`` for stream ``name``, logged and turned into the failure
    that the query's end is reported with."""
    log.warning(
        "Stream %r: %s failed (%s: %s); its end is reported as a failure",
        name,
        action,
        type(error).__name__,
        error,
    )
    lost = QueryLostError(f"the query no longer answers: {action} failed with {error!r}")
    lost.__cause__ = error
    return lost
