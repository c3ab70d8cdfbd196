"""The health layer on real streams: progress recorded by the listener, judged without a JVM.

Real Kafka, Spark (RocksDB, transformWithState) and Delta; the judgements read only what the
running queries wrote (progress records, checkpoint files) and the broker's offsets.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import replace

import pytest

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.verdict import Status
from platform_pipelines.health.evaluate import HealthConfig, ask_broker, evaluate_stream
from platform_pipelines.health.key_horizon import key_horizon
from platform_pipelines.health.policy import HealthPolicy
from platform_pipelines.health.runs import RunState, run_state_from_records
from platform_pipelines.health.state_growth import judge_state_growth
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import CheckpointDamagedError, run_streams, start_stream
from platform_pipelines.runtime.supervisor import Supervisor
from platform_pipelines.state.keyed import Clock, Event, State, Step
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.declare import KafkaSource, StatefulStream
from platform_pipelines.streams.query import StreamContext
from platform_pipelines.streams.registry import declare_stream
from tests.integration.events import at, ev
from tests.waiting import wait_for
from user_streams.running_count import STREAMS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

BUILTIN = ["clickstream_raw", "events", "user_sessions", "security_alerts"]


def keyed(key: str, minute: float) -> dict:
    return {"key": key, "event_time": at(minute).isoformat().replace("+00:00", "Z")}


def round_of_clicks(n: int) -> list[dict]:
    """New users every round, 15 event-time minutes apart: sessions close, dedup state expires."""
    minute = 15 * n
    return [
        *(ev(f"r{n}-{j}", f"r{n}u{j}", "page_view", minute + j * 0.1, "/home") for j in range(4)),
        ev(f"r{n}-f", f"r{n}u0", "login_failed", minute + 1, "/login"),
        ev(f"r{n}-4", f"r{n}u0", "logout", minute + 2, "/bye"),
    ]


def test_a_stream_that_never_removes_state_is_flagged_as_leaking_and_builtins_are_not(
    spark, kafka_broker, topic_factory, tmp_path
):
    clicks, keys = topic_factory("health_clicks"), topic_factory("health_keys")
    registry = builtin_streams(BuiltinSettings(clickstream_topic=clicks))
    example = STREAMS[0]  # key_counts: a count per key that is never removed
    declare_stream(registry, replace(example, source=replace(example.source, topic=keys)))
    streams = [registry.get(n) for n in BUILTIN] + [
        s for s in registry if s.upstream == keys or s.name == "key_counts"
    ]
    lake = Lakehouse(tmp_path / "lake")
    ctx = StreamContext(spark, lake, kafka_broker)
    store = ProgressStore(tmp_path / "progress")
    recorder = ProgressRecorder(store, "test-run", {s.name: 1.0 for s in streams})
    options = RunOptions(mode="continuous", processing_time="1 second")

    def key_progress() -> list:
        return [r.progress for r in store.recent("key_counts", 60) if r.event == "progress"]

    def key_rows() -> int:
        return sum(int(p["numInputRows"]) for p in key_progress())

    def sessions_read(n: int) -> bool:
        """user_sessions has read every event of rounds 0 to ``n`` (6 events a round)."""
        supervisor.poll()  # raises if a query died
        done = [r.progress for r in store.recent("user_sessions", 60) if r.event == "progress"]
        rows = sum(int(p["numInputRows"]) for p in done)
        return rows >= 6 * (n + 1)

    flagged_at = None  # key_counts batches recorded when the leak was first reported
    supervisor = Supervisor(lambda *_: None, on_end=recorder.record_end)
    spark.streams.addListener(recorder)
    try:
        for stream in streams:  # all running at once, as in production
            supervisor.add(stream.name, start_stream(ctx, stream, options, "continuous"))
        for n in range(6):
            produce_events(kafka_broker, clicks, round_of_clicks(n))
            produce_events(
                kafka_broker,
                keys,
                [keyed(f"k{n}-{j}", 15 * n + j) for j in range(3)],
                key_field="key",
            )
            wait_for(
                lambda n=n: supervisor.poll() or key_rows() >= 3 * (n + 1),
                120,
                f"key_counts to read round {n}",
            )
            leak = judge_state_growth(store.recent("key_counts", 60))
            if leak.status is Status.FAIL and flagged_at is None:
                flagged_at = len(key_progress())
        wait_for(lambda: sessions_read(5), 120, "user_sessions to read the last round")
    finally:
        supervisor.stop_all()
        spark.streams.removeListener(recorder)

    assert flagged_at is not None and flagged_at <= 10, "key_counts never flagged as leaking"
    verdict = judge_state_growth(store.recent("key_counts", 60))
    assert verdict.status is Status.FAIL
    assert "nothing was removed" in verdict.summary
    assert verdict.evidence["growth_batches"] >= 5
    for name in BUILTIN:
        judged = judge_state_growth(store.recent(name, 60))
        assert judged.status is Status.PASS, f"{name}: {judged.line()}"
        declared = judge_state_growth(
            store.recent(name, 60), horizon=key_horizon(registry.get(name))
        )
        assert declared.status is Status.PASS, f"{name}: {declared.line()}"
    # Judged against what key_counts declares (a 10-minute watermark), its keys, 75 event-time
    # minutes old, have outlived it: still a leak.
    declared = judge_state_growth(
        store.recent("key_counts", 60), horizon=key_horizon(registry.get("key_counts"))
    )
    assert declared.status is Status.FAIL
    assert "past the 20 min the stream keeps a key" in declared.summary

    # The run recorded a start, the batches and a clean end.
    events = [r.event for r in store.recent("user_sessions", 200)]
    assert events[0] == "started" and events.count("terminated") == 1
    assert events.count("progress") >= 2
    assert run_state_from_records(store.recent("user_sessions", 5)).status == "stopped"


class Explodes:
    """User logic with a bug: the query dies on its first batch."""

    def on_events(self, key: str, state: State | None, events: list[Event], clock: Clock) -> Step:
        raise ValueError("boom: a bug in the user's logic")

    def on_timeout(self, key: str, state: State, clock: Clock) -> Step:
        return Step(state)


def test_a_dead_query_is_recorded_with_its_error_class(
    spark, kafka_broker, topic_factory, tmp_path
):
    topic = topic_factory("health_boom", partitions=1)
    registry = builtin_streams(BuiltinSettings(clickstream_topic="unused"))
    declare_stream(
        registry,
        StatefulStream(
            name="boom",
            description="Fails on its first batch.",
            source=KafkaSource(topic=topic, schema={"key": "string"}, required=("key",)),
            key="key",
            logic=Explodes(),
            output_schema={"key": "string"},
        ),
    )
    streams = [s for s in registry if s.upstream == topic or s.name == "boom"]
    store = ProgressStore(tmp_path / "progress")
    recorder = ProgressRecorder(store, "run-boom", {s.name: 0.0 for s in streams})
    produce_events(kafka_broker, topic, [{"key": "a"}], key_field="key")
    ctx = StreamContext(spark, Lakehouse(tmp_path / "lake"), kafka_broker)
    with pytest.raises(Exception, match="boom"):
        run_streams(ctx, streams, RunOptions(mode="catch_up"), lambda *_: None, recorder=recorder)

    last = store.latest("boom")
    assert last is not None and last.event == "terminated"
    assert last.error_class and last.run_id == "run-boom"
    state = run_state_from_records(store.recent("boom", 10))
    assert state.status == "failed" and last.error_class in state.detail


def test_lag_behind_the_topic_is_shown_and_a_damaged_checkpoint_is_refused(
    spark, kafka_broker, topic_factory, tmp_path
):
    topic = topic_factory("health_lag", partitions=1)
    registry = builtin_streams(BuiltinSettings(clickstream_topic=topic))
    bronze = registry.get("clickstream_raw")
    lake = Lakehouse(tmp_path / "lake")
    ctx = StreamContext(spark, lake, kafka_broker)
    store = ProgressStore(tmp_path / "progress")
    recorder = ProgressRecorder(store, "run-lag", {bronze.name: 0.0})
    produce_events(kafka_broker, topic, [ev(f"a{i}", "u1", "page_view", i, "/") for i in range(20)])
    run_streams(ctx, [bronze], RunOptions(mode="catch_up"), lambda *_: None, recorder=recorder)

    produce_events(kafka_broker, topic, [ev(f"b{i}", "u1", "page_view", i, "/") for i in range(37)])
    records = store.recent(bronze.name, 60)
    broker = ask_broker(kafka_broker, [topic])
    stopped = evaluate_stream(
        bronze, lake, records, run_state_from_records(records), broker, time.time()
    )
    # The catch-up run ended: its lag is shown, not judged (a stopped stream falls behind
    # nothing); the judgements below are those of the stream while a run runs it.
    assert stopped.verdict("falling_behind").summary == (
        f"not judged: not running (run run-lag stopped); 37 records behind its Kafka topic {topic}"
    )
    run = RunState("running", "run run-lag", "run-lag")
    # ... and in its continuous phase: a catch-up's lag is the backlog it reads, not judged
    records = [replace(r, phase="continuous") for r in records]
    health = evaluate_stream(bronze, lake, records, run, broker, time.time())
    assert health.lag is not None and health.lag.records == 37
    assert health.metrics["lag_records"] == 37
    assert health.verdict("falling_behind").status is Status.PASS  # 37 is below the warning
    strict = evaluate_stream(
        bronze,
        lake,
        records,
        run,
        broker,
        time.time(),
        # no allowance for its rhythm: judged just after its batch, the 37 records arrived
        # since that batch started, which a stream that keeps up is behind
        HealthConfig(policy=HealthPolicy(lag_warn_records=10, lag_warn_intervals=0)),
    )
    behind = strict.verdict("falling_behind")
    assert behind.status is Status.WARN
    assert f"37 records behind its Kafka topic {topic} (warn above 10)" in behind.summary
    assert health.verdict("checkpoint").status is Status.PASS

    # The broker stops answering: the lag is unknown, and the check says why.
    gone = evaluate_stream(
        bronze, lake, records, run, ask_broker("127.0.0.1:1", [topic]), time.time()
    )
    assert gone.lag is not None and gone.lag.records is None
    assert (
        "lag unknown: the Kafka broker at 127.0.0.1:1 does not answer"
        in gone.verdict("falling_behind").summary
    )
    assert "lag_records" not in gone.metrics

    # Two batches planned but never committed: the checkpoint is damaged; the runner refuses
    # to start on it, with the reason, before Spark touches it.
    ckpt = lake.checkpoint(bronze.name)
    newest = max(int(p.name) for p in (ckpt / "offsets").iterdir() if p.name.isdigit())
    for extra in (newest + 1, newest + 2):
        shutil.copy(ckpt / "offsets" / str(newest), ckpt / "offsets" / str(extra))
    damaged = evaluate_stream(bronze, lake, records, run, broker, time.time())
    assert damaged.verdict("checkpoint").status is Status.FAIL
    with pytest.raises(CheckpointDamagedError, match="offsets but no commit"):
        start_stream(ctx, bronze, RunOptions(mode="catch_up"), "catch_up")
