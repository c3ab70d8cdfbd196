"""A stream's state per key, as a person reads it: the pure half of ``platform state show`` and of
the ``state_snapshot`` job (no JVM; ``lakehouse.state_reader`` reads the checkpoint with Spark).

Spark's state reader returns, per key, one row per state variable of a ``transformWithState``
operator (or per Spark operator: ``dropDuplicatesWithinWatermark`` keeps ``{"expiresAtMicros":
...}``), each value as JSON text, and the key's registered timers. ``assemble`` makes them one
``KeyState``: the decoded value, the timers and the key's bytes.

Decoding: the keyed-logic adapter (``streams.keyed``) keeps a key's state as one JSON document
``{"state": ..., "timer_ms": ...}`` in a string field; the value shown is its ``state`` (the timer
is shown from the registered timers, which are what fires). Any other string field holding JSON
is shown parsed; every other value as the reader returns it.

Bytes: the key, each value and 8 per timer, as the reader returns them (a value that is one
string field counts that string, so a keyed document counts its own length). Comparable between
keys and close to what the state store holds per key, but not RocksDB's size on disk (row
encoding, compression, compaction).

Example:
    >>> doc = '{"state": {"count": 2}, "timer_ms": null}'
    >>> s = assemble("a", [Part("state", json.dumps({"json": doc}))], [], ("state",))
    >>> s.value, s.timers_ms, s.bytes == 1 + len(doc)
    ({'count': 2}, (), True)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from platform_pipelines.core.times import from_ms, iso
from platform_pipelines.core.units import count, size

TIMER_BYTES: Final = 8  # a timer is an epoch-millisecond long
DOCUMENT_FIELDS: Final = frozenset({"state", "timer_ms"})  # streams.keyed.encode
TIME_MODES: Final = {"EventTime": "event-time", "ProcessingTime": "processing-time"}


@dataclass(frozen=True)
class Part:
    """One value of one key as the reader returns it.

    Attributes:
        name: the state variable (``state``, ``session``, ``pending``) or Spark's operator
            (``dedupeWithinWatermark``).
        value_json: the value as Spark's ``to_json`` writes it.
    """

    name: str
    value_json: str


@dataclass(frozen=True)
class KeyState:
    """What one key holds: its decoded value, its registered timers (epoch ms, earliest first)
    and its bytes (see the module docstring)."""

    key: str
    value: Any
    timers_ms: tuple[int, ...]
    bytes: int

    @property
    def timer_ms(self) -> int | None:
        """The key's next timer; None when it has none."""
        return self.timers_ms[0] if self.timers_ms else None


@dataclass(frozen=True)
class StateTotals:
    """Every key of a snapshot, counted: keys, their bytes, the biggest key's bytes."""

    keys: int
    total_bytes: int
    biggest_key_bytes: int


@dataclass(frozen=True)
class StateReport:
    """A stream's state at one committed batch: totals over every key, and the keys shown.

    Attributes:
        stream: the stream's name.
        batch_id: the committed batch whose state was read.
        parts: what each key may hold (state variables, or Spark's operators).
        time_mode: ``EventTime`` or ``ProcessingTime`` for timers, else None.
        totals: every key, counted.
        shown: the keys asked for (the biggest, or one), biggest first.
    """

    stream: str
    batch_id: int
    parts: tuple[str, ...]
    time_mode: str | None
    totals: StateTotals
    shown: tuple[KeyState, ...]


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def keys_text(n: int) -> str:
    """``1 key``, ``1,234 keys``."""
    return f"{count(n)} key" if n == 1 else f"{count(n)} keys"


def decode_document(text: str) -> Any:
    """The value a stored string stands for: a keyed-logic document's ``state``, other JSON
    parsed, anything else the string itself.

    >>> decode_document('{"state": {"n": 1}, "timer_ms": 5}'), decode_document('[1]')
    ({'n': 1}, [1])
    >>> decode_document('{"n": 1}'), decode_document('not json')
    ({'n': 1}, 'not json')
    """
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and set(value) == DOCUMENT_FIELDS:
        return value["state"]
    return value


def decode_part(part: Part) -> tuple[Any, int]:
    """``(value, bytes)`` of one part: a one-field value whose string holds JSON (a keyed
    document, a JSON-encoded state) is that JSON decoded and counts the string; any other value
    is the reader's JSON, counted as written."""
    value = json.loads(part.value_json)
    if isinstance(value, dict) and len(value) == 1:
        (only,) = value.values()
        if isinstance(only, str) and only.lstrip()[:1] in ("{", "["):
            return decode_document(only), utf8_len(only)
    return value, utf8_len(part.value_json)


def assemble(
    key: str, parts: Iterable[Part], timers_ms: Iterable[int], names: Sequence[str]
) -> KeyState:
    """One key's state from the reader's rows. ``names`` are every part the stream's state may
    hold: with one, the value is that part's value; with several, ``{name: value}`` of those the
    key has (a user without an open session has no ``session``)."""
    values: dict[str, Any] = {}
    timers = tuple(sorted(timers_ms))
    total = utf8_len(key) + TIMER_BYTES * len(timers)
    for part in sorted(parts, key=lambda p: (p.name, p.value_json)):
        value, n = decode_part(part)
        total += n
        if part.name in values:  # several rows of one part: keep them all
            earlier = values[part.name]
            values[part.name] = [*earlier, value] if isinstance(earlier, list) else [earlier, value]
        else:
            values[part.name] = value
    if len(names) == 1:
        return KeyState(key, values.get(names[0]), timers, total)
    return KeyState(key, values or None, timers, total)


def biggest(states: Iterable[KeyState], top: int) -> list[KeyState]:
    """The ``top`` biggest keys, biggest first; equal sizes by key (the reader's Spark query
    ranks the same way before it collects)."""
    return sorted(states, key=lambda s: (-s.bytes, s.key))[:top]


def value_json(value: Any) -> str:
    """A decoded value as one line of JSON (the ``value`` column of ``state_snapshots``)."""
    return json.dumps(value, ensure_ascii=False)


def value_text(value: Any, width: int = 160) -> str:
    """``value_json``, cut at ``width`` characters with an ellipsis."""
    text = value_json(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def timers_text(timers_ms: Sequence[int]) -> str:
    """Timers as UTC times, ``-`` for none."""
    return ", ".join(iso(from_ms(ms)) for ms in timers_ms) or "-"


def title(report: StateReport) -> str:
    """``user_sessions at batch 3: 2 keys, 640 B (biggest 412 B); event-time timers``."""
    totals = report.totals
    timers = TIME_MODES.get(report.time_mode or "")
    tail = f"; {timers} timers" if timers else ""
    return (
        f"{report.stream} at batch {report.batch_id}: {keys_text(totals.keys)}, "
        f"{size(totals.total_bytes)} (biggest {size(totals.biggest_key_bytes)}){tail}"
    )


def table_rows(report: StateReport, width: int = 160) -> list[list[str]]:
    """The rows of the shown keys: key, bytes, timers, value."""
    return [
        [s.key, f"{s.bytes:,}", timers_text(s.timers_ms), value_text(s.value, width)]
        for s in report.shown
    ]


def report_json(report: StateReport) -> dict[str, Any]:
    """The report as JSON-able data (``platform state show --json``)."""
    return {
        "stream": report.stream,
        "batch_id": report.batch_id,
        "parts": list(report.parts),
        "time_mode": report.time_mode,
        "keys": report.totals.keys,
        "total_bytes": report.totals.total_bytes,
        "biggest_key_bytes": report.totals.biggest_key_bytes,
        "shown": [
            {
                "key": s.key,
                "bytes": s.bytes,
                "timers_ms": list(s.timers_ms),
                "timers": [iso(from_ms(ms)) for ms in s.timers_ms],
                "value": s.value,
            }
            for s in report.shown
        ],
    }


def missing_key_text(report: StateReport, key: str) -> str:
    """What to tell someone who asked for a key the state does not hold."""
    return (
        f"{report.stream} holds no state for key {key!r} at batch {report.batch_id} "
        f"({keys_text(report.totals.keys)}): it never had state, or its state was removed "
        "(a closed session, an expired timer). Leave out --key to see the biggest keys."
    )
