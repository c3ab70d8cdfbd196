"""The `platform` console script: a Ctrl-C at any moment ends with one line and exit code 130.

It lives outside ``cli`` and imports nothing at module level, so the script's own import is
instant and every later import happens where an interrupt is caught.

The command's modules take about a second to import (click, rich, pydantic, Dagster's); a Ctrl-C
in that second printed Python's traceback, and one while click parsed the command line, or in a
command that does not handle it, click's "Aborted!" with exit code 1. Both now end with one line
on stderr and exit code 130 (128 + SIGINT), which shells and scripts read as "interrupted".
Commands that stop gracefully on Ctrl-C (``platform run``, the demo) still handle it themselves.
"""

from __future__ import annotations

import sys

INTERRUPTED = 130


def run() -> None:
    """Run the `platform` command line and exit with its code."""
    try:
        code = _command_line()
    except (KeyboardInterrupt, EOFError):
        print("\nInterrupted.", file=sys.stderr)
        code = INTERRUPTED
    sys.exit(code)


def _command_line() -> int:
    """``cli.main`` in click's non-standalone mode, so an interrupt reaches ``run`` instead of
    click's "Aborted!"; usage errors are shown as click shows them."""
    import click

    from platform_pipelines.cli import main

    try:
        code = main.main(standalone_mode=False)
    except click.Abort:
        raise KeyboardInterrupt from None
    except click.ClickException as error:
        error.show()
        return error.exit_code
    return code if isinstance(code, int) else 0
