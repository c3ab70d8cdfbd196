"""Starting a streaming query in its scheduler pool, on its own count of state partitions.

Both are settings of the thread or session that starts the query, which Spark copies when it
starts it: the pool is a local property of the starting thread (``spark.pools``), and the state
partitions are ``spark.sql.shuffle.partitions`` of the session Spark clones for the query. A new
checkpoint records that count and Spark keeps it on every restart, whatever the session says
later. The session's own count is set back once the query has started; a lock keeps two
starts from seeing each other's count.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final, TypeVar

from pyspark.sql import SparkSession

from platform_pipelines.spark.pools import Pool, start_in_pool

SHUFFLE_PARTITIONS: Final = "spark.sql.shuffle.partitions"
_STARTING = threading.Lock()

T = TypeVar("T")


def start_query(
    spark: SparkSession, start: Callable[[], T], pool: Pool, state_partitions: int | None = None
) -> T:
    """Call ``start`` (a ``DataStreamWriter.start``) in ``pool``, with ``state_partitions``
    (None: the session's) as the count a new checkpoint records."""
    with _STARTING:
        if state_partitions is None:
            return start_in_pool(spark.sparkContext, pool, start)
        session = spark.conf.get(SHUFFLE_PARTITIONS)
        spark.conf.set(SHUFFLE_PARTITIONS, str(state_partitions))
        try:
            return start_in_pool(spark.sparkContext, pool, start)
        finally:
            if session is None:  # not set on this session: Spark's default again
                spark.conf.unset(SHUFFLE_PARTITIONS)
            else:
                spark.conf.set(SHUFFLE_PARTITIONS, session)
