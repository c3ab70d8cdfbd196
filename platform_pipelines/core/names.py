"""The names that become folders, Spark query names or SQL: checked in one place.

A stream or table name becomes a folder under the lakehouse (``tables/<name>``,
``checkpoints/<name>``), a Dagster asset key and a Spark query name; a column name is spliced
into SQL (a MERGE condition, a Delta expectation). Anything that could leave the folder (``..``,
``/``), need quoting (a backtick, a space) or overflow a path is refused with the rule and a
suggestion, before it reaches the file system or a query.

Example:
    >>> check_name("stream", "user_sessions")
    'user_sessions'
    >>> check_name("stream", "../x")
    Traceback (most recent call last):
    ...
    platform_pipelines.core.names.InvalidName: stream: '../x' is not a valid name; use lowercase letters, digits and underscores, starting with a letter, at most 63 characters (e.g. 'x').
    >>> quote_column("user_id")
    '`user_id`'
    >>> column_problem("key", "a`b")
    "key: 'a`b' is not a valid column name; use letters, digits and underscores, starting with a letter or underscore, at most 128 characters (e.g. 'a_b')."
"""

from __future__ import annotations

import re

NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class InvalidName(ValueError):
    """A name or column that may not become a folder or SQL; the message names the fix."""


def _suggest(value: object, lower: bool) -> str:
    text = str(value).lower() if lower else str(value)
    suggestion = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")[:63] or "x"
    return suggestion if suggestion[0].isalpha() else f"s_{suggestion}"[:63]


def _problem(
    field: str, value: object, pattern: re.Pattern[str], what: str, rule: str, lower: bool
) -> str | None:
    if isinstance(value, str) and pattern.match(value):
        return None
    return (
        f"{field}: {str(value)[:80]!r} is not a valid {what}; use {rule} "
        f"(e.g. {_suggest(value, lower)!r})."
    )


def name_problem(field: str, value: object) -> str | None:
    """Why ``value`` may not name a stream or table (None when it may)."""
    rule = (
        "lowercase letters, digits and underscores, starting with a letter, at most 63 characters"
    )
    return _problem(field, value, NAME, "name", rule, lower=True)


def column_problem(field: str, value: object) -> str | None:
    """Why ``value`` may not name a column that SQL refers to (None when it may)."""
    rule = (
        "letters, digits and underscores, starting with a letter or underscore, at most 128 "
        "characters"
    )
    return _problem(field, value, COLUMN, "column name", rule, lower=False)


def check_name(field: str, value: str) -> str:
    """``value`` if it may name a stream or table, else :class:`InvalidName`."""
    problem = name_problem(field, value)
    if problem:
        raise InvalidName(problem)
    return value


def quote_column(name: str) -> str:
    """``name`` as a quoted SQL identifier, after checking it is a plain column name."""
    problem = column_problem("column", name)
    if problem:
        raise InvalidName(problem)
    return f"`{name}`"
