"""The judge of a chaos trial: every table of the tortured lakehouse against a clean catch-up run.

Both lakehouses read the same topic. The trial's last launch was stopped once it had caught up
and run the batch that applies its last watermark (``chaos_launch.wait_caught_up``: a restarted
query runs no batch without new input, so no later run could close those sessions); the trial's
lakehouse gets one more catch-up run (it finishes a batch a stop may have cut), then each table
is compared with the reference's as a multiset of rows without the columns that say
when or by which attempt a row was written: rows missing from the trial are lost, rows it holds
too often are duplicated.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pyspark.sql import SparkSession

from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.runtime.chaos_worker import STREAMS
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext

TABLES = (
    "clickstream_raw",
    "quarantine",
    "events",
    "user_sessions",
    "security_alerts",
    "late_events",
)
# Columns that say when or by which attempt a row was written, not what it is.
VOLATILE = {
    "quarantined_at",
    "detected_at",
    "query_id",
    "batch_id",
    "watermark",
    "reason",
    "late_by_seconds",
}
Rows = Counter[tuple[tuple[str, str], ...]]


def compare(
    spark: SparkSession, bootstrap: str, topic: str, trial_lake: Path, reference_lake: Path
) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """``(lost, duplicated, rows)`` per table of ``TABLES``: the trial's rows missing against a
    clean catch-up run of ``topic`` into ``reference_lake``, those it holds too often, and the
    reference's row count."""
    trial, reference = Lakehouse(trial_lake), Lakehouse(reference_lake)
    catch_up(spark, trial, bootstrap, topic)  # a batch the last stop cut, if any
    catch_up(spark, reference, bootstrap, topic)
    lost, duplicated, rows = {}, {}, {}
    for table in TABLES:
        ours, theirs = table_rows(spark, trial, table), table_rows(spark, reference, table)
        lost[table] = sum((theirs - ours).values())
        duplicated[table] = sum((ours - theirs).values())
        rows[table] = sum(theirs.values())
    return lost, duplicated, rows


def catch_up(spark: SparkSession, lake: Lakehouse, bootstrap: str, topic: str) -> None:
    """The chaos worker's streams over ``topic`` in ``lake``, once to the end of the input."""
    settings = BuiltinSettings(clickstream_topic=topic, alerts_topic=f"{topic}-alerts")
    run_streams(
        StreamContext(spark, lake, bootstrap),
        [builtin_streams(settings).get(s) for s in STREAMS],
        RunOptions(mode="catch_up", max_offsets_per_trigger=50_000),
        lambda *_: None,
    )


def table_rows(spark: SparkSession, lake: Lakehouse, table: str) -> Rows:
    """The rows of ``table`` without the ``VOLATILE`` columns, counted (none before its first
    commit)."""
    path = lake.table(table)
    if not has_commit(path):
        return Counter()
    df = spark.read.format("delta").load(str(path))
    kept = [c for c in df.columns if c not in VOLATILE]
    return Counter(
        tuple(sorted((k, str(v)) for k, v in r.asDict().items()))
        for r in df.select(*kept).collect()
    )
