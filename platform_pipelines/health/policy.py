"""The thresholds every health judgement uses, and what a checkpoint must match.

Both come from the same settings the SparkSession is built from (``SparkOptions``), so a sensor
never compares a checkpoint against a number the session does not use.
"""

from __future__ import annotations

from dataclasses import dataclass

from platform_pipelines.health.checkpoint import CheckpointExpectations
from platform_pipelines.spark.session import ROCKSDB_PROVIDER, SparkOptions
from platform_pipelines.streams.sources import MIN_EVENT_TIME


@dataclass(frozen=True)
class HealthPolicy:
    """The thresholds of every judgement; the defaults suit a stream with a 1 s to 1 min trigger.

    Attributes:
        stale_after_triggers: liveness fails when nothing was recorded for this many trigger
            intervals (a trigger interval here is the longer of the trigger and the longest recent
            batch, since Spark reports a batch only when it ends)...
        min_stale_seconds: ...or for this many seconds, whichever is longer.
        window_batches: how many of the newest batches the rate, late-data, leak-trend and
            forecast judgements look at.
        behind_ratio: falling behind when the input rate exceeds the processing rate by this
            factor over the window while every batch with input was full.
        min_rate_batches: batches with input needed in the window before rates are compared.
        lag_warn_records: warn when the stream is this many records behind its input, or
            ``lag_warn_intervals`` times what arrives between two of its commits, whichever is
            more...
        lag_fail_records: ...and fail from this many, or twice the warn threshold when that is
            more.
        lag_warn_intervals: a stream that keeps up is, just before a commit, behind by what
            arrived during its trigger interval (or its longest batch, when longer) and the batch
            itself; a lag up to this many times that is its rhythm, not a backlog (a stream on a
            60 s trigger at 2,000 rows/s is 120,000 records behind before each batch); 0 for
            fixed thresholds. Before a query on a trigger has a batch with an input rate, a
            lag above ``lag_warn_records`` is not warned unless a batch outlasted the trigger.
        leak_min_batches: a leak needs this many consecutive batches of state growth with nothing
            removed (fewer is never a leak); it is also the fewest batches a forecast is made on.
            Keep it above the number of batches the state's retention (watermark delay or TTL
            divided by the trigger) needs before it starts removing anything.
        state_rows_budget: state rows (summed over the stateful operators) the stream may hold;
            None for no budget.
        state_bytes_budget: bytes of state (``memoryUsedBytes``, and RocksDB's SST size when
            reported, each on its own) the stream may hold; None for no budget.
        forecast_horizon_seconds: warn when the linear trend reaches a budget within this time.
        late_rows_fail_fraction: fail when more than this share of the input rows in the window
            went to ``late_events`` (they are not in the stream's table); any late row warns.
        watermark_delay_warn_seconds: warn when the watermark is more than this far behind the
            batch's wall clock. This includes the stream's declared watermark delay: keep it above.
        watermark_ahead_fail_seconds: a watermark ahead of the batch's clock makes on-time rows
            late; up to this far ahead warns (producers' clocks a little fast), beyond it fails.
        implausible_before: late rows of a batch holding event times before this (epoch
            seconds; 2000-01-01 UTC, bronze's default ``min_event_time``) are invalid times,
            not a watermark too tight: they are reported apart and only warn.
    """

    stale_after_triggers: float = 3.0
    min_stale_seconds: float = 60.0
    window_batches: int = 10
    behind_ratio: float = 1.2
    min_rate_batches: int = 3
    lag_warn_records: int = 10_000
    lag_fail_records: int = 1_000_000
    lag_warn_intervals: float = 2.0
    leak_min_batches: int = 5
    state_rows_budget: int | None = 50_000_000
    state_bytes_budget: int | None = 4 * 1024**3
    forecast_horizon_seconds: float = 24 * 3600
    late_rows_fail_fraction: float = 0.001
    watermark_delay_warn_seconds: float = 3600.0
    watermark_ahead_fail_seconds: float = 60.0
    implausible_before: float = MIN_EVENT_TIME.timestamp()


DEFAULT_POLICY = HealthPolicy()


def checkpoint_expectations(options: SparkOptions) -> CheckpointExpectations:
    """What a checkpoint written by a session of ``options`` must look like."""
    return CheckpointExpectations(
        state_partitions=options.state_partitions,
        min_batches_to_retain=options.min_batches_to_retain,
        state_provider=ROCKSDB_PROVIDER,
    )
