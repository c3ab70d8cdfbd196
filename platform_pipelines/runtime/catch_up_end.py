"""Ending a caught-up catch-up query after a batch, not in one.

An ``availableNow`` query with processing-time timers (``service_status``) never ends by
itself: once it has read everything it plans no-data batches back to back, so its timers can
fire. The supervisor ends it once it is caught up. Stopped outright (``StreamingQuery.stop()``),
the no-data batch Spark plans at that moment is cut: its offsets are written, its commit is not
(it reruns on the next start). Instead its next batch tells it to start no batch after itself
from its ``foreachBatch`` (``streams.batch_gate``), that batch commits, and the query ends.
"""

from __future__ import annotations

import contextlib
import logging
import time
from functools import partial

from py4j.protocol import Py4JError
from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming.query import StreamingQuery

from platform_pipelines.runtime.query_state import (
    end_after_batch,
    end_between_batches,
    runs_batch,
)
from platform_pipelines.streams.batch_gate import GATE, BatchGate

# A caught-up query still running this long after it was told to end is stopped between two
# batches (outright after twice as long).
CATCH_UP_END_SECONDS = 60.0
# How long the end waits for the query's last batch to commit.
LAST_BATCH_SECONDS = 120.0
log = logging.getLogger(__name__)


class CatchUpEnds:
    """The caught-up queries told to end after their next batch, and since when."""

    def __init__(self, gate: BatchGate = GATE, patience: float = CATCH_UP_END_SECONDS) -> None:
        self._gate, self._patience = gate, patience
        self._since: dict[str, float] = {}

    def end(self, name: str, query: StreamingQuery) -> None:
        """Have caught-up ``query`` end after its next batch (a query without a gated writer is
        told at once). Still running ``patience`` seconds later (the end did not take: Spark
        without the internals ``end_after_batch`` uses): stopped between two batches as a
        graceful stop does (``end_between_batches``), or outright after twice that."""
        if name not in self._since:
            self._since[name] = time.monotonic()
            self._gate.end_query(str(query.id), partial(end_after_batch, query))
            return
        waited = time.monotonic() - self._since[name]
        if waited <= self._patience:
            return
        if waited > 2 * self._patience or (
            not runs_batch(query) and end_between_batches(query) is not False
        ):
            log.warning("Stream %r: its caught-up catch-up did not end; stopping it", name)
            query.stop()

    def settle(self, name: str, query: StreamingQuery) -> None:
        """When ``query`` was told to end and says it no longer runs: wait until its last batch
        has committed and its thread ended (it says so before that), so nothing starts on its
        checkpoint while it still writes. A failure is left to the caller (``exception()``)."""
        if name not in self._since:
            return
        try:
            if query.isActive:
                return
            del self._since[name]
            with contextlib.suppress(StreamingQueryException):
                query.awaitTermination(LAST_BATCH_SECONDS)  # type: ignore[arg-type]  # seconds
            query.stop()
            self._gate.disarm(str(query.id))
        except Py4JError:  # its session or JVM is gone: the supervisor reports that
            self._since.pop(name, None)

    def forget(self, name: str, query: StreamingQuery) -> None:
        """``query`` is replaced (started again after a failure): its end no longer applies."""
        if self._since.pop(name, None) is not None:
            self._gate.disarm(str(query.id))
