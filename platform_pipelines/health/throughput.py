"""Does the query keep up with its input? (check ``falling_behind``)"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import (
    batch_seconds,
    input_rate,
    input_rows,
    processed_rate,
    query_run,
    started_at,
)
from platform_pipelines.core.units import count
from platform_pipelines.core.verdict import Verdict, combine, failed, passed, warned
from platform_pipelines.health.history import batches, by_time, progress_of
from platform_pipelines.health.policy import DEFAULT_POLICY, HealthPolicy
from platform_pipelines.health.runs import RunState

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
        measured_at: when it was measured (epoch seconds); with it, the verdict knows the rate
            input arrives at now (``arrival_rate``).
    """

    input: str
    records: int | None
    unknown_because: str = ""
    remedy: str = ""
    measured_at: float | None = None


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
    run: RunState | None = None,
) -> Verdict:
    """Does the query keep up with its input?

    Judged only while its run runs it (``run`` None: as if it did). A stream that is not
    running, or whose run waits for its topic, passes ``not judged: ...`` with its lag, when
    known, as evidence: a stopped stream has nothing to keep up with. Otherwise two
    judgements, shown as one (the worse wins):

    * rates, over the last ``window_batches`` batches of the newest query run (a continuous
      run's catch-up phase is a query run of its own) (see ``Rates``): warn when at least
      ``min_rate_batches`` batches had input, every one of them was full, and the input rate is
      above ``behind_ratio`` times the processed rate. A catch-up phase reads a backlog
      as fast as it can: its rates are not judged;
    * lag (see ``Lag``): above ``lag_fail_records`` fail, above ``lag_warn_records`` warn; an
      unknown lag fails with its cause (the stream cannot read). No lag: rates only. A
      catch-up's lag is the backlog it was started to read (bounded by the end offsets at its
      start: it ends), so it does not warn, only fails above ``lag_fail_records``; a catch-up
      that stops moving is the ``liveness`` check's.
    """
    if run is not None and (run.status != "running" or run.waiting_for):
        return _not_judged(run, lag)
    current = newest_query_run(batches(records))
    rates = window_rates(current[-policy.window_batches :])
    # the newest record says the phase, even before the phase's first batch (its start record)
    newest = by_time(records)
    catching_up = bool(newest) and _catching_up(newest[-1])
    verdicts = [_rate_verdict(rates, policy, catching_up)]
    if lag is not None:
        window = current[-policy.window_batches :]
        trigger = newest[-1].trigger_seconds if newest else 0.0
        # batches capped by a catch-up (this one, or the one the continuous phase starts after)
        # leave behind more than arrived since: not a rate
        capped = catching_up or (bool(window) and _catching_up(window[-1]))
        arrival = 0.0 if capped else arrival_rate(lag, window)
        known = _rhythm_known(window, rates, trigger) or arrival > 0
        rhythm = Rhythm(usual_lag(window, rates, arrival), known)
        verdicts.append(_lag_verdict(lag, policy, catching_up, rhythm))
    return combine(FALLING_BEHIND, verdicts)


def _catching_up(record: ProgressRecord) -> bool:
    """Whether ``record``'s query reads a backlog to its end (a catch-up run, or the catch-up
    phase of a continuous one); records from before phases were kept: a trigger of 0."""
    if record.phase is not None:
        return record.phase == "catch_up"
    return record.trigger_seconds == 0


def newest_query_run(done: Sequence[ProgressRecord]) -> list[ProgressRecord]:
    """The batches (oldest first) of the query run that ran the newest of ``done``."""
    if not done:
        return []
    newest = query_run(progress_of(done[-1]))
    return [r for r in done if query_run(progress_of(r)) == newest]


def _not_judged(run: RunState, lag: Lag | None) -> Verdict:
    if run.waiting_for:
        why = f"waiting for Kafka topic {run.waiting_for} to exist"
    else:
        why = f"not running ({run.detail or run.status.replace('_', ' ')})"
    if lag is None or lag.records is None:
        return passed(FALLING_BEHIND, f"not judged: {why}")
    behind = f"{count(lag.records)} records behind its {lag.input}"
    return passed(FALLING_BEHIND, f"not judged: {why}; {behind}", {"lag_records": lag.records})


def _rate_verdict(rates: Rates, policy: HealthPolicy, catching_up: bool = False) -> Verdict:
    evidence: dict[str, float | int | str] = {
        "input_rows_per_second": round(rates.input, 2),
        "processed_rows_per_second": round(rates.processed, 2),
        "rate_batches": rates.batches,
        "full_batches": rates.full,
    }
    if catching_up and rates.batches:
        return passed(
            FALLING_BEHIND,
            f"catching up at {rates.processed:.1f} rows/s (a catch-up's rates are not judged)",
            evidence,
        )
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


def usual_lag(window: Sequence[ProgressRecord], rates: Rates, arrival: float = 0.0) -> int:
    """How many records a stream that keeps up is behind just before a commit: what arrives at
    the window's input rate (or at ``arrival`` rows/s, the rate input arrives at now, when that
    is higher) during one trigger interval and during the batch that commits it (1,500 at 100
    rows/s on a 10 s trigger with 5 s batches).

    A batch is counted at its median length over the window, and at most the trigger interval:
    a stream that keeps up finishes a batch within its interval, so batches that grow past it
    (a backlog building) do not raise what counts as usual. With a trigger of 0 the batches run
    back to back and the interval is the median batch itself.
    """
    lengths = [batch_seconds(progress_of(r)) for r in window]
    if not lengths:
        return 0
    median = statistics.median(lengths)
    interval = window[-1].trigger_seconds or median
    return int(max(rates.input, arrival) * (interval + min(median, interval)))


def arrival_rate(lag: Lag, window: Sequence[ProgressRecord]) -> float:
    """Rows per second arriving at the input now: the records behind, over the time since the
    newest batch started. A continuous batch reads its input to the end it had when the batch
    started, so every record behind arrived since; 0 when that is not known.

    The window's input rates are those of its batches: when the input grows faster (a surge,
    or the first minute of a stream on a minute's trigger), the lag of a stream that keeps up
    grows with it. Judged at the rate it arrives now, a lag warns only once the stream also
    takes longer than twice its rhythm to commit it.
    """
    if lag.records is None or lag.measured_at is None or not window:
        return 0.0
    start = started_at(progress_of(window[-1]))
    if start is None or lag.measured_at <= start:
        return 0.0
    return lag.records / (lag.measured_at - start)


def _rhythm_known(window: Sequence[ProgressRecord], rates: Rates, trigger: float) -> bool:
    """Is the lag a stream usually has known? Not while a query on a trigger has no batch with
    an input rate (Spark reports none for a query's first batch), unless a batch outlasted the
    trigger: the lag it builds meanwhile (a minute of input on a 60 s trigger) is then not yet
    known to be its rhythm, while a batch longer than its trigger already says it lags."""
    if rates.batches or trigger == 0:
        return True
    return any(batch_seconds(progress_of(r)) > trigger for r in window)


@dataclass(frozen=True)
class Rhythm:
    """How far behind the stream usually is just before a commit (``usual_lag``), and whether
    that is known yet (not before a trigger's first batch with an input rate)."""

    usual: int = 0
    known: bool = True

    def warn_above(self, policy: HealthPolicy) -> int:
        return max(policy.lag_warn_records, int(policy.lag_warn_intervals * self.usual))

    def fail_above(self, policy: HealthPolicy) -> int:
        """``lag_fail_records``, or twice the warn threshold when that is more: a stream that
        keeps up at a high rate on a long trigger is not failed before every commit."""
        return max(policy.lag_fail_records, 2 * self.warn_above(policy))

    def why(self, policy: HealthPolicy, above: int, base: int) -> str:
        """Why a threshold is ``above`` rather than the policy's ``base``."""
        if above == base:
            return ""
        times = f"{policy.lag_warn_intervals:g}x" if policy.lag_warn_intervals != 2 else "twice"
        usual = f"{times} the {count(self.usual)} it is behind before each commit when it keeps up"
        if above == self.warn_above(policy):
            return f": {usual}"
        return f": twice the warning threshold, {usual}"


def _lag_verdict(
    lag: Lag, policy: HealthPolicy, catching_up: bool = False, rhythm: Rhythm = Rhythm()
) -> Verdict:
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
    remedy = (
        "The stream cannot keep up with its input: give it capacity (more cores or executors: "
        "PLATFORM_SPARK_MASTER) or cut its work per row; a lag that shrinks again needs nothing."
    )
    fail_above = rhythm.fail_above(policy)
    if lag.records > fail_above:
        why = rhythm.why(policy, fail_above, policy.lag_fail_records)
        return failed(
            FALLING_BEHIND, f"{behind} (fail above {count(fail_above)}{why})", remedy, evidence
        )
    warn_above = rhythm.warn_above(policy)
    if lag.records > warn_above and not catching_up:
        if not rhythm.known:
            return passed(
                FALLING_BEHIND,
                f"{behind} (warned from its second batch with input, once its rhythm is known)",
                evidence,
            )
        why = rhythm.why(policy, warn_above, policy.lag_warn_records)
        return warned(
            FALLING_BEHIND, f"{behind} (warn above {count(warn_above)}{why})", remedy, evidence
        )
    return passed(FALLING_BEHIND, behind, evidence)
