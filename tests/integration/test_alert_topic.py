"""Every alert reaches the alerts topic, once per attempt at its batch, and Delta once, across a
crash between the two commits that matter (the table's, the checkpoint's)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from kafka import KafkaConsumer

from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.crash_points import CrashPoints, pauses
from tests.integration.events import ev
from tests.integration.helpers import table
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

PIPELINE = ("clickstream_raw", "security_alerts")
# u4 fails five times in five minutes (an alert), re-sends one failure (a duplicate, removed
# before the rule counts it); u5 fails twice, then logs in (no alert).
INPUT = [
    *[ev(f"f{m}", "u4", "login_failed", m, "/login") for m in (20, 21, 22, 23, 24)],
    ev("f22", "u4", "login_failed", 22, "/login"),
    *[ev(f"g{m}", "u5", "login_failed", m, "/login") for m in (20, 21)],
    ev("g22", "u5", "login_success", 22, "/login"),
]
ALERT_ID = "u4-1795343040000"  # user and the failure that completed it (10:24 UTC, epoch ms)


def _published(bootstrap: str, topic: str) -> list[tuple[str, dict]]:
    """Every record of ``topic`` so far: (key, value)."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    try:
        return [(r.key.decode(), json.loads(r.value)) for r in consumer]
    finally:
        consumer.close()


def test_an_alert_is_published_again_after_a_crash_and_written_to_delta_once(
    spark, kafka_broker, topic_factory, launcher, tmp_path: Path
):
    topic = topic_factory("alert_topic", 2)
    produce_events(kafka_broker, topic, INPUT)
    lake_dir = tmp_path / "lake"
    # After the batch's alerts went to Delta and to the topic, before its checkpoint commit.
    crash = CrashPoints(tmp_path / "crash", pause_at=("temp:/security_alerts/commits/0$",))
    worker = launcher(lake_dir, kafka_broker, topic, PIPELINE, crash=crash)
    wait_for(
        lambda: pauses(crash.folder) or worker.poll() is not None,
        300,
        "security_alerts to reach its first checkpoint commit",
        every=0.05,
    )
    assert worker.poll() is None, (lake_dir / "worker.log").read_text()[-3000:]
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    before = _published(kafka_broker, f"{topic}-alerts")

    relaunched = launcher(lake_dir, kafka_broker, topic, PIPELINE)
    assert relaunched.wait(300) == 0, (lake_dir / "worker.log").read_text()[-3000:]

    after = _published(kafka_broker, f"{topic}-alerts")
    alerts = table(spark, Lakehouse(lake_dir / "lakehouse"), "security_alerts")
    assert [a["alert_id"] for a in alerts] == [ALERT_ID]
    # the replayed batch sent its alert again: two records, one alert id, keyed by the user
    assert [(key, value["alert_id"]) for key, value in before] == [("u4", ALERT_ID)]
    assert [(key, value["alert_id"]) for key, value in after] == [("u4", ALERT_ID)] * 2
    value = after[0][1]
    assert sorted(value) == sorted(alerts[0])  # the row, as JSON
    assert (value["user_id"], value["failure_count"], value["alert_type"]) == (
        "u4",
        5,
        "failed_logins",
    )
