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
    """The first line of a failed run's error, its ``platform/failure`` kind and error class."""
    for record in reversed(instance.all_logs(run_id)):
        event = record.dagster_event
        if event is None:
            continue
        if event.is_step_failure and event.step_failure_data:
            data = event.step_failure_data
            meta = data.user_failure_data.metadata if data.user_failure_data else {}
            kind = meta.get("platform/failure")
            error = data.error
            line = error.message.strip().splitlines()[0][:300] if error else "the step failed"
            if data.user_failure_data and data.user_failure_data.description:
                line = data.user_failure_data.description.strip().splitlines()[0][:300]
            return line, getattr(kind, "value", None), error.cls_name if error else None
        if event.is_run_failure and event.message:
            return event.message.strip().splitlines()[0][:300], None, None
    return "the run failed", None, None


@dataclass
class RunFacts:
    """The newest run of each stream, read once per sensor tick."""

    instance: dg.DagsterInstance
    runs: dict[str, dg.DagsterRun]
    dead: dict[str, dg.DagsterRun] = field(default_factory=dict)

    @classmethod
    def load(cls, instance: dg.DagsterInstance, store: ProgressStore,
             names: Iterable[str]) -> RunFacts:  # fmt: skip
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
