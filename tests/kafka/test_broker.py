"""The local broker: a real Kafka that keeps its data across restarts and cleans up after itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from platform_pipelines.kafka.admin import create_topics, end_offsets
from platform_pipelines.kafka.broker import BrokerError, LocalKafkaBroker, find_running_broker
from platform_pipelines.kafka.clients import connect
from platform_pipelines.kafka.producer import (
    ClickstreamConfig,
    generate_clickstream,
    produce,
    produce_events,
)

kafka = pytest.mark.kafka


def read_all(bootstrap: str, topic: str, expected: int) -> list[tuple[int, bytes | None, bytes]]:
    """Every record of ``topic`` as (partition, key, value), in offset order per partition."""
    consumer = connect(KafkaConsumer, bootstrap, enable_auto_commit=False)
    partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    records: list[tuple[int, bytes | None, bytes]] = []
    deadline = time.monotonic() + 20
    while len(records) < expected and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            records += [(r.partition, r.key, r.value) for r in batch]
    consumer.close()
    return sorted(records, key=lambda r: r[0])


@kafka
def test_broker_returns_exactly_the_records_produced(kafka_broker: str, topic_factory) -> None:
    topic = topic_factory("roundtrip", partitions=1)
    events = [{"user_id": "u1", "n": 1}, b"not json at all", {"user_id": "u2", "n": 2}]

    summary = produce_events(kafka_broker, topic, events)

    assert summary.counts == {"ok": 3, "duplicate": 0, "late": 0, "malformed": 0}
    assert read_all(kafka_broker, topic, 3) == [
        (0, b"u1", b'{"user_id":"u1","n":1}'),
        (0, None, b"not json at all"),
        (0, b"u2", b'{"user_id":"u2","n":2}'),
    ]
    assert end_offsets(kafka_broker, topic) == {0: 3}


@kafka
def test_produce_delivers_every_generated_record_at_the_asked_rate(
    kafka_broker: str, topic_factory
) -> None:
    topic = topic_factory("clickstream", partitions=3)
    cfg = ClickstreamConfig(events=40, duplicate_rate=0.1, late_rate=0.1, malformed_rate=0.05)
    sent: list[int] = []

    summary = produce(
        kafka_broker, topic, generate_clickstream(cfg), rate_per_sec=100, progress=sent.append
    )

    assert summary.counts == {"ok": 30, "duplicate": 4, "late": 4, "malformed": 2}
    assert sent == list(range(1, 41))
    assert summary.elapsed_s >= 0.39
    assert sum(end_offsets(kafka_broker, topic).values()) == 40


@kafka
def test_create_topics_is_idempotent(kafka_broker: str) -> None:
    assert create_topics(kafka_broker, {"idempotent-topic": 3}) == ["idempotent-topic"]
    assert create_topics(kafka_broker, {"idempotent-topic": 3}) == []
    assert end_offsets(kafka_broker, "idempotent-topic") == {0: 0, 1: 0, 2: 0}


@kafka
def test_restart_on_the_same_data_dir_keeps_topics_records_and_port(tmp_path: Path) -> None:
    broker = LocalKafkaBroker(tmp_path)
    first = broker.start()
    create_topics(first, {"kept": 2})
    produce_events(first, "kept", [{"user_id": f"u{i}", "i": i} for i in range(6)])
    broker.stop()

    second = LocalKafkaBroker(tmp_path).start()
    try:
        assert second == first
        assert sum(end_offsets(second, "kept").values()) == 6
        values = sorted(json.loads(v)["i"] for _, _, v in read_all(second, "kept", 6))
        assert values == [0, 1, 2, 3, 4, 5]
    finally:
        LocalKafkaBroker(tmp_path).stop()  # stops the broker another object started


@kafka
def test_running_broker_is_findable_exclusive_and_gone_after_stop(tmp_path: Path) -> None:
    broker = LocalKafkaBroker(tmp_path)
    bootstrap = broker.start()
    pid = broker.pid
    try:
        assert find_running_broker(tmp_path) == {
            "pid": pid,
            "port": broker.port,
            "controller_port": broker.controller_port,
            "bootstrap_servers": bootstrap,
            "data_dir": str(tmp_path.resolve()),
            "security_protocol": "PLAINTEXT",
        }
        with pytest.raises(BrokerError, match=f"already serves .* at {bootstrap}"):
            LocalKafkaBroker(tmp_path).start()
    finally:
        broker.stop()

    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not (tmp_path / "broker.json").exists()
    assert find_running_broker(tmp_path) is None


@kafka
def test_broker_that_cannot_bind_its_port_fails_with_its_log(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        with pytest.raises(BrokerError) as failure:
            LocalKafkaBroker(tmp_path, port=port).start(timeout_s=60)

    message = str(failure.value)
    assert "exited early" in message
    assert "Address already in use" in message
    assert f"If port {port}" in message
    assert not (tmp_path / "broker.json").exists()


def test_stale_state_file_of_a_dead_process_is_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    state = tmp_path / "broker.json"
    state.write_text(json.dumps({"pid": dead.pid, "port": 1, "bootstrap_servers": "x:1"}))

    assert find_running_broker(tmp_path) is None
    assert not state.exists()


def test_no_state_file_means_no_running_broker(tmp_path: Path) -> None:
    assert find_running_broker(tmp_path) is None


@kafka
def test_a_missing_topic_leaves_the_others_lag_known(
    kafka_broker: str, topic_factory, tmp_path: Path
) -> None:
    """One stream's topic missing on the broker names that topic, not a broker outage, and the
    other streams' lag is still measured."""
    from platform_pipelines.health.checkpoint import CheckpointFacts
    from platform_pipelines.health.evaluate import ask_broker, stream_lag
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams

    present = topic_factory("lag_present", 1)
    produce_events(kafka_broker, present, [{"n": i} for i in range(3)])
    broker = ask_broker(kafka_broker, [present, "lag_missing_topic"])
    assert broker is not None and broker.end_offsets == {present: {0: 3}}

    stream = builtin_streams(BuiltinSettings(clickstream_topic="lag_missing_topic")).get(
        "clickstream_raw"
    )
    facts = CheckpointFacts(path=str(tmp_path), exists=True)
    lag = stream_lag(stream, Lakehouse(tmp_path), facts, broker)
    assert lag is not None and lag.records is None
    assert (
        lag.unknown_because == f"the Kafka broker at {kafka_broker} has no topic lag_missing_topic"
    )
    assert lag.remedy.startswith(
        "Create the topic (`platform kafka create-topic lag_missing_topic`)"
    )
