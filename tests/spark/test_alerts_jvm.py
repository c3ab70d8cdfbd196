"""The built-in alerts' Java port (``jvm/alerts``) against the Python rules it ports
(``state/alerts.py`` run by the keyed-logic adapter), on Spark, over the same hostile input; and
its own deduplication against Spark's ``dropDuplicatesWithinWatermark`` in front of the rules."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from platform_pipelines.state.alerts import AlertConfig, FailedLoginAlerts
from platform_pipelines.streams.alerts import failed_login_alerts
from platform_pipelines.streams.builtin import builtin_streams, deduplicate
from platform_pipelines.streams.keyed import apply_keyed_logic
from platform_pipelines.streams.schemas import CLICKSTREAM
from platform_pipelines.streams.watermark import with_watermark

pytestmark = pytest.mark.spark

CONFIG = AlertConfig(threshold=3, window_ms=10 * 60 * 1000)


def hostile_batches(seed: int, users: int = 8, batches: int = 3, per_batch: int = 220) -> list:
    """Disordered login batches that stress every rule: failures out of order within and across
    batches, equal failure times, gaps of exactly the window and just over it, successes that
    reset, some in the same millisecond as failures (``state.alerts.login_order`` decides, not
    the order Spark delivers them in), other event types (ignored), and events far behind the
    watermark (dropped as late)."""
    rng = random.Random(seed)
    base = datetime(2026, 11, 22, 10, tzinfo=UTC)
    clock = [0.0] * users
    out, n = [], 0
    for b in range(batches):
        rows = []
        for _ in range(per_batch):
            u = rng.randrange(users)
            clock[u] += rng.choices([0, 0.5, 1, 3, 10, 10.5, 25], [20, 25, 20, 15, 8, 6, 6])[0]
            minute = clock[u] - rng.choice([0, 0, 0, 2, 6]) + (b * 15 if u % 3 == 0 else 0)
            if rng.random() < 0.03:
                minute -= 300  # ancient: behind the watermark by the time it arrives
            kind = rng.choices(["login_failed", "login_success", "page_view"], [70, 8, 22])[0]
            at = base + timedelta(minutes=minute)
            n += 1
            rows.append(
                {
                    "event_id": f"e{n:05d}",
                    "user_id": f"u{u}",
                    "event_type": kind,
                    "page": None,
                    "amount": None,
                    "event_time": at.isoformat().replace("+00:00", "Z"),
                }
            )
        rng.shuffle(rows)
        out.append(rows)
    return out


def with_copies(batches: list, seed: int) -> list:
    """``batches`` with exact copies of about one event in six (a producer's retries): in the
    same batch, in the next one, or two batches later (by then some are behind the watermark)."""
    rng = random.Random(seed)
    out = [list(rows) for rows in batches]
    for b, rows in enumerate(batches):
        for row in rows:
            if rng.random() < 1 / 6:
                later = min(b + rng.choice([0, 0, 1, 2]), len(batches) - 1)
                out[later].insert(rng.randrange(len(out[later]) + 1), dict(row))
    return out


def run(spark: SparkSession, root: Path, alerts_of, batches: list) -> list[tuple]:
    """Feed ``batches`` one file per micro-batch through ``alerts_of``; the table's rows."""
    source = root / "events"
    source.mkdir(parents=True)
    for b, rows in enumerate(batches):
        (source / f"{b}.json").write_text("\n".join(json.dumps(r) for r in rows))
        events = with_watermark(
            spark.readStream.schema(CLICKSTREAM).json(str(source)),
            "event_time",
            timedelta(minutes=10),
        )
        query = (
            alerts_of(events)
            .writeStream.format("delta")
            .outputMode("append")
            .option("checkpointLocation", str(root / "checkpoint"))
            .trigger(availableNow=True)
            .start(str(root / "alerts"))
        )
        try:
            query.awaitTermination(300)
        finally:
            query.stop()
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(root / "alerts")).collect())


def python(events: DataFrame) -> DataFrame:
    """The Python rules on Spark (the keyed-logic adapter), with the built-in stream's output."""
    return apply_keyed_logic(
        events,
        ("user_id",),
        FailedLoginAlerts(CONFIG),
        builtin_streams().get("security_alerts").output,
        "append",
        "EventTime",
        "event_time",
    )


def test_the_jvm_port_raises_exactly_the_python_rules_alerts_on_hostile_input(
    spark: SparkSession, tmp_path: Path
) -> None:
    batches = hostile_batches(seed=11)

    jvm = run(spark, tmp_path / "jvm", lambda events: failed_login_alerts(events, CONFIG), batches)
    expected = run(spark, tmp_path / "python", python, batches)

    assert len(jvm) > 20  # alerts across batches, for several users
    assert {r[4] for r in jvm} == {3}  # each at the threshold, then the count starts again
    assert len({r[1] for r in jvm}) >= 5
    assert jvm == expected


def test_copies_of_an_event_count_once_as_behind_sparks_own_deduplication(
    spark: SparkSession, tmp_path: Path
) -> None:
    batches = with_copies(hostile_batches(seed=23), seed=5)

    jvm = run(spark, tmp_path / "jvm", lambda events: failed_login_alerts(events, CONFIG), batches)
    expected = run(spark, tmp_path / "deduplicated", lambda e: python(deduplicate(e)), batches)
    counted_twice = run(spark, tmp_path / "not-deduplicated", python, batches)

    assert len(jvm) > 20
    assert jvm == expected
    assert counted_twice != expected  # the copies would have raised other alerts


def test_a_copy_within_the_watermarks_millisecond_is_still_a_copy(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Spark judges lateness in microseconds, the rule's ids keep milliseconds: an id whose
    millisecond equals the watermark must outlive that batch, or its copy counts again."""
    pair = AlertConfig(threshold=2, window_ms=10 * 60 * 1000)

    def event(event_id: str, user: str, kind: str, at: str) -> dict:
        row = {"event_id": event_id, "user_id": user, "event_type": kind, "event_time": at}
        return {**row, "page": None, "amount": None}

    failure = event("x", "u1", "login_failed", "2026-11-22T10:00:00.000500Z")
    batches = [
        # the view moves the watermark to 10:00:00.000, the failure's millisecond
        [failure, event("v0", "u2", "page_view", "2026-11-22T10:10:00Z")],
        [event("v1", "u1", "page_view", "2026-11-22T10:01:00Z")],  # u1's state runs at it
        [dict(failure)],  # 500 us after the watermark: not late; one failure, not two
    ]

    alerts = run(spark, tmp_path, lambda events: failed_login_alerts(events, pair), batches)

    assert alerts == []
