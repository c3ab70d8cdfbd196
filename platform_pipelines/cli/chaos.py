"""`platform chaos`: hurt the running pipeline (kills, network cuts) and check nothing was lost."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.status import Status
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors, shown_path
from platform_pipelines.core.units import count, duration

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from platform_pipelines.runtime.chaos import ChaosConfig, ChaosRun, TrialResult

# Exit codes: 0 nothing lost or duplicated; 1 rows lost or duplicated, or a trial failed;
# 2 a usage error; 128 + the signal when interrupted (130 Ctrl-C, 143 SIGTERM).
INTERRUPTED = {signal.SIGINT: 130, signal.SIGTERM: 143}


@click.command(short_help="Hurt the pipeline (kills, network cuts); compare with a clean run.")
@click.option("--trials", default=3, show_default=True, help="Independent trials.")
@click.option("--events", default=1200, show_default=True, help="Records produced per trial.")
@click.option(
    "--rate",
    default=20.0,
    show_default=True,
    help="Records per second, produced while the pipeline runs and is hurt.",
)
@click.option(
    "--faults",
    default="first-start,kill,network",
    show_default=True,
    help="Kinds of fault: first-start (SIGKILL at a checkpoint write of the first start, each "
    "trial's first fault), kill (SIGKILL at a random moment), network (connections to the "
    "broker dropped and refused for a while), executor (SIGKILL of an executor during a task; "
    "needs --cluster).",
)
@click.option(
    "--per-trial",
    default="1",
    show_default=True,
    help="Faults per trial besides the first-start one (n or min-max); the first goes round "
    "the kinds, so each kind runs once there are as many trials.",
)
@click.option(
    "--network-seconds", default=8.0, show_default=True, help="How long a network cut lasts."
)
@click.option(
    "--cluster",
    is_flag=True,
    help="Run the pipelines on a local Spark cluster started for the run.",
)
@click.option("--seed", default=1, show_default=True, help="Seeds the faults, moments and input.")
@click.option(
    "--parallel",
    default=3,
    show_default=True,
    help="Trials whose pipelines run at once (each its own JVM); the comparisons follow one by one.",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the results as JSON here.",
)
@click.option("--keep", is_flag=True, help="Keep the run's files (under .local/chaos) on success.")
@friendly_errors
def chaos(
    trials: int,
    events: int,
    rate: float,
    faults: str,
    per_trial: str,
    network_seconds: float,
    cluster: bool,
    seed: int,
    parallel: int,
    output: Path | None,
    keep: bool,
) -> None:
    """Fault injection. Each trial produces a synthetic clickstream while the pipeline (bronze,
    dedup, sessions, alerts) runs continuously in its own process, hurts it (--faults), waits
    after each fault until it recovered (a new batch, or all input consumed), lets it catch up,
    and compares every table with a clean catch-up run over the same input. The run starts its
    own Kafka broker (and with --cluster a Spark cluster) in its folder under .local/chaos, and
    stops them at the end. Prints the faults and the lost and duplicated rows per trial (both
    must be 0).

    Exit codes: 0 nothing lost or duplicated; 1 rows lost or duplicated, or a trial failed
    (the run's folder is kept and named); 130 on Ctrl-C, 143 on SIGTERM: every process of the
    run is stopped at once and its folder kept."""
    from platform_pipelines.runtime.chaos import ChaosRun
    from platform_pipelines.settings import get_settings

    cfg = _config(trials, events, rate, faults, per_trial, network_seconds, cluster, seed, parallel)
    workdir = get_settings().local_dir / "chaos" / time.strftime("%Y%m%d-%H%M%S")
    run = ChaosRun(cfg, workdir)
    status = console.status("Starting the run's Kafka broker...")
    _stop_on_signals(run, status)
    results, done = _run(run, status), False
    try:
        console.print(_table(results))
        if output:
            _write_json(output, cfg, results)
        done = all(r.ok for r in results)
        console.print(_verdict(results))
    finally:
        if done and not keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            console.print(f"The run's files are kept in {shown_path(workdir)}.")
    if not done:
        raise SystemExit(1)


def _config(
    trials: int,
    events: int,
    rate: float,
    faults: str,
    per_trial: str,
    network_seconds: float,
    cluster: bool,
    seed: int,
    parallel: int,
) -> ChaosConfig:
    from platform_pipelines.runtime.chaos import ChaosConfig

    low, _, high = per_trial.partition("-")
    try:
        return ChaosConfig(
            trials=trials,
            events=events,
            rate_per_sec=rate,
            faults=tuple(f.strip() for f in faults.split(",") if f.strip()),
            per_trial=(int(low), int(high or low)),
            network_seconds=network_seconds,
            seed=seed,
            parallel=parallel,
            cluster=cluster,
        )
    except ValueError as error:
        raise click.UsageError(str(error)) from error


def _run(run: ChaosRun, status: Status) -> list[TrialResult]:
    """Start the run's services, run the trials, stop everything; on an error the run's folder
    is named (it is kept) and the error raised."""
    from platform_pipelines.runtime.chaos_worker import SPARK
    from platform_pipelines.spark.session import build_spark_session

    sessions = []

    def reference_spark() -> SparkSession:
        status.update("Starting Spark for the reference runs...")
        sessions.append(build_spark_session(SPARK))
        status.update("Comparing each trial with a clean catch-up run...")
        return sessions[0]

    try:
        with status:
            run.start(console.print)
            status.update(f"{run.cfg.trials} trials, {run.cfg.slots} at once...")
            return run.trials(reference_spark, console.print)
    except Exception:
        console.print(f"The run's files are kept in {shown_path(run.workdir)}.")
        raise
    finally:
        for spark in sessions:
            spark.stop()
        run.stop()


def _stop_on_signals(run: ChaosRun, status: Status) -> None:
    """On Ctrl-C or SIGTERM: kill every process of the run at once, say so, exit 130 or 143."""

    def stop(signum: int, frame: Any) -> None:
        for sig in INTERRUPTED:
            signal.signal(sig, signal.SIG_IGN)  # a second signal must not cut this short
        status.stop()
        workers = run.kill()
        name = signal.Signals(signum).name
        console.print(
            f"Interrupted by {name}: stopped {len(workers)} running pipelines (drivers and JVMs), "
            f"the broker and every other process of the run; its files are kept in "
            f"{shown_path(run.workdir)}.",
            soft_wrap=True,
        )
        sys.stdout.flush()
        os._exit(INTERRUPTED[signal.Signals(signum)])

    for sig in INTERRUPTED:
        signal.signal(sig, stop)


def _verdict(results: list[TrialResult]) -> str:
    bad = [str(r.trial) for r in results if not r.ok]
    if bad:
        return f"[bold red]Rows lost or duplicated in trial {', '.join(bad)}.[/]"
    faults = sum(len(r.faults) for r in results)
    return f"[green]{len(results)} trials, {faults} faults: nothing lost or duplicated.[/]"


def _write_json(output: Path, cfg: ChaosConfig, results: list[TrialResult]) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    data = {"config": asdict(cfg), "trials": [asdict(r) for r in results]}
    output.write_text(json.dumps(data, indent=2) + "\n")
    console.print(f"Results written to {output}")


def _table(results: list[TrialResult]) -> Table:
    table = Table(
        "trial",
        "faults (when; recovery)",
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
            "\n".join(f.line() for f in r.faults),
            f"{mean:.1f}",
            count(sum(r.lost.values())),
            count(sum(r.duplicated.values())),
            count(sum(r.rows.values())),
            duration(r.seconds),
        )
    return table
