"""The one place timestamps are converted: epoch milliseconds, UTC datetimes and ISO-8601 text.

Everything is integer arithmetic on ``timedelta`` (never ``dt.timestamp() * 1000``, which is a
float and off by 1 ms for some values).

Example:
    >>> at = from_ms(1_763_805_600_123)
    >>> at.isoformat(), to_ms(at)
    ('2025-11-22T10:00:00.123000+00:00', 1763805600123)
    >>> iso(at)
    '2025-11-22T10:00:00.123Z'
    >>> parse_iso("2025-11-22T10:00:00.123Z") == to_ms(at) / 1000
    True
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
MS: Final = timedelta(milliseconds=1)


def as_utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime; a naive one is read as UTC (the session time zone)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def to_ms(at: datetime) -> int:
    """Epoch milliseconds of a timezone-aware datetime, exact (no float rounding).

    Raises:
        ValueError: ``at`` has no time zone (the Spark adapters hand over UTC-aware values).
    """
    if at.tzinfo is None:
        raise ValueError(f"timestamp {at} has no timezone: the adapter must pass UTC datetimes")
    return (at - EPOCH) // MS


def from_ms(ms: int) -> datetime:
    """The UTC datetime of epoch milliseconds."""
    return EPOCH + int(ms) * MS


def iso(at: datetime) -> str:
    """``2026-11-22T10:00:00.000Z``: millisecond ISO-8601 in UTC, as the producers write it."""
    return as_utc(at).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(value: Any) -> float | None:
    """Epoch seconds of an ISO-8601 string such as Spark's ``"2026-11-22T02:48:35.370Z"``; None
    when ``value`` is not such a string."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def json_default(value: Any) -> Any:
    """``json.dumps(default=...)`` for state documents: datetimes become epoch milliseconds."""
    if isinstance(value, datetime):
        return to_ms(as_utc(value))
    raise TypeError(f"State values must be JSON-able; got {type(value).__name__}: {value!r}")


def instant_ms(value: str) -> int:
    """Epoch milliseconds of an ISO-8601 time a user typed, which must name its time zone.

    >>> instant_ms("2026-11-23T10:00:00Z")
    1795428000000
    >>> instant_ms("2026-11-23T10:00")
    Traceback (most recent call last):
    ValueError: '2026-11-23T10:00' has no time zone; add one, e.g. 2026-11-23T10:00Z for UTC.
    """
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{value!r} is not an ISO 8601 time; write e.g. 2026-11-23T10:00:00Z."
        ) from None
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone; add one, e.g. {value}Z for UTC.")
    return to_ms(moment)
