"""The main job end to end: local broker -> synthetic topics -> every stream through Dagster.

Runs the ``all_streams`` job in catch-up mode (as `platform run` does: its own lines printed, a
clean stop on Ctrl-C) and the ``daily_engagement`` asset on the project's Dagster instance
(``dagster_home``), so the runs, their logs and the asset materializations are there when the
UI is opened afterwards.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from platform_pipelines.settings import REPO_ROOT, get_settings


@dataclass(frozen=True)
class DemoSummary:
    """What the demo left in the lakehouse."""

    tables: list[tuple[str, int, Path]]
    quarantine_reasons: list[tuple[str, int]]
    alerts: list[dict[str, Any]] = field(default_factory=list)
    status_changes: list[dict[str, Any]] = field(default_factory=list)
    engagement: list[dict[str, Any]] = field(default_factory=list)

    def rows(self, table: str) -> int:
        return next((n for name, n, _ in self.tables if name == table), 0)


def use_project_instance() -> Path:
    """Point Dagster at the project's instance folder unless the user chose another."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(REPO_ROOT / "dagster_home")))
    home.mkdir(parents=True, exist_ok=True)
    return home


def run_all_streams_catch_up(max_offsets_per_trigger: int | None = None) -> tuple[str, str]:
    """Run the all_streams job in catch-up mode (Kafka records per batch: the job's default
    unless given), printing its lines; returns (run id, run status). A stop asked for by a
    signal (Ctrl-C) ends the demo with `platform run`'s exit code, after the run's one line."""
    import yaml

    from platform_pipelines.cli.run import print_line
    from platform_pipelines.cli.terminal_run import run_job
    from platform_pipelines.definitions import ALL_STREAMS_JOB

    use_project_instance()
    op_config: dict[str, object] = {"mode": "catch_up", "progress_log_interval_seconds": 5}
    if max_offsets_per_trigger is not None:
        op_config["max_offsets_per_trigger"] = max_offsets_per_trigger
    config = {"ops": {f"run_{ALL_STREAMS_JOB}": {"config": op_config}}}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.yaml"
        path.write_text(yaml.safe_dump(config))
        end = run_job(ALL_STREAMS_JOB, [path], print_line)
    if end.status == "CANCELED" and end.signal is not None:
        raise SystemExit(end.exit_code)
    return end.run_id, end.status


def materialize_engagement(days: list[str]) -> bool:
    """Materialize the daily_engagement partitions of ``days`` on the project's instance."""
    import dagster as dg

    from platform_pipelines.definitions import defs
    from platform_pipelines.defs.engagement import daily_engagement_asset

    use_project_instance()
    resources = defs.resources or {}
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}  # not each event
    with dg.DagsterInstance.get() as instance:
        return all(
            dg.materialize(
                [daily_engagement_asset],
                partition_key=day,
                instance=instance,
                resources={k: resources[k] for k in ("spark", "lakehouse")},
                run_config=quiet,
            ).success
            for day in days
        )


def summarize(table_names: list[str]) -> DemoSummary:
    """Row counts of the tables, quarantine reasons, alerts, status changes (one JVM start)."""
    from pyspark.sql import functions as F

    from platform_pipelines.defs.resources import LakehouseResource
    from platform_pipelines.spark.session import SparkOptions, build_spark_session

    lake = LakehouseResource().lakehouse()
    spark = build_spark_session(SparkOptions.from_settings(get_settings(), ui_enabled=False))

    def read(name: str):  # type: ignore[no-untyped-def]
        path = lake.table(name)
        return (
            spark.read.format("delta").load(str(path)) if (path / "_delta_log").exists() else None
        )

    try:
        tables = [
            (n, df.count() if (df := read(n)) is not None else 0, lake.table(n))
            for n in table_names
        ]
        quarantine, alerts = read("quarantine"), read("security_alerts")
        status, engagement = read("service_status"), read("daily_engagement")
        reasons = (
            [
                (r["reason"], r["n"])
                for r in quarantine.groupBy("reason")
                .agg(F.count("*").alias("n"))
                .orderBy(F.desc("n"))
                .limit(5)
                .collect()
            ]
            if quarantine is not None
            else []
        )
        return DemoSummary(
            tables,
            reasons,
            [r.asDict() for r in alerts.orderBy("last_failure_time").limit(5).collect()]
            if alerts
            else [],
            [r.asDict() for r in status.orderBy("changed_at").collect()] if status else [],
            [r.asDict() for r in engagement.orderBy("day").collect()] if engagement else [],
        )
    finally:
        spark.stop()
