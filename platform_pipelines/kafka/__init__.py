"""Where events come from: a local Kafka broker, the admin calls, and the synthetic producer."""

from platform_pipelines.kafka.admin import create_topics, end_offsets, wait_for_broker
from platform_pipelines.kafka.broker import BrokerError, LocalKafkaBroker, find_running_broker
from platform_pipelines.kafka.clients import KafkaAccessError, connect
from platform_pipelines.kafka.security import KafkaSecurity, KafkaSecurityError, kafka_security

__all__ = [
    "BrokerError",
    "KafkaAccessError",
    "KafkaSecurity",
    "KafkaSecurityError",
    "LocalKafkaBroker",
    "connect",
    "create_topics",
    "end_offsets",
    "find_running_broker",
    "kafka_security",
    "wait_for_broker",
]
