"""Telling the run log what Spark does not: that the Kafka broker stopped answering.

When the broker goes away under a running stream, Spark's Kafka source retries quietly and the
run's log says nothing. ``BrokerWatch.check`` (called by the supervisor on every poll) tries a
TCP connection every ``every_seconds`` and logs one warning when the broker stops answering and
one line when it is back. The first time the broker answers it also checks that the platform's
Kafka settings get in (TLS, credentials): a Spark Kafka source without TLS against a TLS listener
retries forever without a word.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from platform_pipelines.core.units import duration
from platform_pipelines.kafka.reachability import reachable
from platform_pipelines.streams.declare import Stream


class Log(Protocol):
    def warning(self, msg: str) -> None: ...

    def info(self, msg: str) -> None: ...


def access_problem(bootstrap: str, timeout_s: float = 5.0) -> str | None:
    """Why the platform's Kafka clients are refused by the broker (TLS, credentials, invalid
    PLATFORM_KAFKA_* settings), else None (a broker that does not answer is not judged here)."""
    from kafka.errors import KafkaError

    from platform_pipelines.kafka.admin import probe
    from platform_pipelines.kafka.clients import KafkaAccessError
    from platform_pipelines.kafka.security import KafkaSecurityError

    try:
        probe(bootstrap, timeout_s)
    except (KafkaAccessError, KafkaSecurityError) as refused:
        return str(refused)
    except KafkaError:  # no broker answered in time: an outage, which ``BrokerWatch`` reports
        return None
    return None


class BrokerWatch:
    """Watches the broker that ``streams`` read (nothing to watch when none reads Kafka)."""

    def __init__(
        self, bootstrap: str, streams: Sequence[Stream], log: Log, every_seconds: float = 10.0
    ) -> None:
        self._bootstrap = bootstrap
        self._names = ", ".join(s.name for s in streams)
        self._log = log
        self._every = every_seconds
        self._next = 0.0
        self._down_since: float | None = None
        self._access_checked = False

    def check(self) -> None:
        if not self._names or time.monotonic() < self._next:
            return
        self._next = time.monotonic() + self._every
        up = reachable(self._bootstrap)
        if up and not self._access_checked:
            self._access_checked = True
            problem = access_problem(self._bootstrap)
            if problem is not None:
                self._log.warning(f"{self._names} cannot read from Kafka: {problem}")
        if not up and self._down_since is None:
            self._down_since = time.monotonic()
            self._log.warning(
                f"The Kafka broker at {self._bootstrap} does not answer: {self._names} cannot "
                "read until it is back (the queries wait and resume from their checkpoints)."
            )
        elif up and self._down_since is not None:
            gone = duration(time.monotonic() - self._down_since)
            self._down_since = None
            self._log.info(f"The Kafka broker at {self._bootstrap} answers again after {gone}.")
