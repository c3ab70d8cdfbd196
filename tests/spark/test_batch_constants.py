"""Values of one micro-batch read through ``batch_constant``: the same values as before, and the
platform's watermark column as Spark sees it (not null), which a stateful stream's checkpoint
records when it groups by that column."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType, TimestampType

from platform_pipelines.streams.expressions import batch_clock, batch_constant
from platform_pipelines.streams.watermark import WATERMARK_COLUMN, with_watermark

pytestmark = [pytest.mark.spark]
FUTURE = datetime(2100, 1, 1, tzinfo=UTC)
PAST = datetime(2020, 1, 1, tzinfo=UTC)


def test_the_watermark_column_caps_event_time_at_the_clock_and_stays_not_null(spark):
    # A Delta table's columns are all nullable: so is the event time a stream reads.
    schema = StructType([StructField("event_time", TimestampType(), nullable=True)])
    source = spark.createDataFrame([(PAST,), (FUTURE,), (None,)], schema)

    watermarked = with_watermark(source, "event_time", timedelta(minutes=10))

    # least() is nullable only when all its values are: the clock is not null, so neither is
    # the column (batch_constant alone would have made it nullable).
    assert not watermarked.schema[WATERMARK_COLUMN].nullable
    before = datetime.now(UTC)
    rows = watermarked.orderBy(F.col("event_time").asc_nulls_last()).collect()
    past, future, missing = (r[WATERMARK_COLUMN].astimezone(UTC) for r in rows)
    assert past == PAST
    for capped in (future, missing):  # capped at the clock; no event time: the clock
        assert before - timedelta(minutes=1) <= capped <= datetime.now(UTC)


def test_batch_constant_keeps_value_and_type(spark):
    row = (
        spark.range(1)
        .select(
            batch_constant(F.lit(7).cast("long")).alias("n"),
            batch_constant(F.lit(None).cast("timestamp")).alias("none"),
            batch_constant(F.timestamp_millis(F.lit(1_700_000_000_000))).alias("at"),
            batch_clock().alias("clock"),
        )
        .first()
    )
    assert row is not None
    assert (row["n"], row["none"]) == (7, None)
    assert row["at"].astimezone(UTC) == datetime.fromtimestamp(1_700_000_000, UTC)
    assert abs((row["clock"].astimezone(UTC) - datetime.now(UTC)).total_seconds()) < 60
