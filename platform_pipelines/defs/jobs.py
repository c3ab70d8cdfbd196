"""Dagster jobs that own streams: one per declared stream, and one running them all together.

The op takes its streams' checkpoint locks before it starts a JVM (a second run of a stream is
refused in a second, naming the run that holds it), runs them (catch-up first, then continuous),
logs progress at a readable interval (every batch since the last line), records a
materialization when its streams start and when they stop, warns in the run log when the Kafka
broker stops answering, and on a cancel, Ctrl-C or SIGTERM lets the running batches commit, stops
the queries and ends the run CANCELED with one line saying where each stopped.
"""

import time
from collections.abc import Callable, Sequence

import dagster as dg

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.spark_progress import (
    Progress,
    batch_id,
    batch_seconds,
    input_rows,
    op_sum,
    progress_metrics,
)
from platform_pipelines.core.units import count, size
from platform_pipelines.defs.config import StreamRunConfig
from platform_pipelines.defs.coordinator import STREAMS_TAG
from platform_pipelines.defs.resources import (
    KafkaResource,
    LakehouseResource,
    SparkStreamingResource,
)
from platform_pipelines.runtime.interrupts import GracefulStop, stop_requests
from platform_pipelines.runtime.lock import (
    CheckpointBusyError,
    CheckpointLocks,
    LockDatabaseError,
    LockLostError,
    LockNotConfiguredError,
)
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.run_options import trigger_seconds
from platform_pipelines.runtime.runner import CheckpointDamagedError, run_streams
from platform_pipelines.runtime.supervisor import StreamFailedError
from platform_pipelines.runtime.watch import BrokerWatch
from platform_pipelines.settings import get_settings
from platform_pipelines.streams.declare import Stream, asset_key
from platform_pipelines.streams.evolution import DeclarationChanged
from platform_pipelines.streams.query import StreamContext

STREAM_TAG = "platform/stream"
FAILURE_TAG = "platform/failure"  # on a run's failure metadata: what kind (see health.restart)
_FAILURES = {
    CheckpointBusyError: "checkpoint_busy",
    CheckpointDamagedError: "checkpoint_damaged",
    StreamFailedError: "stream_failed",
    DeclarationChanged: "declaration_changed",
    LockNotConfiguredError: "invalid_config",
    LockDatabaseError: "lock_database",
    LockLostError: "lock_lost",
}


class ProgressLog:
    """A readable log line per stream, at most once an interval, about every batch that ran
    since its previous line (``batches_line``); ``flush`` writes what is left."""

    def __init__(self, log: Callable[[str], None], interval_seconds: float) -> None:
        self._log = log
        self._interval = interval_seconds
        self._last: dict[str, float] = {}
        self._unlogged: dict[str, list[Progress]] = {}
        self._rows: dict[str, int] = {}
        self.batches: dict[str, int] = {}

    def on_progress(self, name: str, progress: Progress) -> None:
        self._rows[name] = self._rows.get(name, 0) + input_rows(progress)
        self.batches[name] = self.batches.get(name, 0) + 1
        self._unlogged.setdefault(name, []).append(progress)
        self.flush(due_only=True)

    def flush(self, due_only: bool = False) -> None:
        """Log every stream's batches not logged yet; with ``due_only``, only of the streams
        whose last line is an interval old (so rows never wait for a next batch to be seen)."""
        now = time.monotonic()
        for name, batches in self._unlogged.items():
            if batches and (not due_only or now - self._last.get(name, -1e9) >= self._interval):
                self._log(batches_line(name, batches))
                self._last[name] = now
                batches.clear()

    def rows(self, name: str) -> int:
        return self._rows.get(name, 0)


def batches_line(name: str, batches: Sequence[Progress]) -> str:
    """One line about ``batches`` (oldest first): their ids, the rows they read and how fast,
    the state after the newest and the rows the watermark dropped.

    >>> one = {"batchId": 7, "numInputRows": 300, "durationMs": {"triggerExecution": 1500}}
    >>> two = {"batchId": 8, "numInputRows": 0, "durationMs": {"triggerExecution": 500},
    ...        "stateOperators": [{"numRowsTotal": 4, "memoryUsedBytes": 2048}]}
    >>> batches_line("events", [one, two])
    'events: batches 7-8 read 300 rows (150 rows/s), state 4 rows / 2.0 KiB, 0 rows behind the watermark'
    """
    rows = sum(input_rows(b) for b in batches)
    seconds = sum(batch_seconds(b) for b in batches)
    first, last = batch_id(batches[0]), batch_id(batches[-1])
    which = f"batch {last}" if len(batches) == 1 else f"batches {first}-{last}"
    state = progress_metrics(batches[-1])
    dropped = sum(op_sum(b, "numRowsDroppedByWatermark") for b in batches)
    return (
        f"{name}: {which} read {count(rows)} rows ({count(round(rows / seconds) if seconds else 0)} "
        f"rows/s), state {count(state['state_rows'])} rows / {size(state['state_memory_bytes'])}, "
        f"{count(dropped)} rows behind the watermark"
    )


def _materialize(
    context: dg.OpExecutionContext,
    streams: Sequence[Stream],
    what: str,
    log: ProgressLog | None = None,
) -> None:
    """A materialization of each stream's table, naming this run; the health sensor reports the
    checks after it, so the Checks tab always shows results newer than the table's state."""
    for stream in streams:
        metadata: dict[str, dg.MetadataValue] = {
            "run": dg.MetadataValue.dagster_run(context.run_id),
            "job": dg.MetadataValue.text(context.job_name),
            "running": dg.MetadataValue.bool(what == "started"),
        }
        if log is not None:
            metadata["rows_read_in_run"] = dg.MetadataValue.int(log.rows(stream.name))
            metadata["batches_in_run"] = dg.MetadataValue.int(log.batches.get(stream.name, 0))
        context.log_event(
            dg.AssetMaterialization(
                asset_key=asset_key(stream),
                metadata=metadata,
                description=f"Stream {stream.name} {what} in run {context.run_id[:8]} of {context.job_name}",
            )
        )


def make_stream_op(name: str, streams: Sequence[Stream]) -> dg.OpDefinition:
    """The op that runs ``streams`` in one SparkSession until done, failed or stopped."""
    names = ", ".join(s.name for s in streams)

    @dg.op(
        name=f"run_{name}",
        description=f"Starts and babysits the streaming queries: {names}.",
        tags={STREAM_TAG: name},
    )
    def run_op(
        context: dg.OpExecutionContext,
        config: StreamRunConfig,
        spark: SparkStreamingResource,
        kafka: KafkaResource,
        lakehouse: LakehouseResource,
    ) -> None:
        chosen = _chosen(config, streams)
        lake = lakehouse.lakehouse()
        owner = f"run {context.run_id[:8]} of {context.job_name}"
        checkpoints = {s.name: lake.checkpoint(s.name) for s in chosen}
        log = ProgressLog(context.log.info, config.progress_log_interval_seconds)
        options = {s.name: config.run_options(s) for s in chosen}
        recorder = ProgressRecorder(
            ProgressStore(get_settings().progress_dir),
            run_id=context.run_id,
            trigger_seconds={n: trigger_seconds(o) for n, o in options.items()},
        )
        try:
            with CheckpointLocks(checkpoints, owner) as locks:
                session = spark.get_session()  # installs PySpark's own SIGINT handler...
                if not get_settings().verbose:
                    context.log.info(f"Spark's own output goes to {get_settings().log_file}")
                # ...which this replaces while the streams run; the step process also stops when
                # its run process is gone (multiprocess executor: this op runs in a child process)
                with stop_requests(watch_parent=True) as stop:
                    ctx = StreamContext(
                        session, lake, kafka.servers(), on_batch=recorder.record_batch
                    )
                    broker = BrokerWatch(
                        kafka.servers(), [s for s in chosen if s.topic], context.log
                    )

                    def watch() -> None:
                        locks.check()  # the lock database lost the session: stop the queries
                        broker.check()
                        log.flush(due_only=True)

                    _materialize(context, chosen, "started")
                    try:
                        run_streams(
                            ctx,
                            chosen,
                            options,
                            log.on_progress,
                            on_start=lambda s, phase: context.log.info(f"Starting {s} ({phase})"),
                            on_note=lambda s, note: context.log.warning(f"{s}: {note}"),
                            recorder=recorder,
                            stop=stop,
                            lock=False,
                            watch=watch,
                        )
                    except GracefulStop as done:
                        # While signals are still only recorded: the run process forwards a
                        # Ctrl-C as a second SIGINT, which may arrive only now.
                        _cancel(context, done, log)
                        raise
        except GracefulStop:
            _materialize(context, chosen, "stopped", log)
            return
        except (
            StreamFailedError,
            CheckpointDamagedError,
            CheckpointBusyError,
            DeclarationChanged,
            LockDatabaseError,
            LockLostError,
        ) as error:
            kind = _FAILURES[type(error)]
            raise dg.Failure(
                description=str(error), metadata={FAILURE_TAG: dg.MetadataValue.text(kind)}
            ) from None
        log.flush()
        _materialize(context, chosen, "finished", log)
        summary = ", ".join(
            f"{name} {n} batch{'es' if n != 1 else ''}" for name, n in log.batches.items()
        )
        context.log.info(f"All streams done: {summary or 'no batch ran'}")

    return run_op


def _chosen(config: StreamRunConfig, streams: Sequence[Stream]) -> list[Stream]:
    try:
        return config.selected(streams)
    except ValueError as error:
        raise dg.Failure(
            description=str(error), metadata={FAILURE_TAG: dg.MetadataValue.text("invalid_config")}
        ) from None


def _cancel(context: dg.OpExecutionContext, done: GracefulStop, log: ProgressLog) -> None:
    """Mark the run CANCELING: a stop asked for by a user (Ctrl-C, SIGTERM, the UI's Terminate)
    is a cancel, not a failure. The op then returns, so the step ends without an error and stack
    trace, and the run process ends the run CANCELED. Marked first, before any other write to the
    event log, so nothing that fails after it can turn the cancel into a failure; then the last
    batches' progress, then the one line saying where each stream stopped."""
    run = context.instance.get_run_by_id(context.run_id)
    if run is not None and run.status is not dg.DagsterRunStatus.CANCELING:
        context.instance.report_run_canceling(run, message=f"Stop requested by {done.reason}.")
    log.flush()
    context.log.info(done.line())


def make_stream_job(name: str, streams: Sequence[Stream], description: str) -> dg.JobDefinition:
    """A job with one op owning ``streams``, run by the multiprocess executor: the op (and its
    JVM) lives in a step process, so a cancel reaches it as a signal it turns into a graceful stop,
    and the run ends CANCELED without a failed step. Its tags name every stream it holds, so the
    run coordinator can refuse an overlapping launch."""
    op_def = make_stream_op(name, streams)
    tags = {STREAM_TAG: name, STREAMS_TAG: ",".join(s.name for s in streams)}

    @dg.job(name=name, description=description, executor_def=dg.multiprocess_executor, tags=tags)
    def stream_job() -> None:
        op_def()

    return stream_job
