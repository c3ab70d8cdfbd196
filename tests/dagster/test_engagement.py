"""daily_engagement materialized through Dagster from a known user_sessions table."""

from __future__ import annotations

from datetime import UTC, date, datetime

import dagster as dg
import pytest

from platform_pipelines.defs.engagement import daily_engagement_asset
from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.streams.sessions import SESSION_SCHEMA

pytestmark = [pytest.mark.dagster, pytest.mark.spark]


def session(user: str, day: int, hour: int, minutes: int, purchased: bool, revenue: float) -> tuple:
    start = datetime(2026, 11, day, hour, 0, tzinfo=UTC)
    end = start.replace(minute=minutes)
    return (
        user,
        f"{user}-{day}-{hour}",
        start,
        end,
        minutes * 60.0,
        3,
        ["/home"],
        purchased,
        purchased,
        revenue,
        "logout",
    )


def test_daily_engagement_counts_sessions_users_duration_and_conversion_of_one_day(
    spark, tmp_path, monkeypatch
):
    lake = Lakehouse(tmp_path / "lake")
    monkeypatch.setenv("PLATFORM_LAKEHOUSE_DIR", str(lake.root))
    sessions = [
        session("u1", 22, 9, 10, True, 30.0),
        session("u1", 22, 15, 20, False, 0.0),
        session("u2", 22, 23, 30, True, 12.5),
        session("u3", 23, 0, 40, True, 99.0),  # the next day: not counted
    ]
    spark.createDataFrame(sessions, SESSION_SCHEMA).write.format("delta").save(
        str(lake.table("user_sessions"))
    )
    resources = {
        "spark": SparkStreamingResource(state_partitions=2),
        "lakehouse": LakehouseResource(),
    }

    for _ in range(2):  # a rerun of the day replaces its row
        result = dg.materialize(
            [daily_engagement_asset], partition_key="2026-11-22", resources=resources
        )
        assert result.success

    table = spark.read.format("delta").load(str(lake.table("daily_engagement")))
    assert [r.asDict() for r in table.collect()] == [
        {
            "day": date(2026, 11, 22),
            "sessions": 3,
            "users": 2,
            "avg_duration_seconds": 1200.0,
            "conversion_rate": 2 / 3,
            "revenue": 42.5,
        }
    ]
    (materialization,) = result.asset_materializations_for_node("daily_engagement")
    assert materialization.metadata["sessions"].value == 3
    assert materialization.metadata["conversion_rate"].value == pytest.approx(2 / 3)
