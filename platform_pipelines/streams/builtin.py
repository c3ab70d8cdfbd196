"""The built-in medallion streams: clickstream -> bronze -> silver (dedup) -> gold (sessions)."""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql.streaming import DataStreamWriter

from platform_pipelines.events import CLICKSTREAM_TOPIC
from platform_pipelines.lakehouse.delta import checkpoint_query_id
from platform_pipelines.streams import schemas
from platform_pipelines.streams.bronze import bronze_batch_writer
from platform_pipelines.streams.registry import StreamContext, StreamDefinition, StreamRegistry
from platform_pipelines.streams.sessions import SESSION_SCHEMA, sessionize

DEDUP_WATERMARK = timedelta(minutes=10)
SESSION_WATERMARK = timedelta(minutes=10)
SESSION_GAP = timedelta(minutes=30)


def bronze_builder(topic: str):  # type: ignore[no-untyped-def]
    """The bronze query for ``topic``: good rows to clickstream_raw, bad ones to quarantine."""

    def build(ctx: StreamContext) -> DataStreamWriter:
        query_id = checkpoint_query_id(ctx.lakehouse.checkpoint("clickstream_raw"))
        write = bronze_batch_writer(
            topic,
            ctx.lakehouse.table("clickstream_raw"),
            ctx.lakehouse.table("quarantine"),
            app_id=f"clickstream_raw/{query_id}",
        )
        return ctx.read_topic(topic).writeStream.foreachBatch(write)

    return build


def build_events(ctx: StreamContext) -> DataStreamWriter:
    """Drop repeated event_ids; the watermark bounds how long an id is remembered."""
    deduped = (
        ctx.read_table("clickstream_raw")
        .select(*schemas.EVENTS.fieldNames())
        .withWatermark("event_time", f"{int(DEDUP_WATERMARK.total_seconds())} seconds")
        .dropDuplicatesWithinWatermark(["event_id"])
    )
    return ctx.delta_sink(deduped, "events")


def build_user_sessions(ctx: StreamContext) -> DataStreamWriter:
    """Sessionize per user with an event-time timeout; closed sessions are appended."""
    events = ctx.read_table("events").withWatermark(
        "event_time", f"{int(SESSION_WATERMARK.total_seconds())} seconds"
    )
    return ctx.delta_sink(sessionize(events, gap=SESSION_GAP), "user_sessions")


def builtin_streams(clickstream_topic: str = CLICKSTREAM_TOPIC) -> StreamRegistry:
    """The registry of the platform's own streams, in dependency order."""
    return StreamRegistry(
        [
            StreamDefinition(
                name="clickstream_raw",
                description=(
                    "Bronze: every clickstream record from Kafka parsed against the event schema, "
                    "with its Kafka partition, offset and timestamp. Records that do not parse or "
                    "lack a required field go to `quarantine` with the reason."
                ),
                upstream=clickstream_topic,
                upstream_is_topic=True,
                upstream_description=(
                    "Kafka topic of clickstream events as JSON (event_id, user_id, event_type, "
                    "page, amount, event_time), keyed by user_id. Written by the synthetic "
                    "producer (`platform produce`) or your applications."
                ),
                outputs={
                    "clickstream_raw": schemas.CLICKSTREAM_RAW,
                    "quarantine": schemas.QUARANTINE,
                },
                output_descriptions={
                    "quarantine": (
                        "Records from Kafka that could not be parsed (invalid JSON, a missing "
                        "required field, a value of the wrong type, an unknown event type): the "
                        "raw value, the reason and the Kafka position, so nothing is lost."
                    )
                },
                build=bronze_builder(clickstream_topic),
                layer="bronze",
            ),
            StreamDefinition(
                name="events",
                description=(
                    "Silver: clickstream events with duplicates removed by event_id within a "
                    f"{DEDUP_WATERMARK} event-time watermark (bounded state)."
                ),
                upstream="clickstream_raw",
                outputs={"events": schemas.EVENTS},
                build=build_events,
                layer="silver",
                watermark=DEDUP_WATERMARK,
            ),
            StreamDefinition(
                name="user_sessions",
                description=(
                    f"Gold: one row per closed user session. A session closes after {SESSION_GAP} "
                    "of event-time inactivity or at a logout; it records start, end, duration, "
                    "event count, the last 10 pages, checkout/purchase flags and revenue."
                ),
                upstream="events",
                outputs={"user_sessions": SESSION_SCHEMA},
                build=build_user_sessions,
                layer="gold",
                watermark=SESSION_WATERMARK,
            ),
        ]
    )
