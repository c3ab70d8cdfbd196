"""Data checks on the lakehouse tables, run by the scheduled health-check job.

The table checks read Delta with Spark (the job has a JVM; sensors never call these). Freshness
reads only the Delta log's file names and commit times, so it needs no JVM.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from platform_pipelines.core.verdict import Verdict, failed, passed, warned


def _table(spark: SparkSession, path: Path) -> DataFrame | None:
    if not (path / "_delta_log").is_dir():
        return None
    return spark.read.format("delta").load(str(path))


def no_duplicate_event_ids(spark: SparkSession, path: Path) -> Verdict:
    """Silver holds each ``event_id`` once (deduplication within the watermark held)."""
    df = _table(spark, path)
    if df is None:
        return passed("no_duplicate_event_id", "no table yet")
    row = df.agg(F.count("*").alias("rows"), F.countDistinct("event_id").alias("ids")).collect()[0]
    rows, ids = int(row["rows"]), int(row["ids"])
    evidence = {"rows": rows, "distinct_event_ids": ids, "duplicates": rows - ids}
    if rows == ids:
        return passed("no_duplicate_event_id", f"{rows} rows, each event_id once", evidence)
    return failed(
        "no_duplicate_event_id",
        f"{rows - ids} duplicate rows among {rows} (only {ids} distinct event_id)",
        "A duplicate arrived later than the dedup watermark, or the checkpoint was reset: widen "
        "the watermark or deduplicate the table with a MERGE.",
        evidence,
    )


def sessions_valid(spark: SparkSession, path: Path) -> Verdict:
    """Every session ends at or after it starts, and a user's sessions do not overlap."""
    df = _table(spark, path)
    if df is None:
        return passed("sessions_valid", "no table yet")
    by_user = Window.partitionBy("user_id").orderBy("session_start", "session_end")
    checked = df.withColumn("previous_end", F.lag("session_end").over(by_user))
    row = checked.agg(
        F.count("*").alias("sessions"),
        F.sum((F.col("session_end") < F.col("session_start")).cast("int")).alias("backwards"),
        F.sum((F.col("session_start") < F.col("previous_end")).cast("int")).alias("overlaps"),
    ).collect()[0]
    sessions, backwards, overlaps = (
        int(row[k] or 0) for k in ("sessions", "backwards", "overlaps")
    )
    evidence = {"sessions": sessions, "end_before_start": backwards, "overlapping": overlaps}
    if backwards == 0 and overlaps == 0:
        return passed("sessions_valid", f"{sessions} sessions, all well ordered", evidence)
    return failed(
        "sessions_valid",
        f"{backwards} sessions end before they start, {overlaps} overlap an earlier session",
        "The session state was lost or replayed (a reset checkpoint?): rebuild user_sessions "
        "from a new checkpoint over events.",
        evidence,
    )


def alerts_well_formed(spark: SparkSession, path: Path) -> Verdict:
    """Alerts have an id (once), a user, at least one failure and ordered failure times."""
    df = _table(spark, path)
    if df is None:
        return passed("alerts_well_formed", "no table yet")
    row = df.agg(
        F.count("*").alias("alerts"),
        F.countDistinct("alert_id").alias("ids"),
        F.sum((F.col("alert_id").isNull() | F.col("user_id").isNull()).cast("int")).alias("nulls"),
        F.sum((F.col("failure_count") < 1).cast("int")).alias("no_failures"),
        F.sum((F.col("last_failure_time") < F.col("first_failure_time")).cast("int")).alias("bw"),
    ).collect()[0]
    alerts, ids = int(row["alerts"]), int(row["ids"])
    nulls, no_failures, backwards = (int(row[k] or 0) for k in ("nulls", "no_failures", "bw"))
    evidence = {
        "alerts": alerts,
        "duplicate_ids": alerts - ids,
        "missing_ids_or_users": nulls,
        "without_failures": no_failures,
        "times_reversed": backwards,
    }
    bad = alerts - ids + nulls + no_failures + backwards
    if bad == 0:
        return passed("alerts_well_formed", f"{alerts} alerts, all well formed", evidence)
    return failed(
        "alerts_well_formed",
        f"{bad} malformed alerts among {alerts}",
        "Look at the rows named in the evidence; the alerting logic or its state is wrong.",
        evidence,
    )


def last_commit_time(path: Path) -> float | None:
    """When the Delta table at ``path`` was last written (epoch seconds), from its log only."""
    log = path / "_delta_log"
    commits = sorted(log.glob("*.json")) if log.is_dir() else []
    if not commits:
        return None
    newest = commits[-1]
    for line in newest.read_text().splitlines():
        info = json.loads(line).get("commitInfo")
        if info and "timestamp" in info:
            return float(info["timestamp"]) / 1000
    return newest.stat().st_mtime


def freshness(path: Path, max_age_seconds: float, now: float | None = None) -> Verdict:
    """The table was written within ``max_age_seconds``."""
    now = time.time() if now is None else now
    written = last_commit_time(path)
    if written is None:
        return warned(
            "freshness",
            "the table was never written",
            "Start its stream (launch its job from the Dagster UI).",
        )
    age = max(0.0, now - written)
    evidence = {"age_seconds": round(age, 1), "max_age_seconds": max_age_seconds}
    if age <= max_age_seconds:
        return passed("freshness", f"last written {age:.0f} s ago", evidence)
    return warned(
        "freshness",
        f"last written {age:.0f} s ago (allowed: {max_age_seconds:.0f} s)",
        "Check that its stream runs and that its source still receives data.",
        evidence,
    )


def state_metadata(spark: SparkSession, checkpoint: Path, partitions: int) -> Verdict:
    """Spark's own reading of the checkpoint's operator metadata (the ``state-metadata`` source):
    every stateful operator and its partition count, against the configured ``partitions``."""
    if not (checkpoint / "state").is_dir():
        return passed("state_metadata", "no state in the checkpoint (stateless or never run)")
    try:
        rows = spark.read.format("state-metadata").load(str(checkpoint)).collect()
    except Exception as error:  # Spark cannot read it: a restart would fail the same way
        first = str(error).strip().splitlines()[0][:300]
        return failed(
            "state_metadata",
            f"Spark cannot read the state metadata: {first}",
            "Restore the stream's newest savepoint (`platform savepoint restore`) or rebuild it on a "
            "new checkpoint (`platform reprocess STREAM`).",
        )
    found = {f"{r['operatorName']}#{r['operatorId']}": int(r["numPartitions"]) for r in rows}
    evidence: dict[str, float | int | str] = {
        "operators": len(found),
        "configured_partitions": partitions,
        **{f"partitions_{name}": n for name, n in found.items()},
    }
    wrong = {name: n for name, n in found.items() if n != partitions}
    if not wrong:
        return passed(
            "state_metadata",
            f"{len(found)} stateful operators, {partitions} partitions each, as configured",
            evidence,
        )
    names = ", ".join(f"{name} has {n}" for name, n in wrong.items())
    return warned(
        "state_metadata",
        f"the checkpoint's state is partitioned differently from the configuration ({names}; "
        f"configured: {partitions})",
        "Spark keeps the checkpoint's partition count: set spark.sql.shuffle.partitions back to "
        "it, or rebuild it on a new checkpoint (`platform reprocess STREAM`) to use the new count.",
        evidence,
    )
