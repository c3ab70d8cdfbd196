"""The built-in streams, declared exactly as a user declares one (see ``declare.py``).

clickstream (Kafka) -> clickstream_raw (bronze: raw rows, quarantine)
clickstream (Kafka) -> events (silver, dedup: reads the topic beside bronze; ``events_reads=
    "bronze"`` reads clickstream_raw instead) -> user_sessions (gold, sessions)
clickstream (Kafka) -> security_alerts (gold, failed-login alerts, deduplicated in its own query;
    ``alerts_reads="bronze"`` reads events instead) -> the alerts topic
service_heartbeats (Kafka) -> service_heartbeats_raw (bronze) -> service_status (gold, stale/ok)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from platform_pipelines.core.times import MS
from platform_pipelines.events import (
    ALERTS_TOPIC,
    CLICKSTREAM_FIELDS,
    CLICKSTREAM_REQUIRED,
    CLICKSTREAM_TOPIC,
    EVENT_TYPES,
    HEARTBEAT_FIELDS,
    HEARTBEAT_REQUIRED,
    HEARTBEATS_TOPIC,
)
from platform_pipelines.state.alerts import ALERT_FIELDS, LOGIN_FAILED, LOGIN_SUCCESS, AlertConfig
from platform_pipelines.state.status import STATUS_FIELDS, StatusConfig
from platform_pipelines.streams.alerts import ALERTS_STATE_FORMAT, failed_login_alerts
from platform_pipelines.streams.declare import (
    InitialState,
    KafkaSource,
    StatefulStream,
    TableSource,
)
from platform_pipelines.streams.registry import StreamRegistry, declare_stream
from platform_pipelines.streams.schemas import EVENTS, fields_of
from platform_pipelines.streams.sessions import SESSION_SCHEMA, SESSIONS_STATE_FORMAT, sessionize
from platform_pipelines.streams.sources import DEFAULT_BRONZE_TRIGGER
from platform_pipelines.streams.status import STATUS_STATE_FORMAT, service_statuses
from platform_pipelines.streams.watermark import WATERMARK_COLUMN


@dataclass(frozen=True)
class BuiltinSettings:
    """Knobs of the built-in streams (defaults as documented in the README)."""

    clickstream_topic: str = CLICKSTREAM_TOPIC
    heartbeats_topic: str = HEARTBEATS_TOPIC
    events_reads: Literal["bronze", "kafka"] = "kafka"  # see StatefulStream.reads
    alerts_reads: Literal["bronze", "kafka"] = "kafka"
    alerts_topic: str = ALERTS_TOPIC
    dedup_watermark: timedelta = timedelta(minutes=10)
    session_watermark: timedelta = timedelta(minutes=10)
    session_gap: timedelta = timedelta(minutes=30)
    alert_threshold: int = 5
    alert_window: timedelta = timedelta(minutes=10)
    stale_after: timedelta = timedelta(minutes=5)


# The streams whose rows people wait for run their next batch as soon as the last one ended and
# new input is there. The clickstream's bronze and the sessions (closed after 30 min of
# inactivity) run once a minute: at 2,000 events/s on 2 cores that took an alert from 8.2-9.0 s
# to 5.6 s (p50) and a row of `events` from 9.8-10.4 s to 5.6 s, because the two streams' fixed
# cost per batch no longer holds the cores every 10 s (docs/benchmarks/latency.md). The
# heartbeats' bronze keeps 10 s: service_status reads it to tell a stale service.
AS_SOON_AS_INPUT = timedelta(0)
NOT_WAITED_ON = timedelta(minutes=1)
# service_status: its batches without heartbeats only fire timers, on its one state partition.
STATUS_TRIGGER = timedelta(seconds=3)
Transform = Callable[[DataFrame], DataFrame]


def clickstream_source(topic: str, bronze_trigger: timedelta = NOT_WAITED_ON) -> KafkaSource:
    return KafkaSource(
        topic=topic,
        schema=CLICKSTREAM_FIELDS,
        required=CLICKSTREAM_REQUIRED,
        allowed_values={"event_type": EVENT_TYPES},
        expectations={"amount_in_range": "amount IS NULL OR (amount >= 0 AND amount <= 1000000)"},
        raw_table="clickstream_raw",
        bronze_trigger=bronze_trigger,
        description=(
            "Kafka topic of clickstream events as JSON (event_id, user_id, event_type, page, "
            "amount, event_time), keyed by user_id. Written by the synthetic producer "
            "(`platform produce`) or your applications."
        ),
    )


def heartbeats_source(topic: str) -> KafkaSource:
    return KafkaSource(
        topic=topic,
        schema=HEARTBEAT_FIELDS,
        required=HEARTBEAT_REQUIRED,
        raw_table="service_heartbeats_raw",
        description="Kafka topic of service heartbeats as JSON (service, status, event_time).",
    )


def deduplicate(events: DataFrame) -> DataFrame:
    """One row per event_id; the watermark bounds how long an id is remembered."""
    columns = [*EVENTS.fieldNames(), WATERMARK_COLUMN]
    return events.select(*columns).dropDuplicatesWithinWatermark(["event_id"])


AlertsInput = tuple[KafkaSource | TableSource, Literal["bronze", "kafka"], Transform]


def _alerts_input(cfg: BuiltinSettings) -> AlertsInput:
    """Where security_alerts reads (source, reads, transform): the topic itself (parsed and
    checked in the alerts' own query: one query between a failed login and its alert; the alert
    operator drops copies of an event itself), or silver events."""
    alerts = AlertConfig(threshold=cfg.alert_threshold, window_ms=cfg.alert_window // MS)
    if cfg.alerts_reads == "kafka":
        return (
            clickstream_source(cfg.clickstream_topic, _clickstream_bronze_trigger(cfg)),
            "kafka",
            lambda events: failed_login_alerts(logins(events), alerts),
        )
    return (
        TableSource("events"),
        "bronze",
        lambda events: failed_login_alerts(logins(events), alerts),
    )


def _clickstream_bronze_trigger(cfg: BuiltinSettings) -> timedelta:
    """Once a minute when ``events`` reads the topic itself (nothing waits on bronze then), the
    declared default when it reads bronze (``events_reads="bronze"``): every row of ``events``,
    and with ``alerts_reads="bronze"`` every alert, waits for bronze's commit."""
    return NOT_WAITED_ON if cfg.events_reads == "kafka" else DEFAULT_BRONZE_TRIGGER


def logins(events: DataFrame) -> DataFrame:
    """The events the alert rule reads (it ignores every other type: ``state.alerts``).

    Applied after the watermark (which still sees every event) and before the shuffle to the
    alert operator, whose state remembers the ids of login events only (for its deduplication),
    not of the whole clickstream (at the synthetic mix, about a tenth of it). The rows it leaves
    out are counted in the ledger as read (``rows_in``) and, behind the watermark, still kept in
    ``late_events``."""
    return events.where(F.col("event_type").isin(LOGIN_FAILED, LOGIN_SUCCESS))


def builtin_declarations(cfg: BuiltinSettings | None = None) -> list[StatefulStream]:
    """The platform's own stateful streams."""
    cfg = cfg or BuiltinSettings()
    gap = cfg.session_gap
    alerts_source, alerts_reads, alerts_transform = _alerts_input(cfg)
    status = StatusConfig(stale_after_ms=cfg.stale_after // MS)
    return [
        StatefulStream(
            name="events",
            trigger=AS_SOON_AS_INPUT,
            description="Silver: clickstream events with duplicates removed by event_id within a "
            f"{cfg.dedup_watermark} event-time watermark (bounded state).",
            source=clickstream_source(cfg.clickstream_topic, _clickstream_bronze_trigger(cfg)),
            reads=cfg.events_reads,
            key="event_id",
            transform=deduplicate,
            output_schema=fields_of(EVENTS),
            unique_key="event_id",
            watermark=cfg.dedup_watermark,
            layer="silver",
        ),
        StatefulStream(
            name="user_sessions",
            description=f"Gold: one row per closed user session. A session closes after {gap} "
            "of event-time inactivity or at a logout; it records start, end, duration, event "
            "count, the last 10 pages, checkout/purchase flags and revenue.",
            source=TableSource("events"),
            key="user_id",
            transform=lambda events: sessionize(events, gap=gap),
            trigger=NOT_WAITED_ON,
            output_schema=fields_of(SESSION_SCHEMA),
            unique_key="session_id",
            watermark=cfg.session_watermark,
            timeout="event_time",
            key_lifetime=gap,  # a session's state goes when the watermark passes its end + gap
            state_format=SESSIONS_STATE_FORMAT,
        ),
        StatefulStream(
            name="security_alerts",
            description=f"Gold: one alert when a user fails to log in {cfg.alert_threshold} times "
            f"within {cfg.alert_window} of event time (a success resets the count), also published "
            f"to the Kafka topic `{cfg.alerts_topic}`. Idle users' state is removed by an "
            "event-time timeout.",
            trigger=AS_SOON_AS_INPUT,
            source=alerts_source,
            reads=alerts_reads,
            transform=alerts_transform,
            key="user_id",
            output_schema=ALERT_FIELDS,
            unique_key="alert_id",
            publish_topic=cfg.alerts_topic,
            watermark=cfg.session_watermark,
            timeout="event_time",
            # failures expire a window after the newest one, login ids as the watermark passes
            key_lifetime=cfg.alert_window,
            state_format=ALERTS_STATE_FORMAT,
        ),
        StatefulStream(
            name="service_status",
            description=f"Gold: a service's status changes: `stale` once when it sends no "
            f"heartbeat for {cfg.stale_after} (processing time, fires without new data), `ok` on "
            "its first heartbeat after that. A new checkpoint starts from the table's last status.",
            source=heartbeats_source(cfg.heartbeats_topic),
            key="service",
            transform=lambda beats, seed: service_statuses(beats, status, seed),
            # A timer fires only in a batch: a silent service is shown stale up to one trigger
            # plus a batch after its timeout (10 s: 10.8 s late, 3 s: 5-7.7 s; latency.md).
            trigger=STATUS_TRIGGER,
            output_schema=STATUS_FIELDS,
            timeout="processing_time",
            initial_state=InitialState(
                "service_status", latest_by=("last_heartbeat_time", "changed_at")
            ),
            state_format=STATUS_STATE_FORMAT,
            # A handful of services: one task per batch, heartbeats or not, instead of one per
            # partition of the session (docs/benchmarks/latency.md).
            state_partitions=1,
        ),
    ]


def builtin_streams(cfg: BuiltinSettings | None = None) -> StreamRegistry:
    """The registry of the platform's own streams, in dependency order."""
    registry = StreamRegistry()
    for stream in builtin_declarations(cfg):
        declare_stream(registry, stream)
    return registry
