"""The root of the `platform` command: its group, the console, and readable errors.

Every command has --help. Errors print what happened and what to do; --debug adds the traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click
from rich.console import Console

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
            console.print("[dim](run with --debug to see the traceback)[/]")
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings=CONTEXT)
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
def main(debug: bool) -> None:
    """Streaming data platform: stateful Spark streams on Kafka and Delta, run by Dagster."""
