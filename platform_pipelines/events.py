"""The example event types, as they travel through Kafka (JSON values) and land in bronze.

Kept free of Spark so that the producer and the pure logic can use it without a JVM; the Spark
schemas are derived from these field lists in ``platform_pipelines.streams.schemas``.
"""

from __future__ import annotations

from typing import Final

CLICKSTREAM_TOPIC: Final = "clickstream"
HEARTBEATS_TOPIC: Final = "service_heartbeats"
ALERTS_TOPIC: Final = "alerts"  # where security_alerts publishes each alert (keyed by user_id)

EVENT_TYPES: Final = (
    "page_view",
    "add_to_cart",
    "checkout",
    "purchase",
    "login_failed",
    "login_success",
    "logout",
)

# name -> JSON type; event_time is an ISO-8601 timestamp string (UTC, e.g. 2026-11-22T10:00:00Z).
CLICKSTREAM_FIELDS: Final = {
    "event_id": "string",
    "user_id": "string",
    "event_type": "string",
    "page": "string",
    "amount": "double",
    "event_time": "timestamp",
}
# A record lacking any of these (or with one that does not parse) is quarantined.
CLICKSTREAM_REQUIRED: Final = ("event_id", "user_id", "event_type", "event_time")

HEARTBEAT_FIELDS: Final = {"service": "string", "status": "string", "event_time": "timestamp"}
HEARTBEAT_REQUIRED: Final = ("service", "event_time")
