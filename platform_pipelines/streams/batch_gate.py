"""Where a query's batch is, seen from its ``foreachBatch``: a graceful stop ends a query only
once its running batch is past the last point where Spark (4.2) would cut it.

Spark's batch loop looks at the query's state twice in a batch: before the trigger starts
(``MicroBatchExecution.executeOneBatch``), and again once the batch is planned, after its
offsets were written (``runBatch``): a query found stopped there interrupts its own thread, and
the batch ends without a commit (it runs again on the next start). So a query told to end while
its next batch is being planned loses that batch's work in this run. The one moment a batch is
surely past both looks and not committed yet is while its ``foreachBatch`` function runs, and
that function is ours: every platform query's writer is wrapped in a ``GatedBatch``.

A stop asks the ``GATE``: a query whose function runs now is told at once to start no batch
after this one; any other is armed, and its next batch to reach its function tells it so first.
A query that waits for its next trigger is stopped by the supervisor (``runtime.supervisor``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

End = Callable[[], object]  # tells the query to start no new batch (runtime.query_state)
Writer = Callable[[Any, int], None]  # a foreachBatch function: (batch DataFrame, batch id)


class BatchGate:
    """The queries whose ``foreachBatch`` runs now, and the ends armed for the others."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: set[str] = set()  # query ids whose writer is gated
        self._inside: set[str] = set()  # query ids whose foreachBatch runs now
        self._armed: dict[str, End] = {}

    def register(self, query_id: str) -> None:
        with self._lock:
            self._known.add(query_id)

    def run(self, query_id: str, batch: Callable[[], None]) -> None:
        """Run ``batch`` (the writer's work for one batch) for query ``query_id``; when an end
        was armed for it, call it first: the query starts no batch after this one."""
        with self._lock:
            self._inside.add(query_id)
            end = self._armed.pop(query_id, None)
        try:
            if end is not None:
                end()
            batch()
        finally:
            with self._lock:
                self._inside.discard(query_id)

    def end_query(self, query_id: str, end: End) -> bool:
        """Have query ``query_id`` end after a batch that is past Spark's last look: ``end``
        now when its ``foreachBatch`` runs, or when it has no gated writer (nothing better can
        be known of it); otherwise armed for its next batch. Whether ``end`` was called."""
        with self._lock:
            if query_id in self._inside or query_id not in self._known:
                end()
                return True
            self._armed[query_id] = end
            return False

    def armed(self, query_id: str) -> bool:
        """Whether query ``query_id``'s next batch will end it after itself."""
        with self._lock:
            return query_id in self._armed

    def disarm(self, query_id: str) -> None:
        """Forget an armed end (the query was stopped otherwise, or the stop is over)."""
        with self._lock:
            self._armed.pop(query_id, None)


GATE = BatchGate()


class GatedBatch:
    """A query's ``foreachBatch`` function: ``writer``, run through the gate."""

    def __init__(self, query_id: str, writer: Writer, gate: BatchGate = GATE) -> None:
        self.query_id, self.writer, self._gate = query_id, writer, gate
        gate.register(query_id)

    def __call__(self, batch: Any, batch_id: int) -> None:
        self._gate.run(self.query_id, lambda: self.writer(batch, batch_id))
