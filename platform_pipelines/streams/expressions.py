"""Small Spark column expressions shared by the stream writers."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def human_duration(seconds: Column) -> Column:
    """A duration column as ``"76 d 5 h"``, ``"2 h 5 min"``, ``"12 min 3 s"`` or ``"40 s"``: the
    SQL twin of ``core.units.duration`` (two units, whole numbers)."""
    s = F.abs(seconds).cast("long")
    sign = F.when(seconds < 0, F.lit("-")).otherwise(F.lit(""))
    text = (
        F.when(
            s >= 86400, F.format_string("%d d %d h", F.floor(s / 86400), F.floor(s % 86400 / 3600))
        )
        .when(s >= 3600, F.format_string("%d h %d min", F.floor(s / 3600), F.floor(s % 3600 / 60)))
        .when(s >= 60, F.format_string("%d min %d s", F.floor(s / 60), s % 60))
        .otherwise(F.format_string("%d s", s))
    )
    return F.concat(sign, text)
