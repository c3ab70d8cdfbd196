"""Decided before launch: the run coordinator refuses a run that includes a stream another active
run already holds, naming that run, and a run whose config sets Spark settings a launch may not
(``spark/policy.py``: JVM options, jars, paths...), naming the setting to use instead.

Two queries on one checkpoint would corrupt it; the runs' checkpoint locks would refuse the
second one anyway, but only after it started a JVM. Configured in ``dagster_home/dagster.yaml``
(``run_coordinator``); otherwise it queues runs as Dagster's ``QueuedRunCoordinator`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg
from dagster._core.run_coordinator import QueuedRunCoordinator, SubmitRunContext

from platform_pipelines.defs.health.restart import AUTO_RESTART_TAG
from platform_pipelines.spark.policy import run_conf_problems

STREAMS_TAG = "platform/streams"  # on every stream job: the streams it runs, comma-separated
REFUSED_TAG = "platform/refused"  # on a run refused because another run holds its streams
_ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


class StreamHeldError(dg.DagsterError):
    """The run includes a stream that another active run holds."""


class RunConfigRefused(dg.DagsterError):
    """The run's config sets what only the deployment may set."""


def config_problems(run_config: Mapping[str, Any]) -> list[str]:
    """Why a run's config may not launch: Spark settings outside the tuning allow-list.

    The resource refuses them too when it starts; refusing here, at submission, means no run
    process and no JVM start at all.
    """
    resources = run_config.get("resources") or {}
    conf = ((resources.get("spark") or {}).get("config") or {}).get("spark_conf") or {}
    return run_conf_problems(conf, field="resources.spark.config.spark_conf")


def held_streams(tags: Mapping[str, str], run_config: Mapping[str, Any]) -> set[str]:
    """The streams a run holds: its job's streams, minus those its config disables
    (``ops.<op>.config.streams.<name>.enabled: false``)."""
    names = {s for s in tags.get(STREAMS_TAG, "").split(",") if s}
    for op in (run_config.get("ops") or {}).values():
        for name, settings in ((op or {}).get("config", {}).get("streams") or {}).items():
            if (settings or {}).get("enabled") is False:
                names.discard(name)
    return names


def conflict(run: dg.DagsterRun, others: list[dg.DagsterRun]) -> str | None:
    """Why ``run`` may not start beside ``others`` (None when it may)."""
    wanted = held_streams(run.tags, run.run_config)
    for other in others:
        overlap = wanted & held_streams(other.tags, other.run_config)
        if other.run_id != run.run_id and overlap:
            streams = ", ".join(sorted(overlap))
            return (
                f"Refused: {streams} {'is' if len(overlap) == 1 else 'are'} already run by "
                f"{other.job_name} run {other.run_id} ({other.status.value.lower()}). Two runs "
                "on one checkpoint would corrupt it: cancel that run first, or launch without "
                f"those streams (streams: {{{streams.split(', ')[0]}: {{enabled: false}}}})."
            )
    return None


class StreamRunCoordinator(QueuedRunCoordinator):
    """Dagster's queued run coordinator, refusing a run whose streams another run holds."""

    def submit_run(self, context: SubmitRunContext) -> dg.DagsterRun:
        run = context.dagster_run
        problems = config_problems(run.run_config)
        if problems:
            self._refuse(run, "Refused: " + " ".join(problems), RunConfigRefused)
        if held_streams(run.tags, run.run_config):
            others = list(self._instance.get_runs(filters=dg.RunsFilter(statuses=_ACTIVE)))
            refused = conflict(run, others)
            if refused is not None:
                self._refuse(run, refused, StreamHeldError)
        return super().submit_run(context)

    def _refuse(self, run: dg.DagsterRun, message: str, error: type[dg.DagsterError]) -> None:
        # Dagster marks a run whose submission raised as failed; the tags keep the auto-restart
        # sensor from relaunching a refusal (it would be refused again).
        self._instance.add_run_tags(run.run_id, {REFUSED_TAG: "true", AUTO_RESTART_TAG: "false"})
        self._instance.report_run_canceling(run, message=message)
        self._instance.report_run_canceled(run, message=message)
        raise error(message)
