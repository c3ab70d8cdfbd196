"""The sessionization state machine, driven with events and a watermark; no Spark."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime

from platform_pipelines.state.sessions import (
    ClosedSession,
    SessionConfig,
    SessionEvent,
    SessionState,
    UserState,
    advance,
    event_from_tuple,
    event_to_tuple,
    on_events,
    session_from_tuple,
    session_to_tuple,
    timer_for,
)

CFG = SessionConfig()  # 30 minute gap, 10 pages
MIN = 60_000
T0 = int(datetime(2026, 11, 22, 10, 0, tzinfo=UTC).timestamp()) * 1000
NONE = 0  # a watermark that releases nothing (every event is after it)


def at(minute: float) -> int:
    return T0 + int(minute * MIN)


def ev(
    minute: float, kind: str = "page_view", page: str | None = None, amount: float | None = None
):
    """An event of user u1 at T0 + ``minute``; its id sorts like its time."""
    return SessionEvent(at(minute), f"e{at(minute)}", "u1", kind, page, amount)


def views(*minute_pages: tuple[float, str]) -> list[SessionEvent]:
    return [ev(m, "page_view", p) for m, p in minute_pages]


def session(start: float, last: float, count: int, pages: list[tuple[float, str]]) -> SessionState:
    return SessionState(
        user_id="u1",
        session_start_ms=at(start),
        last_event_ms=at(last),
        event_count=count,
        pages=tuple(p for _, p in pages),
        page_times_ms=tuple(at(m) for m, _ in pages),
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
        session_id=f"u1-{at(start)}",
        session_start_ms=at(start),
        session_end_ms=at(end),
        duration_seconds=(end - start) * 60,
        event_count=count,
        last_pages=tuple(pages),
        close_reason=reason,  # type: ignore[arg-type]
        **values,
    )


def released(events: list[SessionEvent], watermark_minute: float):
    """All events in one batch, judged by a watermark at T0 + ``watermark_minute``."""
    return on_events(None, events, CFG, at(watermark_minute))


def test_events_after_the_watermark_are_held_until_it_reaches_them():
    held, done = on_events(None, views((0, "A"), (5, "B")), CFG, NONE)

    assert done == []
    assert held == UserState(None, tuple(views((0, "A"), (5, "B"))))
    assert timer_for(held, CFG) == at(0)


def test_the_watermark_releases_held_events_in_order_into_the_open_session():
    held, _ = on_events(None, views((5, "B"), (0, "A"), (20, "C")), CFG, NONE)

    after, done = advance(held, CFG, at(5))

    assert done == []
    assert after == UserState(session(0, 5, 2, [(0, "A"), (5, "B")]), tuple(views((20, "C"))))
    assert timer_for(after, CFG) == at(20)  # the next held event comes before 5 + 30 min


def test_a_gap_longer_than_30_minutes_closes_the_earlier_session_as_timeout():
    after, done = released(views((0, "A"), (5, "B"), (10, "C"), (41, "D")), watermark_minute=41)

    assert done == [closed(0, 10, 3, ["A", "B", "C"], "timeout")]
    assert after == UserState(session(41, 41, 1, [(41, "D")]))


def test_events_exactly_one_gap_apart_stay_in_one_session():
    after, done = released(views((0, "A"), (30, "B")), watermark_minute=30)

    assert done == []
    assert after == UserState(session(0, 30, 2, [(0, "A"), (30, "B")]))


def test_a_logout_closes_its_session_once_released_and_the_next_event_starts_a_new_one():
    after, done = released([ev(0, page="A"), ev(3, "logout"), ev(4, page="B")], watermark_minute=4)

    assert done == [closed(0, 3, 2, ["A"], "logout")]
    assert after == UserState(session(4, 4, 1, [(4, "B")]))


def test_a_logout_after_the_watermark_is_held_and_closes_nothing_yet():
    after, done = released([ev(0, page="A"), ev(3, "logout")], watermark_minute=2)

    assert done == []
    assert after == UserState(session(0, 0, 1, [(0, "A")]), (ev(3, "logout"),))


def test_the_open_session_closes_as_timeout_when_the_watermark_reaches_last_event_plus_gap():
    open_state, _ = released(views((0, "A"), (7, "B")), watermark_minute=7)
    assert timer_for(open_state, CFG) == at(37)

    still_open, none = advance(open_state, CFG, at(36.99))
    after, done = advance(open_state, CFG, at(37))

    assert none == [] and still_open == open_state
    assert after is None
    assert done == [closed(0, 7, 2, ["A", "B"], "timeout")]


def test_a_session_keeps_the_last_ten_pages_oldest_first_and_ignores_events_without_page():
    events = [*views(*[(m, f"P{m}") for m in range(12)]), ev(12, "add_to_cart", page=None)]

    after, _ = released(events, watermark_minute=12)

    assert after is not None and after.open is not None
    assert after.open.pages == tuple(f"P{m}" for m in range(2, 12))
    assert after.open.event_count == 13


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

    _, done = released(events, watermark_minute=6)

    pages = ["home", "cart", "checkout", "done", "done", "done"]
    assert done == [
        closed(0, 6, 7, pages, "logout", reached_checkout=True, purchased=True, revenue=30.75)
    ]


def test_events_of_one_time_and_id_are_taken_by_type_page_and_amount_whatever_the_arrival():
    def same(kind: str, page: str | None, amount: float | None = None) -> SessionEvent:
        return SessionEvent(at(1), "e1", "u1", kind, page, amount)

    events = [
        same("page_view", "B"),
        same("purchase", "C", 2.5),
        same("page_view", None),
        same("purchase", "C", None),
        same("checkout", "A"),
    ]
    bought = {"reached_checkout": True, "purchased": True, "revenue": 2.5}

    for arrival in itertools.permutations(events):
        _, done = released(list(arrival), watermark_minute=100)

        assert done == [closed(1, 1, 5, ["A", "B", "C", "C"], "timeout", **bought)]


A_DAY = [
    ev(0, page="home"),
    ev(2, page="p1"),
    ev(3, "logout"),
    ev(3.5, page="late-after-logout"),
    ev(10, page="p2"),
    ev(50, page="p3"),
    ev(51, "checkout", "checkout"),
    ev(52, "purchase", "done", amount=5.0),
    ev(90, page="p4"),
]


def run_batches(batches: list[list[SessionEvent]], watermarks: list[float]) -> list[ClosedSession]:
    """Feed ``batches`` one after another, each with its watermark, then let the watermark pass
    everything; only events after the watermark of their batch are accepted (as Spark does)."""
    state: UserState | None = None
    done: list[ClosedSession] = []
    late_limit = float("-inf")
    for batch, minute in zip(batches, watermarks, strict=True):
        accepted = [e for e in batch if e.event_time_ms > late_limit]
        state, out = on_events(state, accepted, CFG, at(minute))
        done += out
        late_limit = at(minute)
    if state is not None:
        done += advance(state, CFG, at(1000))[1]
    return done


def test_sessions_are_the_same_whatever_the_arrival_order_and_batches_within_the_watermark():
    expected = run_batches([A_DAY], [1000])
    bought = {"reached_checkout": True, "purchased": True, "revenue": 5.0}
    assert expected == [
        closed(0, 3, 3, ["home", "p1"], "logout"),
        closed(3.5, 10, 2, ["late-after-logout", "p2"], "timeout"),
        closed(50, 52, 3, ["p3", "checkout", "done"], "timeout", **bought),
        closed(90, 90, 1, ["p4"], "timeout"),
    ]
    rng = random.Random(7)
    for _ in range(200):
        shuffled = rng.sample(A_DAY, len(A_DAY))
        cuts = sorted(rng.sample(range(1, len(A_DAY)), 3))
        batches = [shuffled[i:j] for i, j in itertools.pairwise([0, *cuts, len(A_DAY)])]
        # each watermark is below every event still to come, so nothing is late
        watermarks = [
            min([e.event_time_ms for b in batches[k + 1 :] for e in b], default=at(1000))
            for k in range(len(batches))
        ]
        minutes = [(w - 1 - T0) / MIN for w in watermarks]
        assert run_batches(batches, minutes) == expected, (shuffled, cuts)


def test_closed_sessions_of_one_user_never_overlap_whatever_the_arrival_order():
    rng = random.Random(11)
    for _ in range(100):
        shuffled = rng.sample(A_DAY, len(A_DAY))
        watermarks = sorted(rng.uniform(-10, 100) for _ in range(3))
        done = run_batches([shuffled[:3], shuffled[3:6], shuffled[6:]], watermarks)
        spans = sorted((s.session_start_ms, s.session_end_ms) for s in done)
        assert all(a_end < b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))


def test_the_state_round_trips_through_flat_rows():
    open_session = session(0, 10, 2, [(0, "A"), (10, "B")])
    held = ev(12, "purchase", "done", amount=3.5)

    row = session_to_tuple(open_session)

    assert row == ("u1", T0, at(10), 2, ["A", "B"], [T0, at(10)], False, False, 0.0)
    assert session_from_tuple(row) == open_session
    assert event_to_tuple(held) == (at(12), f"e{at(12)}", "purchase", "done", 3.5)
    assert event_from_tuple("u1", event_to_tuple(held)) == held
