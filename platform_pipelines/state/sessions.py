"""Sessionization as a pure state machine: per user, sessions cut by gap, logout or timeout.

The Spark adapters (``platform_pipelines.streams.sessions``) only convert rows and call these
functions; every decision about sessions is made here, so a unit test can drive it with events
and a clock.

Rules, per user:

- A batch's events are sorted by ``(event_time_ms, event_id)``; their arrival order is irrelevant.
- Two consecutive events more than ``gap_ms`` apart belong to different sessions: the earlier
  session closes with reason ``"gap"``. Exactly ``gap_ms`` apart still continues the session.
- A ``logout`` event belongs to the session it closes (reason ``"logout"``); the next event starts
  a new session.
- With no more events, the session closes with reason ``"timeout"`` once the watermark reaches
  ``timer_for(state)`` (last event + gap).
- A late event (older than the open session's last event) is folded into the open session; the
  start moves earlier if needed. A late ``logout`` closes the open session as a whole.
- A late event older than the open session's start by more than ``gap_ms`` cannot belong to it:
  it forms its own session (together with any other such late events within ``gap_ms`` of it),
  which is closed at once with reason ``"gap"``, because the next known event is more than
  ``gap_ms`` later. If an even later event would have bridged the two, they stay two sessions:
  closed sessions are final (append mode).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass
from typing import Final, Literal, cast

CloseReason = Literal["gap", "logout", "timeout"]

LOGOUT: Final = "logout"
CHECKOUT: Final = "checkout"
PURCHASE: Final = "purchase"


@dataclass(frozen=True)
class SessionConfig:
    """How sessions are cut.

    Attributes:
        gap_ms: event-time inactivity (milliseconds) after which a session closes; 30 minutes.
        max_pages: how many of the last visited pages a session keeps; 10.
    """

    gap_ms: int = 30 * 60 * 1000
    max_pages: int = 10


@dataclass(frozen=True)
class SessionEvent:
    """One clickstream event of a user, with its event time in epoch milliseconds."""

    user_id: str
    event_id: str
    event_type: str
    event_time_ms: int
    page: str | None = None
    amount: float | None = None


@dataclass(frozen=True)
class SessionState:
    """The open session of one user: flat fields, so it maps onto one Spark state row.

    ``pages`` are the last visited pages, oldest first; ``page_times_ms`` holds their event times
    so that a late event's page lands in its place.
    """

    user_id: str
    session_start_ms: int
    last_event_ms: int
    event_count: int
    pages: tuple[str, ...]
    page_times_ms: tuple[int, ...]
    reached_checkout: bool
    purchased: bool
    revenue: float


@dataclass(frozen=True)
class ClosedSession:
    """A finished session, as written to the ``user_sessions`` table."""

    user_id: str
    session_id: str
    session_start_ms: int
    session_end_ms: int
    duration_seconds: float
    event_count: int
    last_pages: tuple[str, ...]
    reached_checkout: bool
    purchased: bool
    revenue: float
    close_reason: CloseReason


def on_events(
    state: SessionState | None,
    events: Iterable[SessionEvent],
    cfg: SessionConfig,
    watermark_ms: int | None = None,
) -> tuple[SessionState | None, list[ClosedSession]]:
    """Fold one batch of a user's events into the open session.

    Args:
        state: the user's open session, or None.
        events: the user's new events, in any order.
        cfg: gap and page limit.
        watermark_ms: the current event-time watermark, if known. An open session whose timer is
            already at or behind it closes as ``"timeout"`` now, since its timer could not fire.

    Returns:
        The open session afterwards (None when every session closed) and the sessions that
        closed, oldest first.

    Example:
        >>> cfg = SessionConfig(gap_ms=1000)
        >>> state, closed = on_events(None, [SessionEvent("u", "e1", "logout", 5)], cfg)
        >>> state, closed[0].session_id, closed[0].close_reason
        (None, 'u-5', 'logout')
    """
    ordered = sorted(events, key=lambda e: (e.event_time_ms, e.event_id))
    if state is None:
        current, closed = _sweep(None, ordered, cfg)
    else:
        before = [e for e in ordered if e.event_time_ms < state.session_start_ms]
        current, closed = _sweep(None, before, cfg)
        if current is not None and state.session_start_ms - current.last_event_ms <= cfg.gap_ms:
            current = _merge(current, state, cfg)
        else:
            closed += [] if current is None else [_close(current, "gap")]
            current = state
        current, more = _sweep(current, ordered[len(before) :], cfg)
        closed += more
    if current is not None and watermark_ms is not None and timer_for(current, cfg) <= watermark_ms:
        return None, [*closed, on_timeout(current, cfg)]
    return current, closed


def on_timeout(state: SessionState, cfg: SessionConfig) -> ClosedSession:
    """Close ``state`` because the watermark passed its timer; the caller then removes the state."""
    return _close(state, "timeout")


def timer_for(state: SessionState, cfg: SessionConfig) -> int:
    """The event time (epoch ms) at which ``state`` times out: last event + gap."""
    return state.last_event_ms + cfg.gap_ms


def state_to_tuple(state: SessionState) -> tuple[object, ...]:
    """``state`` as a flat row, fields in declaration order, lists for the array fields."""
    row = astuple(state)
    return (*row[:4], list(state.pages), list(state.page_times_ms), *row[6:])


def state_from_tuple(row: Sequence[object]) -> SessionState:
    """The inverse of ``state_to_tuple``; accepts any sequences for the array fields."""
    pages = cast(Iterable[str], row[4])
    times = cast(Iterable[int], row[5])
    return SessionState(
        user_id=str(row[0]),
        session_start_ms=int(cast(int, row[1])),
        last_event_ms=int(cast(int, row[2])),
        event_count=int(cast(int, row[3])),
        pages=tuple(str(p) for p in pages),
        page_times_ms=tuple(int(t) for t in times),
        reached_checkout=bool(row[6]),
        purchased=bool(row[7]),
        revenue=float(cast(float, row[8])),
    )


def _sweep(
    current: SessionState | None, ordered: Sequence[SessionEvent], cfg: SessionConfig
) -> tuple[SessionState | None, list[ClosedSession]]:
    """Walk time-ordered events from ``current``, cutting sessions at gaps and logouts."""
    closed: list[ClosedSession] = []
    for event in ordered:
        single = _from_event(event)
        if current is None:
            current = single
        elif event.event_time_ms - current.last_event_ms > cfg.gap_ms:
            closed.append(_close(current, "gap"))
            current = single
        else:
            current = _merge(current, single, cfg)
        if event.event_type == LOGOUT:
            closed.append(_close(current, "logout"))
            current = None
    return current, closed


def _from_event(event: SessionEvent) -> SessionState:
    """A one-event session."""
    is_purchase = event.event_type == PURCHASE
    return SessionState(
        user_id=event.user_id,
        session_start_ms=event.event_time_ms,
        last_event_ms=event.event_time_ms,
        event_count=1,
        pages=(event.page,) if event.page is not None else (),
        page_times_ms=(event.event_time_ms,) if event.page is not None else (),
        reached_checkout=event.event_type == CHECKOUT,
        purchased=is_purchase,
        revenue=(event.amount or 0.0) if is_purchase else 0.0,
    )


def _merge(a: SessionState, b: SessionState, cfg: SessionConfig) -> SessionState:
    """One session holding the events of ``a`` and ``b``; on equal times ``a``'s pages go first."""
    pages, times = list(a.pages), list(a.page_times_ms)
    for page, at in zip(b.pages, b.page_times_ms, strict=True):
        slot = bisect_right(times, at)
        pages.insert(slot, page)
        times.insert(slot, at)
    keep = slice(max(0, len(pages) - cfg.max_pages), None)
    return SessionState(
        user_id=a.user_id,
        session_start_ms=min(a.session_start_ms, b.session_start_ms),
        last_event_ms=max(a.last_event_ms, b.last_event_ms),
        event_count=a.event_count + b.event_count,
        pages=tuple(pages[keep]),
        page_times_ms=tuple(times[keep]),
        reached_checkout=a.reached_checkout or b.reached_checkout,
        purchased=a.purchased or b.purchased,
        revenue=a.revenue + b.revenue,
    )


def _close(state: SessionState, reason: CloseReason) -> ClosedSession:
    """The finished form of ``state``; its id is derived from user and start, so replays agree."""
    return ClosedSession(
        user_id=state.user_id,
        session_id=f"{state.user_id}-{state.session_start_ms}",
        session_start_ms=state.session_start_ms,
        session_end_ms=state.last_event_ms,
        duration_seconds=(state.last_event_ms - state.session_start_ms) / 1000,
        event_count=state.event_count,
        last_pages=state.pages,
        reached_checkout=state.reached_checkout,
        purchased=state.purchased,
        revenue=state.revenue,
        close_reason=reason,
    )
