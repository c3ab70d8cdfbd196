"""The root of the `platform` command: its group, the console, and readable errors.

Every command has --help. Errors print what happened and what to do; --debug adds the traceback.
Spark's and Dagster's own output goes to the log file; --verbose shows it too.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from platform_pipelines.settings import get_settings

console = Console()
F = TypeVar("F", bound=Callable[..., Any])
CONTEXT = {"max_content_width": 120, "help_option_names": ["-h", "--help"]}


def friendly_errors(func: F) -> F:
    """Print known errors as one readable message (traceback only with --debug)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (click.ClickException, click.Abort, KeyboardInterrupt, SystemExit):
            raise
        except Exception as error:
            if click.get_current_context().find_root().params.get("debug"):
                raise
            console.print(f"[bold red]Error:[/] {error}", soft_wrap=True)
            log = shown_path(get_settings().log_file)
            console.print(
                f"[dim](run with --debug to see the traceback; Spark's and Dagster's own output "
                f"is in {log})[/]",
                soft_wrap=True,
            )
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is inside it."""
    return str(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)


@click.group(context_settings=CONTEXT)
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
@click.option(
    "--verbose",
    is_flag=True,
    help="Show Spark's and Dagster's own output too (else only in .local/logs/platform.log).",
)
def main(debug: bool, verbose: bool) -> None:
    """Streaming data platform: stateful Spark streams on Kafka and Delta, run by Dagster."""
    if verbose:
        os.environ["PLATFORM_VERBOSE"] = "true"  # read by this process and those it starts
