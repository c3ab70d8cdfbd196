"""`platform setup` and `platform demo`: from a fresh machine to every stream's tables."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

import click
from rich.table import Table

from platform_pipelines.cli.kafka import (
    clickstream_config,
    ensure_broker,
    event_times,
    print_counts,
    produce_with_progress,
    producer_options,
)
from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.storage import on_object_store, remove_tree
from platform_pipelines.core.times import iso
from platform_pipelines.core.units import count, duration
from platform_pipelines.settings import REPO_ROOT, get_settings


@click.command(short_help="Check Java, resolve the JVM jars, compile sessions and alerts.")
@friendly_errors
def setup() -> None:
    """Check Java 17+, resolve the JVM artifacts from Maven Central and compile the platform's
    Java code (once; offline afterwards)."""
    from platform_pipelines.jvm import COMPILED, ensure_compiled, ensure_jars, require_java

    table = Table("component", "status")
    table.add_row("Java", f"{require_java()} (>= 17 needed)")
    for name in ("spark", "kafka-broker"):
        with console.status(f"Resolving {name} jars from Maven Central (first time only)..."):
            jars = ensure_jars(name)
        table.add_row(f"{name} jars", f"{len(jars)} in {get_settings().jars_dir / name}")
    for name in COMPILED:
        with console.status(f"Compiling jvm/{name} (first time only)..."):
            table.add_row(f"{name} (compiled)", str(ensure_compiled(name)))
    console.print(table)


@click.command(short_help="The main job: broker, synthetic topics, every stream, a summary.")
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
    """The main job: the local broker, synthetic topics, every stream through Dagster (the
    all_streams job, catch-up), daily engagement, and a summary of what landed where."""
    from platform_pipelines.cli import demo_steps as steps
    from platform_pipelines.jvm import ensure_jars, require_java
    from platform_pipelines.kafka.broker import LocalKafkaBroker
    from platform_pipelines.kafka.event_clock import day_span
    from platform_pipelines.streams.catalog import load_registry

    end = datetime.now(UTC)  # the newest event of every topic, unless --fixed-day
    cfg = clickstream_config(end=end, **kw)
    os.environ.setdefault("PLATFORM_SPARK_LOG_LEVEL", "ERROR")  # Dagster's log shows the progress
    require_java()
    with console.status("Resolving JVM artifacts (cached after the first run)..."):
        ensure_jars("spark")
        ensure_jars("kafka-broker")
    settings = get_settings()
    if fresh:
        _reset_local_state()
    bootstrap, started = ensure_broker(settings)
    os.environ["PLATFORM_KAFKA_BOOTSTRAP_SERVERS"] = bootstrap
    try:
        produced = _produce_demo_topics(cfg, bootstrap, None if kw["fixed_day"] else end)
        console.rule("Running the all_streams job through Dagster (catch-up)")
        began = time.monotonic()
        run_id, status = steps.run_all_streams_catch_up()
        elapsed = time.monotonic() - began
    finally:
        if started and not keep_broker:
            LocalKafkaBroker(settings.broker_dir).stop()
    if status != "SUCCESS":
        raise click.ClickException(
            f"The all_streams run {run_id} ended {status}; its logs are "
            "in the Dagster UI (make ui) under Runs."
        )
    console.rule("Materializing daily_engagement")
    fixed = [cfg.start_time.date().isoformat()]  # the seeds' events end the same day
    if not steps.materialize_engagement(
        fixed if kw["fixed_day"] else day_span(cfg.start_time, end)
    ):
        raise click.ClickException(
            "daily_engagement failed to materialize; its run's logs are "
            "in the Dagster UI (make ui) under Runs."
        )
    summary = steps.summarize([*load_registry(settings).tables(), "daily_engagement"])
    _print_summary(produced, run_id, status, elapsed, summary)


def _reset_local_state() -> None:
    """Empty the local broker's data and the lakehouse, so the demo's numbers are its own."""
    from platform_pipelines.kafka.broker import find_running_broker

    settings = get_settings()
    if on_object_store(settings.lakehouse_dir):
        raise click.ClickException(
            f"The lakehouse is {settings.lakehouse_dir}: the demo does not empty an object store. "
            "Run it with --no-fresh, or unset PLATFORM_LAKEHOUSE_DIR for a local demo."
        )
    if find_running_broker(settings.broker_dir):
        raise click.ClickException(
            "The local Kafka broker is running (perhaps for the UI), so its data cannot be reset. "
            "Stop it with `platform kafka stop`, or keep the current state with --no-fresh."
        )
    for folder in (settings.broker_dir, settings.lakehouse_dir, settings.progress_dir):
        remove_tree(folder)


def _produce_demo_topics(cfg: Any, bootstrap: str, end: datetime | None) -> dict[str, int]:
    """The clickstream (with a progress bar), heartbeats of 5 services and a few keyed events:
    the last ones at ``end``, or on the fixed day when None."""
    from platform_pipelines.kafka.admin import create_topics
    from platform_pipelines.kafka.event_clock import heartbeats_ending_at
    from platform_pipelines.kafka.heartbeats import HeartbeatConfig, generate_heartbeats
    from platform_pipelines.kafka.producer import produce, produce_events

    settings = get_settings()
    create_topics(bootstrap, {settings.heartbeats_topic: 1, "key_events": 1})
    clicks = produce_with_progress(cfg, bootstrap, settings.clickstream_topic)
    console.print(event_times(cfg, end is None))
    counts = {f"clickstream {k}": n for k, n in clicks.counts.items()}
    beat_cfg = HeartbeatConfig() if end is None else heartbeats_ending_at(HeartbeatConfig(), end)
    beats = produce(bootstrap, settings.heartbeats_topic, generate_heartbeats(beat_cfg))
    counts["service_heartbeats"] = beats.total
    keyed_at = "2026-11-22T08:00:00Z" if end is None else iso(end)
    keyed = [{"key": f"k{i % 7}", "event_time": keyed_at} for i in range(100)]
    counts["key_events"] = produce_events(bootstrap, "key_events", keyed, key_field="key").total
    return counts


def _print_summary(
    produced: dict[str, int], run_id: str, status: str, elapsed: float, summary: Any
) -> None:
    print_counts("Produced to Kafka", produced)
    table = Table(
        "table",
        "rows",
        "path",
        title=f"Delta tables (all_streams run {run_id[:8]} {status} in {duration(elapsed)})",
    )
    for name, rows, path in summary.tables:
        shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
        table.add_row(name, count(rows), str(shown))
    console.print(table)
    if summary.quarantine_reasons:
        print_counts("Quarantined records by reason (top 5)", dict(summary.quarantine_reasons))
    alerts = Table(
        "user",
        "failures",
        "first",
        "last",
        title=f"Security alerts ({count(summary.rows('security_alerts'))}, first 5)",
    )
    for a in summary.alerts:
        alerts.add_row(
            a["user_id"],
            str(a["failure_count"]),
            str(a["first_failure_time"]),
            str(a["last_failure_time"]),
        )
    console.print(alerts)
    changes = Table("service", "status", "changed at", title="Service status changes")
    for s in summary.status_changes:
        changes.add_row(s["service"], s["status"], str(s["changed_at"]))
    console.print(changes)
    for day in summary.engagement:
        console.print(
            f"daily_engagement {day['day']}: {count(day['sessions'])} sessions, {count(day['users'])} "
            f"users, avg {duration(day['avg_duration_seconds'])}, conversion "
            f"{day['conversion_rate']:.1%}, revenue {day['revenue']:,.2f}"
        )
    console.print(
        f"Sessions closed: [bold]{count(summary.rows('user_sessions'))}[/] (a session "
        "closes once the watermark passes its last event + 30 min)"
    )
    console.print(
        f"Rows kept aside: {count(summary.rows('quarantine'))} quarantined, "
        f"{count(summary.rows('late_events'))} late (tables quarantine, late_events)"
    )
    console.print(f"Tables and checkpoints: {get_settings().lakehouse_dir}")
    console.print(
        f"Open the Dagster UI on the same state: [bold]make ui[/], then "
        f"http://127.0.0.1:3000 (run {run_id})"
    )
