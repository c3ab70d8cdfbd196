"""`platform postgres start|stop|env`: a local PostgreSQL for Dagster's storage
(dagster_home/dagster-postgres.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from platform_pipelines.cli.main import console, friendly_errors
from platform_pipelines.settings import get_settings

if TYPE_CHECKING:
    from platform_pipelines.runtime.postgres_server import LocalPostgres

FOLDER_HELP = "Where the cluster, its log and password live (default: .local/postgres)."


def _server(folder: Path | None, port: int | None = None) -> LocalPostgres:
    from platform_pipelines.runtime.postgres_server import LocalPostgres

    return LocalPostgres(folder or get_settings().local_dir / "postgres", port=port)


@click.group(short_help="A local PostgreSQL for Dagster's storage: start, stop, env.")
def postgres() -> None:
    """A local PostgreSQL server (127.0.0.1 only, password authentication) holding Dagster's
    runs, event logs, schedules and sensor ticks, in the database `dagster`. Point Dagster at it
    with dagster_home/dagster-postgres.yaml (see its header)."""


@postgres.command("start", short_help="Start the local server (created on first start).")
@click.option("--dir", "folder", type=click.Path(path_type=Path), default=None, help=FOLDER_HELP)
@click.option(
    "--port",
    type=int,
    default=None,
    help="TCP port on 127.0.0.1 (default: the last one used, else a free one).",
)
@friendly_errors
def postgres_start(folder: Path | None, port: int | None) -> None:
    """Start the local PostgreSQL server in the background: the cluster is created on the first
    start (initdb) and kept across restarts; the database `dagster` is created if missing. Prints
    where it listens and how to point Dagster at it."""
    server = _server(folder, port)
    running = server.running()
    if running is not None:
        console.print(f"PostgreSQL already runs for {server.folder} (pid {running['pid']}).")
    else:
        first = not (server.data_dir / "PG_VERSION").exists()
        doing = "Creating and starting" if first else "Starting"
        with console.status(f"{doing} PostgreSQL in {server.folder}..."):
            server.start()
    conn = server.connection()
    table = Table("", "", show_header=False, title="Local PostgreSQL for Dagster")
    for name, value in (
        ("address", f"{conn.host}:{conn.port}"),
        ("database", conn.database),
        ("user", conn.user),
        ("password file", str(server.password_file)),
        ("data", str(server.data_dir)),
        ("log", str(server.log_path)),
    ):
        table.add_row(name, value)
    console.print(table)
    console.print(
        'Point Dagster at it: eval "$(platform postgres env)", then use '
        "dagster_home/dagster-postgres.yaml as $DAGSTER_HOME/dagster.yaml. Stop it with "
        "`platform postgres stop`.",
        markup=False,
    )


@postgres.command("env", short_help="Print the DAGSTER_PG_* exports for the local server.")
@click.option("--dir", "folder", type=click.Path(path_type=Path), default=None, help=FOLDER_HELP)
@friendly_errors
def postgres_env(folder: Path | None) -> None:
    """Print shell `export` lines of DAGSTER_PG_HOST, _PORT, _USERNAME, _PASSWORD and _DB (what
    dagster-postgres.yaml reads); the password is read from its 0600 file when the shell runs
    them, never printed. Use: eval "$(platform postgres env)"."""
    server = _server(folder)
    if server.running() is None:
        raise click.ClickException(
            f"No local PostgreSQL runs for {server.folder}: start it with "
            "`platform postgres start`."
        )
    for line in server.export_lines():
        click.echo(line)  # plain, so that `eval` reads it


@postgres.command("stop", short_help="Stop the local server (its data is kept).")
@click.option("--dir", "folder", type=click.Path(path_type=Path), default=None, help=FOLDER_HELP)
@friendly_errors
def postgres_stop(folder: Path | None) -> None:
    """Stop the local PostgreSQL server (fast shutdown: Dagster processes using it lose their
    connection, so stop them first). Its data stays for the next start; delete the folder for
    an empty one."""
    server = _server(folder)
    with console.status("Stopping PostgreSQL..."):
        stopped = server.stop()
    if stopped:
        console.print(f"PostgreSQL stopped; its data stays in {server.data_dir}.")
    else:
        console.print(f"No local PostgreSQL was running for {server.folder}.")
