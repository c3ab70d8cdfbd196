"""Service status from heartbeats: "ok" while they arrive, "stale" after a wall-clock silence.

The key is ``service``; the events are heartbeat rows. Rules, per service:

- Only transitions are emitted. A service's first heartbeat (unknown -> ok) and the first one
  after it went stale (stale -> ok) emit "ok"; heartbeats while ok emit nothing.
- Every batch with heartbeats sets a processing-time timer ``stale_after_ms`` after the service's
  last heartbeat as the service dated it, so each heartbeat pushes it on. Processing time, because
  the question is whether heartbeats still arrive: a silent service sends nothing that could move
  an event-time watermark. Counting from the heartbeat's own time, not from the batch that read
  it, keeps the time the heartbeat spent on its way (Kafka, bronze, this stream's trigger) out of
  the timeout: a silent service is stale ``stale_after_ms`` after its last heartbeat plus at most
  one trigger, not plus the whole pipeline's delay. The credit is at most half the timeout: a
  service whose clock is behind, or a backlog read after a pause, cannot make the timer fire
  sooner than half the timeout after the batch. A service is never reported stale while it sends
  heartbeats at least twice per timeout and the pipeline's delay varies by less than the rest
  of half the timeout.
- The timer firing emits "stale" once and keeps the state with no timer, so a silent service is
  not reported again; its next heartbeat emits "ok".
- A heartbeat is any event of the service, whatever its ``status`` field says (null, "ok",
  "degraded", ...): this stream judges liveness only, so the service's own opinion is not read.
- "ok" rows are dated by the batch's earliest heartbeat (event time); "stale" rows by the
  processing time at which the silence was detected.
- The state of a stale service is kept (one small row per known service) so that its recovery is
  reported; the state therefore grows with the number of services, not with time.
- ``initial_state`` seeds a new checkpoint from the service's latest row of the status table. The
  seed sets no timer, so a seeded "ok" service that never sends another heartbeat is not reported
  stale until it does send one and then falls silent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from platform_pipelines.state.keyed import Clock, Event, State, Step, from_ms, to_ms

Status = Literal["ok", "stale"]

OK: Final = "ok"
STALE: Final = "stale"

# The output row, in order: name -> type name of ``streams.schemas.FIELD_TYPES``.
STATUS_FIELDS: Final[dict[str, str]] = {
    "service": "string",
    "status": "string",
    "changed_at": "timestamp",
    "last_heartbeat_time": "timestamp",
}


@dataclass(frozen=True)
class StatusConfig:
    """When a silent service counts as stale.

    Attributes:
        stale_after_ms: wall-clock time (milliseconds) without a heartbeat after which a service
            is stale; 5 minutes.
    """

    stale_after_ms: int = 5 * 60 * 1000

    def __post_init__(self) -> None:
        if self.stale_after_ms <= 0:
            raise ValueError(
                f"StatusConfig.stale_after_ms must be positive, got {self.stale_after_ms}: "
                "set it to the milliseconds of silence after which a service is stale"
            )


@dataclass(frozen=True)
class ServiceStatus:
    """``SeedableLogic`` for service status.

    The state is ``{"status": "ok"|"stale", "changed_at_ms": int, "last_heartbeat_ms": int}``.

    Example:
        >>> from datetime import UTC, datetime
        >>> at = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
        >>> step = ServiceStatus().on_events("api", None, [{"event_time": at}], Clock(1_000))
        >>> step.outputs[0]["status"], step.timeout_at_ms
        ('ok', 301000)
    """

    config: StatusConfig = field(default_factory=StatusConfig)

    def on_events(
        self, key: str, state: State | None, events: Sequence[Event], clock: Clock
    ) -> Step:
        """Heartbeats arrived: note the latest, emit "ok" unless already ok, push the timer on."""
        times = sorted(to_ms(e["event_time"]) for e in events)
        if not times:
            return Step(state)
        last = times[-1] if state is None else max(times[-1], int(state["last_heartbeat_ms"]))
        timer = self._timer(last, clock)
        if state is not None and state["status"] == OK:
            return Step({**state, "last_heartbeat_ms": last}, [], timer)
        new_state = _state(OK, times[0], last)
        return Step(new_state, [_row(key, new_state)], timer)

    def _timer(self, last_heartbeat_ms: int, clock: Clock) -> int:
        """When the service is stale unless another heartbeat arrives: ``stale_after_ms`` after
        its last heartbeat, that heartbeat's time taken no earlier than half the timeout before
        the batch and no later than the batch (a clock ahead)."""
        now, timeout = clock.processing_time_ms, self.config.stale_after_ms
        return min(max(last_heartbeat_ms, now - timeout // 2), now) + timeout

    def on_timeout(self, key: str, state: State, clock: Clock) -> Step:
        """No heartbeat for ``stale_after_ms``: emit "stale" once and keep the state, untimed."""
        if state["status"] == STALE:
            return Step(state)
        new_state = _state(STALE, clock.processing_time_ms, int(state["last_heartbeat_ms"]))
        return Step(new_state, [_row(key, new_state)])

    def initial_state(self, key: str, row: Mapping[str, Any]) -> State | None:
        """The state of ``key`` from its latest row of the status table (``STATUS_FIELDS``)."""
        status = row["status"]
        if status not in (OK, STALE):
            raise ValueError(
                f"status row of service {key!r} has status {status!r}: "
                f"seed only from rows this stream wrote ({OK!r} or {STALE!r})"
            )
        return _state(status, to_ms(row["changed_at"]), to_ms(row["last_heartbeat_time"]))


def _state(status: Status, changed_at_ms: int, last_heartbeat_ms: int) -> State:
    """A service's state; flat and JSON-able."""
    return {
        "status": status,
        "changed_at_ms": changed_at_ms,
        "last_heartbeat_ms": last_heartbeat_ms,
    }


def _row(service: str, state: State) -> dict[str, Any]:
    """The status-table row announcing ``state``."""
    return {
        "service": service,
        "status": state["status"],
        "changed_at": from_ms(int(state["changed_at_ms"])),
        "last_heartbeat_time": from_ms(int(state["last_heartbeat_ms"])),
    }
