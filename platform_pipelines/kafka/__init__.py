"""Where events come from: a local Kafka broker, the admin calls, and the synthetic producer."""

from platform_pipelines.kafka.admin import create_topics, end_offsets, wait_for_broker
from platform_pipelines.kafka.broker import BrokerError, LocalKafkaBroker, find_running_broker

__all__ = [
    "BrokerError",
    "LocalKafkaBroker",
    "create_topics",
    "end_offsets",
    "find_running_broker",
    "wait_for_broker",
]
