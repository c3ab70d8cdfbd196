"""Does every row the stream reads get in? (check ``late_data``)

A stateful operator drops rows at or before the watermark. The platform keeps them
(``late_events``) and records per batch how many it kept (``batch`` records, from the stream's
writer) beside Spark's own count (``numRowsDroppedByWatermark``): rows Spark dropped that the
platform did not keep are lost, and rows kept aside are missing from the stream's table. Both fail.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import batch_id, event_time, input_rows, op_sum
from platform_pipelines.core.times import EPOCH
from platform_pipelines.core.units import count, duration
from platform_pipelines.core.verdict import Verdict, combine, failed, passed, warned
from platform_pipelines.health.checkpoint.text import plural
from platform_pipelines.health.history import batches, by_time, progress_of, watermark_delay
from platform_pipelines.health.policy import DEFAULT_POLICY, HealthPolicy

LATE_DATA = "late_data"


def judge_late_data(
    records: Sequence[ProgressRecord],
    policy: HealthPolicy = DEFAULT_POLICY,
    stream: str = "",
) -> Verdict:
    """Over the last ``window_batches`` batches:

    * Spark dropped more rows than the platform kept: fail, rows were lost;
    * the watermark more than ``watermark_ahead_fail_seconds`` ahead of the clock: fail, every
      on-time row is now late (less than that warns);
    * late rows by cause. Those of batches whose oldest event time (Spark's ``eventTime.min``)
      is before ``implausible_before`` are reported apart and warn: placeholder dates (1970,
      year 1) that no watermark admits, so the remedy is a floor on the source, not a longer
      watermark. The other kept late rows above ``late_rows_fail_fraction`` of the input fail;
      any warns;
    * the watermark more than ``watermark_delay_warn_seconds`` behind the clock: warn.

    No batch passes (``no batches yet``); a stream without a watermark passes (``no watermark``).
    """
    done = batches(records)
    window = done[-policy.window_batches :]
    if not window:
        return passed(LATE_DATA, "no batches yet")
    dropped = sum(op_sum(progress_of(r), "numRowsDroppedByWatermark") for r in window)
    late_by_batch = _late_rows(records, window)
    late = sum(late_by_batch.values())
    rows_in = sum(input_rows(progress_of(r)) for r in window)
    delays = [d for d in (watermark_delay(r) for r in window) if d is not None]
    if not delays and not dropped and not late:
        return passed(LATE_DATA, "no watermark", {"late_rows": 0})
    evidence: dict[str, float | int | str] = {"late_rows": late, "rows_in": rows_in}
    invalid = _invalid_times(window, late_by_batch, policy)
    verdicts = [_kept(late, dropped, rows_in, len(window), invalid, policy, stream, evidence)]
    if invalid is not None:
        verdicts.append(invalid)
    if delays:
        verdicts.append(_delay(delays[-1], policy, stream))
    return combine(LATE_DATA, verdicts)


def _late_rows(
    records: Sequence[ProgressRecord], window: Sequence[ProgressRecord]
) -> dict[int, int]:
    """Late rows per batch of ``window``: as its writer kept them (``batch`` records), or as
    Spark dropped them when no writer recorded counts."""
    ids = {batch_id(progress_of(r)) for r in window}
    # A batch replayed after a crash records its counts again: the newest record of a batch wins.
    kept = {
        r.batch_id: r.counts
        for r in by_time(records)
        if r.event == "batch" and r.batch_id in ids and r.counts
    }
    if not kept:
        dropped: dict[int, int] = {}
        for progress in map(progress_of, window):
            i = batch_id(progress)
            dropped[i] = dropped.get(i, 0) + op_sum(progress, "numRowsDroppedByWatermark")
        return dropped
    return {i: int((kept.get(i) or {}).get("rows_late", 0)) for i in ids}


def _invalid_times(
    window: Sequence[ProgressRecord], late_by_batch: dict[int, int], policy: HealthPolicy
) -> Verdict | None:
    """Late rows in batches holding event times before ``implausible_before``, reported apart."""
    oldest: dict[int, float] = {}  # by batch: a batch replayed after a crash counts once
    for record in window:
        progress = progress_of(record)
        earliest = event_time(progress, "min")
        late = late_by_batch.get(batch_id(progress))
        if late and earliest is not None and earliest < policy.implausible_before:
            oldest[batch_id(progress)] = earliest
    rows = sum(late_by_batch[i] for i in oldest)
    if not rows:
        return None
    floor = _day(policy.implausible_before)
    return warned(
        LATE_DATA,
        f"{count(rows)} late row{'s' if rows != 1 else ''} came in {plural(len(oldest), 'batch')} "
        f"holding event times before {floor} (the oldest {_day(min(oldest.values()))}): invalid "
        "event times, which no watermark admits",
        "Quarantine them at the edge: keep min_event_time on the stream's KafkaSource (bronze "
        "then sets such rows aside with the reason), and fix the producer that writes them; "
        "do not raise the watermark for them.",
        {"invalid_time_late_rows": rows},
    )


def _day(epoch_seconds: float) -> str:
    """``2000-01-01``: the UTC day of an epoch time (year 1 included)."""
    return (EPOCH + timedelta(seconds=epoch_seconds)).date().isoformat()


def _kept(
    late: int,
    dropped: int,
    rows_in: int,
    n: int,
    invalid: Verdict | None,
    policy: HealthPolicy,
    stream: str,
    evidence: dict[str, float | int | str],
) -> Verdict:
    table = f"the table of {stream}" if stream else "the stream's table"
    if dropped > late:
        return failed(
            LATE_DATA,
            f"{count(dropped - late)} rows dropped by the watermark over {n} "
            "batches were not kept in late_events: they are lost",
            "Replay them from the upstream table (reprocess the stream) and report the "
            "stream: its writer missed rows its operator dropped.",
            {**evidence, "spark_dropped_rows": dropped},
        )
    valid = late - int(invalid.evidence["invalid_time_late_rows"]) if invalid else late
    if not valid:
        among = f"among {count(rows_in)} over {n} batches"
        what = "no other late rows" if invalid else "no late rows"
        return passed(LATE_DATA, f"{what} {among}", evidence)
    share = valid / rows_in if rows_in else 1.0
    summary = (
        f"{count(valid)} of {count(rows_in)} rows ({share:.2%}) over {n} batches arrived after "
        f"the watermark: they are in late_events, not in {table}"
    )
    remedy = (
        "If they are valid, the watermark is too tight for the data: raise the stream's "
        "watermark delay, and reprocess to bring the kept rows in."
    )
    if share > policy.late_rows_fail_fraction:
        return failed(LATE_DATA, summary, remedy, evidence)
    return warned(LATE_DATA, summary, remedy, evidence)


def _delay(delay: float, policy: HealthPolicy, stream: str) -> Verdict:
    evidence: dict[str, float | int | str] = {"watermark_delay_seconds": round(delay, 1)}
    if delay < -policy.watermark_ahead_fail_seconds:
        name = stream or "<stream>"
        return failed(
            LATE_DATA,
            f"the watermark is {duration(-delay)} ahead of the wall clock: "
            "every on-time row is now late",
            f"Run `platform stream reset-watermark {name}`: it restarts the stream on a "
            "new checkpoint from where it stands, with no loss and no duplicates.",
            evidence,
        )
    if delay < 0:
        return warned(
            LATE_DATA,
            f"the watermark is {duration(-delay)} ahead of the wall clock",
            "Event times are ahead of the processing clock: check the producers' clocks.",
            evidence,
        )
    if delay > policy.watermark_delay_warn_seconds:
        return warned(
            LATE_DATA,
            f"event time is {duration(delay)} behind the wall clock",
            "The stream reads old data or a source is stuck: check its lag and the "
            "producers' event timestamps.",
            evidence,
        )
    return passed(LATE_DATA, f"watermark {duration(delay)} behind the wall clock", evidence)
