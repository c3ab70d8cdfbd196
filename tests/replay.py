"""What the JVM parity tests share: the replay entry points' byte format, Hypothesis settings.

The entry points are ``platform.sessions.SessionsReplay`` and ``platform.alerts.AlertsReplay``.

A parity test generates cases (one user's micro-batches each), replays a whole list of them in one
py4j call, replays the same list through the Python specification, and compares every step's
output. A list that differs is shrunk by Hypothesis like any other example, down to one small
case; keep that case as an ``@example`` so it is checked on every run after.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import astuple, dataclass
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Marks "no state left" where the JVM writes a timer (Long.MIN_VALUE).
NO_TIMER = -(2**63)

PARITY = settings(
    max_examples=600,
    deadline=None,  # a step's time is mostly the JVM call: not a property of the code under test
    database=None,  # nothing written into the work tree; a failure prints its example to keep
    print_blob=True,
    # The autouse fixtures of the Spark tests are function-scoped; none of them holds state that
    # a generated example could leak into the next. Generation runs beside the rest of the suite
    # on two shared cores: its speed there says nothing about the ports.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass(frozen=True)
class Step:
    """One call for the user: a batch of ``events`` with the batch's watermark, or (``events`` is
    None) the user's event-time timer at ``watermark_ms``, which fires only as Spark fires it:
    the user has state and the timer is before the watermark.

    The JVM receives the batch in ``arrival`` order (indexes into ``events``), the specification
    as generated: a batch's events come in no guaranteed order, so results must not depend on it.
    """

    watermark_ms: int
    events: tuple[Any, ...] | None
    arrival: tuple[int, ...] = ()

    def arrived(self) -> tuple[Any, ...]:
        """The events in the order the JVM receives them."""
        return tuple(self.events[i] for i in self.arrival) if self.events else ()


# An event's place in the order the JVM receives its batch (ties: as generated). Shrinks to 0,
# so a shrunk example keeps a different arrival order only where it matters.
ARRIVAL = st.integers(0, 7)


def steps_of(
    start: int,
    drafts: list[tuple[int, list[tuple[Any, ...]] | None]],
    make: Callable[[int, tuple[Any, ...]], Any],
) -> tuple[Step, ...]:
    """Steps from a watermark at ``start`` and drafts of ``(watermark advance, None for the timer
    or the batch's events)``. An event draft is ``(ARRIVAL rank, *fields)``; its event is
    ``make(watermark, fields)``."""
    watermark, steps = start, []
    for advance_by, drafted in drafts:
        watermark += advance_by
        if drafted is None:
            steps.append(Step(watermark, None))
            continue
        events = tuple(make(watermark, draft[1:]) for draft in drafted)
        arrival = sorted(range(len(drafted)), key=lambda i: drafted[i][0])
        steps.append(Step(watermark, events, tuple(arrival)))
    return tuple(steps)


class Encoder:
    """Big-endian values as Java's DataInputStream reads them; text is UTF-8 with its length."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def i32(self, value: int) -> None:
        self._parts.append(struct.pack(">i", value))

    def i64(self, value: int) -> None:
        self._parts.append(struct.pack(">q", value))

    def f64(self, value: float) -> None:
        self._parts.append(struct.pack(">d", value))

    def flag(self, value: bool) -> None:
        self._parts.append(struct.pack(">?", value))

    def text(self, value: str) -> None:
        utf8 = value.encode()
        self.i32(len(utf8))
        self._parts.append(utf8)

    def optional_text(self, value: str | None) -> None:
        self.flag(value is not None)
        if value is not None:
            self.text(value)

    def optional_f64(self, value: float | None) -> None:
        self.flag(value is not None)
        if value is not None:
            self.f64(value)

    def payload(self) -> bytes:
        return b"".join(self._parts)


class Decoder:
    """Reads what Java's DataOutputStream wrote, in the same order."""

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._at = 0

    def _take(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self._data, self._at)
        self._at += struct.calcsize(fmt)
        return value

    def i32(self) -> int:
        return int(self._take(">i"))

    def i64(self) -> int:
        return int(self._take(">q"))

    def f64(self) -> float:
        return float(self._take(">d"))

    def flag(self) -> bool:
        return bool(self._take(">?"))

    def text(self) -> str:
        size = self.i32()
        self._at += size
        return self._data[self._at - size : self._at].decode()

    def timer(self) -> int | None:
        value = self.i64()
        return None if value == NO_TIMER else value

    def done(self) -> bool:
        return self._at == len(self._data)


def exact(row: Any) -> tuple[Any, ...]:
    """``row`` (a dataclass or tuple) with every float as its repr, so that NaN equals NaN and
    -0.0 differs from 0.0: two ports agree only if they produce the same bits."""
    values = astuple(row) if hasattr(row, "__dataclass_fields__") else tuple(row)
    return tuple(repr(v) if isinstance(v, float) else v for v in values)
