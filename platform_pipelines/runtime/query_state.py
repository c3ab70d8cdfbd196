"""What a running query is doing, read from Spark: between batches or in one, caught up, told to
end after its batch. The supervisor decides with these when a query can be stopped without
cutting a batch; each leans on a detail of Spark (4.2) written down where it is used."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from py4j.protocol import Py4JError
from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger(__name__)

# The status message Spark's batch loop sets as the last thing a trigger does
# (``MicroBatchExecution.executeOneBatch``), and the one its thread sets as it ends.
BETWEEN_TRIGGERS = "Waiting for next trigger"
ENDED = "Stopped"


# A processing-time trigger starts at a multiple of its interval of the wall clock
# (``ProcessingTimeExecutor.nextBatchTime``), or at once after a batch that outran it. A query
# seen waiting for its trigger is stopped only when no trigger can start from a moment before
# that look (a trigger that began then would show by the look) to a moment after the stop.
SHOWS_WITHIN_MS = 50
STOP_TAKES_MS = 250


def end_after_batch(query: StreamingQuery) -> bool:
    """Tell ``query`` to start no new batch; whether Spark took it.

    Spark (4.2) has no public call for it: ``StreamingQuery.stop()`` sets the query's state to
    TERMINATED, which its batch loop checks before each batch, and then cancels the running
    batch's jobs. This sets the state alone, so the running batch commits and the loop ends,
    when the batch is past its planning (Spark looks at the state again then, and cuts a batch
    it finds stopped): the stop calls this through ``streams.batch_gate``.
    """
    try:
        engine = query._jsq.streamingQuery()
        package = engine.getClass().getPackage().getName()
        loader = engine.getClass().getClassLoader()
        terminated = loader.loadClass(f"{package}.TERMINATED$").getField("MODULE$").get(None)
        engine.state().set(terminated)
    except (Py4JError, AttributeError) as error:  # another Spark, or Spark Connect
        log.warning(
            "Cannot ask a query to end after its batch (%s); it is stopped when idle", error
        )
        return False
    return True


def between_batches(status: Mapping[str, Any]) -> bool:
    """Whether a query whose status is ``status`` runs no batch now: its trigger ended and it
    waits for the next one (or its thread ended).

    ``isTriggerActive`` alone is not enough: a trigger that began just before the query was told
    to end first shows the new trigger's fresh status, still inactive, then writes its batch's
    offsets. The message is that of a finished trigger only once the trigger really ended.

    >>> between_batches({"isTriggerActive": False, "message": "Waiting for next trigger"})
    True
    >>> between_batches({"isTriggerActive": False, "message": "Initializing StreamExecution"})
    False
    >>> between_batches({"isTriggerActive": True, "message": "Processing new data"})
    False
    """
    return not status["isTriggerActive"] and status.get("message") in (BETWEEN_TRIGGERS, ENDED)


def runs_batch(query: StreamingQuery) -> bool:
    """Whether ``query`` may be in a batch now (see ``between_batches``). Not when the thread
    that runs its batches ended: a query told to end while it was starting, or one that died,
    keeps the message it had ("Initializing sources", "Terminated with exception: ...").

    Two looks 0.1 s apart (the supervisor's) see a trigger that began just before the query was
    told to end, unless its thread stalls longer than that between Spark's check of the state
    and the trigger's start: a few instructions, and a pause of the whole JVM stalls the look too.
    """
    if between_batches(query.status):
        return False
    return thread_alive(query) is not False


def thread_alive(query: StreamingQuery) -> bool | None:
    """Whether the thread that runs ``query``'s batches lives; None when Spark cannot say."""
    try:
        return bool(query._jsq.streamingQuery().queryExecutionThread().isAlive())
    except (Py4JError, AttributeError):  # another Spark, or Spark Connect
        return None


def trigger_interval_ms(query: StreamingQuery) -> int:
    """The interval of ``query``'s processing-time trigger; 0 when it has none (availableNow,
    or a trigger that starts again at once) or Spark cannot say."""
    try:
        return int(query._jsq.streamingQuery().trigger().intervalMs())
    except (Py4JError, AttributeError, TypeError, ValueError):
        return 0


def due_interval_ms(query: StreamingQuery) -> int:
    """The trigger interval at which ``query`` can still start a batch: none once its state
    says it ended (told to end after its batch, it starts no trigger)."""
    return trigger_interval_ms(query) if active(query) else 0


def no_trigger_between(seen_ms: float, stop_ms: float, interval_ms: int) -> bool:
    """Whether no trigger of a query with ``interval_ms`` can start between a look that saw it
    waiting (at ``seen_ms``, epoch milliseconds) and its stop (at ``stop_ms``), with margins:
    a stop that came as a trigger began would cut the batch it was planning.

    >>> no_trigger_between(10_100, 10_400, 1000)  # both inside one second
    True
    >>> no_trigger_between(10_700, 10_800, 1000)  # the next second's trigger may start first
    False
    >>> no_trigger_between(11_020, 11_300, 1000)  # the trigger at 11_000 may not show yet
    False
    >>> no_trigger_between(10_700, 10_800, 0)  # no interval: nothing better can be known
    True
    """
    if interval_ms <= 0:
        return True
    span = (seen_ms - SHOWS_WITHIN_MS, stop_ms + STOP_TAKES_MS)
    return span[0] // interval_ms == span[1] // interval_ms


def active(query: StreamingQuery) -> bool:
    return bool(query.isActive)


def ran(progress: Mapping[str, Any]) -> bool:
    """Whether the progress is of a batch that ran, not of a trigger that found nothing to do
    (which has no ``addBatch`` time, no rows and the id of the batch still to come)."""
    return "addBatch" in (progress.get("durationMs") or {})


def caught_up(query: StreamingQuery) -> bool:
    """An availableNow query whose last batch found nothing left to read.

    A query with processing-time timers always asks Spark for another (no-data) batch, so
    availableNow alone would never end it. Only such queries are judged by this: for others an
    empty progress between batches could stop a catch-up early.
    """
    if not query.isActive:
        return False
    last = query.lastProgress
    return last is not None and last["numInputRows"] == 0 and not query.status["isDataAvailable"]
