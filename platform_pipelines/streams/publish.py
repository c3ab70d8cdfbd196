"""Publishing a stream's output rows to a Kafka topic, for consumers that react instead of poll.

A pager or a SIEM subscribes to a topic; polling a Delta table is slower and costs a reader per
consumer. A stream declared with ``publish_topic`` sends every row it emits to that topic while
the same batch commits the row to Delta: one record per row, keyed by the stream's key (so a
key's records stay in order on one partition), its value the row as JSON.

A batch of a few rows (an alert batch in continuous mode: one row or none) is sent from the
driver, through one producer per broker that the process keeps (``shared_producer``): a Spark
job of its own was the last step of every alert, a few tenths of a second of scheduling for a
handful of records. A bigger batch (a catch-up's) goes through Spark's Kafka writer in the
executors. Both partition by the Java client's hash of the key, so a key's records land on one
partition either way.

Delivery is at least once: a batch replayed after a crash sends its rows again. Every row carries
the stream's ``unique_key`` (an alert's ``alert_id``), so a consumer drops the copies by it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from kafka import KafkaProducer
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.clients import connect
from platform_pipelines.kafka.security import KafkaSecurity, kafka_security

# Partitions of a topic the platform creates for a stream's output.
PUBLISH_PARTITIONS = 3
# A batch of at most this many rows is sent from the driver; a bigger one by Spark's executors.
DRIVER_ROWS = 1_000
# How long the driver waits for the broker to acknowledge a batch's records.
SEND_TIMEOUT_S = 60.0

_producers: dict[tuple[str, KafkaSecurity], KafkaProducer] = {}
_producers_lock = threading.Lock()


def shared_producer(bootstrap_servers: str, security: KafkaSecurity) -> KafkaProducer:
    """The process's producer for ``bootstrap_servers`` with ``security``, made on first use.

    One per broker and security settings, as Spark keeps one per executor: a producer per batch
    would connect and fetch metadata before every send. kafka-python's producer is thread-safe
    and reconnects by itself; it is closed when the process exits.
    """
    key = (bootstrap_servers, security)
    with _producers_lock:
        if key not in _producers:
            _producers[key] = connect(
                KafkaProducer, bootstrap_servers, security, acks="all", linger_ms=0
            )
        return _producers[key]


@dataclass(frozen=True)
class Publisher:
    """Sends a batch's output rows to ``topic`` on ``bootstrap_servers``, keyed by ``keys``."""

    bootstrap_servers: str
    topic: str
    keys: Sequence[str]

    def ensure_topic(self) -> None:
        """Create the topic if it does not exist yet (a consumer may subscribe before)."""
        create_topics(self.bootstrap_servers, {self.topic: PUBLISH_PARTITIONS})

    def __call__(self, rows: DataFrame, count: int | None = None) -> None:
        """Send ``rows`` (``count`` of them, when known: up to ``DRIVER_ROWS`` go from the
        driver). A record the broker does not acknowledge raises, so the batch fails and is
        replayed."""
        key = F.concat_ws("|", *[F.col(k).cast("string") for k in self.keys])
        value = F.to_json(F.struct(*[F.col(c) for c in rows.columns]))
        records = rows.select(key.alias("key"), value.alias("value"))
        if count is not None and count <= DRIVER_ROWS:
            self._send(records.collect())
            return
        (
            records.write.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap_servers)
            .options(**kafka_security().spark_options())
            .option("topic", self.topic)
            .save()
        )

    def _send(self, records: list[Row]) -> None:
        producer = shared_producer(self.bootstrap_servers, kafka_security())
        sent = [
            producer.send(self.topic, key=r["key"].encode(), value=r["value"].encode())
            for r in records
        ]
        producer.flush(timeout=SEND_TIMEOUT_S)
        for future in sent:
            future.get(timeout=0)  # the broker's error, if it refused the record
