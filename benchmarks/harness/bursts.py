"""Failed-login bursts on the input topic, and listening for the alerts they raise on a topic.

A burst is ``threshold`` failed logins of a new user: its last one completes the alert rule, and
that record's send time is where an alert's reaction time starts. A burst is dated when it is
sent, as the background records are (``produce_worker``'s ``live``), so neither makes the other
late.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from kafka import KafkaConsumer, KafkaProducer

from platform_pipelines.core.times import iso


@dataclass
class Bursts:
    """Sends a burst every ``every`` seconds until stopped; ``sent_ms[user]`` is when each
    burst's completing record was sent (epoch ms)."""

    bootstrap: str
    topic: str
    prefix: str
    every: float = 5.0
    threshold: int = 5
    sent_ms: dict[str, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=0, acks=1)
        try:
            number = 0
            while not self._stop.wait(0 if number == 0 else self.every):
                self._burst(producer, f"{self.prefix}-{number}")
                number += 1
        finally:
            producer.close(5)

    def _burst(self, producer: KafkaProducer, user: str) -> None:
        at = datetime.now(UTC)  # the background is dated when it is sent too (``live``)
        for n in range(self.threshold):
            event = {
                "event_id": f"{user}-{n}",
                "user_id": user,
                "event_type": "login_failed",
                "page": "/login",
                "event_time": iso(at + timedelta(milliseconds=n)),
            }
            if n == self.threshold - 1:
                self.sent_ms[user] = time.time() * 1000
            producer.send(self.topic, key=user.encode(), value=json.dumps(event).encode())
        producer.flush(10)

    @property
    def records(self) -> int:
        """Records sent so far: every burst is ``threshold`` distinct events."""
        return len(self.sent_ms) * self.threshold

    def stop(self) -> None:
        self._stop.set()


@dataclass
class TopicListener:
    """Reads ``topic`` from its start; ``received_ms[key]`` is when the first record with each
    key arrived here (epoch ms), ``records`` how many arrived, ``ids`` their ``id_field`` values."""

    bootstrap: str
    topic: str
    id_field: str
    received_ms: dict[str, float] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        consumer = KafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            fetch_max_wait_ms=20,
        )
        try:
            while not self._stop.is_set():
                for records in consumer.poll(timeout_ms=50).values():
                    now = time.time() * 1000
                    for record in records:
                        key = (record.key or b"").decode()
                        self.received_ms.setdefault(key, now)
                        self.ids.append(str(json.loads(record.value).get(self.id_field)))
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stop.set()
