"""Run a few Spark actions at once from one driver thread, e.g. the Delta writes of one batch.

A Delta append spends much of its time in the driver (planning, the commit, reading the log
back), not in tasks, so writes to different tables overlap well even on two cores. The threads
are pyspark's ``InheritableThread``: each runs its jobs with the caller's local properties (the
streaming query's job group, so stopping the query cancels them too).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.util import InheritableThread


def run_together(*actions: Callable[[], object]) -> None:
    """Run ``actions`` concurrently and wait for all; the first one's error (in the order
    given) is raised after all have ended. One action runs in the calling thread."""
    if not actions:
        return
    errors: list[BaseException | None] = [None] * len(actions)

    def attempt(i: int) -> None:
        try:
            actions[i]()
        except BaseException as error:  # re-raised below, in the caller's thread
            errors[i] = error

    threads = [InheritableThread(attempt, args=(i,)) for i in range(1, len(actions))]
    for thread in threads:
        thread.start()
    attempt(0)
    for thread in threads:
        thread.join()
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
