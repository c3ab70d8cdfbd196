"""A run launched before one of its Kafka topics exists: the streams of that topic wait for it,
saying so in their records and their health, while the others run; they start by themselves once
the topic exists."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid

import pytest

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.evaluate import ask_broker, evaluate_stream
from platform_pipelines.health.runs import run_state_from_records
from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.heartbeats import HeartbeatConfig, generate_heartbeats
from platform_pipelines.kafka.producer import produce, produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.runtime.topic_wait import waiting_note
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext
from tests.integration.events import U1_SHOPPING
from tests.integration.helpers import table
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

STREAMS = ["clickstream_raw", "service_heartbeats_raw", "service_status"]
WAITING = ["service_heartbeats_raw", "service_status"]


def test_a_missing_topic_holds_back_only_its_streams_which_start_once_it_exists(
    spark, kafka_broker, topic_factory, tmp_path
):
    clicks = topic_factory("present", partitions=1)
    beats = f"beats-{uuid.uuid4().hex[:10]}"  # not created: its producer is not deployed yet
    produce_events(kafka_broker, clicks, U1_SHOPPING)
    registry = builtin_streams(BuiltinSettings(clickstream_topic=clicks, heartbeats_topic=beats))
    streams = [registry.get(n) for n in STREAMS]
    lake, store = Lakehouse(tmp_path / "lake"), ProgressStore(tmp_path / "progress")
    recorder = ProgressRecorder(store, "missing-topic-run", {n: 1.0 for n in STREAMS})
    stop, notes = StopRequest(), []

    def run() -> None:
        with contextlib.suppress(GracefulStop):  # the test's stop request ends the run
            run_streams(
                StreamContext(spark, lake, kafka_broker),
                streams,
                RunOptions(mode="continuous", processing_time="1 second"),
                lambda *_: None,
                recorder=recorder,
                stop=stop,
                on_note=lambda name, text: notes.append((name, text)),
            )

    def health(name: str):  # what the sensor and `platform status` would say, from files
        records = store.recent(name, 50)
        broker = ask_broker(kafka_broker, [beats])
        run_state = run_state_from_records(records)
        return evaluate_stream(registry.get(name), lake, records, run_state, broker, time.time())

    runner = threading.Thread(target=run)
    runner.start()
    try:
        wait_for(
            lambda: len(table(spark, lake, "clickstream_raw")) == len(U1_SHOPPING),
            300,
            "clickstream_raw to run while the heartbeats topic is missing",
        )
        assert notes == [(name, waiting_note(beats)) for name in WAITING]
        for name in WAITING:
            judged = health(name)
            liveness, behind = judged.verdict("liveness"), judged.verdict("falling_behind")
            assert liveness.status is Status.WARN, liveness.line()
            assert liveness.summary.startswith(f"waiting for Kafka topic {beats} to exist (for ")
            assert liveness.remedy == (
                f"Create the topic with `platform kafka create-topic {beats}` (or start the "
                "producer that writes it, if it creates its topics); nothing else is needed."
            )
            assert behind.status is Status.PASS  # (service_status adds its 0 rows of lag)
            assert behind.summary.startswith(
                f"not judged: waiting for Kafka topic {beats} to exist"
            )
        assert [r.event for r in store.recent("service_status", 50)] == ["waiting"]

        create_topics(kafka_broker, {beats: 1})
        produce(
            kafka_broker, beats, generate_heartbeats(HeartbeatConfig(services=2, beats=1, silent=0))
        )
        wait_for(
            lambda: len(table(spark, lake, "service_status")) == 2,
            300,
            "service_status to start by itself and report both services ok",
            show=lambda: [r.event for r in store.recent("service_status", 50)],
        )
        assert health("service_status").verdict("liveness").status is Status.PASS
    finally:
        stop.why = "the end of the test"
        runner.join(120)
    assert not runner.is_alive()
    statuses = sorted((r["service"], r["status"]) for r in table(spark, lake, "service_status"))
    assert statuses == [("svc-00", "ok"), ("svc-01", "ok")]
    assert [n for n in notes if n[1] == f"the Kafka topic {beats} exists now: starting"] == [
        (name, f"the Kafka topic {beats} exists now: starting") for name in WAITING
    ]
    for name in WAITING:
        events = [r.event for r in store.recent(name, 200)]
        assert events[:2] == ["waiting", "started"] and "terminated" in events, events
