"""The Dagster code location: assets (lineage), stream jobs, health checks and sensors, resources."""

from __future__ import annotations

import dagster as dg

from platform_pipelines.catalog import load_registry
from platform_pipelines.defs.assets import all_specs
from platform_pipelines.defs.engagement import (
    daily_engagement_asset,
    daily_engagement_job,
    daily_engagement_schedule,
)
from platform_pipelines.defs.health import health_definitions
from platform_pipelines.defs.jobs import make_stream_job
from platform_pipelines.defs.resources import (
    KafkaResource,
    LakehouseResource,
    SparkStreamingResource,
)
from platform_pipelines.settings import get_settings

ALL_STREAMS_JOB = "all_streams"


def build_definitions() -> dg.Definitions:
    """Everything Dagster shows: one asset per topic and table, one job per stream, resources."""
    registry = load_registry()
    lakehouse = LakehouseResource().lakehouse()
    stream_jobs = [
        make_stream_job(f"stream_{s.name}", [s], f"Runs the {s.name} stream. {s.description}")
        for s in registry
    ]
    all_job = make_stream_job(
        ALL_STREAMS_JOB,
        list(registry),
        "Runs every declared stream in one SparkSession (one JVM), upstream first in catch-up "
        "mode, all at once in continuous mode.",
    )
    health = health_definitions(registry, {job.name: job for job in [*stream_jobs, all_job]})
    return dg.Definitions(
        assets=[*all_specs(registry, lakehouse), daily_engagement_asset],
        asset_checks=health["asset_checks"],
        jobs=[*stream_jobs, all_job, daily_engagement_job, *health["jobs"]],
        schedules=[daily_engagement_schedule, *health["schedules"]],
        sensors=health["sensors"],
        resources={
            "spark": SparkStreamingResource(master=get_settings().spark_master),
            "kafka": KafkaResource(),
            "lakehouse": LakehouseResource(),
        },
    )


defs = build_definitions()
