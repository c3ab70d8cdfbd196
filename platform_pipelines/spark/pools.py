"""Spark's fair scheduler pools: the streams someone waits on get the cores first.

Every stream of a run shares one driver and its cores. With Spark's default FIFO scheduler, the
tasks of a job wait until every task of the jobs submitted before it has a core: a failed-login
alert (``security_alerts``) or a new row of ``events`` queued behind a minute's batch of bronze or
``user_sessions``, which nobody waits on. The session runs Spark's FAIR scheduler with two pools
(``fairscheduler.xml``):

- ``react``: streams on a trigger shorter than a minute (``events``, ``security_alerts``,
  ``service_status``): their waiting tasks take the next free cores, up to two, and four times
  bulk's share beyond that;
- ``bulk``: streams on a trigger of a minute or more (bronze beside a stream reading its topic,
  ``user_sessions``): what ``react`` leaves free.

Inside a pool the queries share fairly. A task is never preempted: a react task waits at most
for one running task to end, not for a whole job. A query's pool is a local property of the
thread that starts it; Spark's query thread, and ``spark.together``'s threads below it, inherit it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Final, Literal, TypeVar

from pyspark import SparkContext

Pool = Literal["react", "bulk"]
REACT: Final = "react"
BULK: Final = "bulk"
POOLS: Final[tuple[Pool, ...]] = (REACT, BULK)

ALLOCATION_FILE: Final = Path(__file__).with_name("fairscheduler.xml")
POOL_PROPERTY: Final = "spark.scheduler.pool"
# A stream triggered this seldom is batch work: nothing waits on its next row.
BULK_TRIGGER: Final = timedelta(minutes=1)

T = TypeVar("T")


def pool_for(trigger: timedelta) -> Pool:
    """The pool of a stream that triggers every ``trigger`` (0: as soon as there is input).

    >>> [pool_for(timedelta(seconds=s)) for s in (0, 1, 10, 59, 60, 300)]
    ['react', 'react', 'react', 'react', 'bulk', 'bulk']
    """
    return BULK if trigger >= BULK_TRIGGER else REACT


def scheduler_conf() -> dict[str, str]:
    """The Spark settings of the fair scheduler and its pools."""
    return {
        "spark.scheduler.mode": "FAIR",
        "spark.scheduler.allocation.file": ALLOCATION_FILE.as_uri(),
    }


def start_in_pool(sc: SparkContext, pool: Pool, start: Callable[[], T]) -> T:
    """Call ``start`` (a query's ``start()``) with ``pool`` as this thread's scheduler pool; the
    query's thread keeps it, this thread gets its own pool back."""
    previous = sc.getLocalProperty(POOL_PROPERTY)
    sc.setLocalProperty(POOL_PROPERTY, pool)
    try:
        return start()
    finally:
        # None removes the property (PySpark's annotation says str; py4j passes null).
        sc.setLocalProperty(POOL_PROPERTY, previous)  # type: ignore[arg-type]
