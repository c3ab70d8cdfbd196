"""state_growth: a leak is state that only grows while nothing is removed; budgets and forecasts."""

from __future__ import annotations

import pytest

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.key_horizon import KeyHorizon, key_horizon
from platform_pipelines.health.policy import HealthPolicy
from platform_pipelines.health.state_growth import growth_run, judge_state_growth
from platform_pipelines.streams.builtin import builtin_streams
from tests.unit.health.factories import batch, batches, real_records, started
from user_streams.running_count import STREAMS

GROWING = [1000 * (i + 1) for i in range(10)]
LEAK_REMEDY = (
    "State keys are never removed: declare a watermark (keys expire as it passes them), or a "
    "processing-time timeout with a key_lifetime, or clear each key in the stream's logic when it "
    "is done."
)
FORECAST_REMEDY = (
    "State will outgrow its budget: shorten the watermark or key_lifetime, cut the key space, "
    "or raise the budget (HealthPolicy in health/policy.py)."
)
BUDGET_REMEDY = (
    "Shrink the state (a shorter watermark or key_lifetime, fewer keys); if it is meant to be "
    "this large, raise the budget (HealthPolicy in health/policy.py)."
)
NEAR_BUDGET = [40_000_000 + 100_000 * i for i in range(10)]  # +10_000 rows/s over 10 s batches


def idle_batch(i: int):
    """A batch without input whose operators did not run: it reports a state of 0 rows."""
    return batch(i, rows_in=0, state_rows=0, removed=0, updated=0)


def test_a_healthy_stream_holds_its_state_with_its_numbers():
    verdict = judge_state_growth([started(), *batches(10)])

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.PASS,
        "state holds 5,000 rows (10 stateful batches)",
        "",
    )
    assert verdict.evidence == {
        "state_rows": 5000,
        "state_memory_bytes": 2_108_456,
        "state_sst_bytes": 500_000,
        "bytes_per_key": 100.0,
        "growth_batches": 0,
    }


def test_ten_batches_of_growth_with_nothing_removed_is_a_leak():
    verdict = judge_state_growth(batches(10, state_rows=GROWING, removed=0))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "state grew from 1,000 to 10,000 rows over 10 batches and nothing was removed",
        LEAK_REMEDY,
    )
    assert verdict.evidence == {
        "state_rows": 10_000,
        "state_memory_bytes": 2_108_456,
        "state_sst_bytes": 500_000,
        "bytes_per_key": 50.0,  # 500_000 SST bytes / 10_000 rows
        "growth_batches": 10,
        "leak_from_rows": 1000,
        "leak_to_rows": 10_000,
    }


def test_growth_with_removals_is_not_a_leak():
    verdict = judge_state_growth(batches(10, state_rows=GROWING, removed=10))

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "state holds 10,000 rows (10 stateful batches)",
    )
    assert verdict.evidence["growth_batches"] == 0


def test_a_removal_resets_the_run_of_growth():
    removed = [0] * 5 + [7] + [0] * 4  # the newest run without removals is 4 batches long

    verdict = judge_state_growth(batches(10, state_rows=GROWING, removed=removed))

    assert (verdict.status, verdict.evidence["growth_batches"]) == (Status.PASS, 4)


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

    assert (verdict.status, verdict.evidence["growth_batches"]) == (Status.PASS, 4)


def test_the_growth_run_is_the_newest_batches_without_removals_or_decrease_oldest_first():
    records = batches(7, state_rows=[100, 200, 300, 250, 300, 400, 500], removed=0)

    assert growth_run(records) == records[3:]
    assert growth_run(batches(3, removed=[0, 0, 5])) == []
    assert growth_run([]) == []


def test_fewer_batches_than_leak_min_batches_are_never_a_leak():
    growing = {"state_rows": GROWING[:5], "removed": 0}

    four = judge_state_growth(batches(4, **growing))
    five = judge_state_growth(batches(5, **growing))
    five_of_six = judge_state_growth(batches(5, **growing), HealthPolicy(leak_min_batches=6))

    assert (four.status, four.summary) == (
        Status.PASS,
        "state holds 4,000 rows (4 stateful batches)",
    )
    assert (five.status, five.summary) == (
        Status.FAIL,
        "state grew from 1,000 to 5,000 rows over 5 batches and nothing was removed",
    )
    assert five_of_six.status is Status.PASS


def test_a_stateless_query_passes():
    verdict = judge_state_growth(batches(3, state_rows=None))

    assert (verdict.status, verdict.summary, verdict.evidence) == (Status.PASS, "stateless", {})


def test_no_batches_yet_pass():
    verdict = judge_state_growth([started()])

    assert (verdict.status, verdict.summary, verdict.evidence) == (
        Status.PASS,
        "no batches yet",
        {},
    )


def test_batches_whose_operators_never_ran_pass_as_no_state_yet():
    verdict = judge_state_growth([idle_batch(i) for i in range(3)])

    assert (verdict.status, verdict.summary) == (Status.PASS, "no batch has run the state yet")


def test_idle_batches_after_the_state_ran_are_not_an_empty_state():
    verdict = judge_state_growth([*batches(3), idle_batch(3), idle_batch(4)])

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "state holds 5,000 rows (3 stateful batches)",
    )
    assert verdict.evidence["state_rows"] == 5000


def test_idle_batches_neither_end_a_leak_nor_hide_it():
    rows = [1000, 2000, 0, 3000, 0, 4000, 5000, 0]
    no_input = [2, 4, 7]
    records = [
        idle_batch(i) if i in no_input else batch(i, state_rows=rows[i], removed=0)
        for i in range(len(rows))
    ]

    verdict = judge_state_growth(records)

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "state grew from 1,000 to 5,000 rows over 5 batches and nothing was removed",
    )
    assert (verdict.evidence["state_rows"], verdict.evidence["growth_batches"]) == (5000, 5)


def test_a_batch_without_input_that_evicted_state_counts_as_a_removal():
    records = [
        *batches(6, state_rows=GROWING[:6], removed=0),
        batch(6, rows_in=0, state_rows=5000, removed=1000, updated=0),
    ]

    verdict = judge_state_growth(records)

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "state holds 5,000 rows (7 stateful batches)",
    )
    assert verdict.evidence["growth_batches"] == 0


def test_rows_forecast_to_reach_the_budget_within_the_horizon_warn_with_the_time():
    verdict = judge_state_growth(batches(10, state_rows=NEAR_BUDGET, removed=50_000))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.WARN,
        "state rows will reach its budget of 50,000,000 rows in about 15 min 10 s "
        "(now 40,900,000 rows, +36,000,000 rows/h)",
        FORECAST_REMEDY,
    )
    assert verdict.evidence == {
        "state_rows": 40_900_000,
        "state_memory_bytes": 2_108_456,
        "state_sst_bytes": 500_000,
        "bytes_per_key": 0.0,  # round(500_000 / 40.9M, 1)
        "growth_batches": 0,
        "state_rows_budget": 50_000_000,
        "state_rows_per_hour": 36_000_000.0,
        "state_rows_budget_eta_seconds": 910,  # (50M - 40.9M) / 10_000 rows/s
    }


def test_a_forecast_beyond_the_horizon_or_without_a_budget_passes():
    records = batches(10, state_rows=NEAR_BUDGET, removed=50_000)

    beyond = judge_state_growth(records, HealthPolicy(forecast_horizon_seconds=900))  # 910 s away
    no_budget = judge_state_growth(records, HealthPolicy(state_rows_budget=None))

    assert (beyond.status, beyond.summary) == (
        Status.PASS,
        "state holds 40,900,000 rows (10 stateful batches)",
    )
    assert no_budget.status is Status.PASS


def test_a_forecast_needs_leak_min_batches_batches():
    verdict = judge_state_growth(batches(4, state_rows=NEAR_BUDGET[:4], removed=50_000))

    assert verdict.status is Status.PASS


def test_shrinking_state_is_not_forecast_to_reach_its_budget():
    shrinking = NEAR_BUDGET[::-1]

    verdict = judge_state_growth(batches(10, state_rows=shrinking, removed=100_000))

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "state holds 40,000,000 rows (10 stateful batches)",
    )


def test_state_rows_over_their_budget_fail():
    verdict = judge_state_growth(batches(3, state_rows=60_000_000))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "state rows is 60,000,000 rows, over its budget of 50,000,000 rows",
        BUDGET_REMEDY,
    )
    assert verdict.evidence["state_rows_budget"] == 50_000_000


def test_state_sst_over_the_bytes_budget_fails():
    verdict = judge_state_growth(
        batches(3, sst=5 * 1024**3), HealthPolicy(state_bytes_budget=4 * 1024**3)
    )

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "state SST is 5.0 GiB, over its budget of 4.0 GiB",
    )
    assert verdict.evidence["state_sst_bytes"] == 5 * 1024**3


def test_state_memory_over_the_bytes_budget_fails_even_with_an_sst_size():
    verdict = judge_state_growth(batches(3, memory=5000), HealthPolicy(state_bytes_budget=4096))

    assert (verdict.status, verdict.summary) == (
        Status.FAIL,
        "state memory is 4.9 KiB, over its budget of 4.0 KiB; "
        "state SST is 488.3 KiB, over its budget of 4.0 KiB",
    )


def test_a_leak_and_a_budget_forecast_are_both_reported():
    verdict = judge_state_growth(batches(10, state_rows=NEAR_BUDGET, removed=0))

    assert verdict.status is Status.FAIL
    assert verdict.summary == (
        "state grew from 40,000,000 to 40,900,000 rows over 10 batches and nothing was removed; "
        "state rows will reach its budget of 50,000,000 rows in about 15 min 10 s "
        "(now 40,900,000 rows, +36,000,000 rows/h)"
    )
    assert verdict.remedy == f"{LEAK_REMEDY} {FORECAST_REMEDY}"


def test_the_rocksdb_memory_jump_on_the_first_write_is_not_forecast():
    memory = [8360] + [2_108_456] * 9  # real RocksDB: jumps on the first write, then stays

    verdict = judge_state_growth(batches(10, state_rows=30, removed=0, memory=memory))

    assert verdict.status is Status.PASS


def test_memory_of_a_store_without_an_sst_size_is_forecast():
    growing = [1024**3 + 100_000_000 * i for i in range(10)]  # +10 MB/s, 1.84 GiB now

    verdict = judge_state_growth(batches(10, memory=growing, sst=None))

    assert (verdict.status, verdict.summary) == (
        Status.WARN,
        "state memory will reach its budget of 4.0 GiB in about 3 min 52 s "
        "(now 1.8 GiB, +33.5 GiB/h)",
    )
    assert verdict.evidence == {
        "state_rows": 5000,
        "state_memory_bytes": growing[-1],
        "bytes_per_key": round(growing[-1] / 5000, 1),  # memory per row without an SST size
        "growth_batches": 0,
        "state_memory_budget": 4 * 1024**3,
        "state_memory_per_hour": 36_000_000_000.0,
        "state_memory_budget_eta_seconds": 232,  # (4 GiB - 1.84 GiB) / 10 MB/s
    }


def test_only_the_newest_window_of_stateful_batches_is_forecast():
    # Fast growth long ago, flat since: the last 10 batches hold no trend.
    rows = [40_000_000 + 100_000 * i for i in range(10)] + [40_900_000] * 10
    records = batches(20, state_rows=rows, removed=50_000)

    assert judge_state_growth(records).status is Status.PASS
    assert judge_state_growth(records, HealthPolicy(window_batches=20)).status is Status.WARN


@pytest.mark.parametrize(
    ("name", "summary", "sst", "bytes_per_key"),
    [
        ("kafka_running_count", "state holds 30 rows (5 stateful batches)", 3241, 108.0),
        # No snapshot uploaded yet (SST 0): bytes per key falls back to memory.
        ("kafka_window_count", "state holds 1 rows (9 stateful batches)", 0, 2_101_440.0),
        # Its first batch had no input and ran no state.
        ("rate_dedup_window", "state holds 51 rows (5 stateful batches)", 0, 41_288.5),
    ],
)
def test_a_real_query_holds_its_state(name: str, summary: str, sst: int, bytes_per_key: float):
    verdict = judge_state_growth(real_records(name))

    assert (verdict.status, verdict.summary) == (Status.PASS, summary)
    assert (verdict.evidence["state_sst_bytes"], verdict.evidence["bytes_per_key"]) == (
        sst,
        bytes_per_key,
    )


def test_batches_are_judged_in_time_order_whatever_order_they_were_read_in():
    records = batches(10, state_rows=GROWING, removed=0)

    verdict = judge_state_growth(records[::-1])

    assert verdict.summary == (
        "state grew from 1,000 to 10,000 rows over 10 batches and nothing was removed"
    )


# Judged against what the stream declares: keys younger than its horizon are not a leak.

EVENTS = builtin_streams().get("events")  # dedup within a 10-minute watermark
SESSIONS = builtin_streams().get("user_sessions")  # 10-minute watermark, 30-minute gap
OUTLIVED_REMEDY = (
    "Keys outlive what the stream declares: remove each key's state when it is done (on its "
    "timer, when its session or window closes), or declare the key_lifetime its keys really have."
)


def test_dedup_keys_younger_than_the_watermark_are_not_a_leak():
    # The stream: 7 batches 10 s apart, every key less than two minutes old.
    rows = [500, 600, 700, 800, 900, 950, 1000]
    records = batches(7, state_rows=rows, removed=0, watermark_delay=600.0)

    verdict = judge_state_growth(records, horizon=key_horizon(EVENTS))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.PASS,
        "state grew from 500 to 1,000 rows over 7 batches with nothing removed yet: event time "
        "moved on 1 min 1 s, within the 20 min the stream keeps a key (watermark 10 min + key "
        "lifetime 10 min)",
        "",
    )
    assert (verdict.evidence["key_horizon_seconds"], verdict.evidence["clock_advance_seconds"]) == (
        1200.0,
        61.0,  # 6 batches of 10 s, plus the 1 s the first batch's newest event was old
    )


def test_open_sessions_within_their_gap_are_not_a_leak():
    rows = [40, 52, 63, 75, 85]

    verdict = judge_state_growth(
        batches(5, state_rows=rows, removed=0, watermark_delay=600.0), horizon=key_horizon(SESSIONS)
    )

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "state grew from 40 to 85 rows over 5 batches with nothing removed yet: event time moved "
        "on 41 s, within the 40 min the stream keeps a key (watermark 10 min + key lifetime 30 min)",
    )


def test_keys_kept_past_the_declared_horizon_are_still_a_leak():
    # key_counts declares a 10-minute watermark but its logic never removes a key: 26 batches a
    # minute apart take event time 25 minutes on, past the 20 it may keep a key.
    key_counts = STREAMS[0]
    records = batches(
        26,
        every=60.0,
        state_rows=[100 * (i + 1) for i in range(26)],
        removed=0,
        watermark_delay=600.0,
    )

    verdict = judge_state_growth(records, horizon=key_horizon(key_counts))

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "state grew from 100 to 2,600 rows over 26 batches and nothing was removed, though event "
        "time moved on 25 min 1 s: past the 20 min the stream keeps a key (watermark 10 min + key "
        "lifetime 10 min)",
        OUTLIVED_REMEDY,
    )
    assert verdict.evidence["leak_to_rows"] == 2600


def test_a_stream_that_declares_no_horizon_is_judged_by_its_batches_alone():
    records = batches(5, state_rows=GROWING[:5], removed=0, watermark_delay=None)

    verdict = judge_state_growth(
        records, horizon=key_horizon(builtin_streams().get("service_status"))
    )

    assert (verdict.status, verdict.summary, verdict.remedy) == (
        Status.FAIL,
        "state grew from 1,000 to 5,000 rows over 5 batches and nothing was removed",
        LEAK_REMEDY,
    )


def test_without_a_watermark_in_the_batches_a_horizon_cannot_excuse_growth():
    records = batches(5, state_rows=GROWING[:5], removed=0, watermark_delay=None)

    verdict = judge_state_growth(records, horizon=key_horizon(EVENTS))

    assert (verdict.status, verdict.remedy) == (Status.FAIL, LEAK_REMEDY)
    assert "clock_advance_seconds" not in verdict.evidence


def test_a_processing_time_horizon_is_measured_on_the_wall_clock():
    timeouts = KeyHorizon("processing_time", 0.0, 300.0)
    growing = {"state_rows": GROWING, "removed": 0, "watermark_delay": None}

    young = judge_state_growth(batches(10, every=10.0, **growing), horizon=timeouts)
    old = judge_state_growth(batches(10, every=40.0, **growing), horizon=timeouts)

    assert (young.status, young.summary) == (
        Status.PASS,
        "state grew from 1,000 to 10,000 rows over 10 batches with nothing removed yet: processing "
        "time moved on 1 min 30 s, within the 5 min the stream keeps a key (processing-time "
        "timeout 5 min)",
    )
    assert (old.status, old.summary, old.remedy) == (
        Status.FAIL,
        "state grew from 1,000 to 10,000 rows over 10 batches and nothing was removed, though "
        "processing time moved on 6 min: past the 5 min the stream keeps a key (processing-time "
        "timeout 5 min)",
        OUTLIVED_REMEDY,
    )


def test_a_healthy_stream_with_a_horizon_reads_as_before():
    verdict = judge_state_growth(batches(10, watermark_delay=600.0), horizon=key_horizon(EVENTS))

    assert (verdict.status, verdict.summary) == (
        Status.PASS,
        "state holds 5,000 rows (10 stateful batches)",
    )
    assert "key_horizon_seconds" not in verdict.evidence
