"""Sessionization as a pure state machine: per user, sessions cut by inactivity or a logout.

The Spark adapters (``platform_pipelines.streams.sessions_python``) only convert rows and call
these functions; every decision about sessions is made here, so a unit test drives it with events
and a watermark. The built-in stream runs the Java port (``jvm/sessions``), which follows this
module line for line; a property-based test compares the two on thousands of generated cases.

Sessions are a function of the user's events, whatever order and batches they arrive in:

- Events are taken in ``event_order``: event time, then id, then type, page and amount. Events
  of one time, even of one ``(time, id)`` pair (a duplicate the dedup let through, ids reused by a
  producer), so take one order whatever order they arrived in. Two consecutive events more than
  ``gap_ms`` apart belong to different sessions; exactly ``gap_ms`` apart still continue one.
- A ``logout`` belongs to the session it ends; the next event starts a new session.
- An accepted event is held (``UserState.pending``) until the watermark reaches its event time,
  then released into the sessions in order. Every later event is after the watermark (an event at
  or before it is late, and the stream puts it into ``late_events`` instead), so the released
  events are complete up to the watermark and a session is never cut or closed too early.
- A session closes when its logout is released (reason ``logout``), or once the watermark reaches
  its last event + ``gap_ms``, whether a later event or only the watermark showed the silence
  (reason ``timeout``). Closed sessions are final (append mode) and never overlap.

So a session is emitted about one watermark delay after its last event: the price of results that
do not depend on arrival order.
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, replace
from typing import Final, Literal, cast

CloseReason = Literal["logout", "timeout"]

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
    """One clickstream event of a user, with its event time in epoch milliseconds; events are
    taken in ``event_order``."""

    event_time_ms: int
    event_id: str
    user_id: str
    event_type: str
    page: str | None = None
    amount: float | None = None


@dataclass(frozen=True)
class SessionState:
    """The open session of one user: flat fields, so it maps onto one Spark state row.

    ``pages`` are the last visited pages, oldest first; ``page_times_ms`` their event times.
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
class UserState:
    """Everything kept for one user: the open session of the released events (None when there is
    none) and the accepted events the watermark has not reached yet, in order."""

    open: SessionState | None = None
    pending: tuple[SessionEvent, ...] = ()

    @property
    def empty(self) -> bool:
        return self.open is None and not self.pending


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


Result = tuple[UserState | None, list[ClosedSession]]
EventOrder = tuple[int, str, str, bool, str, tuple[int, float]]


def event_order(event: SessionEvent) -> EventOrder:
    """The order a user's events are taken in, which the Java port (``jvm/sessions``) follows
    too: event time, then id, type, page (none first) and amount (none first, then by value, NaN
    last); text by code point. Events equal in all of these differ at most in the sign of a zero
    amount, which changes no session, so the order never depends on arrival.

    Example:
        >>> view, logout = (SessionEvent(5, "e1", "u", kind) for kind in ("page_view", "logout"))
        >>> [e.event_type for e in sorted([view, logout], key=event_order)]
        ['logout', 'page_view']
    """
    amount = event.amount
    rank = (0, 0.0) if amount is None else (2, 0.0) if math.isnan(amount) else (1, amount)
    page = event.page
    return (
        event.event_time_ms,
        event.event_id,
        event.event_type,
        page is not None,
        page or "",
        rank,
    )


def on_events(
    state: UserState | None, events: Iterable[SessionEvent], cfg: SessionConfig, watermark_ms: int
) -> Result:
    """Hold a batch's events (any order) and release whatever the watermark has reached.

    Returns:
        The user's state afterwards (None when nothing is left) and the sessions that closed,
        oldest first.

    Example:
        >>> cfg = SessionConfig(gap_ms=1000)
        >>> held, closed = on_events(None, [SessionEvent(5, "e1", "u", "logout")], cfg, 0)
        >>> held.pending[0].event_id, closed
        ('e1', [])
        >>> advance(held, cfg, watermark_ms=5)[1][0].close_reason
        'logout'
    """
    state = state or UserState()
    pending = list(state.pending)
    for event in events:
        insort(pending, event, key=event_order)
    return advance(replace(state, pending=tuple(pending)), cfg, watermark_ms)


def advance(state: UserState, cfg: SessionConfig, watermark_ms: int) -> Result:
    """Release the held events at or before the watermark, in order, and close the sessions the
    watermark has finished (called for a batch's events and when the user's timer fires)."""
    cut = bisect_right([e.event_time_ms for e in state.pending], watermark_ms)
    current, closed = _sweep(state.open, state.pending[:cut], cfg)
    if current is not None and current.last_event_ms + cfg.gap_ms <= watermark_ms:
        closed.append(_close(current, "timeout"))
        current = None
    after = UserState(current, state.pending[cut:])
    return (None if after.empty else after), closed


def timer_for(state: UserState, cfg: SessionConfig) -> int | None:
    """The event time (epoch ms) at which the user needs attention: the first held event's time
    or the open session's last event + gap, whichever comes first."""
    times = [e.event_time_ms for e in state.pending[:1]]
    if state.open is not None:
        times.append(state.open.last_event_ms + cfg.gap_ms)
    return min(times, default=None)


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
            closed.append(_close(current, "timeout"))
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
    """``a`` followed by ``b`` (``b`` is not earlier): pages append, the last ``max_pages`` kept."""
    pages, times = [*a.pages, *b.pages], [*a.page_times_ms, *b.page_times_ms]
    keep = slice(max(0, len(pages) - cfg.max_pages), None)
    return SessionState(
        user_id=a.user_id,
        session_start_ms=a.session_start_ms,
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


# ---- flat rows for the Spark state stores ----------------------------------------------------


def session_to_tuple(state: SessionState) -> tuple[object, ...]:
    """``state`` as a flat row, fields in declaration order, lists for the array fields."""
    row = astuple(state)
    return (*row[:4], list(state.pages), list(state.page_times_ms), *row[6:])


def session_from_tuple(row: Sequence[object]) -> SessionState:
    """The inverse of ``session_to_tuple``; accepts any sequences for the array fields."""
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


def event_to_tuple(event: SessionEvent) -> tuple[object, ...]:
    """A held event as a flat row: ``(event_time_ms, event_id, event_type, page, amount)``."""
    return (event.event_time_ms, event.event_id, event.event_type, event.page, event.amount)


def event_from_tuple(user_id: str, row: Sequence[object]) -> SessionEvent:
    """The inverse of ``event_to_tuple`` for the user ``user_id``."""
    amount = row[4]
    return SessionEvent(
        event_time_ms=int(cast(int, row[0])),
        event_id=str(row[1]),
        user_id=user_id,
        event_type=str(row[2]),
        page=None if row[3] is None else str(row[3]),
        amount=None if amount is None else float(cast(float, amount)),
    )
