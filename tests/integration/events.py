"""Hand-written clickstream events for integration tests: small, readable, exact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def ev(
    event_id: str,
    user: str,
    event_type: str,
    minute: float,
    page: str | None = None,
    amount: float | None = None,
) -> dict[str, Any]:
    """One clickstream event ``minute`` minutes after T0."""
    event: dict[str, Any] = {
        "event_id": event_id,
        "user_id": user,
        "event_type": event_type,
        "event_time": at(minute).isoformat().replace("+00:00", "Z"),
    }
    if page is not None:
        event["page"] = page
    if amount is not None:
        event["amount"] = amount
    return event


# u1 shops and logs out; u2 browses and goes quiet; u3's late visit moves the watermark past u2.
U1_SHOPPING = [
    ev("e1", "u1", "page_view", 0, "/home"),
    ev("e2", "u1", "page_view", 1, "/product/1"),
    ev("e3", "u1", "add_to_cart", 2, "/product/1"),
    ev("e4", "u1", "checkout", 3, "/checkout"),
    ev("e5", "u1", "purchase", 4, "/checkout", 25.5),
    ev("e6", "u1", "logout", 5),
]
U2_BROWSING = [ev("e7", "u2", "page_view", 0, "/home"), ev("e8", "u2", "page_view", 10, "/about")]
U3_MUCH_LATER = [ev("e9", "u3", "page_view", 120, "/home")]

MALFORMED = [
    b"not json at all",
    b'{"event_id": "x1"}',
    b'{"event_id": "x2", "user_id": "u9", "event_type": "page_view", "event_time": "yesterday"}',
]
EXPECTED_REASONS = {
    "not json at all": "invalid JSON",
    '{"event_id": "x1"}': "missing user_id; missing event_type; missing event_time",
    '{"event_id": "x2", "user_id": "u9", "event_type": "page_view", "event_time": "yesterday"}': 'event_time is not a timestamp: "yesterday"',
}
