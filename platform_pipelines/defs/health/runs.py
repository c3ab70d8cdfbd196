"""Facts about stream runs, from the Dagster instance, for the pure decisions in ``health``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import dagster as dg

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.health.runs import RunState, classify_run
from platform_pipelines.streams.declare import Stream

DEAD_RUN_MESSAGE = (
    "The run's process is gone (killed, or its machine restarted): marked failed by the stream "
    "health sensor so that it can be relaunched."
)


def failure_reason(instance: dg.DagsterInstance, run_id: str) -> tuple[str, str | None, str | None]:
    """The first line of a failed run's error, its ``platform/failure`` kind and error class:
    from the step that failed, else from the run's failure."""
    logs = instance.all_logs(run_id)
    for record in reversed(logs):
        event = record.dagster_event
        if event is not None and event.is_step_failure and event.step_failure_data:
            data = event.step_failure_data
            user = data.user_failure_data
            kind = (user.metadata or {}).get("platform/failure") if user else None
            text = (user.description if user and user.description else None) or (
                data.error.message if data.error else "the step failed"
            )
            error_class = data.error.cls_name if data.error else None
            return _first_line(text), getattr(kind, "text", None), error_class
    for record in reversed(logs):
        event = record.dagster_event
        if event is not None and event.is_run_failure and event.message:
            return _first_line(event.message), None, None
    return "the run failed", None, None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else text


@dataclass
class RunFacts:
    """The newest run of each stream, read once per sensor tick."""

    instance: dg.DagsterInstance
    runs: dict[str, dg.DagsterRun]
    dead: dict[str, dg.DagsterRun] = field(default_factory=dict)

    @classmethod
    def load(
        cls, instance: dg.DagsterInstance, store: ProgressStore, names: Iterable[str]
    ) -> RunFacts:
        run_ids = {r.run_id for name in names if (r := store.latest(name)) and r.run_id}
        runs = instance.get_runs(filters=dg.RunsFilter(run_ids=sorted(run_ids))) if run_ids else []
        return cls(instance, {run.run_id: run for run in runs})

    def __call__(self, stream: Stream, records: Sequence[ProgressRecord]) -> RunState:
        run = self.runs.get(records[-1].run_id) if records else None
        status = run.status.value if run is not None else None
        failure = ""
        if run is not None and run.status is dg.DagsterRunStatus.FAILURE:
            failure = failure_reason(self.instance, run.run_id)[0]
        state = classify_run(status, records, failure)
        if state.process_gone and run is not None:
            self.dead[run.run_id] = run
        return state

    def job_of(self, run_id: str) -> str | None:
        run = self.runs.get(run_id)
        return run.job_name if run is not None else None

    def fail_dead_runs(self) -> list[str]:
        """Mark runs whose process is gone as failed, as run monitoring would."""
        for run in self.dead.values():
            self.instance.report_run_failed(run, DEAD_RUN_MESSAGE)
        return list(self.dead)
