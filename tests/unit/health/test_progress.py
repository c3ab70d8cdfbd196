"""Reading real Spark 4.2 progress: watermarks, state sizes, and healthy queries pass."""

from __future__ import annotations

import pytest

from platform_pipelines.core.times import parse_iso
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.late_data import judge_late_data
from platform_pipelines.health.liveness import judge_liveness
from platform_pipelines.health.progress import ran_state, state_bytes, watermark_seconds
from platform_pipelines.health.state_growth import judge_state_growth
from platform_pipelines.health.throughput import judge_falling_behind
from tests.unit.health.factories import RUNNING, batch, load, real_records


@pytest.mark.parametrize("name", ["kafka_running_count", "kafka_window_count", "rate_dedup_window"])
def test_real_samples_of_a_live_healthy_query_pass(name: str):
    records = real_records(name)
    now = records[-1].ts + 2
    for verdict in (judge_liveness(records, RUNNING, now), judge_falling_behind(records, None),
                    judge_state_growth(records)):  # fmt: skip
        assert verdict.status is Status.PASS, verdict.line()
    late = judge_late_data(records)
    if name == "kafka_window_count":  # its producer stamped events 33 s ahead of the driver
        assert (late.status, late.summary.split("; ")[-1]) == (
            Status.WARN, "the watermark is 33 s ahead of the wall clock",
        )  # fmt: skip
    else:
        assert late.status is Status.PASS, late.line()


def test_real_sample_numbers():
    state = judge_state_growth(real_records("kafka_running_count"))
    assert state.evidence["state_rows"] == 30
    assert state.evidence["state_sst_bytes"] == 3241  # customMetrics.rocksdbSstFileSize
    assert state.evidence["bytes_per_key"] == 108.0
    late = judge_late_data(real_records("kafka_window_count"))
    # 40 late input rows of one key and window reached the state operator as 1 partial aggregate.
    assert late.evidence["late_rows"] == 1
    rate = load("rate_dedup_window")
    assert rate[0]["eventTime"]["watermark"] == "1970-01-01T00:00:00.000Z"
    assert watermark_seconds(rate[0]) is None  # no watermark yet, not 56 years behind
    assert watermark_seconds(rate[2]) == parse_iso("2026-11-22T02:57:40.538Z")


def test_state_bytes_prefer_the_sst_size_and_idle_batches_ran_no_state():
    assert state_bytes(batch(0).progress) == 500_000
    assert state_bytes(batch(0, sst=None).progress) == 2_108_456
    assert ran_state(batch(0))
    assert not ran_state(batch(1, rows_in=0, state_rows=0, removed=0, updated=0))
    assert not ran_state(batch(2, state_rows=None))
