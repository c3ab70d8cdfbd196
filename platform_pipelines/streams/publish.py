"""Publishing a stream's output rows to a Kafka topic, for consumers that react instead of poll.

A pager or a SIEM subscribes to a topic; polling a Delta table is slower and costs a reader per
consumer. A stream declared with ``publish_topic`` sends every row it emits to that topic while
the same batch commits the row to Delta: one record per row, keyed by the stream's key (so a
key's records stay in order on one partition), its value the row as JSON.

Delivery is at least once: a batch replayed after a crash sends its rows again. Every row carries
the stream's ``unique_key`` (an alert's ``alert_id``), so a consumer drops the copies by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.security import kafka_security

# Partitions of a topic the platform creates for a stream's output.
PUBLISH_PARTITIONS = 3


@dataclass(frozen=True)
class Publisher:
    """Sends a batch's output rows to ``topic`` on ``bootstrap_servers``, keyed by ``keys``."""

    bootstrap_servers: str
    topic: str
    keys: Sequence[str]

    def ensure_topic(self) -> None:
        """Create the topic if it does not exist yet (a consumer may subscribe before)."""
        create_topics(self.bootstrap_servers, {self.topic: PUBLISH_PARTITIONS})

    def __call__(self, rows: DataFrame) -> None:
        key = F.concat_ws("|", *[F.col(k).cast("string") for k in self.keys])
        value = F.to_json(F.struct(*[F.col(c) for c in rows.columns]))
        (
            rows.select(key.alias("key"), value.alias("value"))
            .write.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap_servers)
            .options(**kafka_security().spark_options())
            .option("topic", self.topic)
            .save()
        )
