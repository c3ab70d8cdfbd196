"""Parsing the benchmark scripts' list options, with a message that says what to give.

Example:
    >>> counts("10_000,100000", "key counts", "10000,100000")
    (10000, 100000)
"""

from __future__ import annotations

import click


def counts(text: str, what: str, example: str) -> tuple[int, ...]:
    """Comma-separated whole numbers of at least 1 (``_`` allowed as a digit separator).

    Raises:
        click.BadParameter: something else was given, naming ``what`` and an ``example``.
    """
    try:
        values = tuple(int(v.replace("_", "")) for v in text.split(",") if v.strip())
    except ValueError as error:
        raise click.BadParameter(f"{text!r}: give {what} like {example}") from error
    if not values or min(values) < 1:
        raise click.BadParameter(f"{text!r}: give at least one positive number of {what}")
    return values
