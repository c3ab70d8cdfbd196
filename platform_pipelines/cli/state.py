"""`platform state show`: what a stream's state holds, per key, read from its checkpoint."""

from __future__ import annotations

import json

import click
from rich.table import Table
from rich.text import Text

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.core.state_view import (
    StateReport,
    keys_text,
    missing_key_text,
    report_json,
    table_rows,
    title,
)


@click.group(short_help="Look into a stream's state: values, timers, bytes per key.")
def state() -> None:
    """Look into the state of a declared stream, read offline from its checkpoint."""


@state.command("show", short_help="A stream's state per key: the biggest keys, or one.")
@click.argument("stream_name", metavar="STREAM")
@click.option(
    "--key",
    "key",
    default=None,
    help="Show only this key (as shown in the table; "
    'a composite key as its JSON, e.g. \'{"user_id":"u1","activity":"a"}\').',
)
@click.option(
    "--top",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Show the N biggest keys.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (for scripts).")
@friendly_errors
def show(stream_name: str, key: str | None, top: int, as_json: bool) -> None:
    """Show what STREAM's state holds at its latest committed batch: per key the decoded value
    (a keyed stream's state document, a session and its held events, a dedup expiry), the
    registered timers and the key's bytes (key + values as JSON + 8 per timer); with totals over
    every key. Works on a stopped stream and on a running one (it reads the last committed
    batch while the query writes newer ones). Starts a local JVM; writes nothing."""
    from pyspark.sql import SparkSession

    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.lakehouse.state_reader import read_state
    from platform_pipelines.lakehouse.state_source import committed_batch
    from platform_pipelines.settings import get_settings
    from platform_pipelines.spark.session import SparkOptions, build_spark_session
    from platform_pipelines.streams.catalog import load_registry
    from platform_pipelines.streams.declare import StatefulStream

    settings = get_settings()
    try:
        stream = load_registry(settings).get(stream_name)
    except KeyError as error:  # names the declared streams
        raise click.ClickException(str(error.args[0])) from None
    if not isinstance(stream, StatefulStream):
        raise click.ClickException(
            f"{stream.name} is a bronze stream: it keeps no state (its "
            f"table holds what it parsed). Read {stream.table} instead."
        )
    checkpoint = Lakehouse(settings.lakehouse_dir).checkpoint(stream.name)
    committed_batch(checkpoint, stream.name)  # never ran, nothing committed: say so without a JVM
    owned = SparkSession.getActiveSession() is None  # never stop a session this did not start
    with console.status("Starting Spark..."):
        spark = build_spark_session(SparkOptions.from_settings(settings, ui_enabled=False))
    try:
        with console.status(f"Reading the state of {stream.name} from {checkpoint}..."):
            report = read_state(spark, checkpoint, stream.name, top=top, key=key)
    finally:
        if owned:
            spark.stop()
    if as_json:
        click.echo(json.dumps(report_json(report), ensure_ascii=False))
        return
    print_report(report, key)


def print_report(report: StateReport, key: str | None) -> None:
    """The report as a rich table, with a line saying what is shown."""
    if key is not None and not report.shown:
        console.print(missing_key_text(report, key), soft_wrap=True)
        return
    table = Table("key", "bytes", "timers (UTC)", "value", title=title(report))
    for row in table_rows(report):
        table.add_row(*(Text(cell) for cell in row))  # keys and JSON are not rich markup
    console.print(table)
    if key is None:
        keys = keys_text(report.totals.keys)
        console.print(
            f"{len(report.shown)} biggest of {keys} shown (--top N for more, "
            "--key K for one, --json for all fields)."
        )
