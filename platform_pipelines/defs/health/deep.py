"""The checks that need Spark or read whole tables, run by the scheduled health-check job."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import SparkSession

from platform_pipelines.core.verdict import Verdict, warned
from platform_pipelines.health.loss import NO_SILENT_LOSS, judge_balance
from platform_pipelines.lakehouse import quality
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.audit import StillWriting, absorbs, balance_facts
from platform_pipelines.streams.declare import Stream

TABLE_CHECKS: dict[str, Callable[..., Verdict]] = {
    "no_duplicate_event_id": quality.no_duplicate_event_ids,
    "sessions_valid": quality.sessions_valid,
    "alerts_well_formed": quality.alerts_well_formed,
}


def no_silent_loss(spark: SparkSession, lakehouse: Lakehouse, stream: Stream) -> Verdict:
    try:
        ledger, counted = balance_facts(spark, lakehouse, stream)
    except StillWriting as busy:
        return warned(
            NO_SILENT_LOSS,
            f"not judged: {busy}",
            "Run the health check again when the stream is idle or stopped.",
        )
    return judge_balance(ledger, counted, absorbs(stream))


def deep_verdict(
    check: str,
    stream: Stream,
    spark: Callable[[], SparkSession],
    lakehouse: Lakehouse,
    freshness_seconds: float,
    partitions: int,
) -> Verdict:
    """One deep check of one stream (a JVM is started only for the checks that need one)."""
    path = lakehouse.table(stream.table)
    if check == "freshness":
        return quality.freshness(path, freshness_seconds)
    if check == "state_metadata":
        declared = stream.state_partitions or partitions  # the stream's own count, if any
        return quality.state_metadata(spark(), lakehouse.checkpoint(stream.name), declared)
    if check == NO_SILENT_LOSS:
        return no_silent_loss(spark(), lakehouse, stream)
    return TABLE_CHECKS[check](spark(), path)


def by_asset(streams: Sequence[Stream]) -> dict[str, Stream]:
    return {stream.table: stream for stream in streams}
