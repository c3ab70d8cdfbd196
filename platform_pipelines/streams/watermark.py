"""The platform's watermark: event time, capped at the batch's processing time.

Spark's watermark is the largest event time seen minus the delay, kept in the checkpoint and never
lowered: one record stamped in 2100 would make every later record late, for good. The platform
therefore puts the watermark on ``_wm_time``, the event time capped at ``current_timestamp()``
(fixed per micro-batch, so a replay computes the same value). No event can move the watermark
ahead of the clock; bronze also quarantines event times more than ``max_future`` ahead.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from platform_pipelines.streams.expressions import batch_clock

WATERMARK_COLUMN: Final = "_wm_time"


def with_watermark(source: DataFrame, event_time: str, delay: timedelta) -> DataFrame:
    """``source`` with the watermark column, and Spark's watermark on it with ``delay``."""
    capped = F.least(F.col(event_time), batch_clock())
    return source.withColumn(WATERMARK_COLUMN, capped).withWatermark(
        WATERMARK_COLUMN, f"{int(delay.total_seconds())} seconds"
    )
