"""Dagster jobs that own streams: one per declared stream, and one running them all together.

The op starts the queries and babysits them: it logs progress at a readable interval, records
materializations with numeric metadata (plotted on the asset page), fails the run with Spark's
error summarized if a query dies, and stops the queries gracefully when the run is cancelled.
"""


import time
from collections.abc import Sequence
from enum import Enum

import dagster as dg
from pydantic import Field, field_validator

from platform_pipelines.defs.resources import (
    KafkaResource,
    LakehouseResource,
    SparkStreamingResource,
)
from platform_pipelines.runtime.progress import Progress, describe, progress_metrics
from platform_pipelines.runtime.runner import RunOptions, StreamFailedError, run_streams
from platform_pipelines.streams.registry import StreamContext, StreamDefinition

STREAM_TAG = "platform/stream"


class StreamMode(Enum):
    continuous = "continuous"
    catch_up = "catch_up"


class StreamRunConfig(dg.Config):
    """Launch config of a stream job (the launchpad shows these fields with their defaults)."""

    mode: StreamMode = Field(
        default=StreamMode.continuous,
        description="continuous: trigger every trigger_interval_seconds until the run is "
        "cancelled. catch_up: process the backlog available now (availableNow), then end the run.",
    )
    trigger_interval_seconds: int = Field(
        default=10, description="Processing-time trigger interval in continuous mode (>= 1)."
    )
    max_offsets_per_trigger: int | None = Field(
        default=50_000,
        description="At most this many Kafka records per micro-batch; null for no limit.",
    )
    progress_log_interval_seconds: int = Field(
        default=30, description="How often progress is logged and recorded as a materialization."
    )

    @field_validator("trigger_interval_seconds", "progress_log_interval_seconds")
    @classmethod
    def _positive(cls, value: int, info) -> int:  # type: ignore[no-untyped-def]
        if value < 1:
            raise ValueError(
                f"{info.field_name} is {value}; set it to a whole number of seconds >= 1."
            )
        return value

    @field_validator("max_offsets_per_trigger")
    @classmethod
    def _positive_or_null(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(
                f"max_offsets_per_trigger is {value}; set it to a positive number of records, "
                "or null for no limit."
            )
        return value

    def run_options(self) -> RunOptions:
        return RunOptions(
            mode=self.mode.value,
            processing_time=f"{self.trigger_interval_seconds} seconds",
            max_offsets_per_trigger=self.max_offsets_per_trigger,
        )


class ProgressReporter:
    """Turns query progress into log lines and asset materializations, at most once an interval."""

    def __init__(self, context: dg.OpExecutionContext, streams: Sequence[StreamDefinition],
                 interval_seconds: float) -> None:  # fmt: skip
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
            metrics["rows_in"] += int(pending["rows_in"])
            metrics["rows_out"] += int(pending["rows_out"])
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
                    asset_key=stream,
                    description=f"Progress of streaming query {stream}",
                    metadata={k: dg.MetadataValue.int(v) if isinstance(v, int)
                              else dg.MetadataValue.float(v) for k, v in metrics.items()},
                )
            )  # fmt: skip


def make_stream_op(name: str, streams: Sequence[StreamDefinition]) -> dg.OpDefinition:
    """The op that runs ``streams`` in one SparkSession until done, failed or cancelled."""
    names = ", ".join(s.name for s in streams)

    @dg.op(name=f"run_{name}", description=f"Starts and babysits the streaming queries: {names}.",
           tags={STREAM_TAG: name})  # fmt: skip
    def run_op(
        context: dg.OpExecutionContext,
        config: StreamRunConfig,
        spark: SparkStreamingResource,
        kafka: KafkaResource,
        lakehouse: LakehouseResource,
    ) -> None:
        ctx = StreamContext(
            spark=spark.get_session(),
            lakehouse=lakehouse.lakehouse(),
            kafka_bootstrap_servers=kafka.servers(),
            max_offsets_per_trigger=config.max_offsets_per_trigger,
        )
        reporter = ProgressReporter(context, streams, config.progress_log_interval_seconds)
        try:
            run_streams(
                ctx, streams, config.run_options(), reporter.on_progress,
                on_start=lambda s: context.log.info(f"Starting stream {s} ({config.mode.value})"),
            )  # fmt: skip
        except StreamFailedError as error:
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

    @dg.job(name=name, description=description, executor_def=dg.in_process_executor,
            tags={STREAM_TAG: name})  # fmt: skip
    def stream_job() -> None:
        op_def()

    return stream_job
