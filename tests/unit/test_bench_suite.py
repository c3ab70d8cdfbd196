"""The benchmark suite's pure parts (``benchmarks/harness``): percentiles, min / median / max over
repeats, ratios and the shape of ``suite.json``. No JVM, no broker."""

from __future__ import annotations

import json
from typing import Any

import click
import pytest

from benchmarks.harness.options import counts
from benchmarks.harness.results import (
    RATIOS,
    SCHEMA,
    SECTIONS,
    Figures,
    build_document,
    compute_ratios,
    evaluate_targets,
    shape_problems,
)
from benchmarks.harness.stats import (
    latency_figures,
    paired_ratios,
    percentile,
    ratio,
    settled,
    spread,
    spreads_of,
)
from benchmarks.harness.visibility import latencies


def sample(wall: float, rows: int, load: float = 1.5) -> dict[str, float]:
    return {
        "wall_seconds": wall,
        "rows": rows,
        "rows_per_second": rows / wall,
        "load_before": load,
        "load_after": load,
    }


def figures_of_two_repeats() -> Figures:
    figures = Figures()
    for wall_platform, wall_plain in ((11.0, 10.0), (13.0, 10.0)):
        figures.add("throughput", "clickstream_raw", "platform", sample(wall_platform, 1000))
        figures.add("throughput", "clickstream_raw", "plain", sample(wall_plain, 1000))
    figures.add("throughput", "user_sessions", "platform", sample(20.0, 1000))
    figures.add("throughput", "user_sessions", "native", sample(5.0, 1000))
    latency = {
        "p50_seconds": 2.0,
        "p95_seconds": 4.0,
        "achieved_rate": 9_500.0,
        "load_before": 1.0,
        "load_after": 1.2,
    }
    figures.add("latency", "kafka_to_events", "platform", latency, rate=10_000.0)
    figures.add(
        "latency",
        "kafka_to_events",
        "plain_single_query",
        {**latency, "p50_seconds": 0.5},
        rate=10_000.0,
    )
    figures.add(
        "restart",
        "events",
        "platform",
        {"first_batch_seconds": 3.0, "load_before": 1.0, "load_after": 1.0},
        keys=1_000_000,
    )
    return figures


def document(figures: Figures) -> dict[str, Any]:
    return build_document(
        config={"mode": "quick"},
        figures=figures,
        charts=["suite.png"],
        machine={
            "cores": 2,
            "load_average_start": [1.0, 1.0, 1.0],
            "versions": {"pyspark": "4.2.0"},
        },
        started_at="2026-11-23T12:00:00+00:00",
        finished_at="2026-11-23T12:03:00+00:00",
        seconds=180.0,
    )


def test_percentiles_interpolate_between_ranks_like_numpy() -> None:
    values = [4.0, 1.0, 3.0, 2.0]

    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 2.5
    assert percentile(values, 95) == pytest.approx(3.85)
    assert percentile(values, 100) == 4.0
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) is None


def test_a_percentile_outside_0_to_100_is_refused() -> None:
    with pytest.raises(ValueError, match="between 0 and 100"):
        percentile([1.0], 101)


def test_spread_is_min_median_max_of_the_values_present() -> None:
    assert spread([3.0, 1.0, 2.0, None]) == {"min": 1.0, "median": 2.0, "max": 3.0, "n": 3}
    assert spread([2.0, 4.0]) == {"min": 2.0, "median": 3.0, "max": 4.0, "n": 2}
    assert spread([None]) == {"min": None, "median": None, "max": None, "n": 0}


def test_spreads_cover_every_numeric_field_of_the_samples() -> None:
    samples = [
        {"wall_seconds": 2.0, "rows": 10, "name": "a", "ok": True},
        {"wall_seconds": 4.0, "rows": 30, "name": "b", "ok": False},
    ]

    assert spreads_of(samples) == {
        "wall_seconds": {"min": 2.0, "median": 3.0, "max": 4.0, "n": 2},
        "rows": {"min": 10.0, "median": 20.0, "max": 30.0, "n": 2},
    }


def test_ratios_are_none_when_a_side_is_missing_or_zero() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(1.0, 0.0) is None
    assert ratio(None, 2.0) is None
    assert paired_ratios([2.0, 6.0, 1.0], [1.0, 3.0]) == [2.0, 2.0]


def test_latencies_follow_the_send_order_and_bound_the_rows_never_seen() -> None:
    sent = {"b": 2_000.0, "a": 1_000.0, "c": 3_000.0}
    visible = {"a": 1_500.0, "b": 4_000.0}

    assert latencies(sent, visible) == [0.5, 2.0]
    assert latencies(sent, visible, until_ms=9_000.0) == [0.5, 2.0, 6.0]


def test_latency_figures_count_the_rows_never_seen() -> None:
    figures = latency_figures([0.5, 2.0, 6.0], produced=3, visible=2)

    assert figures["p50_seconds"] == 2.0
    assert figures["p95_seconds"] == pytest.approx(5.6)
    assert figures["max_seconds"] == 6.0
    assert (figures["visible_rows"], figures["produced_rows"]) == (2, 3)
    assert figures["visible_share"] == pytest.approx(2 / 3)


def test_repeats_of_one_measurement_gather_in_one_entry() -> None:
    figures = figures_of_two_repeats()

    bronze = figures.get("throughput", "clickstream_raw", "platform")

    assert bronze is not None and len(bronze.samples) == 2
    assert bronze.median("wall_seconds") == 12.0


def test_ratios_pair_the_repeats_and_report_their_median() -> None:
    ratios = compute_ratios(figures_of_two_repeats())

    assert ratios["bronze_overhead_ratio"]["median"] == pytest.approx((1.1 + 1.3) / 2)
    assert ratios["bronze_overhead_ratio"]["min"] == pytest.approx(1.1)
    assert ratios["bronze_vs_plain_ratio"]["max"] == pytest.approx(10 / 11)
    assert ratios["sessions_vs_native_ratio"]["median"] == pytest.approx(0.25)
    assert ratios["dedup_latency_p50_overhead_ratio"]["median"] == pytest.approx(4.0)
    assert "alerts_overhead_ratio" not in ratios  # not measured, not invented


def test_every_ratio_is_named_like_a_ratio() -> None:
    assert all(spec.name.endswith("_ratio") for spec in RATIOS)
    assert len({spec.name for spec in RATIOS}) == len(RATIOS)


def test_targets_are_judged_only_at_their_scale() -> None:
    heads = {
        "dedup_path_events_per_second": 60_000.0,
        "throughput_records": 300_000,
        "dedup_latency_p50_seconds": 0.8,
        "dedup_latency_rate": 10_000.0,
        "dedup_latency_achieved_rate": 6_000.0,
        "restart_first_batch_seconds": 3.0,
        "restart_keys": 1_000_000,
    }
    ratios = {"sessions_vs_native_ratio": {"median": 0.3}}

    verdicts = {t["figure"]: t for t in evaluate_targets(heads, ratios)}

    assert verdicts["dedup_path_events_per_second"]["met"] is True
    assert verdicts["sessions_vs_native_ratio"]["met"] is False
    assert verdicts["dedup_latency_p50_seconds"]["met"] is None  # 6k/s reached, not 10k/s
    assert verdicts["restart_first_batch_seconds"]["met"] is True
    assert verdicts["bronze_overhead_ratio"]["met"] is None  # not measured

    smoke = {**heads, "throughput_records": 6_000}  # a --quick run: mostly fixed costs
    small = {t["figure"]: t for t in evaluate_targets(smoke, ratios)}
    assert small["dedup_path_events_per_second"]["met"] is None
    assert small["sessions_vs_native_ratio"]["met"] is None
    assert small["sessions_vs_native_ratio"]["applies"] is False
    assert small["restart_first_batch_seconds"]["met"] is True  # its own scale: 1M keys


def test_the_results_document_has_every_section_ratio_and_figure() -> None:
    doc = json.loads(json.dumps(document(figures_of_two_repeats())))

    assert shape_problems(doc) == []
    assert doc["schema"] == SCHEMA
    assert all(section in doc for section in SECTIONS)
    assert doc["ratios"]["sessions_vs_native_ratio"] == pytest.approx(0.25)
    assert all(name.endswith("_ratio") for name in doc["ratios"])
    entry = doc["throughput"][0]
    assert (entry["name"], entry["variant"]) == ("clickstream_raw", "platform")
    assert entry["stats"]["wall_seconds"] == {"min": 11.0, "median": 12.0, "max": 13.0, "n": 2}
    assert entry["samples"][0]["load_after"] == 1.5
    assert doc["figures"]["restart_first_batch_seconds"] == 3.0
    assert doc["figures"]["dedup_latency_p50_seconds"] == 2.0


def test_shape_problems_name_what_is_wrong() -> None:
    doc = document(figures_of_two_repeats())
    doc["ratios"]["bronze_speedup"] = "fast"
    doc["throughput"][0]["samples"][0].pop("load_after")
    del doc["machine"]["cores"]

    problems = shape_problems(doc)

    assert "machine lacks 'cores'" in problems
    assert "ratio 'bronze_speedup' is not named *_ratio" in problems
    assert "ratio 'bronze_speedup' is 'fast', not a number" in problems
    assert "throughput/clickstream_raw/platform: a sample lacks load_after" in problems
    assert shape_problems({"schema": SCHEMA})[0] == "missing key 'config'"


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        ([], False),
        ([10.0], False),  # one run says nothing about the next
        ([27.7, 21.2, 18.9], False),  # still getting faster: 12 % between the last two
        ([18.9, 17.6, 18.4], True),  # 4.5 % apart
        ([17.0, 17.8], True),  # 4.7 % slower: noise, not a trend
        ([17.0, 17.9], False),  # slower by more than 5 %: not settled either
    ],
)
def test_a_warm_up_repeats_until_the_last_two_runs_agree_within_the_tolerance(times, expected):
    assert settled(times, 0.05) is expected


def test_list_options_take_positive_whole_numbers_and_say_what_to_give():
    assert counts("2, 4,8_000", "state partitions", "2,4,8") == (2, 4, 8000)
    with pytest.raises(click.BadParameter, match=r"give state partitions like 2,4,8"):
        counts("2,four", "state partitions", "2,4,8")
    with pytest.raises(click.BadParameter, match=r"at least one positive number of key counts"):
        counts("0", "key counts", "10000")


def test_the_stale_target_takes_the_worst_service_and_fails_on_one_never_shown() -> None:
    from benchmarks.harness.reaction import _worst
    from benchmarks.harness.reaction_targets import judge

    def run(delays: list[float | None]) -> dict[str, Any]:
        return {
            "variant": "platform",
            "rate": 2000.0,
            "alert_delta": {"p50_seconds": 1.5, "p95_seconds": 4.0},
            "dedup": {"p50_seconds": 2.5},
            "stale_service_seconds_after_timeout": _worst(delays),
            "stale_services_never_shown": sum(d is None for d in delays),
        }

    def stale(delays: list[float | None]) -> dict[str, Any]:
        verdicts = judge([run(delays)], stale_after_seconds=30)
        return next(v for v in verdicts if v["target"].startswith("stale service"))

    assert (stale([1.2, 4.9, 3.0])["measured"], stale([1.2, 4.9, 3.0])["met"]) == (4.9, True)
    assert (stale([1.2, 5.1])["measured"], stale([1.2, 5.1])["met"]) == (5.1, False)
    # a service never shown stale fails the target though the others were quick
    assert (stale([1.2, None])["measured"], stale([1.2, None])["met"]) == (1.2, False)
