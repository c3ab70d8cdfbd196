"""The main job end to end: local broker -> synthetic clickstream -> all streams through Dagster.

Runs the ``all_streams`` job in catch-up mode on the project's Dagster instance (``dagster_home``),
so the run, its logs and the asset materializations are there when the UI is opened afterwards.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from platform_pipelines.settings import REPO_ROOT


@dataclass(frozen=True)
class TableSummary:
    name: str
    rows: int
    path: Path


@dataclass(frozen=True)
class DemoResult:
    run_id: str
    status: str
    tables: list[TableSummary]
    quarantine_reasons: list[tuple[str, int]]
    open_sessions_note: str


def use_project_instance() -> Path:
    """Point Dagster at the project's instance folder unless the user chose another."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(REPO_ROOT / "dagster_home")))
    home.mkdir(parents=True, exist_ok=True)
    return home


def run_all_streams_catch_up(max_offsets_per_trigger: int = 50_000) -> tuple[str, str]:
    """Execute the all_streams job in catch-up mode; returns (run id, run status)."""
    import dagster as dg

    from platform_pipelines.definitions import ALL_STREAMS_JOB

    use_project_instance()
    job = dg.reconstructable(_all_streams_job)
    config = {
        "ops": {
            f"run_{ALL_STREAMS_JOB}": {
                "config": {
                    "mode": "catch_up",
                    "max_offsets_per_trigger": max_offsets_per_trigger,
                    "progress_log_interval_seconds": 5,
                }
            }
        }
    }
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(job, instance=instance, run_config=config, raise_on_error=False)
        return result.run_id, instance.get_run_by_id(result.run_id).status.value  # type: ignore[union-attr]


def _all_streams_job():  # type: ignore[no-untyped-def]
    from platform_pipelines.definitions import ALL_STREAMS_JOB, defs

    return defs.get_job_def(ALL_STREAMS_JOB)


def summarize_tables(table_names: list[str]) -> tuple[list[TableSummary], list[tuple[str, int]]]:
    """Row counts of the lakehouse tables and the commonest quarantine reasons (one JVM start)."""
    from pyspark.sql import functions as F

    from platform_pipelines.defs.resources import LakehouseResource
    from platform_pipelines.spark.session import SparkOptions, build_spark_session

    lakehouse = LakehouseResource().lakehouse()
    spark = build_spark_session(SparkOptions(ui_enabled=False))
    try:
        tables = []
        for name in table_names:
            path = lakehouse.table(name)
            rows = spark.read.format("delta").load(str(path)).count() if path.exists() else 0
            tables.append(TableSummary(name, rows, path))
        reasons: list[tuple[str, int]] = []
        if lakehouse.table("quarantine").exists():
            q = spark.read.format("delta").load(str(lakehouse.table("quarantine")))
            grouped = q.groupBy("reason").agg(F.count("*").alias("n")).orderBy(F.desc("n"))
            reasons = [(r["reason"], r["n"]) for r in grouped.limit(5).collect()]
        return tables, reasons
    finally:
        spark.stop()
