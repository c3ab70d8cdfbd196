"""Health judgements over the recorded progress of one streaming query: pure, no JVM.

Each ``judge_*`` function reads the ``ProgressRecord``s a running stream persisted (oldest first;
they are sorted by ``ts`` again here) and returns one ``Verdict`` whose evidence carries the numbers
it was made on. ``progress_observation`` gives the numbers worth plotting over time.

Field names are Spark 4.2's StreamingQueryProgress JSON, as captured from real queries (RocksDB
state store, Kafka source) in ``tests/unit/data/progress/``:

* ``timestamp`` (batch start) and ``eventTime.watermark`` are ISO-8601 UTC strings with
  milliseconds, e.g. ``"2026-11-22T02:48:35.370Z"``. Before the first watermark is computed Spark
  reports ``"1970-01-01T00:00:00.000Z"``; that is read as "no watermark yet". A query without
  a watermark has no ``eventTime.watermark`` at all.
* ``stateOperators[]``: ``numRowsTotal``, ``numRowsRemoved``, ``memoryUsedBytes``,
  ``numRowsDroppedByWatermark`` and ``customMetrics``. With RocksDB, ``customMetrics`` holds
  ``rocksdbSstFileSize`` (bytes of the SST files of the last uploaded snapshot, summed over the
  operator's stores: 0 until changelog checkpointing uploads a first snapshot) and
  ``rocksdbPinnedBlocksMemoryUsage``, among others. RocksDB's ``memoryUsedBytes`` is mostly its
  fixed-size memtables and caches, so bytes per key is taken from the SST size when there is one.
* ``sources[].metrics`` of a Kafka source (``KafkaV2[...]``): ``minOffsetsBehindLatest``,
  ``maxOffsetsBehindLatest`` and ``avgOffsetsBehindLatest``, as strings (``"310"``,
  ``"277.5"``), per partition, from the batch's end offsets to the latest offsets Spark saw. The
  map is empty until Spark has consumed anything. ``latestOffset``/``endOffset`` are
  ``{topic: {partition: offset}}``.
* ``numRowsDroppedByWatermark`` counts rows where the stateful operator sees them: after the
  partial aggregation of a ``groupBy``, so 40 late input rows of one key and window count as 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from platform_pipelines.health.records import ProgressRecord
from platform_pipelines.health.verdict import Verdict, combine, failed, passed, warned

Progress = Mapping[str, Any]

LIVENESS = "liveness"
FALLING_BEHIND = "falling_behind"
STATE_GROWTH = "state_growth"
LATE_DATA = "late_data"

SST_METRIC = "rocksdbSstFileSize"
KAFKA_LAG_METRICS = ("avgOffsetsBehindLatest", "maxOffsetsBehindLatest")


@dataclass(frozen=True)
class HealthPolicy:
    """The thresholds of every judgement; the defaults suit a stream with a 1 s to 1 min trigger.

    Attributes:
        stale_after_triggers: liveness fails when nothing was recorded for this many trigger
            intervals (a trigger interval here is the longer of the trigger and the longest recent
            batch, since Spark reports a batch only when it ends)...
        min_stale_seconds: ...or for this many seconds, whichever is longer.
        window_batches: how many of the newest batches the rate, late-data, leak-trend and
            forecast judgements look at.
        behind_ratio: falling behind when the input rate exceeds the processing rate by this
            factor over the window while every batch with input was full.
        min_rate_batches: batches with input needed in the window before rates are compared.
        lag_warn_records: warn when the stream is this many records behind its Kafka topic...
        lag_fail_records: ...and fail from this many.
        leak_min_batches: a leak needs this many consecutive batches of state growth with nothing
            removed (fewer is never a leak); it is also the fewest batches a forecast is made on.
            Keep it above the number of batches the state's retention (watermark delay or TTL
            divided by the trigger) needs before it starts removing anything.
        state_rows_budget: state rows (summed over the stateful operators) the stream may hold;
            None for no budget.
        state_bytes_budget: bytes of state (``memoryUsedBytes``, and RocksDB's SST size when
            reported, each on its own) the stream may hold; None for no budget.
        forecast_horizon_seconds: warn when the linear trend reaches a budget within this time.
        late_rows_warn_fraction: warn when more than this share of the input rows in the window
            was dropped by the watermark.
        watermark_delay_warn_seconds: warn when the watermark is more than this far behind the
            batch's wall clock. This includes the stream's declared watermark delay: keep it above.
    """

    stale_after_triggers: float = 3.0
    min_stale_seconds: float = 60.0
    window_batches: int = 10
    behind_ratio: float = 1.2
    min_rate_batches: int = 3
    lag_warn_records: int = 10_000
    lag_fail_records: int = 1_000_000
    leak_min_batches: int = 5
    state_rows_budget: int | None = 50_000_000
    state_bytes_budget: int | None = 4 * 1024**3
    forecast_horizon_seconds: float = 24 * 3600
    late_rows_warn_fraction: float = 0.01
    watermark_delay_warn_seconds: float = 3600.0


DEFAULT_POLICY = HealthPolicy()


@dataclass(frozen=True)
class RunState:
    """What the owner of the stream (the Dagster run, or the process) says about it.

    Attributes:
        status: ``running``, ``stopped`` (ended without error, or cancelled), ``failed`` or
            ``never_run``.
        detail: one line for people, e.g. ``"run 1a2b cancelled by a user"`` or
            ``"run 1a2b failed: <reason>"``.
    """

    status: Literal["running", "stopped", "failed", "never_run"]
    detail: str = ""


# --- reading progress ---------------------------------------------------------------------------


def parse_spark_time(value: Any) -> float | None:
    """Seconds since the epoch of Spark's ``"2026-11-22T02:48:35.370Z"``; None when absent."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def watermark_seconds(progress: Progress) -> float | None:
    """The batch's event-time watermark (epoch seconds); None when there is none yet (Spark
    reports the epoch itself before the first watermark) or the query declares none."""
    value = parse_spark_time((progress.get("eventTime") or {}).get("watermark"))
    return value if value else None


def _ops(progress: Progress) -> list[Mapping[str, Any]]:
    return list(progress.get("stateOperators") or [])


def _op_sum(progress: Progress, key: str) -> int:
    return sum(int(op.get(key) or 0) for op in _ops(progress))


def sst_bytes(progress: Progress) -> int | None:
    """RocksDB's ``rocksdbSstFileSize`` summed over the operators; None when none reports it."""
    values = [
        int(op["customMetrics"][SST_METRIC])
        for op in _ops(progress)
        if SST_METRIC in (op.get("customMetrics") or {})
    ]
    return sum(values) if values else None


def _partitions(offsets: Any) -> int:
    if not isinstance(offsets, Mapping):
        return 0
    return sum(len(p) for p in offsets.values() if isinstance(p, Mapping))


@dataclass(frozen=True)
class SourceLag:
    """How far a batch's Kafka sources were behind the latest offsets, in records.

    Attributes:
        records: summed over every partition of every Kafka source:
            ``avgOffsetsBehindLatest`` times the number of partitions (in ``latestOffset``), or
            ``maxOffsetsBehindLatest`` (a lower bound) when the partitions are not known.
        max_partition: the largest ``maxOffsetsBehindLatest`` of one partition.
    """

    records: int
    max_partition: int


def source_lag(progress: Progress) -> SourceLag | None:
    """The Kafka lag Spark reported for this batch; None when no source reports lag metrics."""
    total, worst, found = 0, 0, False
    for source in progress.get("sources") or []:
        metrics = source.get("metrics") or {}
        if not any(k in metrics for k in KAFKA_LAG_METRICS):
            continue
        found = True
        avg = float(metrics.get("avgOffsetsBehindLatest") or 0.0)
        high = int(float(metrics.get("maxOffsetsBehindLatest") or avg))
        partitions = _partitions(source.get("latestOffset"))
        has_avg = "avgOffsetsBehindLatest" in metrics
        total += round(avg * partitions) if has_avg and partitions else high
        worst = max(worst, high)
    return SourceLag(total, worst) if found else None


def _sorted(records: Iterable[ProgressRecord]) -> list[ProgressRecord]:
    return sorted(records, key=lambda r: r.ts)


def _batches(records: Iterable[ProgressRecord]) -> list[ProgressRecord]:
    """The ``progress`` records that carry a progress dict, oldest first."""
    return [r for r in _sorted(records) if r.event == "progress" and r.progress is not None]


def _p(record: ProgressRecord) -> Progress:
    assert record.progress is not None
    return record.progress


def _batch_seconds(progress: Progress) -> float:
    """How long the batch ran: ``durationMs.triggerExecution``, else rows / processed rate."""
    ms = (progress.get("durationMs") or {}).get("triggerExecution")
    if ms is not None:
        return float(ms) / 1000.0
    rows = float(progress.get("numInputRows") or 0)
    rate = float(progress.get("processedRowsPerSecond") or 0.0)
    return rows / rate if rows and rate else 0.0


def _slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x; None when x does not vary."""
    n = len(points)
    if n < 2:
        return None
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if var == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / var


def _secs(value: float) -> str:
    return f"{value:.0f} s"


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --- liveness -----------------------------------------------------------------------------------


def stale_after_seconds(records: Sequence[ProgressRecord], policy: HealthPolicy) -> float:
    """How long a running query may go without recording anything.

    ``max(stale_after_triggers * interval, min_stale_seconds)``, where ``interval`` is the newest
    record's trigger interval or, when longer, the longest batch among the last
    ``window_batches`` (a query whose batches outlast their trigger runs them back to back, and
    Spark records a batch only when it ends).
    """
    ordered = _sorted(records)
    trigger = ordered[-1].trigger_seconds if ordered else 0.0
    longest = max(
        (_batch_seconds(_p(r)) for r in _batches(ordered)[-policy.window_batches :]), default=0.0
    )
    return max(policy.stale_after_triggers * max(trigger, longest), policy.min_stale_seconds)


def judge_liveness(
    records: Sequence[ProgressRecord],
    run: RunState,
    now: float,
    policy: HealthPolicy = DEFAULT_POLICY,
) -> Verdict:
    """Is the query alive when its owner says it should be? (check ``liveness``)

    In order:

    * the run failed: fail, with the run's detail in the summary;
    * the run is stopped or never ran: pass, ``not running: <detail>``;
    * the run is running and
        * nothing was recorded yet: warn (the query never reported starting);
        * the newest record is ``terminated`` with an ``error_class``: fail naming it;
        * the newest record is a clean ``terminated``: pass while it is younger than the stale
          limit (the run is finishing), warn after;
        * the newest ``started``/``progress``/``idle`` record is older than
          ``stale_after_seconds`` (see there): fail ``no progress for N s (trigger every T s)``;
        * else pass with the age of the last batch.

    Evidence: ``age_seconds`` (of the newest record), ``stale_after_seconds``,
    ``trigger_seconds`` and, once there is a batch, ``last_batch_age_seconds``/``last_batch_id``.
    """
    if run.status == "failed":
        return failed(
            LIVENESS,
            f"run failed: {run.detail}" if run.detail else "run failed",
            "Read the run's error, fix its cause and launch the stream again.",
        )
    if run.status in ("stopped", "never_run"):
        return passed(LIVENESS, f"not running: {run.detail or run.status.replace('_', ' ')}")
    ordered = _sorted(records)
    if not ordered:
        return warned(
            LIVENESS,
            "the run is running but the query has recorded nothing yet",
            "Check the run's logs: the query may not have started, or its progress is not being recorded.",
        )
    newest = ordered[-1]
    limit = stale_after_seconds(ordered, policy)
    age = now - newest.ts
    evidence: dict[str, float | int | str] = {
        "age_seconds": round(age, 1),
        "stale_after_seconds": round(limit, 1),
        "trigger_seconds": newest.trigger_seconds,
    }
    batches = _batches(ordered)
    if batches:
        evidence["last_batch_age_seconds"] = round(now - batches[-1].ts, 1)
        evidence["last_batch_id"] = int(_p(batches[-1]).get("batchId", -1))
    if newest.event == "terminated":
        if newest.error_class:
            evidence["error_class"] = newest.error_class
            error = f": {newest.error}" if newest.error else ""
            return failed(
                LIVENESS,
                f"query terminated with {newest.error_class}{error}",
                "Fix the cause of the error and restart the run; the checkpoint resumes the stream.",
                evidence,
            )
        if age <= limit:
            return passed(
                LIVENESS, f"query ended cleanly {_secs(age)} ago; its run is finishing", evidence
            )
        return warned(
            LIVENESS,
            f"query ended {_secs(age)} ago but its run still says running",
            "Check the run: its query is gone; stop the run and launch it again.",
            evidence,
        )
    if age > limit:
        return failed(
            LIVENESS,
            f"no progress for {_secs(age)} (trigger every {newest.trigger_seconds:g} s)",
            "The query is hung or its driver is gone: check the run's logs, then restart the run.",
            evidence,
        )
    if batches:
        return passed(LIVENESS, f"last batch {_secs(now - batches[-1].ts)} ago", evidence)
    return passed(LIVENESS, f"running, no batch yet ({newest.event} {_secs(age)} ago)", evidence)


# --- falling behind -----------------------------------------------------------------------------


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


def window_rates(batches: Sequence[ProgressRecord]) -> Rates:
    rows = 0
    input_seconds = processed_seconds = 0.0
    counted = full = 0
    for record in batches:
        p = _p(record)
        n = int(p.get("numInputRows") or 0)
        in_rate = float(p.get("inputRowsPerSecond") or 0.0)
        out_rate = float(p.get("processedRowsPerSecond") or 0.0)
        if n <= 0 or in_rate <= 0 or out_rate <= 0:
            continue
        counted += 1
        rows += n
        input_seconds += n / in_rate
        processed_seconds += n / out_rate
        if _batch_seconds(p) >= record.trigger_seconds:
            full += 1
    return Rates(
        input=rows / input_seconds if input_seconds else 0.0,
        processed=rows / processed_seconds if processed_seconds else 0.0,
        batches=counted,
        full=full,
        rows=rows,
    )


def _newest_source_lag(batches: Sequence[ProgressRecord]) -> SourceLag | None:
    for record in reversed(batches):
        lag = source_lag(_p(record))
        if lag is not None:
            return lag
    return None


def judge_falling_behind(
    records: Sequence[ProgressRecord],
    broker_lag: int | None,
    policy: HealthPolicy = DEFAULT_POLICY,
) -> Verdict:
    """Does the query keep up with its input? (check ``falling_behind``)

    Two judgements, shown as one (the worse wins):

    * rates, over the last ``window_batches`` batches (see ``Rates``): warn when at least
      ``min_rate_batches`` batches had input, every one of them was full, and the input rate is
      above ``behind_ratio`` times the processed rate;
    * lag, in records: the larger of the Kafka source's lag in the newest batch that reports one
      (see ``SourceLag``) and ``broker_lag`` (records between the checkpoint's offsets and the
      broker's end offsets, computed by the caller): above ``lag_fail_records`` fail, above
      ``lag_warn_records`` warn. A stream with no Kafka source and no ``broker_lag`` is judged on
      its rates only.
    """
    batches = _batches(records)
    window = batches[-policy.window_batches :]
    rates = window_rates(window)
    rate_evidence: dict[str, float | int | str] = {
        "input_rows_per_sec": round(rates.input, 2),
        "processed_rows_per_sec": round(rates.processed, 2),
        "rate_batches": rates.batches,
        "full_batches": rates.full,
    }
    behind = (
        rates.batches >= policy.min_rate_batches
        and rates.full == rates.batches
        and rates.input > policy.behind_ratio * rates.processed
    )
    verdicts: list[Verdict] = []
    if behind:
        verdicts.append(
            warned(
                FALLING_BEHIND,
                f"input arrives at {rates.input:.1f} rows/s but is processed at "
                f"{rates.processed:.1f} rows/s over {rates.batches} full batches",
                "Processing cannot keep up: add cores or executors, or cut the work per row.",
                rate_evidence,
            )
        )
    elif rates.batches:
        verdicts.append(
            passed(
                FALLING_BEHIND,
                f"processing {rates.processed:.1f} rows/s for {rates.input:.1f} rows/s of input",
                rate_evidence,
            )
        )
    else:
        verdicts.append(passed(FALLING_BEHIND, "no batch with input to judge", rate_evidence))

    src = _newest_source_lag(batches)
    if src is not None or broker_lag is not None:
        lag = max(src.records if src else 0, broker_lag or 0)
        lag_evidence: dict[str, float | int | str] = {"lag_records": lag}
        if src is not None:
            lag_evidence["source_lag_records"] = src.records
            lag_evidence["max_partition_lag"] = src.max_partition
        if broker_lag is not None:
            lag_evidence["broker_lag_records"] = broker_lag
        remedy = (
            f"The stream is {lag} records behind its topic: make sure it runs, and add capacity "
            "if the lag keeps growing."
        )
        if lag > policy.lag_fail_records:
            verdicts.append(
                failed(
                    FALLING_BEHIND,
                    f"{lag} records behind the topic (fail above {policy.lag_fail_records})",
                    remedy,
                    lag_evidence,
                )
            )
        elif lag > policy.lag_warn_records:
            verdicts.append(
                warned(
                    FALLING_BEHIND,
                    f"{lag} records behind the topic (warn above {policy.lag_warn_records})",
                    remedy,
                    lag_evidence,
                )
            )
        else:
            verdicts.append(passed(FALLING_BEHIND, f"{lag} records behind the topic", lag_evidence))
    return combine(FALLING_BEHIND, verdicts)


# --- state growth -------------------------------------------------------------------------------


def _stateful(batches: Sequence[ProgressRecord]) -> list[ProgressRecord]:
    return [r for r in batches if _ops(_p(r))]


def growth_run(stateful: Sequence[ProgressRecord]) -> list[ProgressRecord]:
    """The newest run of consecutive batches in which nothing was removed from state and the
    state's rows never decreased (oldest first); empty when the newest batch removed rows."""
    run: list[ProgressRecord] = []
    for record in reversed(stateful):
        p = _p(record)
        if _op_sum(p, "numRowsRemoved") != 0:
            break
        if run and _op_sum(p, "numRowsTotal") > _op_sum(_p(run[-1]), "numRowsTotal"):
            break
        run.append(record)
    return run[::-1]


def _budget_verdict(
    what: str,
    unit: str,
    points: Sequence[tuple[float, float]],
    budget: int,
    policy: HealthPolicy,
    *,
    forecast: bool = True,
) -> Verdict | None:
    """Over budget: fail. With ``forecast``, at least ``leak_min_batches`` points, a newest
    value above the oldest and a least-squares slope that reaches the budget within the
    horizon: warn with the estimated time."""
    current = points[-1][1]
    key = what.replace(" ", "_")
    if current > budget:
        return failed(
            STATE_GROWTH,
            f"{what} is {current:.0f} {unit}, over its budget of {budget} {unit}",
            "Shrink the state (shorter watermark or TTL, fewer keys) or give it a larger budget.",
            {f"{key}_budget": budget},
        )
    if not forecast or len(points) < policy.leak_min_batches or current <= points[0][1]:
        return None
    slope = _slope(points)
    if slope is None or slope <= 0:
        return None
    eta = (budget - current) / slope
    if eta > policy.forecast_horizon_seconds:
        return None
    return warned(
        STATE_GROWTH,
        f"{what} will reach its budget of {budget} {unit} in about {_span(eta)} "
        f"(now {current:.0f}, +{slope * 3600:.0f} {unit}/h)",
        "State will outgrow its budget: shorten the watermark or TTL, cut the key space, or "
        "raise the budget.",
        {
            f"{key}_budget": budget,
            f"{key}_per_hour": round(slope * 3600, 1),
            f"{key}_budget_eta_seconds": round(eta),
        },
    )


def judge_state_growth(
    records: Sequence[ProgressRecord],
    policy: HealthPolicy = DEFAULT_POLICY,
) -> Verdict:
    """Does the query's state stay bounded? (check ``state_growth``)

    Only batches with stateful operators count; their numbers are summed over the operators. No
    batch at all passes (``no batches yet``); batches without state pass (``stateless``).

    * leak: the newest run of consecutive batches with ``numRowsRemoved == 0`` in all of them
      and ``numRowsTotal`` never decreasing (see ``growth_run``) is at least
      ``leak_min_batches`` long and its rows grew from first to last: fail ``state grew from A
      to B rows over N batches and nothing was removed``. Fewer batches are never a leak.
    * budgets, over the last ``window_batches`` stateful batches: state rows against
      ``state_rows_budget``, and ``memoryUsedBytes`` and (when reported) RocksDB's SST size each
      against ``state_bytes_budget``. The newest value over a budget fails. Otherwise a
      least-squares line by record ``ts`` over the window (needing ``leak_min_batches``
      batches and a newest value above the oldest) that reaches the budget within
      ``forecast_horizon_seconds`` warns with the estimated time. Memory is not forecast when
      RocksDB reports its SST size: its memory is bounded caches that jump on the first write.

    Evidence: ``state_rows``, ``state_memory_bytes``, ``state_sst_bytes`` (when reported),
    ``bytes_per_key`` (SST bytes when above 0, else memory bytes, per state row), the growth
    run's ``growth_batches`` and the budget numbers.
    """
    batches = _batches(records)
    if not batches:
        return passed(STATE_GROWTH, "no batches yet")
    stateful = _stateful(batches)
    if not stateful:
        return passed(STATE_GROWTH, "stateless")
    newest = _p(stateful[-1])
    rows = _op_sum(newest, "numRowsTotal")
    memory = _op_sum(newest, "memoryUsedBytes")
    sst = sst_bytes(newest)
    evidence: dict[str, float | int | str] = {
        "state_rows": rows,
        "state_memory_bytes": memory,
    }
    if sst is not None:
        evidence["state_sst_bytes"] = sst
    if rows:
        evidence["bytes_per_key"] = round((sst or memory) / rows, 1)
    run = growth_run(stateful)
    evidence["growth_batches"] = len(run)
    verdicts: list[Verdict] = []
    first_rows = _op_sum(_p(run[0]), "numRowsTotal") if run else rows
    if len(run) >= policy.leak_min_batches and rows > first_rows:
        verdicts.append(
            failed(
                STATE_GROWTH,
                f"state grew from {first_rows} to {rows} rows over {len(run)} batches and "
                "nothing was removed",
                "State keys are never removed: add a watermark, a state TTL or a timer that "
                "clears each key when it is done.",
                {"leak_from_rows": first_rows, "leak_to_rows": rows},
            )
        )

    window = stateful[-policy.window_batches :]
    # (what, unit, series, budget, forecast): RocksDB's memoryUsedBytes is its memtables and
    # caches, bounded by its own settings, and jumps when a store first writes: checked against
    # the budget but forecast only for a state store that reports no SST size.
    checks: list[tuple[str, str, list[float], int | None, bool]] = [
        ("state rows", "rows", [float(_op_sum(_p(r), "numRowsTotal")) for r in window],
         policy.state_rows_budget, True),
        ("state memory", "bytes", [float(_op_sum(_p(r), "memoryUsedBytes")) for r in window],
         policy.state_bytes_budget, sst is None),
    ]  # fmt: skip
    if sst is not None:
        sst_series = [float(sst_bytes(_p(r)) or 0) for r in window]
        checks.append(("state SST", "bytes", sst_series, policy.state_bytes_budget, True))
    for what, unit, values, budget, forecast in checks:
        if budget is None:
            continue
        points = list(zip((r.ts for r in window), values, strict=True))
        verdict = _budget_verdict(what, unit, points, budget, policy, forecast=forecast)
        if verdict is not None:
            verdicts.append(verdict)

    if not verdicts:
        return passed(
            STATE_GROWTH, f"state holds {rows} rows ({len(stateful)} stateful batches)", evidence
        )
    result = combine(STATE_GROWTH, verdicts)
    return Verdict(
        result.check, result.status, result.summary, {**evidence, **result.evidence}, result.remedy
    )


# --- late data ----------------------------------------------------------------------------------


def watermark_delay(record: ProgressRecord) -> float | None:
    """Batch ``timestamp`` minus ``eventTime.watermark`` in seconds; None without a watermark."""
    progress = _p(record)
    mark = watermark_seconds(progress)
    if mark is None:
        return None
    at = parse_spark_time(progress.get("timestamp"))
    return (at if at is not None else record.ts) - mark


def judge_late_data(
    records: Sequence[ProgressRecord],
    policy: HealthPolicy = DEFAULT_POLICY,
) -> Verdict:
    """Does data arrive later than the watermark allows? (check ``late_data``)

    Over the last ``window_batches`` batches, two judgements shown as one:

    * dropped rows: ``numRowsDroppedByWatermark`` (summed over operators and batches) against
      ``numInputRows`` (summed over batches): a share above ``late_rows_warn_fraction`` warns
      with both counts. Spark counts the drops after partial aggregation, so this is a lower
      bound of the late input rows.
    * watermark delay, of the newest batch with a watermark: its ``timestamp`` minus its
      ``eventTime.watermark``; above ``watermark_delay_warn_seconds`` warns ``event time is N s
      behind the wall clock``.

    No batch passes (``no batches yet``); batches without a watermark pass (``no watermark``).
    """
    window = _batches(records)[-policy.window_batches :]
    if not window:
        return passed(LATE_DATA, "no batches yet")
    dropped = sum(_op_sum(_p(r), "numRowsDroppedByWatermark") for r in window)
    rows_in = sum(int(_p(r).get("numInputRows") or 0) for r in window)
    delays = [d for d in (watermark_delay(r) for r in window) if d is not None]
    if not delays and not dropped:
        return passed(LATE_DATA, "no watermark", {"rows_in": rows_in})
    fraction = dropped / rows_in if rows_in else 0.0
    drop_evidence: dict[str, float | int | str] = {
        "rows_dropped_late": dropped,
        "rows_in": rows_in,
        "late_fraction": round(fraction, 4),
    }
    verdicts: list[Verdict] = []
    if fraction > policy.late_rows_warn_fraction:
        verdicts.append(
            warned(
                LATE_DATA,
                f"{dropped} of {rows_in} input rows ({fraction:.1%}) arrived after the watermark "
                f"and were dropped over {len(window)} batches",
                "Rows arrive later than the watermark allows: raise the watermark delay if they "
                "matter, or find the producers that send them late.",
                drop_evidence,
            )
        )
    else:
        verdicts.append(
            passed(LATE_DATA, f"{dropped} of {rows_in} input rows dropped as late", drop_evidence)
        )
    if delays:
        delay = delays[-1]
        delay_evidence: dict[str, float | int | str] = {"watermark_delay_seconds": round(delay, 1)}
        if delay > policy.watermark_delay_warn_seconds:
            verdicts.append(
                warned(
                    LATE_DATA,
                    f"event time is {_secs(delay)} behind the wall clock",
                    "The stream reads old data or a source is stuck: check its lag and the "
                    "producers' event timestamps.",
                    delay_evidence,
                )
            )
        else:
            where = "behind" if delay >= 0 else "ahead of"
            verdicts.append(
                passed(
                    LATE_DATA,
                    f"watermark {_secs(abs(delay))} {where} the wall clock",
                    delay_evidence,
                )
            )
    return combine(LATE_DATA, verdicts)


# --- observation --------------------------------------------------------------------------------


def progress_observation(
    records: Sequence[ProgressRecord],
    broker_lag: int | None,
    now: float | None = None,
) -> dict[str, float | int]:
    """The numbers to plot for the stream now, from its newest batch.

    Keys (each only when known): ``batch_id``, ``input_rows_per_sec``,
    ``processed_rows_per_sec``, ``rows_in``, ``state_rows``, ``state_memory_bytes``,
    ``state_sst_bytes`` (RocksDB), ``bytes_per_key`` (as in ``judge_state_growth``),
    ``batch_age_seconds`` (``now`` minus the newest batch's ``ts``; needs ``now``),
    ``source_lag_records``, ``broker_lag_records``, ``lag_records`` (the larger of the two),
    ``rows_dropped_late`` (this batch) and ``watermark_delay_seconds``.
    """
    obs: dict[str, float | int] = {}
    batches = _batches(records)
    src: SourceLag | None = None
    if batches:
        newest = batches[-1]
        p = _p(newest)
        rows = _op_sum(p, "numRowsTotal")
        memory = _op_sum(p, "memoryUsedBytes")
        obs.update(
            batch_id=int(p.get("batchId", -1)),
            rows_in=int(p.get("numInputRows") or 0),
            input_rows_per_sec=round(float(p.get("inputRowsPerSecond") or 0.0), 2),
            processed_rows_per_sec=round(float(p.get("processedRowsPerSecond") or 0.0), 2),
            state_rows=rows,
            state_memory_bytes=memory,
            rows_dropped_late=_op_sum(p, "numRowsDroppedByWatermark"),
        )
        sst = sst_bytes(p)
        if sst is not None:
            obs["state_sst_bytes"] = sst
        if rows:
            obs["bytes_per_key"] = round((sst or memory) / rows, 1)
        if now is not None:
            obs["batch_age_seconds"] = round(now - newest.ts, 1)
        delay = watermark_delay(newest)
        if delay is not None:
            obs["watermark_delay_seconds"] = round(delay, 1)
        src = _newest_source_lag(batches)
    if src is not None:
        obs["source_lag_records"] = src.records
    if broker_lag is not None:
        obs["broker_lag_records"] = broker_lag
    if src is not None or broker_lag is not None:
        obs["lag_records"] = max(src.records if src else 0, broker_lag or 0)
    return obs
