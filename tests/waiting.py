"""The one way tests wait: on something observable, with a deadline and a message."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T],
    timeout_s: float,
    what: str,
    every: float = 0.5,
    show: Callable[[], object] | None = None,
) -> T:
    """Call ``predicate`` until it returns something truthy; return that, or fail after
    ``timeout_s`` naming ``what`` was awaited (and what ``show()`` returns then, if given)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            seen = f"; last seen: {show()}" if show is not None else ""
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}{seen}")
        time.sleep(every)
