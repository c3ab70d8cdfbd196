"""Launch config of the stream jobs, as the Dagster launchpad shows it (defaults + validation)."""

from collections.abc import Sequence
from datetime import timedelta
from enum import Enum

import dagster as dg
from pydantic import Field, ValidationInfo, field_validator

from platform_pipelines.runtime.run_options import CATCH_UP_BATCH_RECORDS, RunOptions
from platform_pipelines.spark.pools import pool_for
from platform_pipelines.streams.declare import Stream


class StreamMode(Enum):
    continuous = "continuous"
    catch_up = "catch_up"


def _at_least_one(value: int | None, info: ValidationInfo) -> int | None:
    if value is not None and value < 1:
        raise ValueError(
            f"{info.field_name} is {value}; set it to a whole number >= 1 (or leave it out for "
            "the default)."
        )
    return value


def _not_negative(value: int | None, info: ValidationInfo) -> int | None:
    if value is not None and value < 0:
        raise ValueError(
            f"{info.field_name} is {value}; set it to 0 (the next batch as soon as the last one "
            "ends and input is there) or a number of seconds (or leave it out for the default)."
        )
    return value


class StreamOverride(dg.Config):
    """Settings for one stream of a multi-stream job."""

    enabled: bool = Field(default=True, description="Run this stream in this job.")
    trigger_interval_seconds: int | None = Field(
        default=None,
        description="This stream's trigger interval in seconds; 0: the next batch as soon as "
        "the last one ends and input is there (default: the job's, else the stream's own).",
    )
    max_offsets_per_trigger: int | None = Field(
        default=None,
        description="This stream's Kafka records per catch-up batch (default: the job's).",
    )

    _check = field_validator("max_offsets_per_trigger")(_at_least_one)
    _check_trigger = field_validator("trigger_interval_seconds")(_not_negative)


class StreamRunConfig(dg.Config):
    """Launch config of a stream job."""

    mode: StreamMode = Field(
        default=StreamMode.continuous,
        description="catch_up: process what is available now, stream by stream (upstream first), "
        "then end the run. continuous: the same, then trigger every trigger_interval_seconds "
        "until the run is cancelled.",
    )
    trigger_interval_seconds: int | None = Field(
        default=None,
        description="Trigger interval in continuous mode, in seconds; 0: each next batch as soon "
        "as the last one ends and input is there. Default: each stream's declared trigger "
        "(0 for events and security_alerts, whose rows people wait for; 60 s for "
        "clickstream_raw and user_sessions, which nobody waits on; 10 s for the others).",
    )
    max_offsets_per_trigger: int | None = Field(
        default=CATCH_UP_BATCH_RECORDS,
        description="At most this many Kafka records per micro-batch while catching up; null "
        "for no limit. Continuous triggers read every partition to its end (a limit would read "
        "partitions at different event times and the watermark would drop on-time rows).",
    )
    progress_log_interval_seconds: int = Field(
        default=30, description="How often progress is logged and recorded as a materialization."
    )
    streams: dict[str, StreamOverride] = Field(
        default_factory=dict,
        description="Per-stream settings by stream name, e.g. {events: {trigger_interval_seconds: 5}}.",
    )

    _check = field_validator("max_offsets_per_trigger", "progress_log_interval_seconds")(
        _at_least_one
    )
    _check_trigger = field_validator("trigger_interval_seconds")(_not_negative)

    def selected(self, streams: Sequence[Stream]) -> list[Stream]:
        """The job's streams that this run enables; unknown names in ``streams`` are refused."""
        known = [s.name for s in streams]
        unknown = sorted(set(self.streams) - set(known))
        if unknown:
            raise ValueError(
                f"streams: {', '.join(map(repr, unknown))} is not a stream of this job; "
                f"use one of: {', '.join(known)}."
            )
        return [s for s in streams if self.streams.get(s.name, StreamOverride()).enabled]

    def run_options(self, stream: Stream) -> RunOptions:
        """How ``stream`` runs: its override, else the job's setting, else its declaration."""
        override = self.streams.get(stream.name, StreamOverride())
        chosen = (override.trigger_interval_seconds, self.trigger_interval_seconds)
        seconds = next((c for c in chosen if c is not None), int(stream.trigger.total_seconds()))
        return RunOptions(
            mode=self.mode.value,
            processing_time=f"{seconds} seconds",
            pool=pool_for(timedelta(seconds=seconds)),
            max_offsets_per_trigger=override.max_offsets_per_trigger
            or self.max_offsets_per_trigger,
        )
