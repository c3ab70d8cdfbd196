"""Starting declared streams and babysitting them until they finish, fail or are told to stop.

Nothing here knows Dagster: the Dagster op passes callbacks for progress, and an interrupt
(``DagsterExecutionInterruptedError``, a BaseException, or Ctrl-C) stops the queries gracefully
before it propagates, so the checkpoint stays consistent.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming.query import StreamingQuery

from platform_pipelines.health.checkpoint import (
    CheckpointExpectations,
    checkpoint_verdict,
    inspect_checkpoint,
)
from platform_pipelines.health.verdict import Status
from platform_pipelines.runtime.progress import Progress
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.streams.registry import StreamContext, StreamDefinition

Mode = Literal["continuous", "catch_up"]
ProgressCallback = Callable[[str, Progress], None]
EndCallback = Callable[[str, BaseException | None], None]


@dataclass(frozen=True)
class RunOptions:
    """How a stream runs.

    Attributes:
        mode: ``continuous`` triggers every ``processing_time`` until stopped; ``catch_up`` processes
            what is available now (``availableNow``) and ends.
        processing_time: the trigger interval in continuous mode, e.g. ``"10 seconds"``.
        max_offsets_per_trigger: at most this many Kafka records per micro-batch (None: no limit).
    """

    mode: Mode = "continuous"
    processing_time: str = "10 seconds"
    max_offsets_per_trigger: int | None = None


class StreamFailedError(RuntimeError):
    """A streaming query died; the message is Spark's error, summarized."""


class CheckpointDamagedError(RuntimeError):
    """The stream's checkpoint is inconsistent: starting a query on it would fail or lose data."""


class CheckpointBusyError(RuntimeError):
    """Another query (in this or another process) already runs on the stream's checkpoint."""


_LOCKS: dict[str, int] = {}


def _lock_checkpoint(name: str, checkpoint: str) -> None:
    """Hold an exclusive lock on the checkpoint while its query runs: two queries on one
    checkpoint (say `stream_events` and `all_streams` launched together) would corrupt it."""
    import os

    os.makedirs(checkpoint, exist_ok=True)
    fd = os.open(os.path.join(checkpoint, ".platform.lock"), os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise CheckpointBusyError(
            f"Stream {name!r} is already running on {checkpoint} (another run or job holds its "
            "checkpoint). Stop that run first; two queries on one checkpoint would corrupt it."
        ) from None
    _LOCKS[checkpoint] = fd


def _unlock_checkpoint(checkpoint: str) -> None:
    import os

    fd = _LOCKS.pop(checkpoint, None)
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock


def start_stream(
    ctx: StreamContext, stream: StreamDefinition, options: RunOptions
) -> StreamingQuery:
    """Create the stream's tables if needed and start its query on its own checkpoint."""
    checkpoint = str(ctx.lakehouse.checkpoint(stream.name))
    _lock_checkpoint(stream.name, checkpoint)
    try:
        check_checkpoint(ctx, stream.name)
        for table, schema in stream.outputs.items():
            ctx.lakehouse.ensure_table(ctx.spark, table, schema)
        ctx = replace(ctx, max_offsets_per_trigger=options.max_offsets_per_trigger)
        writer = stream.build(ctx).queryName(stream.name).option("checkpointLocation", checkpoint)
        if options.mode == "catch_up":
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=options.processing_time)
        return writer.start()
    except BaseException:
        _unlock_checkpoint(checkpoint)
        raise


def check_checkpoint(ctx: StreamContext, name: str) -> None:
    """Refuse to start on a damaged checkpoint, saying what is wrong, before Spark touches it.

    Only failures refuse (two batches without commits, gaps, damaged state files, a partition or
    provider mismatch); warnings are left to the health checks."""
    conf = ctx.spark.conf
    expected = CheckpointExpectations(
        state_partitions=int(conf.get("spark.sql.shuffle.partitions") or 200),
        min_batches_to_retain=int(conf.get("spark.sql.streaming.minBatchesToRetain") or 100),
        state_provider=str(conf.get("spark.sql.streaming.stateStore.providerClass") or ""),
    )
    path = ctx.lakehouse.checkpoint(name)
    verdict = checkpoint_verdict(inspect_checkpoint(path), expected)
    if verdict.status is Status.FAIL:
        raise CheckpointDamagedError(
            f"Stream {name!r} was not started: its checkpoint {path} is damaged: "
            f"{verdict.summary}. {verdict.remedy}".strip()
        )


def summarize_failure(name: str, error: BaseException) -> str:
    """Spark's error reduced to what a person needs: the stream, the error class, the first line."""
    text = str(error).strip()
    first = next((line for line in text.splitlines() if line.strip()), type(error).__name__)
    return f"Stream {name!r} failed: {first[:500]}"


class Supervisor:
    """Watches running queries, reports each new progress once and raises when one fails."""

    def __init__(
        self,
        on_progress: ProgressCallback,
        poll_seconds: int = 1,
        on_end: EndCallback = lambda name, error: None,
    ) -> None:
        self._on_progress = on_progress
        self._on_end = on_end
        self._ended: set[str] = set()
        self._poll = poll_seconds
        self._queries: dict[str, StreamingQuery] = {}
        self._last_batch: dict[str, int] = {}
        self._catch_up: set[str] = set()
        self._checkpoints: dict[str, str] = {}

    def add(self, name: str, query: StreamingQuery, stop_when_caught_up: bool = False,
            checkpoint: str = "") -> None:  # fmt: skip
        """Watch ``query``; with ``stop_when_caught_up`` (an availableNow query that would never
        end by itself) it is stopped once it has caught up. The checkpoint's lock (taken by
        ``start_stream``) is released when the query ends."""
        self._queries[name] = query
        self._checkpoints[name] = checkpoint
        self._last_batch.setdefault(name, -1)
        if stop_when_caught_up:
            self._catch_up.add(name)

    def wait(self, names: Sequence[str] | None = None) -> None:
        """Block until the named queries (default: all) terminate; raise if one fails.

        On any interrupt every query is stopped first, then the interrupt propagates.
        """
        watched = list(names or self._queries)
        try:
            while active := [n for n in watched if self._queries[n].isActive]:
                try:
                    self._queries[active[0]].awaitTermination(self._poll)
                except StreamingQueryException as error:
                    raise StreamFailedError(summarize_failure(active[0], error)) from error
                self.poll()
            self.poll()
        except BaseException:
            self.stop_all()
            raise
        finally:
            self._release_finished()

    def poll(self) -> None:
        """Report new progress of every query; raise StreamFailedError for a dead one."""
        for name, query in self._queries.items():
            for progress in query.recentProgress:
                if int(progress["batchId"]) > self._last_batch[name]:
                    self._last_batch[name] = int(progress["batchId"])
                    self._on_progress(name, progress)
            error = _query_error(query)
            if error is not None:
                self.stop_all()
                raise StreamFailedError(summarize_failure(name, error)) from error
            if name in self._catch_up and _caught_up(query):
                query.stop()

    def stop_all(self) -> None:
        """Stop every query gracefully (a running batch is abandoned; the checkpoint stays valid).

        A query that fails to stop does not keep the others running."""
        for query in self._queries.values():
            try:
                if query.isActive:
                    query.stop()
            except Exception:
                pass
        self._release_finished()

    def _release_finished(self) -> None:
        for name, query in self._queries.items():
            try:
                active = query.isActive
            except Exception:
                active = False
            if not active:
                _unlock_checkpoint(self._checkpoints.get(name, ""))
                if name not in self._ended:
                    self._ended.add(name)
                    self._on_end(name, _query_error(query))


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


def _query_error(query: StreamingQuery) -> StreamingQueryException | None:
    try:
        return query.exception()
    except Exception:  # the query object is gone with its session: nothing to report
        return None


def run_streams(
    ctx: StreamContext,
    streams: Sequence[StreamDefinition],
    options: RunOptions | Mapping[str, RunOptions],
    on_progress: ProgressCallback,
    on_start: Callable[[str], None] = lambda name: None,
    recorder: ProgressRecorder | None = None,
) -> Supervisor:
    """Run streams to the end. Catch-up runs them one after another, upstream first, so each
    reads its upstream's complete output; continuous starts them all and waits until stopped.
    ``options`` applies to every stream, or maps each stream's name to its own. A ``recorder``
    persists every query event to the progress store while the streams run."""
    per_stream = options if isinstance(options, Mapping) else {s.name: options for s in streams}
    on_end = recorder.record_end if recorder else lambda name, error: None
    supervisor = Supervisor(on_progress, on_end=on_end)
    if recorder:
        ctx.spark.streams.addListener(recorder)
    try:
        for stream in streams:
            on_start(stream.name)
            catch_up = per_stream[stream.name].mode == "catch_up"
            checkpoint = str(ctx.lakehouse.checkpoint(stream.name))
            query = start_stream(ctx, stream, per_stream[stream.name])
            supervisor.add(stream.name, query, catch_up and stream.processing_time_timers,
                           checkpoint)  # fmt: skip
            if catch_up:
                supervisor.wait([stream.name])
        supervisor.wait()
    finally:
        if recorder:
            ctx.spark.streams.removeListener(recorder)
    return supervisor


def trigger_seconds(options: RunOptions) -> float:
    """The trigger interval in seconds (0 for a catch-up run, which has none)."""
    if options.mode == "catch_up":
        return 0.0
    number, _, unit = options.processing_time.strip().partition(" ")
    scale = {"second": 1, "minute": 60, "hour": 3600, "millisecond": 0.001}
    return float(number) * scale.get(unit.rstrip("s") or "second", 1)
