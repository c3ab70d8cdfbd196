"""`platform savepoint create|list|restore`: save a stream before a risky deploy, and go back."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.units import count, size

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.lakehouse.savepoint_manifest import Manifest
    from platform_pipelines.streams.declare import Stream
    from platform_pipelines.streams.registry import StreamRegistry


@click.group(short_help="Save a stream's checkpoint and table versions; restore them.")
def savepoint() -> None:
    """Savepoints: a stream's checkpoint and the Delta versions of its tables, taken together
    (the stream stopped) and restored together, so a rerun with a fix recomputes exactly what a
    bad deploy wrote."""


def _registry() -> StreamRegistry:
    from platform_pipelines.streams.catalog import load_registry

    return load_registry()


def _stream_of(registry: StreamRegistry, name: str) -> Stream:
    if name not in registry:
        raise click.ClickException(
            f"No stream named {name!r}; declared streams: {', '.join(registry.names())}."
        )
    return registry.get(name)


def _lakehouse() -> Lakehouse:
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.settings import get_settings

    return Lakehouse(get_settings().lakehouse_dir)


def _versions(manifest: Manifest) -> str:
    return ", ".join(f"{t.table}@{'-' if t.version is None else t.version}" for t in manifest.own)


@savepoint.command("create", short_help="Save a stopped stream's checkpoint and table versions.")
@click.argument("stream")
@click.option("--name", help="The savepoint's name (default: the UTC time, e.g. 20261122T101500Z).")
@friendly_errors
def create_cmd(stream: str, name: str | None) -> None:
    """Save stream STREAM (stopped) as a savepoint: a copy of its checkpoint up to its last
    committed batch, and the Delta version of every table it writes. No Spark is started."""
    from platform_pipelines.core.times import from_ms
    from platform_pipelines.runtime.savepoint_create import create_savepoint

    target = _stream_of(_registry(), stream)
    with console.status(f"Saving {stream}..."):
        saved = create_savepoint(_lakehouse(), target, name)
    table = Table("what", "value", title=f"Savepoint {saved.name} of {stream}")
    table.add_row("taken at", from_ms(saved.created_ms).strftime("%Y-%m-%d %H:%M:%S UTC"))
    table.add_row("after batch", str(saved.batch))
    table.add_row("table versions", _versions(saved))
    table.add_row("checkpoint copy", size(saved.checkpoint_bytes))
    console.print(table)
    console.print(f"Restore it with `platform savepoint restore {stream} --name {saved.name}`.")


@savepoint.command("list", short_help="List the savepoints of one stream, or of all.")
@click.argument("stream", required=False)
@friendly_errors
def list_cmd(stream: str | None) -> None:
    """List the savepoints of STREAM (or of every stream), oldest first."""
    from platform_pipelines.core.times import from_ms
    from platform_pipelines.runtime.savepoints import list_savepoints

    if stream is not None:
        _stream_of(_registry(), stream)
    found = list_savepoints(_lakehouse(), stream)
    if not found:
        console.print(f"No savepoints{f' of {stream}' if stream else ''} yet.")
        return
    table = Table(
        "stream", "name", "time (UTC)", "batch", "table versions", "size", title="Savepoints"
    )
    for s in found:
        m = s.manifest
        table.add_row(
            m.stream,
            m.name,
            from_ms(m.created_ms).strftime("%Y-%m-%d %H:%M:%S"),
            str(m.batch),
            _versions(m),
            size(s.bytes),
        )
    console.print(table)


@savepoint.command("restore", short_help="Put a stopped stream back to a savepoint.")
@click.argument("stream")
@click.option("--name", help="The savepoint (default: the newest; see `platform savepoint list`).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@friendly_errors
def restore_cmd(stream: str, name: str | None, yes: bool) -> None:
    """Put stream STREAM (stopped) back to a savepoint: its checkpoint is replaced by the saved
    one (the current one is archived under checkpoints/_archive/), its own tables are rolled back
    with Delta RESTORE, and its rows written since are deleted from the shared tables
    (late_events, stream_ledger, quarantine). Start the stream afterwards (with the fix) to
    recompute what came after."""
    from platform_pipelines.runtime.savepoint_restore import restore_savepoint
    from platform_pipelines.runtime.savepoints import find_savepoint

    registry = _registry()
    target, lake = _stream_of(registry, stream), _lakehouse()
    chosen = find_savepoint(lake, stream, name).manifest
    if not yes:
        click.confirm(
            f"Roll {stream} back to savepoint {chosen.name} (after batch "
            f"{chosen.batch}; {_versions(chosen)})?",
            abort=True,
        )
    sessions: list[SparkSession] = []
    try:
        with console.status(f"Restoring {stream}..."):
            done = restore_savepoint(
                lake, target, list(registry), lambda: _spark(sessions), chosen.name
            )
    finally:
        for spark in sessions:
            spark.stop()
    table = Table("table", "what", "detail", title=f"{stream} restored to {chosen.name}")
    for t in done.tables:
        detail = (
            f"version {t.version} ({count(t.rows)} files taken back)"
            if t.version is not None
            else f"{count(t.rows)} rows of {stream} written after the savepoint"
        )
        table.add_row(t.table, t.action, detail)
    if not done.tables:
        table.add_row("-", "unchanged", "nothing was written after the savepoint")
    console.print(table)
    console.print(
        f"Old checkpoint: {done.archived}. Start {stream} (its job stream_{stream}, or "
        f"all_streams) to recompute from batch {chosen.batch + 1}."
    )


def _spark(sessions: list[SparkSession]) -> SparkSession:
    from platform_pipelines.settings import get_settings
    from platform_pipelines.spark.session import SparkOptions, build_spark_session

    console.print("Starting Spark...")
    spark = build_spark_session(SparkOptions.from_settings(get_settings(), ui_enabled=False))
    sessions.append(spark)
    return spark
