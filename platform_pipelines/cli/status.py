"""`platform status`: one table of every stream's health, from files and the broker, no JVM."""

from __future__ import annotations

import time

import click
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.units import count, duration, size
from platform_pipelines.health.evaluate import StreamHealth
from platform_pipelines.settings import get_settings

STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red"}


def lag_text(health: StreamHealth) -> str:
    """The lag as a person reads it: a count, "unknown" when it could not be measured (the
    broker does not answer), "-" when the stream has no measurable input."""
    if health.lag is None:
        return "-"
    return "unknown" if health.lag.records is None else count(health.lag.records)


def row(health: StreamHealth, now: float) -> list[str]:
    metrics, status = health.metrics, health.status.value
    age = duration(now - health.last_batch_at) if health.last_batch_at else "-"
    rate = f"{metrics['rows_per_second']:,.1f}" if "rows_per_second" in metrics else "-"
    state = count(metrics["state_rows"]) if "state_rows" in metrics else "-"
    checkpoint = size(health.checkpoint.total_bytes) if health.checkpoint.exists else "-"
    return [
        health.stream.name,
        health.run.status.replace("_", " "),
        age,
        rate,
        lag_text(health),
        state,
        checkpoint,
        f"[{STYLE[status]}]{status}[/]",
    ]


@click.command(short_help="Every stream's health in one table (no JVM).")
@click.option("--all-checks", is_flag=True, help="List every judgement, not only the unhealthy.")
@click.option("--strict", is_flag=True, help="Exit with status 1 when any stream fails a check.")
@friendly_errors
def status(all_checks: bool, strict: bool) -> None:
    """One table of every declared stream: running or not, last batch age, rows/s, lag, state
    rows, checkpoint size and health, then every check that is not passing. Reads progress
    records, checkpoints and the broker; starts no JVM."""
    from platform_pipelines.core.progress_store import ProgressStore
    from platform_pipelines.health.evaluate import HealthConfig, evaluate_all
    from platform_pipelines.health.policy import checkpoint_expectations
    from platform_pipelines.health.runs import run_state_from_records
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.spark.session import SparkOptions
    from platform_pipelines.streams.catalog import load_registry

    settings = get_settings()
    config = HealthConfig(
        expectations=checkpoint_expectations(SparkOptions.from_settings(settings))
    )
    with console.status("Reading progress, checkpoints and the broker's offsets..."):
        results = evaluate_all(
            list(load_registry(settings)),
            Lakehouse(settings.lakehouse_dir),
            ProgressStore(settings.progress_dir),
            lambda stream, records: run_state_from_records(records),
            settings.bootstrap_servers(),
            config=config,
        )
    now = time.time()
    table = Table(
        "stream",
        "run",
        "last batch",
        "rows/s",
        "lag",
        "state rows",
        "checkpoint",
        "health",
        title="Streams",
    )
    for health in results:
        table.add_row(*row(health, now))
    console.print(table)
    for health in results:
        for verdict in health.verdicts:
            if all_checks or not verdict.passed:
                style = STYLE[verdict.status.value]
                console.print(f"[{style}]{health.stream.name}[/] {verdict.line()}", soft_wrap=True)
    failing = sum(1 for h in results if h.status.value == "fail")
    console.print(
        f"{len(results)} streams, {failing} failing a check (progress: {settings.progress_dir})"
    )
    if strict and failing:
        raise SystemExit(1)
