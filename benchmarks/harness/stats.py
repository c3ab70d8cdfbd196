"""The numbers a benchmark reports, computed without a JVM: percentiles, min / median / max over
repeated runs, and ratios between a figure of the platform and the same figure of a reference.

Example:
    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([1.0, 2.0, 3.0, 4.0], 95)
    (2.5, 3.85)
    >>> spread([3.0, 1.0, 2.0])
    {'min': 1.0, 'median': 2.0, 'max': 3.0, 'n': 3}
    >>> ratio(8.0, 10.0), ratio(1.0, 0.0)
    (0.8, None)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Spread = dict[str, float | int | None]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) with linear interpolation between the closest ranks (as
    numpy's default); None for no values.

    Raises:
        ValueError: ``q`` is outside 0-100.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be between 0 and 100, got {q}")
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    fraction = rank - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


def spread(values: Iterable[float | None]) -> Spread:
    """Min, median and max of the values that are not None, and how many there were."""
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not kept:
        return {"min": None, "median": None, "max": None, "n": 0}
    return {"min": min(kept), "median": statistics.median(kept), "max": max(kept), "n": len(kept)}


def settled(times: Sequence[float], tolerance: float) -> bool:
    """Whether the last two of ``times`` (one run repeated) differ by at most ``tolerance`` of the
    smaller: a warm-up repeats a run until it has stopped getting faster.

    >>> settled([27.7, 21.2], 0.05), settled([21.2, 18.9, 17.6, 17.9], 0.05), settled([5.0], 0.05)
    (False, True, False)
    """
    if len(times) < 2:
        return False
    before, last = times[-2], times[-1]
    return abs(before - last) <= tolerance * min(before, last)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``; None when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def paired_ratios(
    ours: Sequence[float | None], reference: Sequence[float | None]
) -> list[float | None]:
    """One ratio per repeat: run ``i`` of the platform against run ``i`` of the reference (both
    ran back to back, so they shared the machine's load)."""
    return [ratio(a, b) for a, b in zip(ours, reference, strict=False)]


def spreads_of(samples: Sequence[Mapping[str, Any]]) -> dict[str, Spread]:
    """Min / median / max of every numeric field the samples have in common."""
    if not samples:
        return {}
    numeric = [
        k for k, v in samples[0].items() if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    return {k: spread(s.get(k) for s in samples) for k in numeric}


def latency_figures(
    latencies: Sequence[float], produced: int, visible: int | None = None
) -> dict[str, float | int | None]:
    """p50 / p95 / p99 / max of the latencies (seconds), and how many of the ``produced`` rows
    became visible (default: as many as there are latencies)."""
    visible = len(latencies) if visible is None else visible
    return {
        "p50_seconds": percentile(latencies, 50),
        "p95_seconds": percentile(latencies, 95),
        "p99_seconds": percentile(latencies, 99),
        "max_seconds": max(latencies) if latencies else None,
        "visible_rows": visible,
        "produced_rows": produced,
        "visible_share": visible / produced if produced else None,
    }
