"""The sessionization state machine, driven with events and a clock; no Spark."""

from __future__ import annotations

from datetime import UTC, datetime

from platform_pipelines.state.sessions import (
    ClosedSession,
    SessionConfig,
    SessionEvent,
    SessionState,
    on_events,
    on_timeout,
    state_from_tuple,
    state_to_tuple,
    timer_for,
)

CFG = SessionConfig()  # 30 minute gap, 10 pages
MIN = 60_000
T0 = int(datetime(2026, 11, 22, 10, 0, tzinfo=UTC).timestamp()) * 1000


def ev(
    minute: float, kind: str = "page_view", page: str | None = None, amount: float | None = None
):
    """An event of user u1 at T0 + ``minute``; its id sorts like its time."""
    at = T0 + int(minute * MIN)
    return SessionEvent("u1", f"e{at}", kind, at, page, amount)


def views(*minute_pages: tuple[float, str]) -> list[SessionEvent]:
    return [ev(m, "page_view", p) for m, p in minute_pages]


def state(start: float, last: float, count: int, pages: list[tuple[float, str]]) -> SessionState:
    return SessionState(
        user_id="u1",
        session_start_ms=T0 + int(start * MIN),
        last_event_ms=T0 + int(last * MIN),
        event_count=count,
        pages=tuple(p for _, p in pages),
        page_times_ms=tuple(T0 + int(m * MIN) for m, _ in pages),
        reached_checkout=False,
        purchased=False,
        revenue=0.0,
    )


def closed(
    start: float, end: float, count: int, pages: list[str], reason: str, **kw
) -> ClosedSession:
    values = {"reached_checkout": False, "purchased": False, "revenue": 0.0} | kw
    return ClosedSession(
        user_id="u1",
        session_id=f"u1-{T0 + int(start * MIN)}",
        session_start_ms=T0 + int(start * MIN),
        session_end_ms=T0 + int(end * MIN),
        duration_seconds=(end - start) * 60,
        event_count=count,
        last_pages=tuple(pages),
        close_reason=reason,  # type: ignore[arg-type]
        **values,
    )


def test_a_gap_longer_than_30_minutes_inside_a_batch_closes_the_earlier_session():
    events = views((0, "A"), (5, "B"), (10, "C"), (41, "D"))

    after, done = on_events(None, events, CFG)

    assert done == [closed(0, 10, 3, ["A", "B", "C"], "gap")]
    assert after == state(41, 41, 1, [(41, "D")])


def test_events_exactly_one_gap_apart_stay_in_one_session():
    after, done = on_events(None, views((0, "A"), (30, "B")), CFG)

    assert done == []
    assert after == state(0, 30, 2, [(0, "A"), (30, "B")])


def test_a_logout_closes_the_session_it_belongs_to_and_the_next_event_starts_a_new_one():
    events = [ev(0, page="A"), ev(3, "logout"), ev(4, page="B")]

    after, done = on_events(None, events, CFG)

    assert done == [closed(0, 3, 2, ["A"], "logout")]
    assert after == state(4, 4, 1, [(4, "B")])


def test_a_closed_last_session_removes_the_state():
    after, done = on_events(None, [ev(0, page="A"), ev(1, "logout")], CFG)

    assert after is None
    assert done == [closed(0, 1, 2, ["A"], "logout")]


def test_events_of_a_batch_are_processed_in_event_time_order_whatever_their_arrival_order():
    in_order = [ev(0, page="A"), ev(2, page="B"), ev(3, "logout"), ev(40, page="C"), ev(45)]

    assert on_events(None, list(reversed(in_order)), CFG) == on_events(None, in_order, CFG)
    after, done = on_events(
        None, [in_order[3], in_order[1], in_order[4], in_order[0], in_order[2]], CFG
    )
    assert done == [closed(0, 3, 3, ["A", "B"], "logout")]
    assert after == state(40, 45, 2, [(40, "C")])


def test_a_session_keeps_the_last_ten_pages_oldest_first_and_ignores_events_without_page():
    events = [*views(*[(m, f"P{m}") for m in range(12)]), ev(12, "add_to_cart", page=None)]

    after, _ = on_events(None, events, CFG)

    assert after is not None
    assert after.pages == tuple(f"P{m}" for m in range(2, 12))
    assert after.event_count == 13


def test_checkout_and_purchase_set_the_flags_and_revenue_sums_purchase_amounts_only():
    events = [
        ev(0, page="home"),
        ev(1, "add_to_cart", "cart", amount=99.0),
        ev(2, "checkout", "checkout"),
        ev(3, "purchase", "done", amount=10.5),
        ev(4, "purchase", "done", amount=20.25),
        ev(5, "purchase", "done", amount=None),
        ev(6, "logout"),
    ]

    _, done = on_events(None, events, CFG)

    assert done == [
        closed(
            0,
            6,
            7,
            ["home", "cart", "checkout", "done", "done", "done"],
            "logout",
            reached_checkout=True,
            purchased=True,
            revenue=30.75,
        )
    ]


def test_an_open_session_times_out_at_last_event_plus_gap_and_closes_as_timeout():
    open_session, _ = on_events(None, views((0, "A"), (7, "B")), CFG)
    assert open_session is not None

    assert timer_for(open_session, CFG) == T0 + 37 * MIN
    assert on_timeout(open_session, CFG) == closed(0, 7, 2, ["A", "B"], "timeout")


def test_a_session_whose_timer_is_already_behind_the_watermark_closes_at_once():
    after, done = on_events(None, views((0, "A")), CFG, watermark_ms=T0 + 30 * MIN)

    assert after is None
    assert done == [closed(0, 0, 1, ["A"], "timeout")]


def test_a_late_event_older_than_the_last_one_is_folded_in_and_moves_the_start_earlier():
    open_session, _ = on_events(None, views((10, "B"), (20, "D")), CFG)

    after, done = on_events(open_session, views((15, "C"), (0, "A")), CFG)

    assert done == []
    assert after == state(0, 20, 4, [(0, "A"), (10, "B"), (15, "C"), (20, "D")])


def test_a_late_event_more_than_a_gap_before_the_open_session_is_its_own_closed_session():
    open_session, _ = on_events(None, views((60, "B")), CFG)

    after, done = on_events(open_session, views((0, "A"), (29, "Z")), CFG)

    assert done == [closed(0, 29, 2, ["A", "Z"], "gap")]
    assert after == open_session


def test_a_late_logout_inside_the_open_session_closes_it_as_a_whole():
    open_session, _ = on_events(None, views((0, "A"), (10, "B")), CFG)

    after, done = on_events(open_session, [ev(5, "logout")], CFG)

    assert after is None
    assert done == [closed(0, 10, 3, ["A", "B"], "logout")]


def test_the_state_round_trips_through_a_flat_row_with_list_fields():
    open_session = state(0, 10, 2, [(0, "A"), (10, "B")])

    row = state_to_tuple(open_session)

    assert row == ("u1", T0, T0 + 10 * MIN, 2, ["A", "B"], [T0, T0 + 10 * MIN], False, False, 0.0)
    assert state_from_tuple(row) == open_session
