"""The session runs Spark's fair scheduler with the platform's two pools, and a query started in a
pool runs every batch there: its own jobs and those of ``run_together``'s threads."""

from __future__ import annotations

import pytest

from platform_pipelines.spark.pools import BULK, POOL_PROPERTY, REACT, start_in_pool
from platform_pipelines.spark.together import run_together

pytestmark = [pytest.mark.spark]


def test_the_session_schedules_fairly_between_the_two_pools(spark):
    sc = spark.sparkContext
    assert sc.getConf().get("spark.scheduler.mode") == "FAIR"
    pools = {}
    for name in (REACT, BULK):
        pool = sc._jsc.sc().getPoolForName(name).get()  # an unknown name would be None
        pools[name] = (pool.weight(), pool.minShare(), pool.schedulingMode().toString())
    assert pools == {REACT: (4, 2, "FAIR"), BULK: (1, 0, "FAIR")}


def test_a_query_runs_its_batches_in_the_pool_it_was_started_in(spark, tmp_path):
    sc = spark.sparkContext
    spark.range(5).write.parquet(str(tmp_path / "input"))
    pools: list[str | None] = []
    rows: list[int] = []

    def batch(df, batch_id):
        pools.append(sc.getLocalProperty(POOL_PROPERTY))
        run_together(
            lambda: rows.append(df.count()),
            lambda: pools.append(sc.getLocalProperty(POOL_PROPERTY)),
        )

    writer = (
        spark.readStream.schema("id long")
        .parquet(str(tmp_path / "input"))
        .writeStream.foreachBatch(batch)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
    )
    sc.setLocalProperty(POOL_PROPERTY, "default")
    try:
        query = start_in_pool(sc, BULK, writer.start)
        try:
            query.awaitTermination(120)
        finally:
            query.stop()
        # the starting thread has its own pool back
        assert sc.getLocalProperty(POOL_PROPERTY) == "default"
    finally:
        sc.setLocalProperty(POOL_PROPERTY, None)

    assert rows == [5]
    assert pools == [BULK, BULK]
