"""Health judgements over recorded progress, on batches built from real Spark 4.2 progress JSON.

``tests/unit/data/progress/*.json`` are ``query.recentProgress`` of real local queries (RocksDB
state store, changelog checkpointing): a Kafka source feeding a transformWithState running count,
a Kafka source feeding a windowed count with late rows, and a rate source feeding
``dropDuplicatesWithinWatermark`` and a windowed count. ``batch`` copies the transformWithState
batch and sets the numbers a test is about.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from platform_pipelines.health.judgements import (
    HealthPolicy,
    RunState,
    judge_falling_behind,
    judge_late_data,
    judge_liveness,
    judge_state_growth,
    parse_spark_time,
    progress_observation,
    source_lag,
    watermark_seconds,
)
from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.verdict import Status

DATA = Path(__file__).parent / "data" / "progress"
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
RUNNING = RunState("running", "run 1a2b")


def load(name: str) -> list[dict[str, Any]]:
    progress: list[dict[str, Any]] = json.loads((DATA / f"{name}.json").read_text())
    return progress


TEMPLATE = load("kafka_running_count")[-1]  # Kafka source, transformWithState, RocksDB, watermark
RATE_SOURCE = load("rate_dedup_window")[-1]["sources"]


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def batch(
    i: int,
    *,
    every: float = 10.0,
    trigger: float = 10.0,
    rows_in: int = 1000,
    input_rate: float = 100.0,
    processed_rate: float = 200.0,
    state_rows: int | None = 5000,
    removed: int = 100,
    memory: int = 2_108_456,
    sst: int | None = 500_000,
    dropped: int = 0,
    lag: tuple[int, int] | None = (10, 20),
    watermark_delay: float | None = 120.0,
) -> ProgressRecord:
    """Batch ``i`` recorded at ``T0 + i * every``; ``state_rows=None`` is a stateless query,
    ``lag=None`` a rate source instead of Kafka, ``lag`` the two partitions' offsets behind."""
    p = copy.deepcopy(TEMPLATE)
    ts = T0 + i * every
    duration_ms = round(rows_in / processed_rate * 1000) if processed_rate else 0
    p.update(
        batchId=i,
        timestamp=iso(ts - duration_ms / 1000),
        batchDuration=duration_ms,
        numInputRows=rows_in,
        inputRowsPerSecond=input_rate,
        processedRowsPerSecond=processed_rate,
    )
    p["durationMs"]["triggerExecution"] = duration_ms
    if watermark_delay is None:
        del p["eventTime"]["watermark"]
    else:
        p["eventTime"]["watermark"] = iso(ts - duration_ms / 1000 - watermark_delay)
    if state_rows is None:
        p["stateOperators"] = []
    else:
        op = p["stateOperators"][0]
        op.update(numRowsTotal=state_rows, numRowsRemoved=removed, memoryUsedBytes=memory,
                  numRowsDroppedByWatermark=dropped)  # fmt: skip
        if sst is None:
            del op["customMetrics"]["rocksdbSstFileSize"]
        else:
            op["customMetrics"]["rocksdbSstFileSize"] = sst
    if lag is None:
        p["sources"] = copy.deepcopy(RATE_SOURCE)
    else:
        source = p["sources"][0]
        end = {"0": 1000 * (i + 1), "1": 1000 * (i + 1)}
        source["endOffset"] = {"events": end}
        source["latestOffset"] = {
            "events": {k: v + n for (k, v), n in zip(end.items(), lag, strict=True)}
        }
        source["metrics"] = {
            "avgOffsetsBehindLatest": str(sum(lag) / len(lag)),
            "maxOffsetsBehindLatest": str(max(lag)),
            "minOffsetsBehindLatest": str(min(lag)),
        }
    return ProgressRecord(ts, "progress", "orders", "1a2b", p, trigger_seconds=trigger)


def batches(n: int, **numbers: Any) -> list[ProgressRecord]:
    """``n`` batches; a list value gives batch ``i`` its ``i``-th item."""
    return [
        batch(i, **{k: v[i] if isinstance(v, list) else v for k, v in numbers.items()})
        for i in range(n)
    ]


def started(ts: float = T0 - 5, trigger: float = 10.0) -> ProgressRecord:
    return ProgressRecord(ts, "started", "orders", "1a2b", trigger_seconds=trigger)


def real_records(name: str, trigger: float = 1.0) -> list[ProgressRecord]:
    """A captured sample as the running op records it: ``ts`` when the batch ended."""
    return [
        ProgressRecord(
            float(parse_spark_time(p["timestamp"]) or 0)
            + p["durationMs"]["triggerExecution"] / 1000,
            "progress",
            p["name"],
            "1a2b",
            p,
            trigger_seconds=trigger,
        )
        for p in load(name)
    ]


# --- healthy --------------------------------------------------------------------------------------


def test_a_healthy_stream_passes_every_judgement_with_its_numbers():
    records = [started(), *batches(10)]
    now = records[-1].ts + 4

    live = judge_liveness(records, RUNNING, now)
    assert (live.status, live.summary) == (Status.PASS, "last batch 4 s ago")
    assert live.evidence == {
        "age_seconds": 4.0,
        "stale_after_seconds": 60.0,
        "trigger_seconds": 10.0,
        "last_batch_age_seconds": 4.0,
        "last_batch_id": 9,
    }

    behind = judge_falling_behind(records, broker_lag=None)
    assert behind.status is Status.PASS
    assert (
        behind.summary
        == "processing 200.0 rows/s for 100.0 rows/s of input; 30 records behind the topic"
    )
    assert behind.evidence["lag_records"] == 30 and behind.evidence["max_partition_lag"] == 20

    state = judge_state_growth(records)
    assert (state.status, state.summary) == (
        Status.PASS,
        "state holds 5000 rows (10 stateful batches)",
    )
    assert state.evidence == {
        "state_rows": 5000,
        "state_memory_bytes": 2_108_456,
        "state_sst_bytes": 500_000,
        "bytes_per_key": 100.0,
        "growth_batches": 0,
    }

    late = judge_late_data(records)
    assert late.status is Status.PASS
    assert (
        late.summary
        == "0 of 10000 input rows dropped as late; watermark 120 s behind the wall clock"
    )


# --- state growth ---------------------------------------------------------------------------------


def test_ten_batches_of_growth_with_nothing_removed_is_a_leak():
    verdict = judge_state_growth(
        batches(10, state_rows=[1000 * (i + 1) for i in range(10)], removed=0)
    )
    assert verdict.status is Status.FAIL
    assert (
        verdict.summary
        == "state grew from 1000 to 10000 rows over 10 batches and nothing was removed"
    )
    assert verdict.evidence["leak_from_rows"] == 1000
    assert verdict.evidence["leak_to_rows"] == 10000
    assert verdict.evidence["growth_batches"] == 10
    assert verdict.evidence["bytes_per_key"] == 50.0  # 500_000 SST bytes / 10_000 rows
    assert "watermark" in verdict.remedy


def test_growth_with_removals_is_not_a_leak():
    verdict = judge_state_growth(
        batches(10, state_rows=[1000 * (i + 1) for i in range(10)], removed=10)
    )
    assert verdict.status is Status.PASS
    assert verdict.evidence["growth_batches"] == 0


def test_a_removal_resets_the_run_of_growth():
    rows = [1000 * (i + 1) for i in range(10)]
    removed = [0] * 5 + [7] + [0] * 4  # the newest run without removals is 4 batches long
    verdict = judge_state_growth(batches(10, state_rows=rows, removed=removed))
    assert verdict.status is Status.PASS
    assert verdict.evidence["growth_batches"] == 4


def test_flat_state_with_nothing_removed_is_not_a_leak():
    verdict = judge_state_growth(batches(10, state_rows=30, removed=0))
    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "state holds 30 rows (10 stateful batches)",
    )
    assert verdict.evidence["growth_batches"] == 10


def test_a_decrease_ends_the_growth_run():
    rows = [100, 200, 300, 250, 300, 400, 500]  # decreased once: its run is the last 4 batches
    verdict = judge_state_growth(batches(7, state_rows=rows, removed=0))
    assert verdict.status is Status.PASS
    assert verdict.evidence["growth_batches"] == 4


def test_fewer_batches_than_leak_min_batches_are_never_a_leak():
    growing = {"state_rows": [1000 * (i + 1) for i in range(5)], "removed": 0}
    assert judge_state_growth(batches(4, **growing)).status is Status.PASS
    verdict = judge_state_growth(batches(5, **growing))
    assert (
        verdict.summary
        == "state grew from 1000 to 5000 rows over 5 batches and nothing was removed"
    )
    assert judge_state_growth(batches(5, **growing), HealthPolicy(leak_min_batches=6)).passed


def test_a_stateless_query_and_no_batches_pass():
    assert judge_state_growth(batches(3, state_rows=None)).summary == "stateless"
    assert judge_state_growth([started()]).summary == "no batches yet"


def test_rows_forecast_to_reach_the_budget_within_the_horizon_warn_with_the_time():
    rows = [40_000_000 + 100_000 * i for i in range(10)]  # +10_000 rows/s, not a leak: rows removed
    verdict = judge_state_growth(batches(10, state_rows=rows, removed=50_000))
    assert verdict.status is Status.WARN
    assert verdict.summary == (
        "state rows will reach its budget of 50000000 rows in about 15 min "
        "(now 40900000, +36000000 rows/h)"
    )
    assert verdict.evidence["state_rows_budget"] == 50_000_000
    assert verdict.evidence["state_rows_per_hour"] == 36_000_000.0
    assert verdict.evidence["state_rows_budget_eta_seconds"] == 910  # (50M - 40.9M) / 10_000
    assert verdict.evidence["bytes_per_key"] == 0.0  # round(500_000 / 40.9M, 1)

    far = HealthPolicy(forecast_horizon_seconds=900)  # 910 s is past a 900 s horizon
    assert judge_state_growth(batches(10, state_rows=rows, removed=50_000), far).passed
    assert judge_state_growth(batches(10, state_rows=rows, removed=50_000),
                              HealthPolicy(state_rows_budget=None)).passed  # fmt: skip


def test_a_forecast_needs_leak_min_batches_batches():
    rows = [40_000_000 + 100_000 * i for i in range(4)]
    assert judge_state_growth(batches(4, state_rows=rows, removed=50_000)).passed


def test_state_over_a_budget_fails():
    verdict = judge_state_growth(batches(3, state_rows=60_000_000))
    assert verdict.status is Status.FAIL
    assert verdict.summary == "state rows is 60000000 rows, over its budget of 50000000 rows"

    sst = judge_state_growth(
        batches(3, sst=5 * 1024**3), HealthPolicy(state_bytes_budget=4 * 1024**3)
    )
    assert sst.status is Status.FAIL
    assert sst.summary == "state SST is 5368709120 bytes, over its budget of 4294967296 bytes"
    assert sst.evidence["state_sst_bytes"] == 5 * 1024**3


def test_a_leak_and_a_budget_forecast_are_both_reported():
    rows = [40_000_000 + 100_000 * i for i in range(10)]
    verdict = judge_state_growth(batches(10, state_rows=rows, removed=0))
    assert verdict.status is Status.FAIL
    assert verdict.summary.startswith("state grew from 40000000 to 40900000 rows over 10 batches")
    assert "state rows will reach its budget" in verdict.summary


def test_rocksdb_memory_jump_is_not_forecast_but_memory_of_a_store_without_sst_size_is():
    # Real RocksDB: memoryUsedBytes jumps from 8360 to 2108456 on the first write, then stays.
    memory = [8360] + [2_108_456] * 9
    assert judge_state_growth(batches(10, state_rows=30, removed=0, memory=memory)).passed

    growing = [1024**3 + 100_000_000 * i for i in range(10)]  # +10 MB/s, 1.84 GiB now
    verdict = judge_state_growth(batches(10, memory=growing, sst=None))
    assert verdict.status is Status.WARN
    assert verdict.summary.startswith(
        "state memory will reach its budget of 4294967296 bytes in about"
    )
    assert (
        verdict.evidence["state_memory_budget_eta_seconds"] == 232
    )  # (4 GiB - 1.84 GiB) / 10 MB/s
    assert verdict.evidence["bytes_per_key"] == round(growing[-1] / 5000, 1)


# --- liveness -------------------------------------------------------------------------------------


def test_a_running_run_whose_last_record_is_too_old_is_stalled():
    records = [started(), *batches(5)]
    last = records[-1].ts
    assert judge_liveness(records, RUNNING, last + 60).passed  # limit max(3 * 10 s, 60 s)
    verdict = judge_liveness(records, RUNNING, last + 61)
    assert verdict.status is Status.FAIL
    assert verdict.summary == "no progress for 61 s (trigger every 10 s)"
    assert verdict.evidence["stale_after_seconds"] == 60.0
    assert verdict.evidence["age_seconds"] == 61.0

    slow = HealthPolicy(min_stale_seconds=10)
    assert judge_liveness(records, RUNNING, last + 31, slow).summary == (
        "no progress for 31 s (trigger every 10 s)"
    )


def test_long_batches_stretch_the_stale_limit():
    records = batches(5, rows_in=8000, processed_rate=200.0)  # 40 s batches on a 10 s trigger
    last = records[-1].ts
    verdict = judge_liveness(records, RUNNING, last + 100)
    assert verdict.passed
    assert verdict.evidence["stale_after_seconds"] == 120.0
    assert judge_liveness(records, RUNNING, last + 121).status is Status.FAIL


def test_a_started_query_without_batches_is_alive_until_stale():
    assert judge_liveness([started(T0)], RUNNING, T0 + 30).summary == (
        "running, no batch yet (started 30 s ago)"
    )
    assert judge_liveness([started(T0)], RUNNING, T0 + 61).status is Status.FAIL


def test_a_failed_run_fails_with_its_detail():
    verdict = judge_liveness(batches(2), RunState("failed", "run 1a2b failed: OOM"), T0 + 20)
    assert (verdict.status, verdict.summary) == (Status.FAIL, "run failed: run 1a2b failed: OOM")


def test_a_query_terminated_with_an_error_fails_naming_its_class():
    dead = ProgressRecord(T0 + 25, "terminated", "orders", "1a2b", trigger_seconds=10.0,
                          error_class="STATE_STORE_CORRUPTED", error="checksum mismatch")  # fmt: skip
    verdict = judge_liveness([*batches(3), dead], RUNNING, T0 + 30)
    assert verdict.status is Status.FAIL
    assert verdict.summary == "query terminated with STATE_STORE_CORRUPTED: checksum mismatch"
    assert verdict.evidence["error_class"] == "STATE_STORE_CORRUPTED"
    assert verdict.evidence["last_batch_id"] == 2


def test_a_query_that_ended_cleanly_passes_while_its_run_finishes():
    ended = ProgressRecord(T0 + 25, "terminated", "orders", "1a2b", trigger_seconds=10.0)
    records = [*batches(3), ended]
    assert judge_liveness(records, RUNNING, T0 + 30).summary == (
        "query ended cleanly 5 s ago; its run is finishing"
    )
    late = judge_liveness(records, RUNNING, T0 + 100)
    assert (late.status, late.summary) == (
        Status.WARN,
        "query ended 75 s ago but its run still says running",
    )


def test_stopped_and_never_run_streams_pass():
    stopped = judge_liveness(
        batches(2), RunState("stopped", "run 1a2b cancelled by a user"), T0 + 9e5
    )
    assert (stopped.status, stopped.summary) == (
        Status.PASS,
        "not running: run 1a2b cancelled by a user",
    )
    assert judge_liveness([], RunState("never_run"), T0).summary == "not running: never run"


def test_a_running_run_with_nothing_recorded_warns():
    assert judge_liveness([], RUNNING, T0).status is Status.WARN


# --- falling behind -------------------------------------------------------------------------------


def test_source_lag_above_the_warn_threshold_warns():
    verdict = judge_falling_behind(batches(3, lag=(6000, 6001)), broker_lag=None)
    assert verdict.status is Status.WARN
    assert verdict.summary == "12001 records behind the topic (warn above 10000)"
    assert verdict.evidence["source_lag_records"] == 12001
    assert verdict.evidence["max_partition_lag"] == 6001
    assert "12001 records behind" in verdict.remedy


def test_broker_lag_above_the_fail_threshold_fails_and_the_larger_lag_counts():
    verdict = judge_falling_behind(batches(3, lag=(6000, 6000)), broker_lag=2_000_000)
    assert verdict.status is Status.FAIL
    assert verdict.summary == "2000000 records behind the topic (fail above 1000000)"
    assert verdict.evidence["lag_records"] == 2_000_000
    assert verdict.evidence["source_lag_records"] == 12_000
    assert verdict.evidence["broker_lag_records"] == 2_000_000


def test_broker_lag_alone_is_judged_for_a_stream_without_kafka_metrics():
    verdict = judge_falling_behind(batches(3, lag=None), broker_lag=20_000)
    assert (verdict.status, verdict.summary) == (
        Status.WARN,
        "20000 records behind the topic (warn above 10000)",
    )
    assert "source_lag_records" not in verdict.evidence


def test_without_kafka_and_broker_lag_only_rates_are_judged():
    verdict = judge_falling_behind(batches(10, lag=None), broker_lag=None)
    assert verdict.passed
    assert "lag_records" not in verdict.evidence
    assert verdict.evidence["rate_batches"] == 10


def test_input_above_processing_over_full_batches_is_falling_behind():
    # 3000 rows at 200 rows/s: 15 s batches on a 10 s trigger, so every batch is full.
    records = batches(10, rows_in=3000, input_rate=300.0, processed_rate=200.0)
    verdict = judge_falling_behind(records, broker_lag=None)
    assert verdict.status is Status.WARN
    assert (
        verdict.summary
        == "input arrives at 300.0 rows/s but is processed at 200.0 rows/s over 10 full batches"
    )
    assert verdict.evidence["full_batches"] == 10

    # The same rates with 5 s batches: Spark idles half of each trigger, it can catch up.
    short = batches(10, rows_in=1000, input_rate=300.0, processed_rate=200.0)
    assert judge_falling_behind(short, broker_lag=None).passed
    # Within behind_ratio (1.2): 230 / 200 = 1.15.
    close = batches(10, rows_in=3000, input_rate=230.0, processed_rate=200.0)
    assert judge_falling_behind(close, broker_lag=None).passed
    # Too few batches with input to say it is sustained.
    assert judge_falling_behind(records[:2], broker_lag=None).passed


# --- late data ------------------------------------------------------------------------------------


def test_rows_dropped_by_the_watermark_above_the_fraction_warn_with_counts():
    verdict = judge_late_data(batches(10, dropped=50))
    assert verdict.status is Status.WARN
    assert verdict.summary == (
        "500 of 10000 input rows (5.0%) arrived after the watermark and were dropped over 10 batches"
    )
    assert verdict.evidence["rows_dropped_late"] == 500
    assert verdict.evidence["late_fraction"] == 0.05
    assert judge_late_data(batches(10, dropped=10)).passed  # 1.0% is not above 1%


def test_a_watermark_far_behind_the_wall_clock_warns():
    verdict = judge_late_data(batches(3, watermark_delay=7200.0))
    assert (verdict.status, verdict.summary) == (
        Status.WARN,
        "event time is 7200 s behind the wall clock",
    )
    assert verdict.evidence["watermark_delay_seconds"] == 7200.0


def test_no_watermark_passes():
    assert judge_late_data(batches(3, watermark_delay=None)).summary == "no watermark"
    assert judge_late_data([started()]).summary == "no batches yet"


# --- observation ----------------------------------------------------------------------------------


def test_progress_observation_gives_the_numbers_to_plot():
    records = batches(3, state_rows=4000, dropped=3, lag=(100, 300))
    assert progress_observation(records, broker_lag=500, now=records[-1].ts + 7) == {
        "batch_id": 2,
        "rows_in": 1000,
        "input_rows_per_sec": 100.0,
        "processed_rows_per_sec": 200.0,
        "state_rows": 4000,
        "state_memory_bytes": 2_108_456,
        "state_sst_bytes": 500_000,
        "bytes_per_key": 125.0,
        "rows_dropped_late": 3,
        "batch_age_seconds": 7.0,
        "watermark_delay_seconds": 120.0,
        "source_lag_records": 400,
        "broker_lag_records": 500,
        "lag_records": 500,
    }
    stateless = progress_observation(
        batches(1, state_rows=None, lag=None, watermark_delay=None), None
    )
    assert stateless["state_rows"] == 0 and "bytes_per_key" not in stateless
    assert not {"batch_age_seconds", "lag_records", "watermark_delay_seconds"} & stateless.keys()
    assert progress_observation([], broker_lag=9) == {"broker_lag_records": 9, "lag_records": 9}


# --- real samples ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["kafka_running_count", "kafka_window_count", "rate_dedup_window"])
def test_real_samples_parse_and_a_live_healthy_query_passes(name: str):
    records = real_records(name)
    now = records[-1].ts + 2
    for verdict in (
        judge_liveness(records, RUNNING, now),
        judge_falling_behind(records, broker_lag=None),
        judge_state_growth(records),
        judge_late_data(records),
    ):
        assert verdict.status is Status.PASS, verdict.line()
    obs = progress_observation(records, None, now)
    assert obs["batch_id"] == len(records) - 1 and obs["state_rows"] > 0


def test_real_kafka_lag_metrics_equal_latest_minus_end_offsets():
    for p in load("kafka_running_count") + load("kafka_window_count"):
        (source,) = p["sources"]
        behind = sum(
            latest - source["endOffset"][topic][part]
            for topic, parts in source["latestOffset"].items()
            for part, latest in parts.items()
        )
        lag = source_lag(p)
        assert lag is not None and lag.records == behind
        assert lag.max_partition == int(source["metrics"]["maxOffsetsBehindLatest"])
    assert source_lag(load("rate_dedup_window")[0]) is None


def test_real_samples_numbers():
    running = real_records("kafka_running_count")
    state = judge_state_growth(running)
    assert state.evidence["state_rows"] == 30
    assert state.evidence["state_sst_bytes"] == 3241  # customMetrics.rocksdbSstFileSize
    assert state.evidence["bytes_per_key"] == 108.0
    assert judge_falling_behind(running, None).evidence["lag_records"] == 555

    window = real_records("kafka_window_count")
    late = judge_late_data(window)
    # 40 late input rows of one key and window reached the state operator as 1 partial aggregate.
    assert late.evidence["rows_dropped_late"] == 1
    assert late.evidence["rows_in"] == sum(p["numInputRows"] for p in load("kafka_window_count"))

    rate = load("rate_dedup_window")
    assert rate[0]["eventTime"]["watermark"] == "1970-01-01T00:00:00.000Z"
    assert watermark_seconds(rate[0]) is None  # no watermark yet, not 56 years behind
    assert watermark_seconds(rate[2]) == parse_spark_time("2026-11-22T02:57:40.538Z")
