"""Numbers as people read them: durations, byte sizes and counts.

Example:
    >>> duration(54_430), duration(95), duration(-4 * 3600), duration(3 * 86400 + 7200)
    ('15 h 7 min', '1 min 35 s', '-4 h', '3 d 2 h')
    >>> size(1536), size(5 * 1024**3), count(1234567)
    ('1.5 KiB', '5.0 GiB', '1,234,567')
"""

from __future__ import annotations

_STEPS = ((86_400, "d"), (3_600, "h"), (60, "min"), (1, "s"))


def duration(seconds: float) -> str:
    """``54430`` -> ``"15 h 7 min"``: the two largest units, whole numbers; under 10 s one
    decimal (``"2.5 s"``)."""
    sign, rest = ("-" if seconds < 0 else ""), abs(seconds)
    if rest < 10:
        text = f"{rest:.1f}".rstrip("0").rstrip(".")
        return f"{sign}{text} s"
    parts: list[str] = []
    whole = round(rest)
    for step, unit in _STEPS:
        if whole >= step:
            parts.append(f"{whole // step} {unit}")
            whole %= step
        if len(parts) == 2 or (parts and whole == 0):
            break
    return sign + " ".join(parts)


def size(n: float) -> str:
    """Bytes in binary units: ``"512 B"``, ``"1.5 KiB"``, ``"3.2 GiB"``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover - the loop returns at GiB


def count(n: float) -> str:
    """A count with thousands separators: ``"1,234,567"``."""
    return f"{int(n):,}"
