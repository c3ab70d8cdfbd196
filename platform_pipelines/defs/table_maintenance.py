"""Table maintenance in Dagster: per layer, a job that compacts and vacuums its tables on a daily
schedule, and on every table a ``files_healthy`` check read from its Delta log (no JVM).

- ``table_maintenance_bronze`` (with the platform's shared tables: quarantine, late_events,
  stream_ledger), ``table_maintenance_silver``, ``table_maintenance_gold``: one op in its own JVM
  maintains its tables one after the other (``runtime.maintainer``): OPTIMIZE, then VACUUM with
  a retention that keeps every file a declared stream may still read. Each table gets an
  observation (files before and after, bytes, retention and why) and its ``files_healthy`` result.
- Streams keep running meanwhile: the op takes no checkpoint lock (a stream starting during
  maintenance is never refused), only each table's maintenance lock.
- ``table_files_sensor`` (every 10 minutes, no JVM) reports ``files_healthy`` when it changes, and
  hourly; the ``table_files_checks`` asset checks give the same result on demand.
- ``table_maintenance_<layer>_schedule``: daily, 03:00 UTC for bronze, 20 minutes apart for the
  next layers (one maintenance JVM at a time). Running by default, so tables get compacted
  without anyone remembering to; ``PLATFORM_MAINTENANCE_SCHEDULE_RUNNING=false`` stops them.
"""

import json
import time
from collections.abc import Iterable, Sequence
from datetime import timedelta

import dagster as dg
from pydantic import Field, field_validator

from platform_pipelines.core.storage import on_object_store
from platform_pipelines.defs.health.events import check_evaluation, check_result
from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource
from platform_pipelines.health.files import FILES_HEALTHY
from platform_pipelines.health.reporting import Reported
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.maintainer import (
    PLATFORM_LAYER,
    MaintenanceOptions,
    MaintenanceResult,
    files_verdict,
    maintain_table,
    maintenance_job,
    table_layers,
)
from platform_pipelines.settings import PlatformSettings
from platform_pipelines.streams.declare import Stream

KIND_TAG = "platform/kind"
FILES_SENSOR_SECONDS = 600
CHECK_DESCRIPTION = (
    "The table is cheap to read: not thousands of small files (live files and "
    "their average size, from the Delta log); names the maintenance job when it "
    "is not."
)


class TableMaintenanceConfig(dg.Config):
    """Launch config of a table maintenance job."""

    retention_hours: float = Field(
        default=168.0,
        description="VACUUM deletes files replaced more than this many hours ago (rounded up to "
        "whole hours), never one a stream may still read (kept as long as its checkpoint may "
        "replay it). At least 1; below Delta's 168 h it also shortens time travel.",
    )
    compact: bool = Field(default=True, description="Compact small files (OPTIMIZE) first.")
    dry_run: bool = Field(
        default=False, description="Change nothing: report what VACUUM would delete."
    )
    tables: list[str] = Field(
        default_factory=list,
        description="Only these tables of the job, e.g. [clickstream_raw]; empty: all of them.",
    )

    @field_validator("retention_hours")
    @classmethod
    def _at_least_an_hour(cls, hours: float) -> float:
        if hours < 1:
            raise ValueError(
                f"retention_hours is {hours}; use at least 1: a write in progress has files not "
                "in the log yet, and VACUUM would delete them."
            )
        return hours

    def options(self) -> MaintenanceOptions:
        return MaintenanceOptions(
            retention=timedelta(hours=self.retention_hours),
            compact=self.compact,
            dry_run=self.dry_run,
        )

    def selected(self, tables: Sequence[str]) -> list[str]:
        unknown = sorted(set(self.tables) - set(tables))
        if unknown:
            raise ValueError(
                f"tables: {', '.join(map(repr, unknown))} is not maintained by this "
                f"job; use some of: {', '.join(tables)}."
            )
        return [t for t in tables if not self.tables or t in self.tables]


def _observation(result: MaintenanceResult) -> dg.AssetObservation:
    before, after, vacuumed = result.before, result.after, result.vacuum
    numbers = {
        "files_before": before.files if before else 0,
        "files_after": after.files if after else 0,
        "bytes_after": after.bytes if after else 0,
        "avg_file_size_bytes": round(after.avg_bytes) if after else 0,
        "files_compacted": result.compaction.files_removed if result.compaction else 0,
        "files_vacuumed": vacuumed.files_deleted if vacuumed else 0,
        "bytes_vacuumed": vacuumed.bytes_deleted if vacuumed else 0,
        "version_after": after.version if after else -1,
    }
    metadata: dict[str, dg.MetadataValue] = {k: dg.MetadataValue.int(v) for k, v in numbers.items()}
    metadata["retention_hours"] = dg.MetadataValue.float(result.retention.hours)
    metadata["seconds"] = dg.MetadataValue.float(round(result.seconds, 2))
    metadata["retention_reason"] = dg.MetadataValue.text(result.retention.reason)
    metadata["dry_run"] = dg.MetadataValue.bool(result.dry_run)
    return dg.AssetObservation(asset_key=result.table, metadata=metadata, description=result.line())


def make_maintenance_job(
    layer: str, tables: dict[str, str], streams: Sequence[Stream], assets: set[str]
) -> dg.JobDefinition:
    """The job maintaining ``tables`` (``table -> layer``), one op in one JVM."""
    names = list(tables)

    @dg.op(
        name=f"maintain_{layer}_tables",
        tags={KIND_TAG: "maintenance"},
        description=f"Compacts, then vacuums keeping what streams still read: {', '.join(names)}.",
    )
    def maintain_op(
        context: dg.OpExecutionContext,
        config: TableMaintenanceConfig,
        spark: SparkStreamingResource,
        lakehouse: LakehouseResource,
    ) -> None:
        try:
            chosen = config.selected(names)
        except ValueError as error:
            raise dg.Failure(description=str(error)) from None
        lake, owner = lakehouse.lakehouse(), f"run {context.run_id[:8]} of {context.job_name}"
        session, problems = spark.get_session(), []
        for table in chosen:
            try:
                result = maintain_table(session, lake, streams, table, config.options(), owner)
            except Exception as error:  # the other tables are still maintained
                context.log.error(f"{table}: {error}")
                problems.append(f"{table}: {error}")
                continue
            context.log.info(result.line())
            if table in assets:
                context.log_event(_observation(result))
                verdict = files_verdict(lake, table, tables[table])
                context.log_event(check_evaluation(table, verdict))  # type: ignore[arg-type]
        if problems:
            raise dg.Failure(description=f"Not maintained: {' '.join(problems)}")

    @dg.job(
        name=maintenance_job(layer),
        tags={KIND_TAG: "maintenance"},
        description=f"Compacts the small files of the {layer} tables ({', '.join(names)}), "
        "then vacuums the replaced ones, never one a stream may still read. Streams keep "
        "running meanwhile.",
    )
    def maintenance() -> None:
        maintain_op()

    return maintenance


def _grouped(layers: dict[str, str]) -> dict[str, dict[str, str]]:
    """``job layer -> {table: layer}``, bronze first: the shared platform tables go with bronze."""
    jobs: dict[str, dict[str, str]] = {}
    for table, layer in layers.items():
        jobs.setdefault("bronze" if layer == PLATFORM_LAYER else layer, {})[table] = layer
    rank = {"bronze": 0, "silver": 1, "gold": 2}
    return dict(sorted(jobs.items(), key=lambda job: (rank.get(job[0], 3), job[0])))


def maintenance_definitions(
    streams: Iterable[Stream],
    settings: PlatformSettings,
) -> dg.Definitions:
    """A maintenance job and daily schedule per layer, and ``files_healthy`` on every table."""
    streams = list(streams)
    lake, layers = Lakehouse(settings.lakehouse_dir), table_layers(streams)
    assets = {table for stream in streams for table in stream.outputs}
    # Maintenance needs a file-system lakehouse (it refuses S3): no daily failures there.
    running = settings.maintenance_schedule_running and not on_object_store(lake.root)
    jobs, schedules = [], []
    for i, (layer, tables) in enumerate(_grouped(layers).items()):
        job = make_maintenance_job(layer, tables, streams, assets)
        jobs.append(job)
        schedules.append(
            dg.ScheduleDefinition(
                name=f"{job.name}_schedule",
                job=job,
                execution_timezone="UTC",
                cron_schedule=f"{20 * i % 60} {3 + 20 * i // 60} * * *",
                default_status=dg.DefaultScheduleStatus.RUNNING
                if running
                else dg.DefaultScheduleStatus.STOPPED,
                description=f"Daily at {3 + 20 * i // 60:02d}:{20 * i % 60:02d} UTC: {job.name} with its defaults.",
            )
        )
    specs = [
        dg.AssetCheckSpec(FILES_HEALTHY, asset=t, description=CHECK_DESCRIPTION)
        for t in layers
        if t in assets
    ]

    @dg.multi_asset_check(
        name="table_files_checks",
        specs=specs,
        can_subset=True,
        description="Every table's live files and their average size, from "
        "its Delta log (no JVM): many small files make every read slow.",
    )
    def table_files_checks(
        context: dg.AssetCheckExecutionContext,
    ) -> Iterable[dg.AssetCheckResult]:
        for key in sorted(context.selected_asset_check_keys, key=lambda k: k.to_user_string()):
            table = key.asset_key.to_user_string()
            yield check_result(table, files_verdict(lake, table, layers[table]))

    @dg.sensor(
        name="table_files_sensor",
        minimum_interval_seconds=FILES_SENSOR_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Every 10 minutes, each table's files_healthy from its Delta log (no "
        "JVM): reported when its status changes, and hourly so the numbers are plotted.",
    )
    def table_files_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        reported, now = Reported.from_json(json.loads(context.cursor or "{}")), time.time()
        events = []
        for spec in specs:
            table = spec.asset_key.to_user_string()
            verdict = files_verdict(lake, table, layers[table])
            if reported.check_due(f"{table}/{FILES_HEALTHY}", verdict.status.value, now, 3600):
                events.append(check_evaluation(table, verdict))
        return dg.SensorResult(asset_events=events, cursor=json.dumps(reported.to_json()))

    return dg.Definitions(
        jobs=jobs,
        schedules=schedules,
        asset_checks=[table_files_checks],
        sensors=[table_files_sensor],
    )
