"""When a lag was true: the time the rate it arrives at is judged from (``lag_measured_at``)."""

from __future__ import annotations

from types import SimpleNamespace

from platform_pipelines.health.evaluate import Broker, lag_measured_at

TOPIC_STREAM = SimpleNamespace(name="clickstream_raw", topic="clickstream")
TABLE_STREAM = SimpleNamespace(name="events", topic=None)


def clock() -> float:
    return 107.0  # the evaluation began at 100 s; reading the streams before this one took 7 s


def test_a_topic_s_lag_is_stamped_when_the_broker_gave_its_end_offsets() -> None:
    broker = Broker("localhost:9092", {"clickstream": {0: 10}}, answered_at=100.4)

    assert lag_measured_at(TOPIC_STREAM, broker, 100.0, clock) == 100.4  # type: ignore[arg-type]


def test_a_table_s_lag_is_stamped_when_it_was_read_not_when_the_evaluation_began() -> None:
    assert lag_measured_at(TABLE_STREAM, None, 100.0, clock) == 107.0  # type: ignore[arg-type]


def test_without_a_clock_the_evaluation_s_time_is_used() -> None:
    """A replay of a recording, or a test, judges at a chosen time: no clock, no answer time."""
    broker = Broker("localhost:9092", {"clickstream": {0: 10}}, answered_at=100.4)

    assert lag_measured_at(TOPIC_STREAM, broker, 50.0, None) == 50.0  # type: ignore[arg-type]
    assert lag_measured_at(TABLE_STREAM, broker, 50.0, None) == 50.0  # type: ignore[arg-type]
