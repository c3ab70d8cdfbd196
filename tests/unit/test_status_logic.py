"""Service status from heartbeats, driven with events and a clock; no Spark."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from platform_pipelines.state.keyed import Clock, Step
from platform_pipelines.state.status import STATUS_FIELDS, ServiceStatus, StatusConfig

LOGIC = ServiceStatus()  # stale after 5 minutes of silence
MIN = 60_000
STALE_AFTER = 5 * MIN
T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
T0_MS = int(T0.timestamp()) * 1000


def ms(minute: float) -> int:
    return T0_MS + int(minute * MIN)


def at(minute: float) -> datetime:
    return T0 + timedelta(milliseconds=int(minute * MIN))


def clock(minute: float) -> Clock:
    """The wall clock of a batch at T0 + ``minute``; heartbeats carry no watermark here."""
    return Clock(processing_time_ms=ms(minute))


def beat(minute: float, status: str | None = "ok") -> dict[str, Any]:
    """A heartbeat of service api at event time T0 + ``minute``."""
    return {"service": "api", "status": status, "event_time": at(minute)}


def state(status: str, changed_at: float, last_heartbeat: float) -> dict[str, Any]:
    return {
        "status": status,
        "changed_at_ms": ms(changed_at),
        "last_heartbeat_ms": ms(last_heartbeat),
    }


def row(status: str, changed_at: float, last_heartbeat: float) -> dict[str, Any]:
    return {
        "service": "api",
        "status": status,
        "changed_at": at(changed_at),
        "last_heartbeat_time": at(last_heartbeat),
    }


def test_the_first_heartbeat_of_a_new_service_emits_ok_and_sets_the_timer():
    step = LOGIC.on_events("api", None, [beat(0)], clock(0.5))

    # Five minutes after the heartbeat was sent, not after the batch that read it.
    assert step == Step(state("ok", 0, 0), [row("ok", 0, 0)], ms(0) + STALE_AFTER)


def test_ok_is_dated_by_the_first_heartbeat_and_notes_the_last():
    step = LOGIC.on_events("api", None, [beat(1), beat(0), beat(2)], clock(3))

    assert step == Step(state("ok", 0, 2), [row("ok", 0, 2)], ms(2) + STALE_AFTER)


def test_heartbeats_while_ok_emit_nothing_and_push_the_timer_on():
    step = LOGIC.on_events("api", state("ok", 0, 0), [beat(4), beat(4.5)], clock(5))

    assert step == Step(state("ok", 0, 4.5), [], ms(4.5) + STALE_AFTER)


def test_a_late_heartbeat_does_not_move_the_last_heartbeat_back():
    step = LOGIC.on_events("api", state("ok", 0, 4), [beat(2)], clock(5))

    assert step == Step(state("ok", 0, 4), [], ms(4) + STALE_AFTER)


def test_the_timeout_emits_stale_once_and_keeps_the_state_without_a_timer():
    step = LOGIC.on_timeout("api", state("ok", 0, 4), clock(10))

    assert step == Step(state("stale", 10, 4), [row("stale", 10, 4)], None)


def test_a_timeout_while_already_stale_emits_nothing():
    stale = state("stale", 10, 4)

    assert LOGIC.on_timeout("api", stale, clock(20)) == Step(stale)


def test_the_first_heartbeat_after_stale_emits_ok():
    step = LOGIC.on_events("api", state("stale", 10, 4), [beat(12), beat(13)], clock(14))

    assert step == Step(state("ok", 12, 13), [row("ok", 12, 13)], ms(13) + STALE_AFTER)


def test_a_full_cycle_carries_json_state_between_calls():
    first = LOGIC.on_events("api", None, [beat(0)], clock(0))
    carried = json.loads(json.dumps(first.state))
    second = LOGIC.on_events("api", carried, [beat(1)], clock(1))
    assert second.state is not None
    stale = LOGIC.on_timeout("api", second.state, clock(6))
    assert stale.state is not None
    back = LOGIC.on_events("api", stale.state, [beat(30)], clock(30))

    outputs = [*first.outputs, *second.outputs, *stale.outputs, *back.outputs]
    assert outputs == [row("ok", 0, 0), row("stale", 6, 1), row("ok", 30, 30)]
    assert back.timeout_at_ms == ms(30) + STALE_AFTER


@pytest.mark.parametrize("status", [None, "ok", "degraded", "down"])
def test_any_heartbeat_counts_whatever_its_status_field_says(status: str | None):
    step = LOGIC.on_events("api", None, [beat(0, status)], clock(0))

    assert step.outputs == [row("ok", 0, 0)]


def test_a_service_seeded_as_stale_emits_ok_on_its_first_heartbeat():
    seeded = LOGIC.initial_state("api", row("stale", 10, 4))

    step = LOGIC.on_events("api", seeded, [beat(12)], clock(12))

    assert seeded == state("stale", 10, 4)
    assert step == Step(state("ok", 12, 12), [row("ok", 12, 12)], ms(12) + STALE_AFTER)


def test_a_service_seeded_as_ok_emits_nothing_on_its_next_heartbeat():
    seeded = LOGIC.initial_state("api", row("ok", 0, 3))

    step = LOGIC.on_events("api", seeded, [beat(4)], clock(4))

    assert step == Step(state("ok", 0, 4), [], ms(4) + STALE_AFTER)


def test_a_seed_row_with_an_unknown_status_is_refused():
    with pytest.raises(ValueError, match="'degraded'"):
        LOGIC.initial_state("api", row("degraded", 0, 0))


@pytest.mark.parametrize(
    ("sent", "read", "timer"),
    [
        (10, 10, 15),  # read at once
        (10, 12, 15),  # two minutes on its way: not added to the timeout
        (10, 12.5, 15),  # half the timeout on its way: still credited
        (10, 40, 42.5),  # older (a backlog, a clock behind): half the timeout credited, no more
        (10, 9, 14),  # dated after the batch read it (a clock ahead): from the batch
    ],
)
def test_the_timer_counts_from_the_heartbeat_at_most_half_the_timeout_back(
    sent: float, read: float, timer: float
):
    step = LOGIC.on_events("api", state("ok", 0, 0), [beat(sent)], clock(read))

    assert step.timeout_at_ms == ms(timer)


def test_heartbeats_twice_per_timeout_never_time_out_whatever_the_steady_delay():
    """Every 2.4 minutes (a timeout of 5), read 0 to 20 minutes after they were sent."""
    for delay in (0, 1, 2.5, 4, 20):
        timer = LOGIC.on_events("api", state("ok", 0, 0), [beat(0)], clock(delay)).timeout_at_ms
        assert timer is not None and timer > ms(2.4 + delay), delay


def test_a_custom_stale_after_sets_the_timer():
    logic = ServiceStatus(StatusConfig(stale_after_ms=30_000))

    assert logic.on_events("api", None, [beat(0)], clock(0)).timeout_at_ms == ms(0) + 30_000


def test_the_status_row_has_the_declared_fields_in_order():
    step = LOGIC.on_events("api", None, [beat(0)], clock(0))

    assert list(step.outputs[0]) == list(STATUS_FIELDS)
    assert list(STATUS_FIELDS.values()) == ["string", "string", "timestamp", "timestamp"]


@pytest.mark.parametrize("stale_after_ms", [0, -1])
def test_an_invalid_config_names_the_field(stale_after_ms: int):
    with pytest.raises(ValueError, match=r"StatusConfig\.stale_after_ms"):
        StatusConfig(stale_after_ms=stale_after_ms)
