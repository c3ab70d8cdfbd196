"""Fault injection: hurt the running pipeline in several ways and prove nothing was lost.

Each trial produces a synthetic clickstream into a fresh topic while the pipeline runs in its own
process (``chaos_worker``), injects its faults one after the other (``chaos_faults``: SIGKILLs at
its first start and at random moments, network cuts, executor kills on a cluster), waits after
each until the pipeline recovered, lets the last launch catch up and stop gracefully, and compares
every table with a clean catch-up run over the same input (``chaos_compare``): rows missing from
the trial are lost, rows it holds too often are duplicated. ``ChaosRun`` owns what a run starts
(``chaos_services``: broker, proxies, cluster; ``chaos_launch.Fleet``: the workers) and stops it
all, also at once when interrupted.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path

from pyspark.sql import SparkSession

from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.producer import generate_clickstream, produce
from platform_pipelines.runtime.chaos_compare import TABLES, VOLATILE, compare
from platform_pipelines.runtime.chaos_config import (
    ChaosConfig,
    FaultRecord,
    TrialResult,
    input_config,
)
from platform_pipelines.runtime.chaos_faults import FAULTS, FIRST_START_POINTS, plan_faults
from platform_pipelines.runtime.chaos_launch import ChaosCancelled, Fleet, first_batch_after
from platform_pipelines.runtime.chaos_pipeline import TrialPipeline
from platform_pipelines.runtime.chaos_services import ChaosServices

__all__ = [
    "FIRST_START_POINTS",
    "TABLES",
    "VOLATILE",
    "ChaosCancelled",
    "ChaosConfig",
    "ChaosRun",
    "FaultRecord",
    "TrialResult",
    "first_batch_after",
]
Say = Callable[[str], None]


class ChaosRun:
    """A chaos run of ``cfg`` in ``workdir``: its services, its workers, its trials."""

    def __init__(self, cfg: ChaosConfig, workdir: Path) -> None:
        self.cfg, self.workdir = cfg, workdir
        self.fleet = Fleet()
        self.services = ChaosServices(workdir, cfg.slots, cluster=cfg.cluster)

    def start(self, say: Say) -> None:
        """Start the broker, the proxies and, with ``cfg.cluster``, the Spark cluster."""
        self.services.start(say)

    def trials(self, spark: Callable[[], SparkSession], say: Say) -> list[TrialResult]:
        """Every trial: ``cfg.parallel`` at once are hurt and recovered, then each is compared
        with its clean catch-up run, one by one, in the session ``spark()`` returns (started
        once the pipelines stopped: its JVM does not compete with theirs).

        Raises:
            RuntimeError: a trial's pipeline did not recover, catch up or stop (the others are
                stopped at once); the message names its log.
        """
        hurt = self._hurt_all(say)
        session, results = spark(), []
        for result, topic, began in hurt:
            say(f"trial {result.trial}: comparing with a clean catch-up run")
            trial_lake = self.workdir / f"trial-{result.trial}" / "lakehouse"
            reference = self.workdir / f"reference-{result.trial}"
            found = compare(session, self.services.bootstrap, topic, trial_lake, reference)
            result.lost, result.duplicated, result.rows = found
            result.seconds = round(time.monotonic() - began, 1)
            results.append(result)
        return results

    def stop(self) -> None:
        """Stop the workers still running, then the services."""
        self.fleet.cancel()
        self.services.stop()

    def kill(self) -> list[int]:
        """Stop everything at once (an interrupted run): every worker group, the services, every
        process this one started; returns the workers' pids."""
        workers = self.fleet.cancel()
        self.services.kill()
        return workers

    def _hurt_all(self, say: Say) -> list[tuple[TrialResult, str, float]]:
        trials = range(1, self.cfg.trials + 1)
        with ThreadPoolExecutor(max_workers=self.cfg.slots) as pool:
            futures = [pool.submit(self._hurt, t, say) for t in trials]
            wait(futures, return_when=FIRST_EXCEPTION)
            if any(f.done() and f.exception() for f in futures):
                self.fleet.cancel()  # one trial failed: the others end now, not in minutes
            wait(futures)
        _raise_first_failure(futures)
        return [f.result() for f in futures]

    def _hurt(self, trial: int, say: Say) -> tuple[TrialResult, str, float]:
        """Produce, inject the trial's faults, then let its last launch catch up and stop."""
        began, result = time.monotonic(), TrialResult(trial)
        bootstrap = self.services.bootstrap
        topic = f"chaos-{trial}-{uuid.uuid4().hex[:8]}"
        create_topics(bootstrap, {topic: 3})
        records = generate_clickstream(input_config(trial, self.cfg))
        producer = threading.Thread(
            target=produce,
            args=(bootstrap, topic, records),
            kwargs={"rate_per_sec": self.cfg.rate_per_sec},
            daemon=True,
        )
        producer.start()
        lake_dir = self.workdir / f"trial-{trial}"
        with self.services.proxy() as proxy:
            p = TrialPipeline(
                trial,
                self.cfg,
                lake_dir,
                topic,
                bootstrap,
                proxy,
                self.fleet,
                self.services.master_url,
            )
            for kind in plan_faults(self.cfg, trial):
                result.faults.append(FAULTS[kind](p))
                say(f"trial {trial}: {result.faults[-1].line()}")
            while producer.is_alive():
                self.fleet.sleep(0.5)
            p.finish()
        result.restart_seconds = p.restart_seconds
        say(f"trial {trial}: caught up and stopped")
        return result, topic, began


def _raise_first_failure(futures: list[Future[tuple[TrialResult, str, float]]]) -> None:
    """Raise the first error of a trial that failed by itself (not one cancelled because of it)."""
    errors = [f.exception() for f in futures if f.exception() is not None]
    real = [e for e in errors if not isinstance(e, ChaosCancelled)]
    if real or errors:
        raise (real or errors)[0]  # type: ignore[misc]
