"""The daily_engagement batch asset (partitioned by day) and its schedule."""

from datetime import date

import dagster as dg

from platform_pipelines.analytics.engagement import daily_engagement, write_day
from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource

# end_offset=1: today is a partition too, so the current day can be computed while it fills.
DAYS = dg.DailyPartitionsDefinition(start_date="2026-11-01", timezone="UTC", end_offset=1)


@dg.asset(
    key="daily_engagement",
    deps=["user_sessions"],
    partitions_def=DAYS,
    kinds={"spark", "delta"},
    group_name="gold",
)
def daily_engagement_asset(
    context: dg.AssetExecutionContext, spark: SparkStreamingResource, lakehouse: LakehouseResource
) -> dg.MaterializeResult:
    """Gold (batch): per day, from closed `user_sessions`: sessions, distinct users, average
    session duration, conversion rate (sessions with a purchase / sessions) and revenue."""
    day = date.fromisoformat(context.partition_key)
    lake = lakehouse.lakehouse()
    session = spark.get_session()
    sessions = session.read.format("delta").load(str(lake.table("user_sessions")))
    row = daily_engagement(sessions, day).collect()[0]
    write_day(session.createDataFrame([row]), lake.table("daily_engagement"), day)
    return dg.MaterializeResult(
        metadata={
            "sessions": dg.MetadataValue.int(row["sessions"]),
            "users": dg.MetadataValue.int(row["users"]),
            "avg_duration_seconds": dg.MetadataValue.float(float(row["avg_duration_seconds"])),
            "conversion_rate": dg.MetadataValue.float(float(row["conversion_rate"])),
            "revenue": dg.MetadataValue.float(float(row["revenue"])),
            "table_path": dg.MetadataValue.path(str(lake.table("daily_engagement"))),
        }
    )


daily_engagement_job = dg.define_asset_job(
    "daily_engagement_job",
    selection=[daily_engagement_asset],
    partitions_def=DAYS,
    description="Materializes one day of daily_engagement from user_sessions.",
)

daily_engagement_schedule = dg.build_schedule_from_partitioned_job(
    daily_engagement_job,
    hour_of_day=1,
    description="Every day at 01:00 UTC, computes yesterday's daily_engagement.",
)


def engagement_definitions() -> dg.Definitions:
    """The daily_engagement asset, its job and schedule."""
    return dg.Definitions(
        assets=[daily_engagement_asset],
        jobs=[daily_engagement_job],
        schedules=[daily_engagement_schedule],
    )
