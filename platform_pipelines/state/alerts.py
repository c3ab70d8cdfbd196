"""Failed-login alerts as per-user state: ``threshold`` failures within a sliding event-time window.

The key is ``user_id``; the events are silver clickstream rows. Rules, per user:

- Only ``login_failed`` and ``login_success`` matter; every other event type is ignored.
- Failures count together while they lie within ``window_ms`` of the newest failure, inclusive:
  older ones drop out of the count.
- The ``threshold``-th failure in the window emits one alert and resets the count, so ten
  failures in a row raise two alerts, not six.
- A ``login_success`` resets the count: the failures at or before its event time are forgotten.
- Events are taken in ``login_order``: by event time, and within one millisecond failures before
  successes, so that a success forgets the failures of its own millisecond as it forgets earlier
  ones. The Java port (``jvm/alerts``) follows the same order, and a batch's result never
  depends on the order its events arrived in.
- A late failure (older than remembered ones) is placed by its event time. What a reset forgot is
  not remembered, so a late failure from before an earlier alert or success may count again.
- The state holds only the failures still in the window (fewer than ``threshold``). With none the
  key is removed; otherwise an event-time timer at the newest failure + ``window_ms`` removes it,
  because no later failure can count with them once the watermark is past that. If the watermark
  is past it already, the key is removed at once: Spark rejects a timer behind the watermark.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from platform_pipelines.state.keyed import Clock, Event, State, Step, from_ms, to_ms

LOGIN_FAILED: Final = "login_failed"
LOGIN_SUCCESS: Final = "login_success"
ALERT_TYPE: Final = "failed_logins"

# The output row, in order: name -> type name of ``streams.schemas.FIELD_TYPES``.
ALERT_FIELDS: Final[dict[str, str]] = {
    "alert_id": "string",
    "user_id": "string",
    "first_failure_time": "timestamp",
    "last_failure_time": "timestamp",
    "failure_count": "long",
    "alert_type": "string",
}


@dataclass(frozen=True)
class AlertConfig:
    """When failed logins raise an alert.

    Attributes:
        threshold: failures within the window that raise one alert; 5.
        window_ms: event-time span (milliseconds, inclusive) in which failures count together;
            10 minutes. It also bounds how long a user's state lives: its event-time timer at the
            newest failure + window removes it.
    """

    threshold: int = 5
    window_ms: int = 10 * 60 * 1000

    def __post_init__(self) -> None:
        if self.threshold < 1:
            raise ValueError(
                f"AlertConfig.threshold must be at least 1, got {self.threshold}: "
                "set it to the number of failures that raise an alert"
            )
        if self.window_ms <= 0:
            raise ValueError(
                f"AlertConfig.window_ms must be positive, got {self.window_ms}: "
                "set it to the span in milliseconds in which failures count together"
            )


@dataclass(frozen=True)
class FailedLoginAlerts:
    """``KeyedLogic`` for failed-login alerts; state is ``{"failures_ms": [epoch ms, ...]}``.

    Example:
        >>> from datetime import UTC, datetime
        >>> logic = FailedLoginAlerts(AlertConfig(threshold=2))
        >>> at = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
        >>> step = logic.on_events(
        ...     "u1", None, [{"event_type": "login_failed", "event_time": at}] * 2, Clock(0)
        ... )
        >>> step.state, step.outputs[0]["failure_count"], step.timeout_at_ms
        (None, 2, None)
    """

    config: AlertConfig = field(default_factory=AlertConfig)

    def on_events(
        self, key: str, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        """Count the user's failures in this batch; emit an alert at each ``threshold``-th one."""
        failures = [] if state is None else [int(t) for t in state["failures_ms"]]
        alerts: list[dict[str, Any]] = []
        moments = ((to_ms(e["event_time"]), e["event_type"]) for e in events)
        for at, kind in sorted(moments, key=login_order):
            if kind == LOGIN_SUCCESS:
                failures = [t for t in failures if t > at]
            elif kind == LOGIN_FAILED:
                failures = self._with_failure(failures, at)
                if len(failures) >= self.config.threshold:
                    alerts.append(_alert(key, failures))
                    failures = []
        return self._settle(failures, alerts, clock)

    def on_timeout(self, key: str, state: State, clock: Clock) -> Step:
        """The watermark passed the last failure + window: nothing can count any more."""
        return Step(None)

    def _with_failure(self, failures: list[int], at: int) -> list[int]:
        """``failures`` plus ``at``, keeping only those within the window of the newest."""
        insort(failures, at)
        oldest = failures[-1] - self.config.window_ms
        return [t for t in failures if t >= oldest]

    def _settle(self, failures: list[int], alerts: list[dict[str, Any]], clock: Clock) -> Step:
        """The step that keeps ``failures`` until they expire, or removes the key."""
        if not failures:
            return Step(None, alerts)
        expires = failures[-1] + self.config.window_ms
        if clock.watermark_ms is not None and expires < clock.watermark_ms:
            return Step(None, alerts)
        return Step({"failures_ms": failures}, alerts, expires)


def login_order(moment: tuple[int, str]) -> tuple[int, bool]:
    """The sort key of an ``(event time ms, event type)`` pair: time, then failures (and the
    ignored types) before successes.

    Example:
        >>> sorted([(7, LOGIN_SUCCESS), (7, LOGIN_FAILED), (6, LOGIN_SUCCESS)], key=login_order)
        [(6, 'login_success'), (7, 'login_failed'), (7, 'login_success')]
    """
    at, kind = moment
    return at, kind == LOGIN_SUCCESS


def _alert(user_id: str, failures: Sequence[int]) -> dict[str, Any]:
    """The alert row for ``failures``; its id is derived from user and last failure, so replays agree."""
    first, last = failures[0], failures[-1]
    return {
        "alert_id": f"{user_id}-{last}",
        "user_id": user_id,
        "first_failure_time": from_ms(first),
        "last_failure_time": from_ms(last),
        "failure_count": len(failures),
        "alert_type": ALERT_TYPE,
    }
