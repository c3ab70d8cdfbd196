"""The health layer in Dagster: asset checks on every stream's table, the sensors that feed them,
the scheduled deep checks, and the auto-restart of failed streams.

- ``stream_health_sensor`` (every ~30 s, no JVM) judges each stream from its progress records,
  its checkpoint files and the broker's end offsets, and reports runless check results and an
  observation whose numbers the asset page plots. It also fails a run whose process is gone (the
  default run launcher cannot tell), so that the restart sensor can relaunch it.
- ``stream_auto_restart`` relaunches a failed (not cancelled) stream run with exponential backoff,
  refuses when the checkpoint is damaged, and gives up after a cap, each with an ``auto_restart``
  check result that says why.
- ``stream_health_check`` (a job, scheduled every 15 minutes by default) runs the same cheap
  checks plus the deep ones: Spark's state metadata, data checks on the tables, freshness.
"""

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import dagster as dg

from platform_pipelines.defs.resources import LakehouseResource, SparkStreamingResource
from platform_pipelines.health.checkpoint import checkpoint_verdict, inspect_checkpoint
from platform_pipelines.health.evaluate import (
    CHEAP_CHECKS,
    StreamHealth,
    StreamTarget,
    evaluate_all,
    process_gone,
    run_state_from_records,
    stream_targets,
)
from platform_pipelines.health.judgements import RunState
from platform_pipelines.health.records import ProgressRecord
from platform_pipelines.health.restart import RestartPolicy, decide
from platform_pipelines.health.store import ProgressStore
from platform_pipelines.health.verdict import Status, Verdict, failed, passed, warned
from platform_pipelines.lakehouse import quality
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import PlatformSettings, get_settings
from platform_pipelines.streams.registry import StreamDefinition, StreamRegistry

RESTART_ATTEMPT_TAG = "platform/restart_attempt"
RESTART_OF_TAG = "platform/restart_of"
AUTO_RESTART_TAG = "platform/auto_restart"  # "false" on a run: never relaunch it
REPORT_EVERY_SECONDS = 300  # an unchanged check result is reported again after this long

CHECK_DESCRIPTIONS = {
    "liveness": "The stream's query reports progress while its run is supposed to be running, "
    "and its last run did not die.",
    "falling_behind": "The stream keeps up: input rate not above the processed rate, Kafka "
    "offsets not far behind the broker's latest (source metrics and checkpoint vs broker).",
    "state_growth": "State does not leak (grow while nothing is removed) and stays within its "
    "budget; forecasts when the budget is reached; reports bytes per key.",
    "late_data": "Few rows are dropped by the watermark, and the watermark is not far behind "
    "the wall clock.",
    "checkpoint": "The checkpoint folder is consistent: at most one batch without its commit, no "
    "gaps, retention working, snapshots keeping up, no damaged state files, state partition "
    "count and state store provider as configured.",
    "auto_restart": "A failed run of this stream is relaunched with backoff; fails when the "
    "platform gave up or refused (damaged checkpoint).",
    "state_metadata": "Spark's state-metadata reader (a JVM) lists the checkpoint's stateful "
    "operators; their partition count matches the configuration.",
    "freshness": "The table was written recently (PLATFORM_FRESHNESS_MAX_AGE_SECONDS).",
    "no_duplicate_event_id": "Silver holds every event_id once.",
    "sessions_valid": "Every session ends at or after its start; a user's sessions never overlap.",
    "alerts_well_formed": "Alerts have a unique id, a user, at least one failure and ordered "
    "failure times.",
}
# Data checks on specific tables (a user's own streams get the generic checks).
TABLE_CHECKS = {
    "events": ("no_duplicate_event_id", quality.no_duplicate_event_ids),
    "user_sessions": ("sessions_valid", quality.sessions_valid),
    "security_alerts": ("alerts_well_formed", quality.alerts_well_formed),
}


def _spec(check: str, asset: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(check, asset=asset, description=CHECK_DESCRIPTIONS[check])


# ---- turning verdicts into Dagster events ----------------------------------------------------


def _metadata(verdict: Verdict) -> dict[str, dg.MetadataValue]:
    metadata: dict[str, dg.MetadataValue] = {}
    for key, value in verdict.evidence.items():
        if isinstance(value, (bool, str)):
            metadata[key] = dg.MetadataValue.text(str(value))
        elif isinstance(value, int):
            metadata[key] = dg.MetadataValue.int(value)
        else:
            metadata[key] = dg.MetadataValue.float(float(value))
    if verdict.remedy:
        metadata["remedy"] = dg.MetadataValue.text(verdict.remedy)
    return metadata


def _severity(verdict: Verdict) -> dg.AssetCheckSeverity:
    return (
        dg.AssetCheckSeverity.WARN if verdict.status is Status.WARN else dg.AssetCheckSeverity.ERROR
    )


def check_evaluation(asset: str, verdict: Verdict) -> dg.AssetCheckEvaluation:
    return dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey(asset),
        check_name=verdict.check,
        passed=verdict.passed,
        severity=_severity(verdict),
        description=verdict.line(),
        metadata=_metadata(verdict),
    )


def check_result(asset: str, verdict: Verdict) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=verdict.check,
        passed=verdict.passed,
        severity=_severity(verdict),
        description=verdict.line(),
        metadata=_metadata(verdict),
    )


def observation(health: StreamHealth) -> dg.AssetObservation:
    """The stream's numbers as an observation: the asset page plots each one over time."""
    metadata: dict[str, dg.MetadataValue] = {
        k: dg.MetadataValue.int(v) if isinstance(v, int) else dg.MetadataValue.float(float(v))
        for k, v in health.observation.items()
    }
    metadata["health"] = dg.MetadataValue.text(health.status.value)
    return dg.AssetObservation(
        asset_key=health.target.asset,
        description=f"Health of stream {health.target.name}: {health.status.value}",
        metadata=metadata,
    )


# ---- run states, from the Dagster instance ---------------------------------------------------

_ACTIVE = {
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
}


@dataclass
class RunStates:
    """The state of each stream's latest run, and the runs found dead (process gone)."""

    instance: dg.DagsterInstance
    runs: Mapping[str, dg.DagsterRun]
    dead: dict[str, dg.DagsterRun]

    @classmethod
    def load(cls, instance: dg.DagsterInstance, store: ProgressStore,
             names: Iterable[str]) -> "RunStates":  # fmt: skip
        run_ids = {r.run_id for name in names if (r := store.latest(name)) and r.run_id}
        runs = instance.get_runs(filters=dg.RunsFilter(run_ids=sorted(run_ids))) if run_ids else []
        return cls(instance, {run.run_id: run for run in runs}, {})

    def __call__(self, target: StreamTarget, records: Sequence[ProgressRecord]) -> RunState:
        if not records:
            return RunState("never_run", "no run has started it yet")
        last = records[-1]
        run = self.runs.get(last.run_id)
        if run is None:  # not a run of this instance (e.g. a test or another tool)
            return run_state_from_records(records)
        short = run.run_id[:8]
        if run.status in _ACTIVE:
            if process_gone(last):
                self.dead[run.run_id] = run
                return RunState("failed", f"run {short}: its process (pid {last.pid}) is gone")
            if last.event == "terminated" and not last.error_class:
                return RunState("stopped", f"run {short} is finishing")
            return RunState("running", f"run {short} is {run.status.value.lower()}")
        if run.status is dg.DagsterRunStatus.FAILURE:
            if last.event != "terminated" and process_gone(last):
                return RunState(
                    "failed", f"run {short} failed: its process (pid {last.pid}) is gone"
                )
            why = f": {last.error_class}" if last.error_class else ""
            return RunState("failed", f"run {short} failed{why}")
        if run.status is dg.DagsterRunStatus.CANCELED:
            return RunState("stopped", f"run {short} was cancelled")
        return RunState("stopped", f"run {short} finished ({run.status.value.lower()})")

    def fail_dead_runs(self) -> list[str]:
        """Mark runs whose process is gone as failed, as run monitoring would."""
        for run in self.dead.values():
            self.instance.report_run_failed(
                run, "The run's process is gone (killed, or its machine restarted): marked failed "
                "by the stream health sensor so that it can be relaunched.",
            )  # fmt: skip
        return list(self.dead)


# ---- the health sensor ---------------------------------------------------------------------


@dataclass(frozen=True)
class Tick:
    events: list[dg.AssetCheckEvaluation | dg.AssetObservation]
    cursor: str
    results: list[StreamHealth]
    failed_runs: list[str]


def health_tick(
    instance: dg.DagsterInstance,
    targets: Sequence[StreamTarget],
    settings: PlatformSettings,
    cursor: str | None,
    now: float | None = None,
) -> Tick:
    """One evaluation of every stream: check results that changed (or are due again) and an
    observation per stream with new progress. The cursor remembers what was last reported."""
    now = time.time() if now is None else now
    state = json.loads(cursor) if cursor else {}
    reported: dict[str, list] = state.get("checks", {})
    observed: dict[str, list] = state.get("observed", {})
    store = ProgressStore(settings.progress_dir)
    runs = RunStates.load(instance, store, [t.name for t in targets])
    results = evaluate_all(targets, store, runs, settings.bootstrap_servers(), now)
    events: list[dg.AssetCheckEvaluation | dg.AssetObservation] = []
    for health in results:
        for verdict in health.verdicts:
            key = f"{health.target.name}/{verdict.check}"
            last_status, last_ts = reported.get(key, (None, 0.0))
            if last_status != verdict.status.value or now - last_ts >= REPORT_EVERY_SECONDS:
                events.append(check_evaluation(health.target.asset, verdict))
                reported[key] = [verdict.status.value, now]
        batch = health.observation.get("batch_id", -1)
        last_batch, last_obs = observed.get(health.target.name, (None, 0.0))
        if health.latest and (batch != last_batch or now - last_obs >= REPORT_EVERY_SECONDS):
            events.append(observation(health))
            observed[health.target.name] = [batch, now]
    failed_runs = runs.fail_dead_runs()
    new_cursor = json.dumps({"checks": reported, "observed": observed})
    return Tick(events, new_cursor, results, failed_runs)


# ---- auto-restart --------------------------------------------------------------------------


def restart_policy(settings: PlatformSettings) -> RestartPolicy:
    return RestartPolicy(
        max_attempts=settings.restart_max_attempts,
        base_delay_seconds=settings.restart_base_delay_seconds,
        max_delay_seconds=settings.restart_max_delay_seconds,
    )


def failure_reason(instance: dg.DagsterInstance, run_id: str) -> str:
    """The first line of the step or run failure, for the check's description."""
    for record in reversed(instance.all_logs(run_id)):
        event = record.dagster_event
        if event is None:
            continue
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            return event.step_failure_data.error.message.strip().splitlines()[0][:300]
        if event.is_run_failure and event.message:
            return event.message.strip().splitlines()[0][:300]
    return "the run failed"


def restart_tick(
    instance: dg.DagsterInstance,
    jobs: Mapping[str, Sequence[StreamDefinition]],
    lakehouse: Lakehouse,
    policy: RestartPolicy,
    cursor: str | None,
    now: float | None = None,
) -> tuple[list[dg.RunRequest], list[dg.AssetCheckEvaluation], str]:
    """Decide, for each stream job's latest run, whether to relaunch it now."""
    now = time.time() if now is None else now
    done: dict[str, str] = json.loads(cursor) if cursor else {}  # failed run id -> what we did
    requests: list[dg.RunRequest] = []
    checks: list[dg.AssetCheckEvaluation] = []
    for job, streams in jobs.items():
        records = instance.get_run_records(filters=dg.RunsFilter(job_name=job), limit=1)
        if not records:
            continue
        record = records[0]
        run = record.dagster_run
        if run.status is not dg.DagsterRunStatus.FAILURE or run.run_id in done:
            continue
        if run.tags.get(AUTO_RESTART_TAG) == "false":
            continue
        started = record.start_time or record.create_timestamp.timestamp()
        ended = record.end_time or record.update_timestamp.timestamp()
        attempt = int(run.tags.get(RESTART_ATTEMPT_TAG, "0"))
        decision = decide(attempt, started, ended, now, policy)
        if decision.action == "wait":
            continue
        reason = failure_reason(instance, run.run_id)
        if decision.action == "give_up":
            verdict = failed("auto_restart", f"{job}: {decision.reason}; last error: {reason}",
                             "Fix the cause in the run's logs, then launch the job again.")  # fmt: skip
            done[run.run_id] = "gave up"
        elif damaged := [
            (s.name, v)
            for s in streams
            if (v := checkpoint_verdict(inspect_checkpoint(lakehouse.checkpoint(s.name)))).status
            is Status.FAIL
        ]:
            names = ", ".join(name for name, _ in damaged)
            verdict = failed(
                "auto_restart",
                f"{job} not relaunched: the checkpoint of {names} is damaged "
                f"({damaged[0][1].summary})",
                damaged[0][1].remedy or "Repair or reset the checkpoint, then launch the job.",
            )
            done[run.run_id] = "refused"
        else:
            requests.append(
                dg.RunRequest(
                    job_name=job,
                    run_key=f"restart-{run.run_id}",
                    run_config=run.run_config,
                    tags={
                        RESTART_ATTEMPT_TAG: str(decision.attempt + 1),
                        RESTART_OF_TAG: run.run_id,
                    },
                )
            )
            verdict = warned("auto_restart", f"{job} failed and was relaunched "
                             f"({decision.reason}): {reason}",
                             "Look at the failed run's logs if it keeps happening.")  # fmt: skip
            done[run.run_id] = "restarted"
        checks += [check_evaluation(s.name, verdict) for s in streams]
    return requests, checks, json.dumps(done)


# ---- definitions ---------------------------------------------------------------------------


def health_definitions(
    registry: StreamRegistry, stream_jobs: Mapping[str, dg.JobDefinition]
) -> dict[str, list]:
    """Asset checks, sensors, the health-check job and its schedule for ``registry``.

    ``stream_jobs`` maps each job that runs streams to its definition; the restart sensor can
    relaunch any of them.
    """
    settings = get_settings()
    lakehouse = Lakehouse(settings.lakehouse_dir)
    targets = stream_targets(registry, lakehouse)
    streams = list(registry)
    cheap_specs = [_spec(c, s.name) for s in streams for c in CHEAP_CHECKS]
    restart_specs = [_spec("auto_restart", s.name) for s in streams]
    deep_specs = [_spec("freshness", s.name) for s in streams]
    deep_specs += [_spec("state_metadata", s.name) for s in streams]
    deep_specs += [
        _spec(check, t) for t, (check, _) in TABLE_CHECKS.items() if t in registry.tables()
    ]
    jobs_streams = {
        name: [s for s in streams if name in (f"stream_{s.name}", "all_streams")]
        for name in stream_jobs
    }

    @dg.multi_asset_check(
        name="stream_health_checks",
        specs=cheap_specs,
        can_subset=True,
        description="Judges every stream from its progress records, checkpoint files and the "
        "broker's offsets (no JVM). The health sensor reports the same checks every ~30 s.",
    )
    def stream_health_checks(
        context: dg.AssetCheckExecutionContext,
    ) -> Iterable[dg.AssetCheckResult]:
        selected = context.selected_asset_check_keys
        tick = health_tick(context.instance, targets, settings, None)
        for health in tick.results:
            for verdict in health.verdicts:
                key = dg.AssetCheckKey(dg.AssetKey(health.target.asset), verdict.check)
                if key in selected:
                    yield check_result(health.target.asset, verdict)

    @dg.multi_asset_check(
        name="stream_deep_checks",
        specs=deep_specs,
        can_subset=True,
        description="The checks that need Spark or read whole tables: Spark's state metadata of "
        "every checkpoint, data checks on silver and gold, and freshness of every table.",
    )
    def stream_deep_checks(
        context: dg.AssetCheckExecutionContext,
        spark: SparkStreamingResource,
        lakehouse: LakehouseResource,
    ) -> Iterable[dg.AssetCheckResult]:
        selected = {
            (k.asset_key.to_user_string(), k.name) for k in context.selected_asset_check_keys
        }
        lake = lakehouse.lakehouse()
        session = None
        for asset, check in sorted(selected):
            path = lake.table(asset)
            if check == "freshness":
                verdict = quality.freshness(path, settings.freshness_max_age_seconds)
            else:
                session = session or spark.get_session()
                if check == "state_metadata":
                    verdict = quality.state_metadata(
                        session, lake.checkpoint(asset), spark.state_partitions
                    )
                else:
                    verdict = TABLE_CHECKS[asset][1](session, path)
            context.log.info(f"{asset}: {verdict.line()}")
            yield check_result(asset, verdict)

    @dg.multi_asset_check(
        name="stream_restart_status",
        specs=restart_specs,
        can_subset=True,
        description="Whether each stream's latest run failed and what the auto-restart sensor "
        "does about it.",
    )
    def stream_restart_status(
        context: dg.AssetCheckExecutionContext,
    ) -> Iterable[dg.AssetCheckResult]:
        selected = context.selected_asset_check_keys
        for stream in streams:
            key = dg.AssetCheckKey(dg.AssetKey(stream.name), "auto_restart")
            if key in selected:
                yield check_result(stream.name, _restart_verdict(context.instance, stream.name))

    @dg.sensor(
        name="stream_health_sensor",
        minimum_interval_seconds=settings.health_sensor_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Every ~30 s: judges every stream (liveness, falling behind, state growth, "
        "late data, checkpoint) from files and the broker, without a JVM, and reports check "
        "results and plotted observations on each stream's table.",
    )
    def stream_health_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        tick = health_tick(context.instance, targets, get_settings(), context.cursor)
        for run_id in tick.failed_runs:
            context.log.warning(f"Run {run_id} has no process left: marked failed")
        bad = [
            f"{h.target.name}: {v.line()}" for h in tick.results for v in h.verdicts if not v.passed
        ]
        for line in bad:
            context.log.info(line)
        return dg.SensorResult(asset_events=tick.events, cursor=tick.cursor)

    @dg.sensor(
        name="stream_auto_restart",
        minimum_interval_seconds=settings.health_sensor_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        jobs=list(stream_jobs.values()),
        description="Relaunches a stream run that failed (never one a user cancelled) with "
        "exponential backoff, refuses when its checkpoint is damaged, and gives up after "
        "PLATFORM_RESTART_MAX_ATTEMPTS; each decision is an auto_restart check result.",
    )
    def stream_auto_restart(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        requests, checks, cursor = restart_tick(
            context.instance,
            jobs_streams,
            lakehouse,
            restart_policy(get_settings()),
            context.cursor,
        )
        return dg.SensorResult(run_requests=requests, asset_events=checks, cursor=cursor)

    health_job = dg.define_asset_job(
        "stream_health_check",
        selection=dg.AssetSelection.checks(stream_health_checks, stream_deep_checks),
        description="Every check of every stream, including the deep ones that need Spark: "
        "state metadata, duplicate event ids, session ordering, alert shape, freshness.",
        tags={"platform/kind": "health"},
    )
    schedule = dg.ScheduleDefinition(
        name="stream_health_check_schedule",
        job=health_job,
        cron_schedule=settings.health_check_cron,
        default_status=dg.DefaultScheduleStatus.RUNNING
        if settings.health_schedule_running
        else dg.DefaultScheduleStatus.STOPPED,
        description="Runs stream_health_check (PLATFORM_HEALTH_CHECK_CRON, every 15 minutes by "
        "default).",
    )
    return {
        "asset_checks": [stream_health_checks, stream_deep_checks, stream_restart_status],
        "sensors": [stream_health_sensor, stream_auto_restart],
        "jobs": [health_job],
        "schedules": [schedule],
    }


def _restart_verdict(instance: dg.DagsterInstance, stream: str) -> Verdict:
    for job in (f"stream_{stream}", "all_streams"):
        records = instance.get_run_records(filters=dg.RunsFilter(job_name=job), limit=1)
        if records and records[0].dagster_run.status is dg.DagsterRunStatus.FAILURE:
            run = records[0].dagster_run
            attempt = run.tags.get(RESTART_ATTEMPT_TAG, "0")
            return warned("auto_restart", f"the latest run of {job} failed (relaunch {attempt} "
                          f"so far): {failure_reason(instance, run.run_id)}",
                          "The auto-restart sensor relaunches it after its backoff.")  # fmt: skip
    return passed("auto_restart", "no failed run to relaunch")
