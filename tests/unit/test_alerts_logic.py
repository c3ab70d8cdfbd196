"""Failed-login alerts, driven with events and a clock; no Spark."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from platform_pipelines.state.alerts import ALERT_FIELDS, AlertConfig, FailedLoginAlerts
from platform_pipelines.state.keyed import Clock, Step

LOGIC = FailedLoginAlerts()  # 5 failures within 10 minutes
MIN = 60_000
WINDOW = 10 * MIN
T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
T0_MS = int(T0.timestamp()) * 1000
CLOCK = Clock(processing_time_ms=T0_MS + 60 * MIN, watermark_ms=None)


def ms(minute: float) -> int:
    return T0_MS + int(minute * MIN)


def at(minute: float) -> datetime:
    return T0 + timedelta(milliseconds=int(minute * MIN))


def ev(minute: float, kind: str = "login_failed") -> dict[str, Any]:
    """A silver clickstream event of user u1 at T0 + ``minute``."""
    return {
        "event_id": f"{kind}-{minute}",
        "user_id": "u1",
        "event_type": kind,
        "page": "/login",
        "amount": None,
        "event_time": at(minute),
    }


def failures(*minutes: float) -> list[dict[str, Any]]:
    return [ev(m) for m in minutes]


def alert(first: float, last: float, count: int) -> dict[str, Any]:
    return {
        "alert_id": f"u1-{ms(last)}",
        "user_id": "u1",
        "first_failure_time": at(first),
        "last_failure_time": at(last),
        "failure_count": count,
        "alert_type": "failed_logins",
    }


def kept(*minutes: float) -> Step:
    """The step that keeps these failures (no alert) until the last one's window ends."""
    return Step({"failures_ms": [ms(m) for m in minutes]}, [], ms(minutes[-1]) + WINDOW)


def test_five_failures_in_a_row_raise_exactly_one_alert_and_remove_the_key():
    step = LOGIC.on_events("u1", None, failures(0, 1, 2, 3, 4), CLOCK)

    assert step == Step(None, [alert(0, 4, 5)], None)


def test_a_success_between_two_runs_of_four_failures_resets_the_count():
    events = [*failures(0, 1, 2, 3), ev(4, "login_success"), *failures(5, 6, 7, 8)]

    assert LOGIC.on_events("u1", None, events, CLOCK) == kept(5, 6, 7, 8)


def test_ten_failures_in_a_row_raise_two_alerts():
    step = LOGIC.on_events("u1", None, failures(*range(10)), CLOCK)

    assert step == Step(None, [alert(0, 4, 5), alert(5, 9, 5)], None)


def test_failures_every_three_minutes_never_reach_five_within_ten_minutes():
    step = LOGIC.on_events("u1", None, failures(*range(0, 30, 3)), CLOCK)

    assert step == kept(18, 21, 24, 27)


def test_only_failures_within_the_window_of_the_newest_one_count():
    step = LOGIC.on_events("u1", None, failures(0, 3, 6, 9, 11, 12), CLOCK)

    assert step == Step(None, [alert(3, 12, 5)], None)


def test_failures_exactly_one_window_apart_still_count_together():
    step = LOGIC.on_events("u1", None, failures(0, 2.5, 5, 7.5, 10), CLOCK)

    assert step == Step(None, [alert(0, 10, 5)], None)


def test_a_failure_one_millisecond_outside_the_window_drops_out():
    late = 10 + 1 / MIN
    step = LOGIC.on_events("u1", None, failures(0, 2.5, 5, 7.5, late), CLOCK)

    assert step == kept(2.5, 5, 7.5, late)


def test_other_event_types_neither_count_nor_reset():
    events = [ev(0), ev(1, "page_view"), ev(2), ev(3, "logout"), ev(4), ev(5, "purchase")]
    events += failures(6, 7)

    assert LOGIC.on_events("u1", None, events, CLOCK) == Step(None, [alert(0, 7, 5)], None)


def test_a_batch_without_logins_for_a_new_user_keeps_no_state():
    step = LOGIC.on_events("u1", None, [ev(0, "page_view"), ev(1, "checkout")], CLOCK)

    assert step == Step(None)


def test_arrival_order_within_a_batch_does_not_matter():
    events = [*failures(0, 1, 2, 3), ev(3.5, "login_success"), *failures(4, 5, 6, 7, 8, 9)]
    shuffled = random.Random(7).sample(events, len(events))
    assert shuffled != events

    expected = Step({"failures_ms": [ms(9)]}, [alert(4, 8, 5)], ms(9) + WINDOW)
    assert LOGIC.on_events("u1", None, events, CLOCK) == expected
    assert LOGIC.on_events("u1", None, shuffled, CLOCK) == expected


def test_in_one_millisecond_failures_count_before_a_success_forgets_them():
    events = [*failures(0, 1, 2, 3), ev(4, "login_success"), ev(4)]

    for batch in (events, events[::-1]):
        assert LOGIC.on_events("u1", None, batch, CLOCK) == Step(None, [alert(0, 4, 5)], None)


def test_a_success_forgets_a_failure_of_its_own_millisecond_whatever_the_arrival_order():
    events = [ev(0), ev(1, "login_success"), ev(1)]

    for batch in (events, events[::-1]):
        assert LOGIC.on_events("u1", None, batch, CLOCK) == Step(None)


def test_the_timer_is_the_newest_failure_plus_the_window():
    step = LOGIC.on_events("u1", None, failures(0, 1, 2), CLOCK)

    assert step.timeout_at_ms == ms(2) + WINDOW
    assert step.state == {"failures_ms": [ms(0), ms(1), ms(2)]}


def test_a_success_after_failures_removes_the_key_and_its_timer():
    state = kept(0, 1, 2).state

    step = LOGIC.on_events("u1", state, [ev(3, "login_success")], CLOCK)

    assert step == Step(None)


def test_a_success_forgets_only_failures_at_or_before_it():
    state = kept(0, 5, 6).state

    step = LOGIC.on_events("u1", state, [ev(5, "login_success")], CLOCK)

    assert step == kept(6)


def test_the_timeout_removes_the_key_and_emits_nothing():
    state = kept(0, 1, 2).state
    assert state is not None

    assert LOGIC.on_timeout("u1", state, Clock(CLOCK.processing_time_ms, ms(13))) == Step(None)


def test_failures_split_across_batches_carry_over_in_json_state():
    first = LOGIC.on_events("u1", None, failures(0, 1, 2), CLOCK)
    carried = json.loads(json.dumps(first.state))

    second = LOGIC.on_events("u1", carried, failures(3, 4, 5), CLOCK)

    assert first == kept(0, 1, 2)
    assert second == Step({"failures_ms": [ms(5)]}, [alert(0, 4, 5)], ms(5) + WINDOW)


def test_a_later_batch_outside_the_window_starts_the_count_again():
    state = kept(0, 1, 2, 3).state

    step = LOGIC.on_events("u1", state, failures(14), CLOCK)

    assert step == kept(14)


def test_a_late_failure_from_an_earlier_batch_is_placed_by_its_event_time():
    state = kept(5, 6, 7, 8).state

    step = LOGIC.on_events("u1", state, failures(1), CLOCK)

    assert step == Step(None, [alert(1, 8, 5)], None)


def test_failures_whose_window_the_watermark_already_passed_are_not_kept():
    clock = Clock(CLOCK.processing_time_ms, watermark_ms=ms(12) + 1)

    assert LOGIC.on_events("u1", None, failures(0, 1, 2), clock) == Step(None)


def test_failures_whose_window_ends_at_the_watermark_are_kept():
    clock = Clock(CLOCK.processing_time_ms, watermark_ms=ms(12))

    assert LOGIC.on_events("u1", None, failures(0, 1, 2), clock) == kept(0, 1, 2)


def test_a_custom_threshold_and_window_apply():
    logic = FailedLoginAlerts(AlertConfig(threshold=2, window_ms=MIN))

    step = logic.on_events("u1", None, failures(0, 2, 2.5), CLOCK)

    assert step == Step(None, [alert(2, 2.5, 2)], None)


def test_the_alert_row_has_the_declared_fields_in_order():
    step = LOGIC.on_events("u1", None, failures(0, 1, 2, 3, 4), CLOCK)

    assert list(step.outputs[0]) == list(ALERT_FIELDS)
    assert list(ALERT_FIELDS.values()) == [
        "string",
        "string",
        "timestamp",
        "timestamp",
        "long",
        "string",
    ]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"threshold": 0}, "threshold"),
        ({"window_ms": 0}, "window_ms"),
    ],
)
def test_an_invalid_config_names_the_field(kwargs: dict[str, int], field: str):
    with pytest.raises(ValueError, match=f"AlertConfig.{field}"):
        AlertConfig(**kwargs)
