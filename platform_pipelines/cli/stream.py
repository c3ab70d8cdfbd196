"""`platform stream ...`: operate one declared stream."""

from __future__ import annotations

import click
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.units import count


@click.group(short_help="Operate one stream: reset its watermark.")
def stream() -> None:
    """Operate one declared stream."""


@stream.command(
    "reset-watermark", short_help="Restart a stream whose watermark is ahead of the clock."
)
@click.argument("name")
@click.option("--force", is_flag=True, help="Reset even when the watermark looks sane.")
@click.option("--no-run", is_flag=True, help="Only prepare the new checkpoint; do not replay now.")
@friendly_errors
def reset_watermark_cmd(name: str, force: bool, no_run: bool) -> None:
    """Restart stream NAME on a new checkpoint when its watermark is ahead of the clock (every
    on-time row is then late): the rows the bad watermark refused are replayed from the upstream
    table, with no loss and no duplicates. The stream must be stopped."""
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.runtime.reset import reset_watermark
    from platform_pipelines.runtime.run_options import RunOptions
    from platform_pipelines.runtime.runner import run_streams
    from platform_pipelines.settings import get_settings
    from platform_pipelines.spark.session import SparkOptions, build_spark_session
    from platform_pipelines.streams.catalog import load_registry
    from platform_pipelines.streams.declare import StatefulStream
    from platform_pipelines.streams.query import StreamContext

    settings = get_settings()
    target = load_registry(settings).get(name)
    if not isinstance(target, StatefulStream):
        raise click.ClickException(f"{name} is a bronze stream: it has no watermark to reset.")
    lake = Lakehouse(settings.lakehouse_dir)
    with console.status("Starting Spark..."):
        spark = build_spark_session(SparkOptions.from_settings(settings, ui_enabled=False))
    try:
        with console.status(f"Resetting {name}..."):
            done = reset_watermark(spark, lake, target, force=force)
        table = Table("what", "value", title=f"Reset of {name}")
        table.add_row("old checkpoint", str(done.archived))
        table.add_row(
            "replayed from", f"batch {done.first_batch} (upstream version {done.starting_version})"
        )
        table.add_row("late rows returned to the stream", count(done.late_rows_returned))
        console.print(table)
        if no_run:
            console.print(f"Start the stream to replay (its job stream_{name}, or all_streams).")
            return
        with console.status(f"Replaying {name} (catch-up)..."):
            run_streams(
                StreamContext(spark, lake, settings.bootstrap_servers()),
                [target],
                RunOptions(mode="catch_up"),
                lambda *_: None,
            )
        console.print(f"{name} caught up on its new checkpoint; start it as usual.")
    finally:
        spark.stop()
