"""What a running query is doing, read from Spark: between batches or in one, caught up; and
telling it to end after its batch. The supervisor decides with these when a query can be stopped
without cutting a batch; each leans on a detail of Spark (4.2) written down where it is used.
After a stop: the watermark a query still owes, and how it ended (a handle that no longer
answers is a ``QueryLostError``, never a clean end)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from py4j.protocol import Py4JError
from pyspark.sql.streaming.query import StreamingQuery

from platform_pipelines.core.spark_progress import watermark_owed

log = logging.getLogger(__name__)

# The status message Spark's batch loop sets as the last thing a trigger does
# (``MicroBatchExecution.executeOneBatch``); the one of a trigger that found nothing to do (set
# while the trigger is still active; once it is not, the loop sleeps
# ``spark.sql.streaming.pollingDelay``, and on a 0 s trigger the next one starts right after);
# and the one its thread sets as it ends.
BETWEEN_TRIGGERS = "Waiting for next trigger"
NOTHING_TO_DO = "Waiting for data to arrive"
ENDED = "Stopped"


def end_after_batch(query: StreamingQuery) -> bool:
    """Tell ``query`` to start no new batch; whether Spark took it.

    Spark (4.2) has no public call for it: ``StreamingQuery.stop()`` sets the query's state to
    TERMINATED, which its batch loop checks before each batch, then cancels the running batch's
    jobs and interrupts its thread. This sets the state alone, so the running batch commits and
    the loop ends, when the batch is past its planning (Spark looks at the state again then, and
    cuts a batch it finds stopped): the stop calls this through ``streams.batch_gate``, or
    ``end_between_batches``; so does the end of a caught-up catch-up (``catch_up_end``).
    """
    try:
        _set_state(query._jsq.streamingQuery(), "TERMINATED")
    except (Py4JError, AttributeError) as error:  # another Spark, or Spark Connect
        log.warning(
            "Cannot ask a query to end after its batch (%s); it is stopped when idle", error
        )
        return False
    return True


def end_between_batches(query: StreamingQuery, settle_seconds: float = 1.0) -> bool:
    """Tell ``query``, seen between batches, to start no new batch, unless a trigger of it
    began meanwhile: whether it was told (then it starts no batch, and stopping it cuts none).

    Spark's batch loop looks at the state at the start of a trigger, marks the trigger active,
    then takes the query's progress lock to choose the trigger's offsets (it also takes it after
    each trigger and as its thread ends). This takes that lock first (not when the query holds
    it); a trigger already active is left alone (a batch it starts ends the query from its
    ``foreachBatch``: ``streams.batch_gate``). Otherwise it sets the state and waits until the
    batch thread shows where it is: asleep until its next trigger, or ended, or waiting for the
    lock with no trigger active (finishing one, or ending): it looks at the state before any
    new batch. Waiting for the lock with a trigger active means that trigger passed its look
    just before the state was set; so may a thread that shows nothing within
    ``settle_seconds`` (stalled on its way to the lock). Then the state is set back before the
    lock is let go (unless something else stopped the query meanwhile), and the trigger goes on
    as if nothing happened.

    The lock is taken and let go by one JVM thread only because py4j runs each Python
    thread's calls on a JVM thread of its own (PySpark's default, ``PYSPARK_PIN_THREAD``).
    Without that, or without Spark's internals (another Spark): ``end_after_batch``, and the
    query is taken as told.
    """
    try:
        engine = query._jsq.streamingQuery()
        lock, thread = engine.awaitProgressLock(), engine.queryExecutionThread()
    except (Py4JError, AttributeError):
        engine = None
    if engine is None or os.environ.get("PYSPARK_PIN_THREAD", "true").lower() != "true":
        end_after_batch(query)
        return True
    if not lock.tryLock():
        return False
    try:
        if query.status["isTriggerActive"]:
            return False
        _set_state(engine, "TERMINATED")
        deadline = time.monotonic() + settle_seconds
        while time.monotonic() < deadline:
            if not thread.isAlive() or thread.getState().name() == "TIMED_WAITING":
                return True  # ended, or asleep: it looks at the state when it wakes
            if lock.hasQueuedThread(thread):
                if not query.status["isTriggerActive"]:
                    return True
                break
            time.sleep(0.005)
        if not thread.isInterrupted():  # interrupted: a stop() came meanwhile; it stays
            _set_state(engine, "ACTIVE", expected="TERMINATED")
        return False
    finally:
        lock.unlock()


def _set_state(engine: Any, name: str, expected: str | None = None) -> None:
    """Set the state of Spark's ``StreamExecution`` ``engine`` to ``name`` (ACTIVE,
    TERMINATED: Scala objects of its package); with ``expected``, only if it is that."""
    package = engine.getClass().getPackage().getName()
    loader = engine.getClass().getClassLoader()

    def state(of: str) -> Any:
        return loader.loadClass(f"{package}.{of}$").getField("MODULE$").get(None)

    if expected is None:
        engine.state().set(state(name))
    else:
        engine.state().compareAndSet(state(expected), state(name))


def between_batches(status: Mapping[str, Any]) -> bool:
    """Whether a query whose status is ``status`` runs no batch now: its trigger ended and it
    waits for the next one (or its thread ended).

    ``isTriggerActive`` alone is not enough: a new trigger first shows its fresh status, still
    inactive, then writes its batch's offsets. The message is that of a finished trigger only
    once the trigger really ended.

    >>> between_batches({"isTriggerActive": False, "message": "Waiting for next trigger"})
    True
    >>> between_batches({"isTriggerActive": False, "message": "Initializing StreamExecution"})
    False
    >>> between_batches({"isTriggerActive": True, "message": "Processing new data"})
    False
    >>> between_batches({"isTriggerActive": False, "message": "Waiting for data to arrive"})
    True
    """
    finished = (BETWEEN_TRIGGERS, NOTHING_TO_DO, ENDED)
    return not status["isTriggerActive"] and status.get("message") in finished


def runs_batch(query: StreamingQuery) -> bool:
    """Whether ``query`` may be in a batch now (see ``between_batches``). Not when the thread
    that runs its batches ended: a query told to end while it was starting, or one that died,
    keeps the message it had ("Initializing sources", "Terminated with exception: ...").

    A trigger may begin right after this look: ``end_between_batches`` sees to that.
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


def active(query: StreamingQuery) -> bool:
    return bool(query.isActive)


def ran(progress: Mapping[str, Any]) -> bool:
    """Whether the progress is of a batch that ran, not of a trigger that found nothing to do
    (which has no ``addBatch`` time, no rows and the id of the batch still to come)."""
    return "addBatch" in (progress.get("durationMs") or {})


def owed_watermark(query: StreamingQuery, delay_seconds: float) -> float | None:
    """The watermark (epoch seconds) ``query``'s batches imply and its last batch did not run
    with (``core.spark_progress.watermark_owed``), else None: after a stop, what waits on it
    (sessions to close, state to expire) happens only when the stream next reads input."""
    owed = watermark_owed([p for p in query.recentProgress if ran(p)], delay_seconds)
    return None if owed is None else owed[1]


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


class QueryLostError(RuntimeError):
    """A query's handle stopped answering (its session or JVM is gone): how it ended is unknown,
    and an end nobody can vouch for is not a clean one."""


def run_id(query: StreamingQuery) -> str:
    try:
        return str(query.runId)
    except Py4JError:  # the JVM is gone: the end is recorded without its query run
        return ""


def query_error(name: str, query: StreamingQuery) -> BaseException | None:
    """Spark's error when the query died, None when it did not; a ``QueryLostError`` when Spark
    cannot be asked: only Spark's word makes an end clean."""
    try:
        return query.exception()
    except Exception as error:  # returned, not raised: this runs in ``wait``'s finally too
        return lost_query(name, "reading how its query ended", error)


def lost_query(name: str, action: str, error: Exception) -> QueryLostError:
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
