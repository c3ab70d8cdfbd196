"""`platform table ...`: the streams' Delta tables: their files, and compaction and VACUUM."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.units import count, size
from platform_pipelines.settings import get_settings

if TYPE_CHECKING:
    from platform_pipelines.runtime.maintainer import MaintenanceResult

STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red"}


def _row(done: MaintenanceResult) -> list[str]:
    """One table's line: files before -> after (and why not compacted), average file size
    after, the retention VACUUM kept and why, what it deleted, how long it all took."""
    if done.before is None or done.after is None:
        return [done.table, "no table yet", "-", "-", "-", "-"]
    note = f" ({done.compaction_note})" if done.compaction_note else ""
    vacuumed = (
        f"{count(done.vacuum.files_deleted)} files, {size(done.vacuum.bytes_deleted)}"
        if done.vacuum
        else f"not run: {done.vacuum_note}"
    )
    return [
        done.table,
        f"{count(done.before.files)} -> {count(done.after.files)}{note}",
        size(done.after.avg_bytes),
        f"{done.retention.hours:,.0f} h: {done.retention.reason}",
        vacuumed,
        f"{done.seconds:,.1f} s",
    ]


@click.group(short_help="The streams' Delta tables: files per table, compaction and VACUUM.")
def table() -> None:
    """The Delta tables the declared streams write."""


@table.command("files", short_help="Files, bytes and average file size of every table (no JVM).")
@friendly_errors
def files_cmd() -> None:
    """Every table's live files, bytes and average file size, read from its Delta log (no
    Spark), with the files_healthy check's verdict and, when it is not passing, what to do."""
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.lakehouse.table_files import table_files
    from platform_pipelines.runtime.maintainer import files_verdict, table_layers
    from platform_pipelines.streams.catalog import load_registry

    settings = get_settings()
    lake, layers = Lakehouse(settings.lakehouse_dir), table_layers(load_registry(settings))
    shown = Table(
        "table",
        "layer",
        "version",
        "files",
        "bytes",
        "avg file",
        "check",
        title=f"Tables in {lake.root / 'tables'}",
    )
    verdicts = []
    with console.status("Reading the Delta logs..."):
        for name, layer in layers.items():
            found, verdict = table_files(lake.table(name)), files_verdict(lake, name, layer)
            verdicts.append(verdict)
            numbers = (
                [str(found.version), count(found.files), size(found.bytes), size(found.avg_bytes)]
                if found
                else ["-", "-", "-", "-"]
            )
            status = verdict.status.value
            shown.add_row(name, layer, *numbers, f"[{STYLE[status]}]{status}[/]")
    console.print(shown)
    for verdict in verdicts:
        if not verdict.passed:
            console.print(f"[{STYLE[verdict.status.value]}]{verdict.line()}[/]", soft_wrap=True)


@table.command("maintain", short_help="Compact tables, then VACUUM them (all tables by default).")
@click.argument("tables", nargs=-1)
@click.option(
    "--retention-hours",
    type=click.FloatRange(min=1),
    default=168.0,
    show_default=True,
    help="VACUUM deletes files replaced more than this many hours "
    "ago, never one a stream may still read.",
)
@click.option("--no-compact", is_flag=True, help="Only VACUUM; do not compact (OPTIMIZE).")
@click.option("--dry-run", is_flag=True, help="Change nothing; show what VACUUM would delete.")
@friendly_errors
def maintain_cmd(
    tables: tuple[str, ...], retention_hours: float, no_compact: bool, dry_run: bool
) -> None:
    """Compact the small files of TABLES (default: every table the streams write) into large
    ones, then VACUUM the files they replaced. VACUUM keeps everything replaced less than
    --retention-hours ago, and longer whatever a stream reading the table may still read
    (its checkpoint's oldest offset), so a running or stopped stream and a replay keep working.
    Streams may keep running meanwhile; the same as the table_maintenance_<layer> jobs."""
    from datetime import timedelta

    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.runtime.maintainer import (
        MaintenanceOptions,
        maintain_table,
        table_layers,
    )
    from platform_pipelines.spark.session import SparkOptions, build_spark_session
    from platform_pipelines.streams.catalog import load_registry

    settings = get_settings()
    streams = list(load_registry(settings))
    known = list(table_layers(streams))
    unknown = [t for t in tables if t not in known]
    if unknown:
        raise click.BadParameter(
            f"{', '.join(unknown)}: not a table of the declared streams; "
            f"use some of: {', '.join(known)}.",
            param_hint="TABLES",
        )
    options = MaintenanceOptions(
        retention=timedelta(hours=retention_hours), compact=not no_compact, dry_run=dry_run
    )
    lake = Lakehouse(settings.lakehouse_dir)
    with console.status("Starting Spark..."):
        spark = build_spark_session(SparkOptions.from_settings(settings, ui_enabled=False))
    shown = Table(
        "table",
        "files",
        "avg file after",
        "VACUUM retention",
        "deleted" if not dry_run else "would delete",
        "time",
        title="Table maintenance",
    )
    problems = []
    try:
        for name in tables or known:
            with console.status(f"Maintaining {name}..."):
                try:
                    done = maintain_table(
                        spark, lake, streams, name, options, "platform table maintain"
                    )
                except Exception as error:  # say so, and maintain the others
                    problems.append(f"{name}: {error}")
                    continue
            shown.add_row(*_row(done))
    finally:
        spark.stop()
    console.print(shown)
    for problem in problems:
        console.print(f"[bold red]Not maintained:[/] {problem}", soft_wrap=True)
    if problems:
        raise SystemExit(1)
