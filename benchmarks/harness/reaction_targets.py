"""The reaction targets of issue 25, judged on the section's samples (median over repeats)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import median
from typing import Any

Sample = dict[str, Any]


def _figure(samples: Sequence[Sample], variant: str, rate: float, read: Callable) -> float | None:
    values = [read(s) for s in samples if s["variant"] == variant and s["rate"] == rate]
    found = [v for v in values if v is not None]
    return round(median(found), 2) if found else None


def _target(name: str, wanted: str, measured: float | None, limit: float) -> dict[str, Any]:
    return {
        "target": name,
        "wanted": wanted,
        "measured": measured,
        "met": None if measured is None else measured <= limit,
    }


def judge(samples: Sequence[Sample], stale_after_seconds: float) -> list[dict[str, Any]]:
    """Each target with the median measured and whether it is met (None: not measured).

    >>> s = {"variant": "platform", "rate": 2000.0, "stale_service_seconds_after_timeout": 3.0,
    ...      "alert_delta": {"p50_seconds": 1.5, "p95_seconds": 4.0,
    ...                      "last_over_first_tenth_p50": 1.0},
    ...      "alert_topic": {"p50_seconds": 0.8},
    ...      "dedup": {"p50_seconds": 2.5, "last_over_first_tenth_p50": 1.1}}
    >>> [(t["target"], t["met"]) for t in judge([s], 300)][:4]
    [('alert p50 at 2k/s', True), ('alert p95 at 2k/s', True), ('alert topic p50 at 2k/s', True), ('dedup p50 at 2k/s', False)]
    """
    low, high = 2000.0, 10000.0
    platform = "platform"

    def at(rate: float, read: Callable) -> float | None:
        return _figure(samples, platform, rate, read)

    def ratio(rate: float, read: Callable) -> float | None:
        ours, plain = at(rate, read), _figure(samples, "plain", rate, read)
        return round(ours / plain, 2) if ours and plain else None

    def alert(key: str) -> Callable:
        return lambda s: s["alert_delta"][key]

    def dedup(key: str) -> Callable:
        return lambda s: s["dedup"][key]

    targets = [
        _target("alert p50 at 2k/s", "<= 2 s", at(low, alert("p50_seconds")), 2.0),
        _target("alert p95 at 2k/s", "<= 5 s", at(low, alert("p95_seconds")), 5.0),
        _target(
            "alert topic p50 at 2k/s",
            "<= 1 s",
            at(low, lambda s: (s.get("alert_topic") or {}).get("p50_seconds")),
            1.0,
        ),
        _target("dedup p50 at 2k/s", "<= 2 s", at(low, dedup("p50_seconds")), 2.0),
        _target(
            "dedup keeps up at 10k/s",
            "last tenth p50 <= 1.2x first",
            at(high, dedup("last_over_first_tenth_p50")),
            1.2,
        ),
        _target(
            "alerts keep up at 10k/s",
            "last tenth p50 <= 1.2x first",
            at(high, alert("last_over_first_tenth_p50")),
            1.2,
        ),
        _stale_target(samples, low, stale_after_seconds),
    ]
    for rate in (low, high):
        for what, read in (("alert", alert("p50_seconds")), ("dedup", dedup("p50_seconds"))):
            targets.append(
                {
                    "target": f"{what} p50 at {rate / 1000:g}k/s, platform / plain",
                    "wanted": "as low as it goes",
                    "measured": ratio(rate, read),
                    "met": None,
                }
            )
    return targets


def _stale_target(samples: Sequence[Sample], rate: float, stale_after_seconds: float) -> Sample:
    """The worst silent service's delay (median over repeats); not met when a service was never
    shown stale in some run, whatever the others' delays.

    >>> run = {"variant": "platform", "rate": 2000.0, "stale_service_seconds_after_timeout": 3.0}
    >>> _stale_target([run], 2000.0, 30)["met"]
    True
    >>> _stale_target([{**run, "stale_services_never_shown": 1}], 2000.0, 30)["met"]
    False
    """
    runs = [s for s in samples if s["variant"] == "platform" and s["rate"] == rate]
    target = _target(
        "stale service (worst of the silent services)",
        f"<= timeout ({stale_after_seconds:g} s) + 5 s",
        _figure(samples, "platform", rate, lambda s: s["stale_service_seconds_after_timeout"]),
        5.0,
    )
    if any(s.get("stale_services_never_shown") for s in runs):
        target["met"] = False
    return target
