"""`platform run JOB`: a Dagster job from a terminal, with the platform's own lines and a clean stop."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from platform_pipelines.cli.main import console, friendly_errors


@click.command(short_help="Run a Dagster job here: its own lines only, a clean stop on Ctrl-C.")
@click.argument("job")
@click.option(
    "-c",
    "--config",
    "configs",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A run config YAML file, as for `dagster job execute -c` (several are merged).",
)
@friendly_errors
def run(job: str, configs: tuple[Path, ...]) -> None:
    """Run JOB (all_streams, stream_events, ...) on the project's Dagster instance, as
    `dagster job execute` does, and print the lines its ops log; Dagster's and Spark's own
    output goes to the log file (--verbose shows it too).

    Ctrl-C, SIGTERM or SIGHUP stops it: every stream commits the batch it runs, its query
    stops, and the run ends CANCELED with one line saying where each stream stopped. A second
    Ctrl-C (a second or more after the first) stops the queries at once: their running batch
    runs again on the next start.

    Exit code: 0 when the run succeeded, 1 when it failed or did not start, 128 + the signal
    that stopped it (130 for Ctrl-C or the UI's Terminate, 143 for SIGTERM, 129 for SIGHUP).
    """
    from platform_pipelines.cli.demo_steps import use_project_instance
    from platform_pipelines.cli.terminal_run import run_job

    use_project_instance()
    end = run_job(job, list(configs), print_line)
    if end.status == "NOT_STARTED" and end.signal is not None:
        console.print(f"Stopped on {signal.Signals(end.signal).name} before the {job} run started.")
    elif end.status == "NOT_STARTED":
        raise click.ClickException(
            f"The {job} run did not start. Dagster said:\n" + "\n".join(end.output[-10:])
        )
    if end.status == "FAILURE":
        console.print(
            f"[bold red]The {job} run {end.run_id[:8]} failed[/]: its logs are in the Dagster "
            "UI (make ui), under Runs.",
            soft_wrap=True,
        )
    sys.exit(end.exit_code)


def print_line(line: str) -> None:
    """A line of the run, as written (never read as rich markup)."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)
