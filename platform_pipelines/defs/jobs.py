"""Dagster jobs that own streams: one per declared stream, and one running them all together.

The op starts the queries and babysits them: it logs progress at a readable interval, records
materializations with numeric metadata (plotted on the asset page), fails the run with Spark's
error summarized if a query dies, and stops the queries gracefully when the run is cancelled.
"""

import time
from collections.abc import Sequence

import dagster as dg

from platform_pipelines.defs.config import StreamRunConfig
from platform_pipelines.defs.resources import (
    KafkaResource,
    LakehouseResource,
    SparkStreamingResource,
)
from platform_pipelines.health.store import ProgressStore
from platform_pipelines.runtime.progress import Progress, describe, progress_metrics
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.runner import (
    CheckpointBusyError,
    CheckpointDamagedError,
    StreamFailedError,
    run_streams,
    trigger_seconds,
)
from platform_pipelines.settings import get_settings
from platform_pipelines.streams.registry import StreamContext, StreamDefinition

STREAM_TAG = "platform/stream"


class ProgressReporter:
    """Turns query progress into log lines and asset materializations, at most once an interval."""

    def __init__(
        self,
        context: dg.OpExecutionContext,
        streams: Sequence[StreamDefinition],
        interval_seconds: float,
    ) -> None:
        self._context = context
        self._streams = {s.name: s for s in streams}
        self._interval = interval_seconds
        self._last_emit: dict[str, float] = {}
        self._pending: dict[str, dict[str, float | int]] = {}
        self.batches: dict[str, int] = {}

    def on_progress(self, name: str, progress: Progress) -> None:
        metrics = progress_metrics(progress)
        pending = self._pending.get(name)
        if pending:  # rows accumulate across the batches between two reports
            for key in ("rows_in", "rows_out"):
                if key in metrics and key in pending:
                    metrics[key] += int(pending[key])
        self._pending[name] = metrics
        self.batches[name] = self.batches.get(name, 0) + 1
        if time.monotonic() - self._last_emit.get(name, 0.0) >= self._interval:
            self.flush(name)

    def flush(self, name: str | None = None) -> None:
        for stream in [name] if name else list(self._pending):
            metrics = self._pending.pop(stream, None)
            if metrics is None:
                continue
            self._last_emit[stream] = time.monotonic()
            self._context.log.info(describe(stream, metrics))
            self._context.log_event(
                dg.AssetMaterialization(
                    asset_key=next(iter(self._streams[stream].outputs)),  # its main table
                    description=f"Progress of streaming query {stream}",
                    metadata={
                        k: dg.MetadataValue.int(v)
                        if isinstance(v, int)
                        else dg.MetadataValue.float(v)
                        for k, v in metrics.items()
                    },
                )
            )


def make_stream_op(name: str, streams: Sequence[StreamDefinition]) -> dg.OpDefinition:
    """The op that runs ``streams`` in one SparkSession until done, failed or cancelled."""
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
        try:
            chosen = config.selected(streams)
        except ValueError as error:
            raise dg.Failure(description=str(error)) from None
        ctx = StreamContext(
            spark=spark.get_session(),
            lakehouse=lakehouse.lakehouse(),
            kafka_bootstrap_servers=kafka.servers(),
        )
        reporter = ProgressReporter(context, chosen, config.progress_log_interval_seconds)
        options = {s.name: config.run_options(s) for s in chosen}
        recorder = ProgressRecorder(
            ProgressStore(get_settings().progress_dir),
            run_id=context.run_id,
            trigger_seconds={name: trigger_seconds(o) for name, o in options.items()},
        )
        try:
            run_streams(
                ctx,
                chosen,
                options,
                reporter.on_progress,
                on_start=lambda s: context.log.info(f"Starting stream {s} ({config.mode.value})"),
                recorder=recorder,
            )
        except (StreamFailedError, CheckpointDamagedError, CheckpointBusyError) as error:
            raise dg.Failure(description=str(error)) from error
        finally:
            reporter.flush()
        context.log.info(f"All streams done: {reporter.batches} batches")

    return run_op


def make_stream_job(
    name: str, streams: Sequence[StreamDefinition], description: str
) -> dg.JobDefinition:
    """A job with one op owning ``streams``. Runs in-process: one Python process, one JVM."""
    op_def = make_stream_op(name, streams)

    @dg.job(
        name=name,
        description=description,
        executor_def=dg.in_process_executor,
        tags={STREAM_TAG: name},
    )
    def stream_job() -> None:
        op_def()

    return stream_job
