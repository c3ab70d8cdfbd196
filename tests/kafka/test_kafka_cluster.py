"""A replicated cluster: three KRaft nodes, topics with 3 replicas and min.insync.replicas=2. A
node SIGKILLed under running streams loses nothing: producers with acks=all go on, the streams go
on, and the kafka_replication check says which node is down and that it should be restarted."""

from __future__ import annotations

import signal
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from platform_pipelines.cli.kafka_cluster import cluster
from platform_pipelines.core.verdict import Status, Verdict
from platform_pipelines.health.evaluate import ask_broker, replication_verdict
from platform_pipelines.health.replication import judge_replication
from platform_pipelines.kafka.admin import create_topics, end_offsets
from platform_pipelines.kafka.cluster import LocalKafkaCluster
from platform_pipelines.kafka.producer import produce_events
from platform_pipelines.kafka.replication import gather_replication
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import rows_behind
from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext
from tests.integration.events import ev
from tests.integration.helpers import Progress
from tests.waiting import wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

STREAMS = ["clickstream_raw", "events"]
PER_BATCH = 300


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    """Three nodes on loopback for this module (started once, stopped at its end), where the
    CLI finds them with PLATFORM_LOCAL_DIR set to the folder above."""
    cluster = LocalKafkaCluster(tmp_path_factory.mktemp("local") / "kafka-cluster", nodes=3)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop(timeout_s=10)


def page_views(prefix: str, first_minute: float) -> list[dict]:
    """``PER_BATCH`` events of 20 users, 0.6 s apart in event time from ``first_minute``."""
    return [
        ev(f"{prefix}{i}", f"u{i % 20}", "page_view", first_minute + i / 100, "/home")
        for i in range(PER_BATCH)
    ]


def event_ids(spark: SparkSession, lake: Lakehouse) -> Counter[str]:
    rows = spark.read.format("delta").load(str(lake.table("events"))).select("event_id")
    return Counter(row.event_id for row in rows.collect())


def events_rows(lake: Lakehouse) -> int:
    """Rows appended to ``events`` so far, from its Delta log (no Spark job while polling)."""
    return rows_behind(lake.table("events"), 0) or 0


def replication(cluster: LocalKafkaCluster, topic: str) -> Verdict:
    facts = gather_replication(cluster.bootstrap_servers, [topic], expected=cluster.node_ids)
    return judge_replication(facts, topic)


def test_cluster_status_shows_every_node_up_and_the_replication_verdict(
    kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLATFORM_LOCAL_DIR", str(kafka_cluster.data_dir.parent))
    monkeypatch.setenv("COLUMNS", "200")

    result = CliRunner().invoke(cluster, ["status"])

    assert result.exit_code == 0, result.output
    rows = [line.split("│")[1:4] for line in result.output.splitlines() if line.startswith("│ ")]
    nodes = [[cell.strip() for cell in row] for row in rows if row and row[0].strip().isdigit()]
    assert nodes == [[str(n), "up", str(kafka_cluster.pid(n))] for n in kafka_cluster.node_ids]
    assert "pass kafka_replication: 3 of 3 brokers up" in result.output


def test_a_killed_broker_loses_nothing_and_the_replication_check_names_it(
    spark: SparkSession, kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = f"clickstream-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, {topic: 3}, replication_factor=3)
    registry = builtin_streams(BuiltinSettings(clickstream_topic=topic))
    lake, stop, phases, errors = Lakehouse(tmp_path / "lake"), StopRequest(), [], []
    first, second = page_views("a", 0), page_views("b", 10)

    def run() -> None:
        try:
            run_streams(
                StreamContext(spark, lake, bootstrap),
                [registry.get(n) for n in STREAMS],
                RunOptions(mode="continuous", processing_time="1 second"),
                Progress(),
                on_start=lambda name, phase: phases.append((name, phase)),
                stop=stop,
            )
        except GracefulStop:
            pass
        except BaseException as error:  # shown by the assertion below, not lost in the thread
            errors.append(error)

    runner = threading.Thread(target=run, name="cluster-streams")
    runner.start()
    try:
        produce_events(bootstrap, topic, first)  # acks=all, while the streams start
        wait_for(
            lambda: (len(phases) == 2 * len(STREAMS) and events_rows(lake) == PER_BATCH) or errors,
            240,
            "events to hold the first batch, streams continuous",
            show=lambda: (phases, events_rows(lake)),
        )
        leaders = {p.partition: p.leader for p in gather_replication(bootstrap, [topic]).partitions}
        victim = leaders[0]

        kafka_cluster.kill(victim)
        produce_events(bootstrap, topic, second)  # succeeds: ISR 2 >= min.insync.replicas 2
        wait_for(
            lambda: events_rows(lake) >= 2 * PER_BATCH or errors,
            180,
            "events to hold both batches",
            show=lambda: events_rows(lake),
        )
        down = wait_for(
            lambda: (v := replication(kafka_cluster, topic)).status is Status.WARN and v,
            60,
            "the check to see the node down",
            show=lambda: replication(kafka_cluster, topic).line(),
        )
        # The health sensor's own path (the stream assets' kafka_replication check) says the same.
        sensor = replication_verdict(topic, ask_broker(bootstrap, [topic], timeout_s=10))

        kafka_cluster.restart(victim)
        healed = wait_for(
            lambda: (v := replication(kafka_cluster, topic)).passed and v,
            90,
            "ISR 3 again",
            show=lambda: replication(kafka_cluster, topic).line(),
        )
        assert runner.is_alive() and not errors, errors
    finally:
        stop.signal = signal.SIGINT
        runner.join(120)
    assert not runner.is_alive()
    assert errors == []

    seen = event_ids(spark, lake)
    assert set(seen) == {e["event_id"] for e in first + second}  # nothing lost
    assert max(seen.values()) == 1  # nothing twice
    assert sum(end_offsets(bootstrap, topic).values()) == 2 * PER_BATCH  # idempotent producer
    assert down.summary == (
        f"1 of 3 brokers down (node {victim}); 3 partitions of {topic} under-replicated (ISR 2 "
        "of 3); producers with acks=all still succeed while ISR >= min.insync.replicas=2"
    )
    assert down.remedy == (
        f"Restart node {victim}: until it is back, one more failure stops producers with acks=all."
    )
    assert (sensor.status, sensor.summary) == (Status.WARN, down.summary)
    assert healed.summary == (
        f"3 of 3 brokers up; 3 partitions of {topic} fully replicated (ISR 3 of 3, "
        "min.insync.replicas=2)"
    )
