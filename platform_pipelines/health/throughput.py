"""Does the query keep up with its input? (check ``falling_behind``)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import (
    batch_seconds,
    input_rate,
    input_rows,
    processed_rate,
)
from platform_pipelines.core.units import count
from platform_pipelines.core.verdict import Verdict, combine, failed, passed, warned
from platform_pipelines.health.history import batches, progress_of
from platform_pipelines.health.policy import DEFAULT_POLICY, HealthPolicy

FALLING_BEHIND = "falling_behind"


@dataclass(frozen=True)
class Lag:
    """How far a stream is behind its input, measured outside Spark.

    Attributes:
        input: what is measured, e.g. ``"Kafka topic clickstream"`` or ``"table events"``.
        records: records written to the input that the stream has not committed yet; None when
            unknown.
        unknown_because: why ``records`` is unknown (say, the broker does not answer).
        remedy: what to do about it, when not the default (bring the input back).
    """

    input: str
    records: int | None
    unknown_because: str = ""
    remedy: str = ""


@dataclass(frozen=True)
class Rates:
    """Input and processing rates over a window of batches (rows per second).

    ``input`` is ``sum(rows) / sum(rows / inputRowsPerSecond)``, ``processed`` is
    ``sum(rows) / sum(rows / processedRowsPerSecond)``, over the batches with input and both
    rates above 0 (the first batch of a query reports an input rate of 0). ``full`` counts those
    batches that ran at least their trigger interval (every batch with input when the trigger
    is 0), so that Spark had no idle time to catch up in.
    """

    input: float
    processed: float
    batches: int
    full: int
    rows: int


def window_rates(window: Sequence[ProgressRecord]) -> Rates:
    rows = 0
    input_seconds = processed_seconds = 0.0
    counted = full = 0
    for record in window:
        progress = progress_of(record)
        n = input_rows(progress)
        in_rate = input_rate(progress)
        out_rate = processed_rate(progress)
        if n <= 0 or in_rate <= 0 or out_rate <= 0:
            continue
        counted += 1
        rows += n
        input_seconds += n / in_rate
        processed_seconds += n / out_rate
        if batch_seconds(progress) >= record.trigger_seconds:
            full += 1
    return Rates(
        input=rows / input_seconds if input_seconds else 0.0,
        processed=rows / processed_seconds if processed_seconds else 0.0,
        batches=counted,
        full=full,
        rows=rows,
    )


def judge_falling_behind(
    records: Sequence[ProgressRecord],
    lag: Lag | None,
    policy: HealthPolicy = DEFAULT_POLICY,
) -> Verdict:
    """Does the query keep up with its input?

    Two judgements, shown as one (the worse wins):

    * rates, over the last ``window_batches`` batches (see ``Rates``): warn when at least
      ``min_rate_batches`` batches had input, every one of them was full, and the input rate is
      above ``behind_ratio`` times the processed rate;
    * lag (see ``Lag``): above ``lag_fail_records`` fail, above ``lag_warn_records`` warn; an
      unknown lag fails with its cause (the stream cannot read). No lag: rates only.
    """
    rates = window_rates(batches(records)[-policy.window_batches :])
    verdicts = [_rate_verdict(rates, policy)]
    if lag is not None:
        verdicts.append(_lag_verdict(lag, policy))
    return combine(FALLING_BEHIND, verdicts)


def _rate_verdict(rates: Rates, policy: HealthPolicy) -> Verdict:
    evidence: dict[str, float | int | str] = {
        "input_rows_per_second": round(rates.input, 2),
        "processed_rows_per_second": round(rates.processed, 2),
        "rate_batches": rates.batches,
        "full_batches": rates.full,
    }
    behind = (
        rates.batches >= policy.min_rate_batches
        and rates.full == rates.batches
        and rates.input > policy.behind_ratio * rates.processed
    )
    if behind:
        return warned(
            FALLING_BEHIND,
            f"input arrives at {rates.input:.1f} rows/s but is "
            f"processed at {rates.processed:.1f} rows/s over {rates.batches} full batches",
            "Processing cannot keep up: add cores or executors, or cut the work per row.",
            evidence,
        )
    if rates.batches:
        return passed(
            FALLING_BEHIND,
            f"processing {rates.processed:.1f} rows/s for {rates.input:.1f} rows/s of input",
            evidence,
        )
    return passed(FALLING_BEHIND, "no batch with input to judge", evidence)


def _lag_verdict(lag: Lag, policy: HealthPolicy) -> Verdict:
    if lag.records is None:
        remedy = lag.remedy or (
            f"The stream cannot read its {lag.input}: bring it back, or point "
            "the platform at one that runs."
        )
        return failed(
            FALLING_BEHIND, f"lag unknown: {lag.unknown_because}", remedy, {"lag": "unknown"}
        )
    evidence: dict[str, float | int | str] = {"lag_records": lag.records}
    behind = f"{count(lag.records)} records behind its {lag.input}"
    remedy = "Make sure the stream runs, and add capacity if the lag keeps growing."
    if lag.records > policy.lag_fail_records:
        return failed(
            FALLING_BEHIND,
            f"{behind} (fail above {count(policy.lag_fail_records)})",
            remedy,
            evidence,
        )
    if lag.records > policy.lag_warn_records:
        return warned(
            FALLING_BEHIND,
            f"{behind} (warn above {count(policy.lag_warn_records)})",
            remedy,
            evidence,
        )
    return passed(FALLING_BEHIND, behind, evidence)
