"""Watching running queries: report each batch once, raise when one dies, stop them cleanly.

Nothing here knows Dagster: the owner passes callbacks for progress and query ends, and a
``StopRequest`` (set by Ctrl-C, SIGTERM or a Dagster cancel) that the wait loop checks every poll.
A query is reported as ended cleanly only when Spark says so: when its handle no longer answers
(its session or JVM is gone), the end is reported as a failure with that reason.

A query that dies of a failure that passes on a restart (``health.restart.passing_failure``: a
busy machine, not the data or the code) is started again from its checkpoint, at most
``RESTARTS_IN_RUN`` times per stream in a run, when its owner said how (``add``'s ``restart``).

A graceful stop names each stream that stopped before the batch that applies the watermark its
rows imply (``graceful_stop``): what waits on it happens when the stream next reads input.

Only batches that ran are reported: a trigger that found no new data also leaves a progress in
``recentProgress``, with no rows and the id of the batch still to come, which must not hide that
batch when it runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from functools import partial
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming.query import StreamingQuery

from platform_pipelines.health.restart import RESTARTS_IN_RUN, passing_failure
from platform_pipelines.runtime.catch_up_end import CatchUpEnds
from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest
from platform_pipelines.runtime.query_state import (
    active,
    caught_up,
    end_after_batch,
    end_between_batches,
    lost_query,
    owed_watermark,
    query_error,
    ran,
    run_id,
    runs_batch,
)
from platform_pipelines.streams.batch_gate import GATE

Progress = Mapping[str, Any]
ProgressCallback = Callable[[str, Progress], None]
EndCallback = Callable[[str, BaseException | None, str], None]  # name, error, query run id
Restart = Callable[[], StreamingQuery]  # starts the stream's query again, from its checkpoint
# A stop waits this long for the running batches to commit: a catch-up batch of 200,000 records
# takes 10-20 s on 2 cores, and Dagster gives a canceling run 180 s before it marks it canceled
# (dagster_home/dagster.yaml, run_monitoring.cancel_timeout_seconds).
STOP_AT_BATCH_BOUNDARY_SECONDS = 120.0
log = logging.getLogger(__name__)


class StreamFailedError(RuntimeError):
    """A streaming query died; the message is Spark's error, summarized."""


def summarize_failure(name: str, error: BaseException) -> str:
    """Spark's error reduced to what a person needs: the stream and the first line."""
    text = str(error).strip()
    first = next((line for line in text.splitlines() if line.strip()), type(error).__name__)
    return f"Stream {name!r} failed: {first[:500]}"


class Supervisor:
    """Watches running queries, reports each new progress once, starts again one that died of a
    failure that passes (when told how) and raises when one fails otherwise."""

    def __init__(
        self,
        on_progress: ProgressCallback,
        on_end: EndCallback = lambda n, e, r: None,
        stop: StopRequest | None = None,
        poll_seconds: float = 1.0,
        watch: Callable[[], None] | None = None,
        on_restart: Callable[[str, str], None] = lambda name, note: None,
    ) -> None:
        self._on_progress = on_progress
        self._on_restart = on_restart
        self._watch = watch
        self._on_end = on_end
        self._stop = stop or StopRequest()
        self._poll = poll_seconds
        self._queries: dict[str, StreamingQuery] = {}
        self._restart: dict[str, Restart] = {}
        self.restarts: dict[str, int] = {}  # stream -> its query's restarts in this run
        self._catch_up: set[str] = set()
        self._catch_up_ends = CatchUpEnds()
        self._ended: set[str] = set()
        self.last_batch: dict[str, int] = {}
        self.abandoned: list[str] = []  # streams whose running batch a stop did not wait for
        self._delays: dict[str, float] = {}  # stream -> its watermark delay, seconds

    def add(
        self,
        name: str,
        query: StreamingQuery,
        stop_when_caught_up: bool = False,
        restart: Restart | None = None,
        watermark: timedelta | None = None,
    ) -> None:
        """Watch ``query``; with ``stop_when_caught_up`` (an availableNow query with
        processing-time timers, which Spark would never end) it is ended after a batch once
        caught up (``catch_up_end``). ``restart`` starts it again after a failure that passes
        (none: every failure raises). A stop names the stream if it owes its ``watermark``."""
        self._queries[name] = query
        if watermark is not None:
            self._delays[name] = watermark.total_seconds()
        if restart is None:
            self._restart.pop(name, None)
        else:
            self._restart[name] = restart
        self._ended.discard(name)
        self.last_batch.setdefault(name, -1)
        if stop_when_caught_up:
            self._catch_up.add(name)
        else:
            self._catch_up.discard(name)

    def wait(self, names: Sequence[str] | None = None) -> None:
        """Block until the named queries (default: all) end; raise if one fails (and is not
        started again: ``_failed``).

        On a stop request every query is stopped after its running batch (``stop_all``) and
        ``GracefulStop`` is raised; on any other interrupt every query is stopped before it
        propagates.
        """
        watched = list(names or self._queries)
        try:
            while self._any_active(watched):  # the last poll may have started one again
                while active := [n for n in watched if self._queries[n].isActive]:
                    if self._stop.requested:
                        raise self.graceful_stop(self._stop.name)
                    try:
                        self._queries[active[0]].awaitTermination(self._poll)  # type: ignore[arg-type]  # seconds; PySpark takes floats
                    except StreamingQueryException as error:
                        self._failed(active[0], error)
                    self.poll()
                self.poll()
        except GracefulStop:
            raise
        except BaseException:
            self.stop_all()
            raise
        finally:
            self._report_ends()

    def _any_active(self, names: Sequence[str]) -> bool:
        return any(self._queries[n].isActive for n in names)

    def poll(self) -> None:
        """Report new progress of every query; start a dead one again when its failure passes,
        raise StreamFailedError for it otherwise (``_failed``)."""
        for name, query in list(self._queries.items()):  # before anything starts after them
            self._catch_up_ends.settle(name, query)
        if self._watch is not None:
            self._watch()
        for name, query in list(self._queries.items()):
            self._report_batches(name, query)
            error = query_error(name, query)
            if error is not None:
                self._failed(name, error)
                continue
            if name in self._catch_up and caught_up(query):
                self._catch_up_ends.end(name, query)  # after a batch, not in one

    def query(self, name: str) -> StreamingQuery:
        """The query that runs (or last ran) stream ``name``: a restart replaces it."""
        return self._queries[name]

    def _failed(self, name: str, error: BaseException) -> None:
        """Stream ``name``'s query died of ``error``: start it again when the failure passes and
        its restarts in this run allow and no stop was asked for; otherwise stop every query and
        raise."""
        why = passing_failure(str(error))
        restart, done = self._restart.get(name), self.restarts.get(name, 0)
        if why is None or restart is None or done >= RESTARTS_IN_RUN or self._stop.requested:
            self.stop_all()
            raise StreamFailedError(summarize_failure(name, error)) from error
        failed = self._queries[name]
        self._catch_up_ends.forget(name, failed)
        self._report_batches(name, failed)
        self._on_end(name, error, run_id(failed))
        self.restarts[name] = done + 1
        self._on_restart(
            name,
            f"Stream {name!r} stopped: {why}; starting it again from its checkpoint "
            f"(restart {done + 1} of at most {RESTARTS_IN_RUN} in this run)",
        )
        self._queries[name] = restart()

    def graceful_stop(self, reason: str) -> GracefulStop:
        """Stop every query (``stop_all``); what the stop left, to raise."""
        stopped = self.stop_all()
        owed = {
            name: at
            for name, delay in self._delays.items()
            if (at := self._attempt(name, owed_watermark, self._queries[name], delay)) is not None
        }
        return GracefulStop(reason, stopped, list(self.abandoned), owed)

    def stop_all(self) -> dict[str, int]:
        """Stop every query after the batch it runs. A query whose batch is past its planning
        (in its ``foreachBatch``) is told to start no new batch, and any other is told so by
        its next batch once that batch gets there (``streams.batch_gate``): Spark cuts a batch
        whose query it finds stopped as its planning ends. A query seen between batches is told
        so unless a trigger just began (``query_state.end_between_batches``), and stopped.

        An impatient request (a second Ctrl-C), or a batch still running after 120 s, stops the
        others at once: their running batch is abandoned (the checkpoint stays valid and the
        batch reruns on the next start) and they are listed in ``abandoned``. A query that
        fails to stop does not keep the others running. Returns each stream's last batch."""
        deadline = time.monotonic() + STOP_AT_BATCH_BOUNDARY_SECONDS
        for name, query in self._queries.items():  # a caught-up catch-up's last batch commits
            self._attempt(name, self._catch_up_ends.settle, name, query)
        running = {n: q for n, q in self._queries.items() if self._attempt(n, active, q)}
        ids = {n: self._attempt(n, lambda q: str(q.id), q) for n, q in running.items()}
        try:
            for name, query in running.items():
                end = partial(self._attempt, name, end_after_batch, query)
                if ids[name] is None:  # Spark cannot say which query it is
                    end()
                else:
                    GATE.end_query(ids[name], end)
            while running and not self._stop.impatient and time.monotonic() < deadline:
                for name, query in list(running.items()):
                    if self._attempt(name, runs_batch, query):
                        continue
                    # None: its handle failed (logged): stopping it is all that is left
                    if self._attempt(name, end_between_batches, query) is not False:
                        self._attempt(name, running.pop(name).stop)
                time.sleep(0.1 if running else 0)
        finally:
            for query_id in ids.values():
                if query_id is not None:
                    GATE.disarm(query_id)
        self.abandoned += [n for n, q in running.items() if self._attempt(n, runs_batch, q)]
        for name, query in self._queries.items():
            self._attempt(name, query.stop)
            self._attempt(name, self._report_batches, name, query)
        self._report_ends()
        return {name: self.last_batch.get(name, -1) for name in self._queries}

    def _report_batches(self, name: str, query: StreamingQuery) -> None:
        """Report each batch of ``query`` that ran and was not reported yet, oldest first."""
        for progress in query.recentProgress:
            if ran(progress) and int(progress["batchId"]) > self.last_batch[name]:
                self.last_batch[name] = int(progress["batchId"])
                self._on_progress(name, progress)

    def _attempt(self, name: str, action: Callable[..., Any], *args: Any) -> Any:
        """``action(*args)`` for stream ``name``; None, logged, when it fails: whatever it is,
        the other queries must still stop."""
        try:
            return action(*args)
        except Exception as error:
            log.warning(
                "Stream %r: stopping its query failed (%s: %s); the other queries are "
                "stopped regardless",
                name,
                type(error).__name__,
                error,
            )
            return None

    def _report_ends(self) -> None:
        for name, query in self._queries.items():
            if name in self._ended:
                continue
            try:
                active = query.isActive
            except Exception as error:  # runs in ``wait``'s finally: never mask its exception
                self._ended.add(name)
                lost = lost_query(name, "asking whether its query runs", error)
                self._on_end(name, lost, run_id(query))
                continue
            if not active:
                self._ended.add(name)
                self._on_end(name, query_error(name, query), run_id(query))
