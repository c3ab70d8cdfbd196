"""security_alerts and service_status on real Kafka, Spark (their JVM operators) and Delta."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from platform_pipelines.health.checkpoint import inspect_checkpoint
from platform_pipelines.kafka.heartbeats import heartbeat
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams, start_stream
from platform_pipelines.runtime.supervisor import Supervisor
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext
from tests.integration.events import at, ev
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def rows(spark, lake: Lakehouse, name: str) -> list[dict]:
    return [r.asDict() for r in spark.read.format("delta").load(str(lake.table(name))).collect()]


def catch_up(spark, lake, bootstrap, cfg: BuiltinSettings, names: list[str]) -> list[dict]:
    """Run ``names`` to the end of the topic; the progress of every batch, as (stream, progress)."""
    registry = builtin_streams(cfg)
    ctx = StreamContext(spark, lake, bootstrap)
    seen: list[dict] = []
    run_streams(
        ctx,
        [registry.get(n) for n in names],
        RunOptions(mode="catch_up"),
        lambda name, progress: seen.append({"stream": name, **progress}),
    )
    return seen


def state_rows(progress: list[dict], stream: str, operator: str) -> int:
    """The rows in ``operator``'s state after ``stream``'s last batch."""
    last = [p for p in progress if p["stream"] == stream][-1]
    (op,) = [o for o in last["stateOperators"] if o["operatorName"] == operator]
    return int(op["numRowsTotal"])


def failures(user: str, minutes: list[float], prefix: str) -> list[dict]:
    return [ev(f"{prefix}{i}", user, "login_failed", m, "/login") for i, m in enumerate(minutes)]


def ms(minute: float) -> int:
    return int(at(minute).timestamp() * 1000)


def test_five_failed_logins_within_ten_minutes_raise_one_alert_across_a_restart(
    spark, kafka_broker, topic_factory, tmp_path
):
    topic = topic_factory("alerts")
    cfg = BuiltinSettings(clickstream_topic=topic)
    lake = Lakehouse(tmp_path / "lake")
    streams = ["clickstream_raw", "events", "security_alerts"]
    produce_events(
        kafka_broker,
        topic,
        [
            *failures("u5", [0, 1, 2], "a"),
            *failures("u6", [0, 1, 2, 3], "b"),
            ev("b-ok", "u6", "login_success", 4, "/login"),
            ev("view", "u5", "page_view", 4, "/home"),
        ],
    )
    progress = catch_up(spark, lake, kafka_broker, cfg, streams)
    assert rows(spark, lake, "security_alerts") == []
    # The rule reads logins only: its state holds the two users who tried to log in (u5's
    # failures, u6's ids until the watermark passes them), not the viewer; no second operator.
    assert state_rows(progress, "security_alerts", "flatMapGroupsWithState") == 2
    (*_, last) = [p for p in progress if p["stream"] == "security_alerts"]
    assert [o["operatorName"] for o in last["stateOperators"]] == ["flatMapGroupsWithState"]
    assert state_rows(progress, "events", "dedupeWithinWatermark") == 9

    produce_events(
        kafka_broker,
        topic,
        [
            *failures("u5", [0], "a"),  # a copy of a0 (a retry): counting it would alert at c0
            *failures("u5", [3, 4], "c"),  # the 4th and 5th within 10 minutes: an alert
            *failures("u6", [5, 6, 7, 8], "d"),  # 4 after the success: no alert
            *failures("u7", [0, 6, 12, 18, 24], "e"),  # never 5 within 10 minutes
            ev("late", "u8", "page_view", 90, "/home"),  # moves the watermark: idle state expires
        ],
    )
    catch_up(spark, lake, kafka_broker, cfg, streams)

    assert rows(spark, lake, "security_alerts") == [
        {
            "alert_id": f"u5-{ms(4)}",
            "user_id": "u5",
            "first_failure_time": at(0).replace(tzinfo=None),
            "last_failure_time": at(4).replace(tzinfo=None),
            "failure_count": 5,
            "alert_type": "failed_logins",
        }
    ]


def statuses(spark, lake) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for row in sorted(
        rows(spark, lake, "service_status"), key=lambda r: (r["changed_at"], r["status"])
    ):
        found.setdefault(row["service"], []).append(row["status"])
    return found


def test_a_silent_service_goes_stale_once_without_new_input_and_ok_on_its_next_heartbeat(
    spark, kafka_broker, topic_factory, tmp_path
):
    topic = topic_factory("beats")
    cfg = BuiltinSettings(heartbeats_topic=topic, stale_after=timedelta(seconds=6))
    lake = Lakehouse(tmp_path / "lake")
    registry = builtin_streams(cfg)
    ctx = StreamContext(spark, lake, kafka_broker)
    # Real times: "stale" is stamped with the wall clock, "ok" with the heartbeat's event time.
    started = datetime.now(UTC) - timedelta(minutes=1)
    beats = [heartbeat("svc-a", started), heartbeat("svc-b", started)]
    produce_events(kafka_broker, topic, beats, key_field="service")
    every_second = RunOptions(mode="continuous", processing_time="1 second")
    supervisor = Supervisor(lambda *_: None)
    try:
        for name in ("service_heartbeats_raw", "service_status"):
            supervisor.add(name, start_stream(ctx, registry.get(name), every_second, "continuous"))
        # Each begins ok. A poll may see its stale row already (its timer is due 3 s after the
        # batch that read the minute-old heartbeat: half the timeout), so the start is asked.
        wait_for(
            lambda: (
                {s: v[:1] for s, v in statuses(spark, lake).items()}
                == {"svc-a": ["ok"], "svc-b": ["ok"]}
            ),
            120,
            "ok",
            show=lambda: rows(spark, lake, "service_status"),
        )
        # No input at all from here on: only the processing-time timers can make progress.
        wait_for(
            lambda: statuses(spark, lake) == {"svc-a": ["ok", "stale"], "svc-b": ["ok", "stale"]},
            120,
            "both services to go stale",
            show=lambda: rows(spark, lake, "service_status"),
        )
        produce_events(
            kafka_broker, topic, [heartbeat("svc-a", datetime.now(UTC))], key_field="service"
        )
        wait_for(
            lambda: statuses(spark, lake)["svc-a"][:3] == ["ok", "stale", "ok"], 120, "svc-a ok"
        )
        # svc-a goes stale again once its new timer fires: by then svc-b, silent all along, has
        # had every chance to be reported stale a second time.
        wait_for(
            lambda: statuses(spark, lake)["svc-a"] == ["ok", "stale", "ok", "stale"],
            120,
            "svc-a to go stale again",
        )
        supervisor.poll()
    finally:
        supervisor.stop_all()
    assert statuses(spark, lake)["svc-b"] == ["ok", "stale"]
    # its declared single state partition (the session has 2): one task per batch
    facts = inspect_checkpoint(lake.checkpoint("service_status"))
    assert facts.checkpoint_conf["spark.sql.shuffle.partitions"] == "1"
    assert [op.partitions for op in facts.operators.values()] == [(0,)]


def test_a_new_checkpoint_seeds_status_from_the_table_so_a_known_stale_service_turns_ok(
    spark, kafka_broker, topic_factory, tmp_path
):
    topic = topic_factory("seed")
    lake = Lakehouse(tmp_path / "lake")
    cfg = BuiltinSettings(heartbeats_topic=topic)
    known = [
        ("svc-c", "ok", at(0), at(0)),
        ("svc-c", "stale", at(6), at(0)),
        ("svc-d", "ok", at(0), at(0)),
    ]
    seed = spark.createDataFrame(
        known, "service string, status string, changed_at timestamp, last_heartbeat_time timestamp"
    )
    seed.write.format("delta").save(str(lake.table("service_status")))
    produce_events(
        kafka_broker,
        topic,
        [heartbeat("svc-c", at(10)), heartbeat("svc-d", at(10))],
        key_field="service",
    )

    catch_up(spark, lake, kafka_broker, cfg, ["service_heartbeats_raw", "service_status"])

    new = [
        r
        for r in rows(spark, lake, "service_status")
        if r["changed_at"] == at(10).replace(tzinfo=None)
    ]
    assert [(r["service"], r["status"]) for r in new] == [("svc-c", "ok")]
