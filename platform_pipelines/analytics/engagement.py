"""Gold (batch): daily engagement from closed user sessions, the table analysts read."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def daily_engagement(sessions: DataFrame, day: date) -> DataFrame:
    """One row for ``day`` (by session start, UTC): sessions, users, average duration,
    conversion rate (share of sessions with a purchase) and revenue. A day without sessions
    gives a row of zeros, so "no traffic" is visible rather than missing."""
    of_day = sessions.where(F.to_date("session_start") == F.lit(day))
    return of_day.agg(
        F.count("*").alias("sessions"),
        F.countDistinct("user_id").alias("users"),
        F.coalesce(F.avg("duration_seconds"), F.lit(0.0)).alias("avg_duration_seconds"),
        F.coalesce(F.avg(F.col("purchased").cast("double")), F.lit(0.0)).alias("conversion_rate"),
        F.coalesce(F.sum("revenue"), F.lit(0.0)).alias("revenue"),
    ).select(F.lit(day).alias("day"), "*")


def write_day(result: DataFrame, path: Path, day: date) -> None:
    """Replace the rows of ``day`` in the Delta table at ``path`` (rerunning a day is idempotent)."""
    (
        result.write.format("delta")
        .mode("overwrite")
        .partitionBy("day")
        .option("replaceWhere", f"day = '{day.isoformat()}'")
        .save(str(path))
    )
