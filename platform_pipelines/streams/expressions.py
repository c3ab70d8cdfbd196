"""Small Spark column expressions shared by the stream writers."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from platform_pipelines.core.times import EPOCH


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


def batch_constant(value: Column) -> Column:
    """``value``, a constant of one micro-batch (its clock, watermark or counts), read so that
    it stays out of the Java code Spark generates for the plan.

    Spark writes a long or timestamp literal into the generated code as a number, and
    ``current_timestamp()`` in a streaming query becomes such a literal each batch: every batch's
    code differed from the last one's and Janino compiled it again (0.12 s per batch for the
    Kafka parse of ``events`` and ``security_alerts``, 29 s of compiling in a 110 s continuous
    run: benchmarks/bench_codegen.py). ``transform`` is one of the expressions Spark evaluates
    instead of generating code for, so the value reaches the code as a reference to that
    expression: the code is the same every batch and Spark's code cache compiles it once.
    """
    return F.transform(F.array(value), lambda v: v)[0]


def batch_clock() -> Column:
    """``current_timestamp()``, in a streaming query the micro-batch's own time (the same on a
    replay), through ``batch_constant``, and not null as Spark sees it.

    ``batch_constant`` makes any value nullable in Spark's eyes, and the watermark column capped
    at this clock would turn nullable with it: the state schema of a stream that groups by it
    (say by a window over ``_wm_time``) would then no longer match its checkpoint. The
    ``coalesce`` with a constant is there to say not null; the clock is never null, so its
    second value is never used.
    """
    return F.coalesce(batch_constant(F.current_timestamp()), F.lit(EPOCH))
