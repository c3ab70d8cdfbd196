"""Does the query's state stay bounded? (check ``state_growth``)"""

from __future__ import annotations

from collections.abc import Sequence

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import op_sum, operators, sst_bytes
from platform_pipelines.core.units import count, duration, size
from platform_pipelines.core.verdict import Verdict, combine, failed, passed, warned
from platform_pipelines.health.history import batches, progress_of, ran_state, slope
from platform_pipelines.health.key_horizon import KeyHorizon, clock_advance
from platform_pipelines.health.policy import DEFAULT_POLICY, HealthPolicy

STATE_GROWTH = "state_growth"
LEAK_REMEDY = (
    "State keys are never removed: declare a watermark (keys expire as it passes them), or a "
    "processing-time timeout with a key_lifetime, or clear each key in the stream's logic when it "
    "is done."
)
OUTLIVED_REMEDY = (
    "Keys outlive what the stream declares: remove each key's state when it is done (on its "
    "timer, when its session or window closes), or declare the key_lifetime its keys really have."
)


def _stateful(done: Sequence[ProgressRecord]) -> list[ProgressRecord]:
    return [r for r in done if ran_state(r)]


def growth_run(stateful: Sequence[ProgressRecord]) -> list[ProgressRecord]:
    """The newest run of consecutive batches in which nothing was removed from state and the
    state's rows never decreased (oldest first); empty when the newest batch removed rows."""
    run: list[ProgressRecord] = []
    for record in reversed(stateful):
        progress = progress_of(record)
        if op_sum(progress, "numRowsRemoved") != 0:
            break
        if run and op_sum(progress, "numRowsTotal") > op_sum(progress_of(run[-1]), "numRowsTotal"):
            break
        run.append(record)
    return run[::-1]


def _amount(value: float, unit: str) -> str:
    """``1,234 rows`` or ``1.2 MiB``."""
    return size(value) if unit == "bytes" else f"{count(value)} {unit}"


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
    key = what.lower().replace(" ", "_")
    if current > budget:
        return failed(
            STATE_GROWTH,
            f"{what} is {_amount(current, unit)}, over its budget of {_amount(budget, unit)}",
            "Shrink the state (a shorter watermark or key_lifetime, fewer keys); if it is meant to "
            "be this large, raise the budget (HealthPolicy in health/policy.py).",
            {f"{key}_budget": budget},
        )
    if not forecast or len(points) < policy.leak_min_batches or current <= points[0][1]:
        return None
    rate = slope(points)
    if rate is None or rate <= 0:
        return None
    eta = (budget - current) / rate
    if eta > policy.forecast_horizon_seconds:
        return None
    return warned(
        STATE_GROWTH,
        f"{what} will reach its budget of {_amount(budget, unit)} in about {duration(eta)} "
        f"(now {_amount(current, unit)}, +{_amount(rate * 3600, unit)}/h)",
        "State will outgrow its budget: shorten the watermark or key_lifetime, cut the key space, "
        "or raise the budget (HealthPolicy in health/policy.py).",
        {
            f"{key}_budget": budget,
            f"{key}_per_hour": round(rate * 3600, 1),
            f"{key}_budget_eta_seconds": round(eta),
        },
    )


def judge_state_growth(
    records: Sequence[ProgressRecord],
    policy: HealthPolicy = DEFAULT_POLICY,
    horizon: KeyHorizon | None = None,
) -> Verdict:
    """Does the query's state stay bounded? (check ``state_growth``)

    Only batches with stateful operators count; their numbers are summed over the operators. No
    batch at all passes (``no batches yet``); batches without state pass (``stateless``).

    * leak: the newest run of consecutive batches with ``numRowsRemoved == 0`` in all of them
      and ``numRowsTotal`` never decreasing (see ``growth_run``) is at least
      ``leak_min_batches`` long and its rows grew from first to last. Fewer batches are never a
      leak. Without a ``horizon`` (the stream declares nothing that removes keys): fail ``state
      grew from A to B rows over N batches and nothing was removed``. With one, the run is a
      leak only once the stream's clock moved past the run's first events by more than the
      horizon (``clock_advance``): fail naming both; before that it passes, ``... with nothing
      removed yet``, since no key could be due (when the batches do not tell, as without one).
    * budgets, over the last ``window_batches`` stateful batches: state rows against
      ``state_rows_budget``, and ``memoryUsedBytes`` and (when reported) RocksDB's SST size each
      against ``state_bytes_budget``. The newest value over a budget fails. Otherwise a
      least-squares line by record ``ts`` over the window (needing ``leak_min_batches``
      batches and a newest value above the oldest) that reaches the budget within
      ``forecast_horizon_seconds`` warns with the estimated time. Memory is not forecast when
      RocksDB reports its SST size: its memory is bounded caches that jump on the first write.

    Evidence: ``state_rows``, ``state_memory_bytes``, ``state_sst_bytes`` (when reported),
    ``bytes_per_key`` (SST bytes when above 0, else memory bytes, per state row), the growth
    run's ``growth_batches``, with a horizon ``key_horizon_seconds`` and (when measured)
    ``clock_advance_seconds``, and the budget numbers.
    """
    done = batches(records)
    if not done:
        return passed(STATE_GROWTH, "no batches yet")
    if not any(operators(progress_of(r)) for r in done):
        return passed(STATE_GROWTH, "stateless")
    stateful = _stateful(done)
    if not stateful:
        return passed(STATE_GROWTH, "no batch has run the state yet")
    newest = progress_of(stateful[-1])
    rows = op_sum(newest, "numRowsTotal")
    memory = op_sum(newest, "memoryUsedBytes")
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
    leak, young = _leak(run, rows, policy, horizon, evidence)
    verdicts: list[Verdict] = [leak] if leak is not None else []

    window = stateful[-policy.window_batches :]
    # (what, unit, series, budget, forecast): RocksDB's memoryUsedBytes is its memtables and
    # caches, bounded by its own settings, and jumps when a store first writes: checked against
    # the budget but forecast only for a state store that reports no SST size.
    checks: list[tuple[str, str, list[float], int | None, bool]] = [
        (
            "state rows",
            "rows",
            [float(op_sum(progress_of(r), "numRowsTotal")) for r in window],
            policy.state_rows_budget,
            True,
        ),
        (
            "state memory",
            "bytes",
            [float(op_sum(progress_of(r), "memoryUsedBytes")) for r in window],
            policy.state_bytes_budget,
            sst is None,
        ),
    ]
    if sst is not None:
        sst_series = [float(sst_bytes(progress_of(r)) or 0) for r in window]
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
            STATE_GROWTH,
            young or f"state holds {count(rows)} rows ({len(stateful)} stateful batches)",
            evidence,
        )
    result = combine(STATE_GROWTH, verdicts)
    return Verdict(
        result.check, result.status, result.summary, {**evidence, **result.evidence}, result.remedy
    )


def _leak(
    run: Sequence[ProgressRecord],
    rows: int,
    policy: HealthPolicy,
    horizon: KeyHorizon | None,
    evidence: dict[str, float | int | str],
) -> tuple[Verdict | None, str | None]:
    """The leak judgement of ``judge_state_growth`` on the growth run: (a failed verdict, or
    the pass summary of growth the horizon explains, or neither). Adds its evidence."""
    first_rows = op_sum(progress_of(run[0]), "numRowsTotal") if run else rows
    if len(run) < policy.leak_min_batches or rows <= first_rows:
        return None, None
    grew = f"state grew from {count(first_rows)} to {count(rows)} rows over {len(run)} batches"
    numbers = {"leak_from_rows": first_rows, "leak_to_rows": rows}
    advance = clock_advance(run, horizon) if horizon is not None else None
    if horizon is not None:
        evidence["key_horizon_seconds"] = horizon.seconds
        if advance is not None:
            evidence["clock_advance_seconds"] = round(advance, 1)
    if horizon is None or advance is None:
        return failed(STATE_GROWTH, f"{grew} and nothing was removed", LEAK_REMEDY, numbers), None
    moved, keeps = _clock_words(advance, horizon)
    if advance > horizon.seconds:
        summary = f"{grew} and nothing was removed, though {moved}: past {keeps}"
        return failed(STATE_GROWTH, summary, OUTLIVED_REMEDY, numbers), None
    return None, f"{grew} with nothing removed yet: {moved}, within {keeps}"


def _clock_words(advance: float, horizon: KeyHorizon) -> tuple[str, str]:
    """(``event time moved on 1 min 1 s``, ``the 20 min the stream keeps a key (...)``)."""
    clock = "event time" if horizon.clock == "event_time" else "processing time"
    return (
        f"{clock} moved on {duration(advance)}",
        f"the {duration(horizon.seconds)} the stream keeps a key ({horizon.describe()})",
    )
