"""key_horizon: how long each stream keeps a key, read from its declaration."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from platform_pipelines.health.key_horizon import KeyHorizon, clock_advance, key_horizon
from platform_pipelines.streams.builtin import builtin_streams
from tests.unit.health.factories import batches
from user_streams.running_count import STREAMS

BUILTIN = builtin_streams()


@pytest.mark.parametrize(
    ("stream", "horizon", "described"),
    [
        # dropDuplicatesWithinWatermark keeps an id for the watermark delay past its event time
        (
            "events",
            KeyHorizon("event_time", 600.0, 600.0),
            "watermark 10 min + key lifetime 10 min",
        ),
        # a session ends when the watermark passes its last event + the 30-minute gap
        (
            "user_sessions",
            KeyHorizon("event_time", 600.0, 1800.0),
            "watermark 10 min + key lifetime 30 min",
        ),
        # failures expire 10 minutes (the alert window) after the newest one
        (
            "security_alerts",
            KeyHorizon("event_time", 600.0, 600.0),
            "watermark 10 min + key lifetime 10 min",
        ),
    ],
)
def test_the_builtin_streams_declare_how_long_they_keep_a_key(stream, horizon, described):
    assert key_horizon(BUILTIN.get(stream)) == horizon
    assert horizon.describe() == described


def test_streams_that_remove_nothing_by_time_declare_no_horizon():
    # service_status keeps one row per service for good; bronze keeps no state
    assert key_horizon(BUILTIN.get("service_status")) is None
    assert key_horizon(BUILTIN.get("clickstream_raw")) is None
    assert key_horizon(replace(STREAMS[0], watermark=None)) is None


def test_a_processing_time_timeout_with_a_key_lifetime_is_a_wall_clock_horizon():
    status = replace(BUILTIN.get("service_status"), key_lifetime=timedelta(minutes=5))

    assert key_horizon(status) == KeyHorizon("processing_time", 0.0, 300.0)
    assert key_horizon(status).describe() == "processing-time timeout 5 min"


def test_the_clock_advance_starts_at_the_first_batch_with_rows():
    records = batches(4, rows_in=[0, 10, 10, 10], watermark_delay=600.0)
    # The first batch has no rows, hence no event times: the second one's newest event counts.
    first, *rest = records
    no_rows = replace(
        first,
        progress={
            **first.progress,
            "eventTime": {"watermark": first.progress["eventTime"]["watermark"]},
        },
    )

    advance = clock_advance([no_rows, *rest], KeyHorizon("event_time", 600.0, 600.0))

    assert advance == 21.0  # batches 1 to 3 are 20 s apart, plus the 1 s the newest event was old
