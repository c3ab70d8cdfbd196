"""`platform chaos`: kill the running pipeline at random moments and check nothing was lost."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import click
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.units import count, duration


@click.command(short_help="Kill the pipeline at random moments; compare with a clean run.")
@click.option("--trials", default=3, show_default=True, help="Independent trials.")
@click.option("--events", default=1500, show_default=True, help="Records produced per trial.")
@click.option(
    "--rate",
    default=150.0,
    show_default=True,
    help="Records per second, produced while the pipeline runs.",
)
@click.option("--kills", default="1-3", show_default=True, help="SIGKILLs per trial (min-max).")
@click.option(
    "--first-start/--no-first-start",
    default=True,
    show_default=True,
    help="Land each trial's first kill at a checkpoint write of the pipeline's first start "
    "(it pauses there, then is killed), instead of at a random moment.",
)
@click.option("--seed", default=1, show_default=True)
@click.option(
    "--parallel",
    default=1,
    show_default=True,
    help="Trials whose pipelines run at "
    "once (each its own JVM); the comparisons follow one by one.",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the results as JSON here.",
)
@click.option("--keep", is_flag=True, help="Keep the trials' lakehouses under .local/chaos.")
@friendly_errors
def chaos(
    trials: int,
    events: int,
    rate: float,
    kills: str,
    first_start: bool,
    seed: int,
    parallel: int,
    output: Path | None,
    keep: bool,
) -> None:
    """Fault injection. Each trial produces a synthetic clickstream while the pipeline (bronze,
    dedup, sessions, alerts) runs continuously in its own process, SIGKILLs that process and its
    JVM at random moments (during its first start too), relaunches it, lets it catch up, and
    compares every table with a clean catch-up run over the same input. Prints lost and
    duplicated rows per trial (both must be 0) and how long restarts took; exits 1 otherwise."""
    from platform_pipelines.runtime.chaos import ChaosConfig, run_trials
    from platform_pipelines.runtime.chaos_worker import SPARK
    from platform_pipelines.settings import get_settings
    from platform_pipelines.spark.session import build_spark_session

    low, _, high = kills.partition("-")
    cfg = ChaosConfig(
        trials=trials,
        events=events,
        rate_per_sec=rate,
        seed=seed,
        kills=(int(low), int(high or low)),
        first_start=first_start,
        parallel=parallel,
    )
    settings = get_settings()
    bootstrap, started = _broker(settings)
    workdir = settings.local_dir / "chaos" / time.strftime("%Y%m%d-%H%M%S")
    with console.status("Starting Spark for the reference runs..."):
        spark = build_spark_session(SPARK)
    results = []
    try:
        with console.status(f"{trials} trials, {parallel} at once..."):
            results = run_trials(cfg, spark, bootstrap, workdir, console.print)
        for result in results:
            console.print(_line(result))
    finally:
        spark.stop()
        if started:
            from platform_pipelines.kafka.broker import LocalKafkaBroker

            LocalKafkaBroker(settings.broker_dir).stop()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    console.print(_table(results))
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(
            json.dumps({"config": asdict(cfg), "trials": [asdict(r) for r in results]}, indent=2)
            + "\n"
        )
        console.print(f"Results written to {output}")
    if not all(r.ok for r in results):
        raise SystemExit(1)


def _broker(settings) -> tuple[str, bool]:  # type: ignore[no-untyped-def]
    from platform_pipelines.kafka.broker import LocalKafkaBroker, find_running_broker

    if settings.kafka_bootstrap_servers:
        return settings.kafka_bootstrap_servers, False
    running = find_running_broker(settings.broker_dir)
    if running:
        return str(running["bootstrap_servers"]), False
    with console.status("Starting the local Kafka broker..."):
        address = LocalKafkaBroker(settings.broker_dir).start()
    console.print(f"Started the local Kafka broker at {address} for this run (stopped at the end).")
    return address, True


def _line(r) -> str:  # type: ignore[no-untyped-def]
    verdict = (
        "[green]nothing lost or duplicated[/]" if r.ok else "[bold red]rows lost or duplicated[/]"
    )
    return (
        f"trial {r.trial}: {len(r.kill_after_seconds)} kills, {verdict} "
        f"({count(sum(r.rows.values()))} rows compared, {duration(r.seconds)})"
    )


def _table(results) -> Table:  # type: ignore[no-untyped-def]
    table = Table(
        "trial",
        "faults",
        "restart s (mean)",
        "lost rows",
        "duplicated rows",
        "rows compared",
        "took",
        title="Chaos trials",
    )
    for r in results:
        mean = sum(r.restart_seconds) / len(r.restart_seconds) if r.restart_seconds else 0.0
        table.add_row(
            str(r.trial),
            "\n".join(r.faults),
            f"{mean:.1f}",
            count(sum(r.lost.values())),
            count(sum(r.duplicated.values())),
            count(sum(r.rows.values())),
            duration(r.seconds),
        )
    return table
