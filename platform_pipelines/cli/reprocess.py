"""`platform reprocess`: rebuild a stream's table from its input, then switch to it."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import click
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.times import instant_ms
from platform_pipelines.core.units import count

if TYPE_CHECKING:
    from platform_pipelines.runtime.reprocess import Downstream, Start


def _timestamp_ms(value: str | None) -> int | None:
    try:
        return None if value is None else instant_ms(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--timestamp") from None


@click.command(short_help="Rebuild a stream's table from its input; switch when done.")
@click.argument("name")
@click.option(
    "--from",
    "start",
    type=click.Choice(["earliest", "timestamp", "bronze"]),
    default="earliest",
    show_default=True,
    help="earliest: all input still held; timestamp: input from --timestamp on; "
    "bronze: from the bronze table (Kafka is not read again).",
)
@click.option("--timestamp", help="With --from timestamp: ISO 8601, e.g. 2026-11-23T10:00:00Z.")
@click.option(
    "--downstream",
    type=click.Choice(["notify", "reprocess"]),
    default="notify",
    show_default=True,
    help="Streams reading a rebuilt table: rebuild them too, or leave them refused "
    "at their next start until they are reprocessed.",
)
@click.option(
    "--switch",
    "switch_id",
    metavar="ID",
    help="Only switch in the finished rebuild ID (after stopping its streams).",
)
@friendly_errors
def reprocess(
    name: str, start: str, timestamp: str | None, downstream: str, switch_id: str | None
) -> None:
    """Rebuild stream NAME (and, as chosen, the streams around it) on new checkpoints and new
    table generations while the current tables keep serving, then switch to the rebuild: the
    platform tables' rows in one commit each, each table's pointer in one atomic rename.

    The rebuild runs while the streams run; the switch needs them stopped (cancel their runs)."""
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.runtime.lock import CheckpointBusyError
    from platform_pipelines.runtime.reprocess import load_plan, plan_reprocess
    from platform_pipelines.runtime.reprocess_rebuild import rebuild
    from platform_pipelines.runtime.reprocess_switch import switch
    from platform_pipelines.settings import get_settings
    from platform_pipelines.spark.session import SparkOptions, build_spark_session
    from platform_pipelines.streams.catalog import load_registry

    settings = get_settings()
    registry = load_registry(settings)
    lake = Lakehouse(settings.lakehouse_dir)
    if switch_id:
        plan = load_plan(lake, switch_id)
    else:
        # click.Choice has already narrowed both to the literals plan_reprocess takes.
        plan = plan_reprocess(
            registry,
            name,
            cast("Start", start),
            cast("Downstream", downstream),
            _timestamp_ms(timestamp),
        )
    console.print(
        f"Rebuild [bold]{plan.rebuild_id}[/]: {', '.join(plan.streams)} "
        f"(from {plan.start})" + (f"; told: {', '.join(plan.told)}" if plan.told else "")
    )
    with console.status("Starting Spark..."):
        spark = build_spark_session(SparkOptions.from_settings(settings, ui_enabled=False))
    try:
        rows: dict[str, int] = {}
        if not switch_id:
            status = console.status("Rebuilding...")
            with status:
                done = rebuild(
                    spark,
                    lake,
                    settings.bootstrap_servers(),
                    registry,
                    plan,
                    lambda s: status.update(f"Rebuilding {s}..."),
                )
            rows = done.rows
        try:
            with console.status("Switching..."):
                switched = switch(spark, lake, registry, plan)
        except CheckpointBusyError as error:
            raise click.ClickException(
                f"The rebuild is ready but was not switched in: {error} Then run `platform "
                f"reprocess {name} --switch {plan.rebuild_id}`."
            ) from None
    finally:
        spark.stop()
    table = Table("stream", "rows", "table now in", "checkpoint now in", title="Reprocessed")
    for stream in plan.streams:
        target = registry.get(stream).table
        table.add_row(
            stream,
            count(rows[stream]) if stream in rows else "-",
            f"tables/{switched.tables[target]}",
            f"checkpoints/{lake.checkpoint(stream).name}",
        )
    console.print(table)
    old = ", ".join(str(p) for p in switched.retired.values())
    console.print(
        f"The previous generations stay on disk ({old}): delete them when nothing reads them."
    )
    for reader in plan.told:
        console.print(
            f"[yellow]{reader}[/] reads a rebuilt table: its next start is refused "
            f"until you run `platform reprocess {reader}`."
        )
