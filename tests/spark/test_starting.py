"""A query started with its own state partitions records that count in its new checkpoint and
keeps its state in that many partitions, while the session keeps its own count; the checkpoint
judgement expects the stream's count."""

from __future__ import annotations

import pytest

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.checkpoint import (
    CheckpointExpectations,
    checkpoint_verdict,
    inspect_checkpoint,
)
from platform_pipelines.spark.pools import BULK
from platform_pipelines.spark.starting import SHUFFLE_PARTITIONS, start_query

pytestmark = [pytest.mark.spark]


def test_a_query_started_on_one_state_partition_keeps_its_state_in_one(spark, tmp_path):
    session_count = spark.conf.get(SHUFFLE_PARTITIONS)
    assert session_count == "2"  # the test session's count, which the query must not take
    spark.createDataFrame([(i % 3,) for i in range(9)], "k long").write.parquet(
        str(tmp_path / "input")
    )
    seen: list[int] = []
    writer = (
        spark.readStream.schema("k long")
        .parquet(str(tmp_path / "input"))
        .dropDuplicates(["k"])
        .writeStream.foreachBatch(lambda df, _: seen.append(df.count()))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
    )
    query = start_query(spark, writer.start, BULK, state_partitions=1)
    try:
        query.awaitTermination(120)
    finally:
        query.stop()

    assert spark.conf.get(SHUFFLE_PARTITIONS) == session_count
    assert seen == [3]
    facts = inspect_checkpoint(tmp_path / "checkpoint")
    assert facts.checkpoint_conf[SHUFFLE_PARTITIONS] == "1"
    assert [op.partitions for op in facts.operators.values()] == [(0,)]
    session = CheckpointExpectations(state_partitions=int(session_count))
    assert checkpoint_verdict(facts, session.for_stream(1)).status is Status.PASS
    # judged against the session's count, the same checkpoint is a partition mismatch
    mismatch = checkpoint_verdict(facts, session)
    assert mismatch.status is Status.WARN
    assert "created with 1 state partitions but 2 are configured" in mismatch.summary
