"""The Dagster code location: assets (lineage), stream jobs, health checks and sensors, resources.

Each area contributes its own small ``Definitions`` (``defs/<area>``); this root only merges them.
"""

from __future__ import annotations

import warnings

import dagster as dg

from platform_pipelines.defs.assets import all_specs
from platform_pipelines.defs.engagement import engagement_definitions
from platform_pipelines.defs.health import health_definitions
from platform_pipelines.defs.jobs import make_stream_job
from platform_pipelines.defs.reprocess import reprocess_definitions
from platform_pipelines.defs.resources import (
    KafkaResource,
    LakehouseResource,
    SparkStreamingResource,
)
from platform_pipelines.defs.savepoints import savepoint_definitions
from platform_pipelines.defs.state import state_definitions
from platform_pipelines.defs.table_maintenance import maintenance_definitions
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import get_settings
from platform_pipelines.streams.catalog import load_registry

ALL_STREAMS_JOB = "all_streams"
OWNERS_WARNING = (
    r"Parameter `owners` of initializer `SensorDefinition.__init__` is currently in beta"
)


def build_definitions() -> dg.Definitions:
    """Everything Dagster shows: one asset per topic and table, one job per stream, the health
    layer, the daily engagement asset and the resources."""
    settings = get_settings()
    streams = list(load_registry(settings))
    jobs = [
        make_stream_job(f"stream_{s.name}", [s], f"Runs the {s.name} stream. {s.description}")
        for s in streams
    ]
    jobs.append(
        make_stream_job(
            ALL_STREAMS_JOB,
            streams,
            "Runs every declared stream in one SparkSession (one JVM): first each one catches up, "
            "upstream first, then (in continuous mode) all of them keep running together.",
        )
    )
    held = {f"stream_{s.name}": [s] for s in streams} | {ALL_STREAMS_JOB: streams}
    streaming = dg.Definitions(
        assets=all_specs(streams, Lakehouse(settings.lakehouse_dir)),
        jobs=jobs,
        resources={
            "spark": SparkStreamingResource(),
            "kafka": KafkaResource(),
            "lakehouse": LakehouseResource(),
        },
    )
    merged = dg.Definitions.merge(
        streaming,
        health_definitions(streams, jobs, held, settings),
        engagement_definitions(),
        reprocess_definitions(streams),
        savepoint_definitions(streams, settings),
        maintenance_definitions(streams, settings),
        state_definitions(streams, settings),
    )
    # Binding the resources to the jobs stream_auto_restart launches copies that sensor, and
    # dagster 1.13 gives the copy `owners=[]`: a beta parameter this code never sets, whose
    # BetaWarning every process loading the definitions printed. Resolved here, once (cached).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", OWNERS_WARNING, dg.BetaWarning)
        merged.get_repository_def()
    return merged


defs = build_definitions()
