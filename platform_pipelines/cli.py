"""`platform`: set up, run the demo, start the local broker and the Dagster UI, produce events,
show every stream's health.

Every command has --help. Errors print what happened and what to do; --debug adds the traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from platform_pipelines.events import CLICKSTREAM_TOPIC
from platform_pipelines.settings import REPO_ROOT, get_settings

if TYPE_CHECKING:
    from platform_pipelines.kafka.broker import LocalKafkaBroker

console = Console()
F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(func: F) -> F:
    """Print known errors as one readable message (traceback only with --debug)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except Exception as error:
            if click.get_current_context().find_root().params.get("debug"):
                raise
            console.print(f"[bold red]Error:[/] {error}")
            console.print("[dim](run with --debug to see the traceback)[/]")
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
def main(debug: bool) -> None:
    """Streaming data platform: stateful Spark streams on Kafka and Delta, run by Dagster."""


@main.command()
@friendly_errors
def setup() -> None:
    """Check Java and resolve the JVM artifacts (once; offline afterwards)."""
    from platform_pipelines.jvm import ensure_jars, require_java

    table = Table("component", "status")
    table.add_row("Java", f"{require_java()} (>= 17 needed)")
    for name in ("spark", "kafka-broker"):
        with console.status(f"Resolving {name} jars from Maven Central (first time only)..."):
            jars = ensure_jars(name)
        table.add_row(f"{name} jars", f"{len(jars)} in {get_settings().jars_dir / name}")
    console.print(table)


def _broker() -> LocalKafkaBroker:
    from platform_pipelines.kafka.broker import LocalKafkaBroker

    return LocalKafkaBroker(get_settings().broker_dir)


def ensure_broker() -> tuple[str, bool]:
    """The running local broker's address, starting one if none runs; (address, started_here)."""
    from platform_pipelines.kafka.broker import find_running_broker

    running = find_running_broker(get_settings().broker_dir)
    if running:
        return str(running["bootstrap_servers"]), False
    with console.status("Starting the local Kafka broker (KRaft)..."):
        return _broker().start(), True


@main.group()
def kafka() -> None:
    """The local single-node Kafka broker (data under .local/kafka)."""


@kafka.command("start")
@friendly_errors
def kafka_start() -> None:
    """Start the local broker in the background (no-op if it runs)."""
    address, started = ensure_broker()
    console.print(f"Kafka broker {'started' if started else 'already running'} at {address}")


@kafka.command("stop")
@friendly_errors
def kafka_stop() -> None:
    """Stop the local broker."""
    from platform_pipelines.kafka.broker import find_running_broker

    if find_running_broker(get_settings().broker_dir) is None:
        console.print("No local Kafka broker is running.")
        return
    _broker().stop()
    console.print("Kafka broker stopped.")


@kafka.command("status")
@friendly_errors
def kafka_status() -> None:
    """Show whether the local broker runs, and where."""
    from platform_pipelines.kafka.broker import find_running_broker

    info = find_running_broker(get_settings().broker_dir)
    console.print(
        f"running at {info['bootstrap_servers']} (pid {info['pid']})" if info else "not running"
    )


def _produce_with_progress(cfg: Any, bootstrap: str) -> Any:
    from platform_pipelines.kafka.admin import create_topics
    from platform_pipelines.kafka.producer import generate_clickstream, produce

    create_topics(bootstrap, {CLICKSTREAM_TOPIC: 3})
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        task = bar.add_task(f"Producing to {CLICKSTREAM_TOPIC}", total=cfg.events)
        return produce(
            bootstrap,
            CLICKSTREAM_TOPIC,
            generate_clickstream(cfg),
            cfg.rate_per_sec,
            progress=lambda n: bar.update(task, completed=n),
        )


def producer_options(func: F) -> F:
    """The synthetic producer's knobs, shared by `produce` and `demo`."""
    options = [
        click.option("--events", default=20_000, show_default=True, help="Records to produce."),
        click.option("--users", default=300, show_default=True, help="Distinct users (keys)."),
        click.option("--duplicate-rate", default=0.02, show_default=True),
        click.option("--late-rate", default=0.05, show_default=True),
        click.option("--malformed-rate", default=0.01, show_default=True),
        click.option(
            "--rate",
            "rate_per_sec",
            default=0.0,
            show_default=True,
            help="Records per second (0: as fast as possible).",
        ),
        click.option("--seed", default=42, show_default=True),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _config(**kw: Any) -> Any:
    from platform_pipelines.kafka.producer import ClickstreamConfig

    try:
        return ClickstreamConfig(**kw)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


@main.command("produce")
@producer_options
@friendly_errors
def produce_cmd(**kw: Any) -> None:
    """Produce a synthetic clickstream into the local broker (started if needed)."""
    cfg = _config(**kw)
    bootstrap, _ = ensure_broker()
    summary = _produce_with_progress(cfg, bootstrap)
    _print_counts("Produced", summary.counts, f"{summary.rate_per_sec:,.0f} records/s")


def _print_counts(title: str, counts: dict[str, int], caption: str = "") -> None:
    table = Table("kind", "records", title=title, caption=caption)
    for kind, n in counts.items():
        table.add_row(kind, f"{n:,}")
    console.print(table)


@main.command()
@producer_options
@click.option("--keep-broker", is_flag=True, help="Leave the broker running afterwards.")
@click.option(
    "--fresh/--no-fresh",
    default=True,
    show_default=True,
    help="Start from empty topics, tables and checkpoints (.local/kafka, .local/lakehouse).",
)
@friendly_errors
def demo(keep_broker: bool, fresh: bool, **kw: Any) -> None:
    """The main job: broker, synthetic topics, every stream through Dagster, daily engagement."""
    from platform_pipelines import demo as steps
    from platform_pipelines.jvm import ensure_jars, require_java
    from platform_pipelines.streams.catalog import load_registry

    cfg = _config(**kw)
    os.environ.setdefault("PLATFORM_SPARK_LOG_LEVEL", "ERROR")  # Dagster's log shows the progress
    require_java()
    with console.status("Resolving JVM artifacts (cached after the first run)..."):
        ensure_jars("spark")
        ensure_jars("kafka-broker")
    if fresh:
        _reset_local_state()
    bootstrap, started = ensure_broker()
    os.environ["PLATFORM_KAFKA_BOOTSTRAP_SERVERS"] = bootstrap
    try:
        produced = _produce_demo_topics(cfg, bootstrap)
        console.rule("Running the all_streams job through Dagster (catch-up)")
        began = time.monotonic()
        run_id, status = steps.run_all_streams_catch_up()
        elapsed = time.monotonic() - began
    finally:
        if started and not keep_broker:
            _broker().stop()
    if status != "SUCCESS":
        raise click.ClickException(f"The all_streams run {run_id} ended {status}; its logs are "
                                   "in the Dagster UI (make ui) under Runs.")  # fmt: skip
    console.rule("Materializing daily_engagement")
    if not steps.materialize_engagement([cfg.start_time.date().isoformat()]):
        raise click.ClickException("daily_engagement failed to materialize; its run's logs are "
                                   "in the Dagster UI (make ui) under Runs.")  # fmt: skip
    registry = load_registry()
    summary = steps.summarize([*registry.tables(), "daily_engagement"])
    _print_demo_summary(produced, run_id, status, elapsed, summary)


def _reset_local_state() -> None:
    """Empty the local broker's data and the lakehouse, so the demo's numbers are its own."""
    import shutil

    from platform_pipelines.kafka.broker import find_running_broker

    settings = get_settings()
    if find_running_broker(settings.broker_dir):
        raise click.ClickException(
            "The local Kafka broker is running (perhaps for the UI), so its data cannot be reset. "
            "Stop it with `platform kafka stop`, or keep the current state with --no-fresh."
        )
    for folder in (settings.broker_dir, settings.lakehouse_dir):
        shutil.rmtree(folder, ignore_errors=True)


def _produce_demo_topics(cfg: Any, bootstrap: str) -> dict[str, int]:
    """The clickstream (with a progress bar), heartbeats of 5 services and a few keyed events."""
    from platform_pipelines.kafka.admin import create_topics
    from platform_pipelines.kafka.heartbeats import HeartbeatConfig, generate_heartbeats
    from platform_pipelines.kafka.producer import produce, produce_events

    settings = get_settings()
    create_topics(bootstrap, {settings.heartbeats_topic: 1, "key_events": 1})
    counts = {
        f"clickstream {k}": n for k, n in _produce_with_progress(cfg, bootstrap).counts.items()
    }
    beats = produce(bootstrap, settings.heartbeats_topic, generate_heartbeats(HeartbeatConfig()))
    counts["service_heartbeats"] = beats.total
    keyed = [{"key": f"k{i % 7}", "event_time": "2026-11-22T08:00:00Z"} for i in range(100)]
    counts["key_events"] = produce_events(bootstrap, "key_events", keyed, key_field="key").total
    return counts


def _print_demo_summary(produced: dict[str, int], run_id: str, status: str, elapsed: float,
                        summary: Any) -> None:  # fmt: skip
    _print_counts("Produced to Kafka", produced)
    table = Table("table", "rows", "path", title=f"Delta tables (all_streams run {run_id[:8]} "
                  f"{status} in {elapsed:.0f} s)")  # fmt: skip
    for name, rows, path in summary.tables:
        shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
        table.add_row(name, f"{rows:,}", str(shown))
    console.print(table)
    if summary.quarantine_reasons:
        _print_counts("Quarantined records by reason (top 5)", dict(summary.quarantine_reasons))
    alerts = Table("user", "failures", "first", "last", title=f"Security alerts "
                   f"({summary.rows('security_alerts')}, first 5)")  # fmt: skip
    for a in summary.alerts:
        alerts.add_row(a["user_id"], str(a["failure_count"]), str(a["first_failure_time"]),
                       str(a["last_failure_time"]))  # fmt: skip
    console.print(alerts)
    changes = Table("service", "status", "changed at", title="Service status changes")
    for s in summary.status_changes:
        changes.add_row(s["service"], s["status"], str(s["changed_at"]))
    console.print(changes)
    for day in summary.engagement:
        console.print(f"daily_engagement {day['day']}: {day['sessions']} sessions, {day['users']} "
                      f"users, avg {day['avg_duration_seconds']:.0f} s, conversion "
                      f"{day['conversion_rate']:.1%}, revenue {day['revenue']:,.2f}")  # fmt: skip
    console.print(f"Sessions closed: [bold]{summary.rows('user_sessions'):,}[/] (still-open "
                  "sessions close when later events move the watermark past their timeout)")  # fmt: skip
    console.print(f"Tables and checkpoints: {get_settings().lakehouse_dir}")
    console.print(f"Open the Dagster UI on the same state: [bold]make ui[/], then "
                  f"http://127.0.0.1:3000 (run {run_id})")  # fmt: skip


def _age(seconds: float | int | None) -> str:
    if seconds is None:
        return "-"
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _bytes(n: float | int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


_HEALTH_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red"}


@main.command()
@click.option("--all-checks", is_flag=True, help="List every judgement, not only the unhealthy.")
@click.option("--strict", is_flag=True, help="Exit with status 1 when any stream fails a check.")
@friendly_errors
def status(all_checks: bool, strict: bool) -> None:
    """One table of every declared stream: running or not, last batch age, rows/s, Kafka lag,
    state rows, checkpoint size and health. Reads progress records, checkpoints and the broker;
    starts no JVM."""
    from platform_pipelines.core.progress_store import ProgressStore
    from platform_pipelines.health.evaluate import (
        evaluate_all,
        run_state_from_records,
        stream_targets,
    )
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.streams.catalog import load_registry

    settings = get_settings()
    targets = stream_targets(load_registry(), Lakehouse(settings.lakehouse_dir))
    with console.status("Reading progress, checkpoints and the broker's offsets..."):
        results = evaluate_all(
            targets,
            ProgressStore(settings.progress_dir),
            lambda target, records: run_state_from_records(records),
            settings.bootstrap_servers(),
        )
    table = Table("stream", "run", "last batch", "rows/s", "lag", "state rows", "checkpoint",
                  "health", title="Streams")  # fmt: skip
    for h in results:
        obs = h.observation
        lag = obs.get("lag_records")
        health = h.status.value
        table.add_row(
            h.target.name,
            h.run.status.replace("_", " "),
            _age(obs.get("batch_age_seconds")),
            f"{obs['processed_rows_per_sec']:,.1f}" if "processed_rows_per_sec" in obs else "-",
            "-" if lag is None else f"{int(lag):,}",
            f"{int(obs['state_rows']):,}" if "state_rows" in obs else "-",
            _bytes(h.checkpoint.total_bytes) if h.checkpoint.exists else "-",
            f"[{_HEALTH_STYLE[health]}]{health}[/]",
        )
    console.print(table)
    for h in results:
        for verdict in h.verdicts:
            if all_checks or not verdict.passed:
                style = _HEALTH_STYLE[verdict.status.value]
                console.print(f"[{style}]{h.target.name}[/] {verdict.line()}", soft_wrap=True)
    failing = sum(1 for h in results if h.status.value == "fail")
    console.print(f"{len(results)} streams, {failing} failing a check "
                  f"(progress: {settings.progress_dir})")  # fmt: skip
    if strict and failing:
        raise SystemExit(1)


def dagster_dev_command(host: str, port: int) -> list[str]:
    """`dagster dev` (webserver + daemon + code server) on this project's code location."""
    return [sys.executable, "-m", "dagster", "dev", "-m", "platform_pipelines.definitions",
            "--host", host, "--port", str(port)]  # fmt: skip


@main.command()
@click.option("--port", default=3000, show_default=True, help="Port of the Dagster webserver.")
@click.option("--host", default="127.0.0.1", show_default=True)
@friendly_errors
def ui(port: int, host: str) -> None:
    """Start the local Kafka broker and the Dagster UI (webserver + daemon) on dagster_home."""
    from platform_pipelines.demo import use_project_instance

    home = use_project_instance()
    bootstrap, started = ensure_broker()
    env = {**os.environ, "PLATFORM_KAFKA_BOOTSTRAP_SERVERS": bootstrap, "DAGSTER_HOME": str(home)}
    console.print(f"Kafka at {bootstrap}; Dagster UI at http://{host}:{port} (Ctrl-C stops both)")
    cmd = dagster_dev_command(host, port)
    try:
        subprocess.run(cmd, env=env, cwd=REPO_ROOT, check=False)
    except KeyboardInterrupt:
        pass
    finally:
        if started:
            _broker().stop()
            console.print("Kafka broker stopped.")


if __name__ == "__main__":
    main()
