"""The health layer in Dagster: checks on every stream's table, the sensors that feed them, the
scheduled deep checks, and the auto-restart of failed streams.

- ``stream_health_sensor`` (every ~30 s, no JVM) judges every stream and reports check results
  and the curated numbers the asset page plots; it also fails a run whose process is gone.
- ``stream_auto_restart`` relaunches a failed stream run with backoff, unless the failure can
  only fail again, and says why in the ``auto_restart`` check.
- ``stream_health_check`` (a job, every 15 minutes by default) runs every check, the deep ones too.
"""

from collections.abc import Iterable, Mapping, Sequence

import dagster as dg

from platform_pipelines.defs.health.checks import specs
from platform_pipelines.defs.health.deep import by_asset, deep_verdict
from platform_pipelines.defs.health.events import check_result
from platform_pipelines.defs.health.restart import restart_tick, restart_verdict
from platform_pipelines.defs.health.sensor import health_tick
from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource
from platform_pipelines.health.evaluate import HealthConfig
from platform_pipelines.health.policy import checkpoint_expectations
from platform_pipelines.health.restart import RestartPolicy
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import PlatformSettings
from platform_pipelines.spark.session import SparkOptions
from platform_pipelines.streams.declare import Stream, asset_key


def health_definitions(
    streams: Sequence[Stream],
    jobs: Sequence[dg.JobDefinition],
    stream_jobs: Mapping[str, Sequence[Stream]],
    settings: PlatformSettings,
) -> dg.Definitions:
    """Checks, sensors, the health-check job and its schedule for ``streams``.

    ``jobs`` are the stream jobs (the restart sensor may relaunch any of them); ``stream_jobs``
    maps each of their names to the streams it runs."""
    lakehouse = Lakehouse(settings.lakehouse_dir)
    options = SparkOptions.from_settings(settings)
    config = HealthConfig(expectations=checkpoint_expectations(options))
    interval = settings.health_sensor_interval_seconds

    @dg.multi_asset_check(
        name="stream_health_checks",
        specs=specs(streams, "cheap"),
        can_subset=True,
        description="Judges every stream from its progress records, checkpoint "
        "files and input (no JVM); the health sensor reports the same every ~30 s.",
    )
    def stream_health_checks(
        context: dg.AssetCheckExecutionContext,
    ) -> Iterable[dg.AssetCheckResult]:
        tick = health_tick(context.instance, streams, lakehouse, settings, config, None)
        for health in tick.results:
            for verdict in health.verdicts:
                if (
                    dg.AssetCheckKey(dg.AssetKey(health.asset), verdict.check)
                    in context.selected_asset_check_keys
                ):
                    yield check_result(health.asset, verdict)

    @dg.multi_asset_check(
        name="stream_deep_checks",
        specs=specs(streams, "deep"),
        can_subset=True,
        description="The checks that need Spark or read whole tables: no silent "
        "loss, state metadata, data checks on silver and gold, freshness.",
    )
    def stream_deep_checks(
        context: dg.AssetCheckExecutionContext,
        spark: SparkStreamingResource,
        lakehouse: LakehouseResource,
    ) -> Iterable[dg.AssetCheckResult]:
        lake, owners = lakehouse.lakehouse(), by_asset(streams)
        for key in sorted(context.selected_asset_check_keys, key=lambda k: k.to_user_string()):
            asset = key.asset_key.to_user_string()
            verdict = deep_verdict(
                key.name,
                owners[asset],
                spark.get_session,
                lake,
                settings.freshness_max_age_seconds,
                spark.state_partitions,
            )
            context.log.info(f"{asset}: {verdict.line()}")
            yield check_result(asset, verdict)

    @dg.multi_asset_check(
        name="stream_restart_status",
        specs=specs(streams, "restart"),
        can_subset=True,
        description="Whether each stream's latest run failed "
        "and what the auto-restart sensor does about it.",
    )
    def stream_restart_status(
        context: dg.AssetCheckExecutionContext,
    ) -> Iterable[dg.AssetCheckResult]:
        for stream in streams:
            if (
                dg.AssetCheckKey(dg.AssetKey(asset_key(stream)), "auto_restart")
                in context.selected_asset_check_keys
            ):
                jobs = [job for job, held in stream_jobs.items() if stream in held]
                yield check_result(
                    asset_key(stream), restart_verdict(context.instance, stream, jobs)
                )

    @dg.sensor(
        name="stream_health_sensor",
        minimum_interval_seconds=interval,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Every ~30 s: judges every stream (liveness, falling behind, state "
        "growth, late data, checkpoint) from files and the broker, without a JVM, and "
        "reports check results and the numbers plotted on each stream's table.",
    )
    def stream_health_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        tick = health_tick(context.instance, streams, lakehouse, settings, config, context.cursor)
        for run_id in tick.failed_runs:
            context.log.warning(f"Run {run_id} has no process left: marked failed")
        for health in tick.results:
            for verdict in health.verdicts:
                if not verdict.passed:
                    context.log.info(f"{health.stream.name}: {verdict.line()}")
        return dg.SensorResult(asset_events=tick.events, cursor=tick.cursor)

    policy = RestartPolicy(
        max_attempts=settings.restart_max_attempts,
        base_delay_seconds=settings.restart_base_delay_seconds,
        max_delay_seconds=settings.restart_max_delay_seconds,
    )

    @dg.sensor(
        name="stream_auto_restart",
        minimum_interval_seconds=interval,
        default_status=dg.DefaultSensorStatus.RUNNING,
        jobs=list(jobs),
        description="Relaunches a stream run that failed (never one a user cancelled) with "
        "exponential backoff; never relaunches a failure that can only fail again (busy or "
        "damaged checkpoint, invalid config); each decision is an auto_restart result.",
    )
    def stream_auto_restart(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        requests, checks, cursor = restart_tick(
            context.instance, stream_jobs, lakehouse, policy, config.expectations, context.cursor
        )
        return dg.SensorResult(run_requests=requests, asset_events=checks, cursor=cursor)

    health_job = dg.define_asset_job(
        "stream_health_check",
        selection=dg.AssetSelection.checks(stream_health_checks, stream_deep_checks),
        description="Every check of every stream, including the deep ones that need Spark: no "
        "silent loss, state metadata, duplicate event ids, session ordering, alert shape, freshness.",
        tags={"platform/kind": "health"},
    )
    running = settings.health_schedule_running
    schedule = dg.ScheduleDefinition(
        name="stream_health_check_schedule",
        job=health_job,
        cron_schedule=settings.health_check_cron,
        default_status=dg.DefaultScheduleStatus.RUNNING
        if running
        else dg.DefaultScheduleStatus.STOPPED,
        description="Runs stream_health_check (PLATFORM_HEALTH_CHECK_CRON, every 15 minutes by default).",
    )
    return dg.Definitions(
        asset_checks=[stream_health_checks, stream_deep_checks, stream_restart_status],
        sensors=[stream_health_sensor, stream_auto_restart],
        jobs=[health_job],
        schedules=[schedule],
    )
