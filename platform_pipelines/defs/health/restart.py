"""The auto-restart sensor's tick: relaunch failed stream runs, or say why not.

Every decision is made by ``health.restart`` (backoff, cap, failures that can only fail again) and
``health.checkpoint`` (a damaged checkpoint); this module reads the runs and reports.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

import dagster as dg

from platform_pipelines.core.verdict import Status, Verdict, failed, passed, warned
from platform_pipelines.defs.health.events import check_evaluation
from platform_pipelines.defs.health.runs import failure_reason
from platform_pipelines.health.checkpoint import (
    CheckpointExpectations,
    checkpoint_verdict,
    inspect_checkpoint,
)
from platform_pipelines.health.restart import RestartPolicy, classify_failure, decide
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.streams.declare import Stream, asset_key

RESTART_ATTEMPT_TAG = "platform/restart_attempt"
RESTART_OF_TAG = "platform/restart_of"
AUTO_RESTART_TAG = "platform/auto_restart"  # "false" on a run: never relaunch it
CHECK = "auto_restart"


def restart_tick(
    instance: dg.DagsterInstance,
    jobs: Mapping[str, Sequence[Stream]],
    lakehouse: Lakehouse,
    policy: RestartPolicy,
    expectations: CheckpointExpectations,
    cursor: str | None,
    now: float | None = None,
) -> tuple[list[dg.RunRequest], list[dg.AssetCheckEvaluation], str]:
    """Decide, for each stream job's latest run, whether to relaunch it now."""
    now = time.time() if now is None else now
    done: dict[str, str] = json.loads(cursor) if cursor else {}  # failed run id -> what we did
    requests: list[dg.RunRequest] = []
    checks: list[dg.AssetCheckEvaluation] = []
    latest: set[str] = set()  # only each job's latest run is judged: the cursor keeps no other
    for job, streams in jobs.items():
        records = instance.get_run_records(filters=dg.RunsFilter(job_name=job), limit=1)
        if not records:
            continue
        record = records[0]
        run = record.dagster_run
        latest.add(run.run_id)
        if run.status is dg.DagsterRunStatus.STARTED:
            running = f"{run.run_id}:running"  # reported once per run, apart from its failure
            if running not in done and _started_streams(instance, run.run_id, streams):
                verdict = passed(
                    CHECK, f"{job} run {run.run_id[:8]} is running: nothing to relaunch"
                )
                done[running] = verdict.status.value
                checks += [check_evaluation(asset_key(s), verdict) for s in streams]
            continue
        if run.run_id in done:
            continue
        if run.status is not dg.DagsterRunStatus.FAILURE:
            continue
        if run.tags.get(AUTO_RESTART_TAG) == "false":
            continue
        reason, kind, error_class = failure_reason(instance, run.run_id)
        started = record.start_time or record.create_timestamp.timestamp()
        ended = record.end_time or record.update_timestamp.timestamp()
        attempt = int(run.tags.get(RESTART_ATTEMPT_TAG, "0"))
        decision = decide(attempt, started, ended, now, policy, classify_failure(kind, error_class))
        if decision.action == "wait":
            continue
        damaged = _damaged(streams, lakehouse, expectations)
        if decision.action == "refuse":
            verdict = failed(
                CHECK,
                f"{job} {decision.reason}. Its error: {reason}",
                "Fix the cause named in the error, then launch the job again.",
            )
        elif decision.action == "give_up":
            verdict = failed(
                CHECK,
                f"{job}: {decision.reason}; last error: {reason}",
                "Fix the cause in the run's logs, then launch the job again.",
            )
        elif damaged is not None:
            verdict = damaged
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
            verdict = warned(
                CHECK,
                f"{job} failed and was relaunched ({decision.reason}): {reason}",
                "Look at the failed run's logs if it keeps happening.",
            )
        done[run.run_id] = verdict.status.value
        checks += [check_evaluation(asset_key(s), verdict) for s in streams]
    kept = {key: value for key, value in done.items() if key.split(":")[0] in latest}
    return requests, checks, json.dumps(kept)


def _started_streams(instance: dg.DagsterInstance, run_id: str, streams: Sequence[Stream]) -> bool:
    """Whether ``run_id`` recorded the start of its streams: a result reported before that
    materialization would be hidden behind it in the UI."""
    latest = instance.get_latest_materialization_events(
        [dg.AssetKey(asset_key(s)) for s in streams]
    )
    return any(event is not None and event.run_id == run_id for event in latest.values())


def _damaged(
    streams: Sequence[Stream], lakehouse: Lakehouse, expectations: CheckpointExpectations
) -> Verdict | None:
    for stream in streams:
        verdict = checkpoint_verdict(
            inspect_checkpoint(lakehouse.checkpoint(stream.name)),
            expectations.for_stream(stream.state_partitions),
        )
        if verdict.status is Status.FAIL:
            return failed(
                CHECK,
                f"not relaunched: the checkpoint of {stream.name} is damaged ({verdict.summary})",
                verdict.remedy
                or "Restore the stream's newest savepoint or rebuild it (`platform reprocess STREAM`), then launch the job.",
            )
    return None


def restart_verdict(instance: dg.DagsterInstance, stream: Stream, jobs: Sequence[str]) -> Verdict:
    """The auto_restart check as the health-check job reports it: the latest run's state."""
    for job in jobs:
        records = instance.get_run_records(filters=dg.RunsFilter(job_name=job), limit=1)
        if records and records[0].dagster_run.status is dg.DagsterRunStatus.FAILURE:
            run = records[0].dagster_run
            reason, kind, error_class = failure_reason(instance, run.run_id)
            permanent = classify_failure(kind, error_class)
            if permanent:
                return failed(
                    CHECK,
                    f"the latest run of {job} failed and is not relaunched: "
                    f"{permanent}. Its error: {reason}",
                    "Fix the cause named in the error, then launch the job again.",
                )
            attempt = run.tags.get(RESTART_ATTEMPT_TAG, "0")
            return warned(
                CHECK,
                f"the latest run of {job} failed (relaunch {attempt} so far): {reason}",
                "The auto-restart sensor relaunches it after its backoff.",
            )
    return passed(CHECK, "no failed run to relaunch")
