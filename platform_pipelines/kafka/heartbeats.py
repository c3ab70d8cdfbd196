"""Synthetic service heartbeats for the ``service_heartbeats`` topic."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from platform_pipelines.kafka.producer import ProducedRecord


@dataclass(frozen=True)
class HeartbeatConfig:
    """What to generate.

    Attributes:
        services: how many services send heartbeats (``svc-00``, ``svc-01``, ...).
        beats: heartbeats per healthy service.
        interval: event time between two heartbeats of a service.
        silent: how many services (the last ones) stop after half their beats.
        start_time: event time of the first heartbeat (UTC).
    """

    services: int = 5
    beats: int = 10
    interval: timedelta = timedelta(seconds=30)
    silent: int = 1
    start_time: datetime = field(default=datetime(2026, 11, 22, 8, 0, tzinfo=UTC))

    def __post_init__(self) -> None:
        if self.services < 1 or self.beats < 1:
            raise ValueError("services and beats must be >= 1: raise them.")
        if not 0 <= self.silent <= self.services:
            raise ValueError(f"silent must be between 0 and services ({self.services}).")


def heartbeat(service: str, at: datetime, status: str = "ok") -> dict[str, Any]:
    """One heartbeat event as it travels through Kafka."""
    return {
        "service": service,
        "status": status,
        "event_time": at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }


def generate_heartbeats(cfg: HeartbeatConfig) -> Iterator[ProducedRecord]:
    """Heartbeats in event-time order, keyed by service; the silent services stop halfway."""
    names = [f"svc-{i:02d}" for i in range(cfg.services)]
    for beat in range(cfg.beats):
        at = cfg.start_time + beat * cfg.interval
        for index, name in enumerate(names):
            if index >= cfg.services - cfg.silent and beat >= cfg.beats // 2:
                continue
            value = json.dumps(heartbeat(name, at)).encode()
            yield ProducedRecord(name.encode(), value, "ok")
