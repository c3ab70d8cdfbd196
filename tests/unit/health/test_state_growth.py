"""state_growth: a leak is state that only grows while nothing is removed; budgets and forecasts."""

from __future__ import annotations

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.policy import HealthPolicy
from platform_pipelines.health.state_growth import judge_state_growth
from tests.unit.health.factories import batch, batches, started


def test_a_healthy_stream_holds_its_state_with_its_numbers():
    state = judge_state_growth([started(), *batches(10)])
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


def test_ten_batches_of_growth_with_nothing_removed_is_a_leak():
    verdict = judge_state_growth(
        batches(10, state_rows=[1000 * (i + 1) for i in range(10)], removed=0)
    )
    assert verdict.status is Status.FAIL
    assert (
        verdict.summary
        == "state grew from 1000 to 10000 rows over 10 batches and nothing was removed"
    )
    assert (verdict.evidence["leak_from_rows"], verdict.evidence["leak_to_rows"]) == (1000, 10000)
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


def test_a_stateless_query_no_batches_and_idle_batches_pass():
    assert judge_state_growth(batches(3, state_rows=None)).summary == "stateless"
    assert judge_state_growth([started()]).summary == "no batches yet"
    idle = batches(3, rows_in=0, state_rows=0, removed=0, updated=0)
    assert judge_state_growth(idle).summary == "no batch has run the state yet"


def test_an_idle_batch_reporting_zero_state_does_not_end_or_shrink_the_state():
    """An idle batch reports 0 rows; its operators did not run, so it is not a measurement."""
    leaking = batches(6, state_rows=[1000 * (i + 1) for i in range(6)], removed=0)
    idle = batch(6, rows_in=0, state_rows=0, removed=0, updated=0)
    verdict = judge_state_growth([*leaking, idle])
    assert verdict.status is Status.FAIL
    assert verdict.evidence["state_rows"] == 6000


def test_rows_forecast_to_reach_the_budget_within_the_horizon_warn_with_the_time():
    rows = [40_000_000 + 100_000 * i for i in range(10)]  # +10_000 rows/s, rows removed: no leak
    verdict = judge_state_growth(batches(10, state_rows=rows, removed=50_000))
    assert verdict.status is Status.WARN
    assert verdict.summary == (
        "state rows will reach its budget of 50000000 rows in about 15 min 10 s "
        "(now 40900000, +36000000 rows/h)"
    )
    assert verdict.evidence["state_rows_budget_eta_seconds"] == 910  # (50M - 40.9M) / 10_000
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


def test_rocksdb_memory_jump_is_not_forecast_but_memory_of_a_store_without_sst_size_is():
    memory = [8360] + [2_108_456] * 9  # real RocksDB: jumps on the first write, then stays
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
