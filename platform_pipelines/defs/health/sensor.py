"""The health sensor's tick: gather the facts, let ``health`` judge, emit what changed.

Runs in the code server every ~30 s without a JVM: progress records, checkpoint folders, Delta
logs and one request to the broker. Check results are reported when they change, when a stream's
run changes, and every 5 minutes; the curated numbers are observed on each new batch.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

import dagster as dg

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.defs.health.events import check_evaluation, observation
from platform_pipelines.defs.health.runs import RunFacts
from platform_pipelines.health.evaluate import HealthConfig, StreamHealth, evaluate_all
from platform_pipelines.health.reporting import Reported
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.settings import PlatformSettings
from platform_pipelines.streams.declare import Stream

Event = dg.AssetCheckEvaluation | dg.AssetObservation


@dataclass(frozen=True)
class Tick:
    events: list[Event]
    cursor: str
    results: list[StreamHealth]
    failed_runs: list[str]


def health_tick(
    instance: dg.DagsterInstance,
    streams: Sequence[Stream],
    lakehouse: Lakehouse,
    settings: PlatformSettings,
    config: HealthConfig,
    cursor: str | None,
    now: float | None = None,
) -> Tick:
    """One evaluation of every stream, and the events to report for it."""
    clock = time.time if now is None else None  # live: each lag stamped when it is read
    now = time.time() if now is None else now
    reported = Reported.from_json(json.loads(cursor)) if cursor else Reported()
    store = ProgressStore(settings.progress_dir)
    runs = RunFacts.load(instance, store, [s.name for s in streams])
    results = evaluate_all(
        streams, lakehouse, store, runs, settings.bootstrap_servers(), now, config, clock
    )
    events: list[Event] = []
    for health in results:
        name = health.stream.name
        fresh = reported.run_changed(name, f"{health.run.run_id}:{health.run.status}")
        for verdict in health.verdicts:
            if reported.check_due(
                f"{name}/{verdict.check}", verdict.status.value, now, force=fresh
            ):
                events.append(check_evaluation(health.asset, verdict))
        if health.latest and reported.observation_due(name, health.last_batch_id, now):
            events.append(observation(health, runs.job_of(health.run.run_id)))
    failed = runs.fail_dead_runs()
    return Tick(events, json.dumps(reported.to_json()), results, failed)
