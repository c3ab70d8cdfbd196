"""Synthetic clickstream: users browsing, buying and logging in, with controlled amounts of trouble.

``generate_clickstream`` is pure and deterministic (same config, same bytes); ``produce`` sends any
records to Kafka and confirms delivery. On an event-time clock each user does sessions (home,
product pages, sometimes cart -> checkout -> purchase; sometimes a login first, with failures and
now and then a brute-force burst) with steps 5 s to 2 min apart, ending in a logout or silence.
Between sessions a user idles 1-20 min (30%) or 31 min to 3 h (70%): a 30-minute gap splits most.
"""

from __future__ import annotations

import heapq
import json
import random
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from kafka import KafkaProducer
from kafka.errors import KafkaError

from platform_pipelines.events import CLICKSTREAM_REQUIRED
from platform_pipelines.kafka.clients import connect
from platform_pipelines.kafka.security import KafkaSecurity

Kind = Literal["ok", "duplicate", "late", "malformed"]
KINDS: tuple[Kind, ...] = ("ok", "duplicate", "late", "malformed")
_MINUTE = 60_000
_Step = tuple[str, str, float | None]  # event_type, page, amount


@dataclass(frozen=True)
class ClickstreamConfig:
    """What to generate. Counts per kind are exact: ``int(events * rate)`` (see ``kind_counts``).

    Attributes:
        events: Records in total, trouble included (default 1000).
        users: Distinct ``user_id`` values, i.e. key cardinality (default 50).
        duplicate_rate: Share of records that re-send an earlier record's exact bytes, same
            ``event_id`` (default 0.02).
        late_rate: Share of records whose ``event_time`` is 30 s to 10 min behind the simulation
            clock: late, but inside a 10-minute watermark (default 0.05).
        malformed_rate: Share of records that are truncated JSON, lack a required field, or carry
            an ``event_time`` that is no timestamp (default 0.01).
        stale_share: Share of the *late* records that are 2-6 hours old instead, which a watermark
            of minutes drops (shows up as ``numRowsDroppedByWatermark``) (default 0.0).
        duplicate_window: A duplicate re-sends one of this many most recent records (default 500);
            a small window keeps duplicates within the dedup watermark.
        rate_per_sec: Records per second when producing; 0 sends as fast as possible (default 0).
        seed: Seeds every random choice, event ids included (default 42).
        start_time: Event time of the simulation's start, timezone-aware UTC
            (default 2026-11-22T08:00:00Z).
    """

    events: int = 1000
    users: int = 50
    duplicate_rate: float = 0.02
    late_rate: float = 0.05
    malformed_rate: float = 0.01
    stale_share: float = 0.0
    duplicate_window: int = 500
    rate_per_sec: float = 0.0
    seed: int = 42
    start_time: datetime = field(default=datetime(2026, 11, 22, 8, 0, tzinfo=UTC))

    def __post_init__(self) -> None:
        for name, low in (
            ("events", 0),
            ("users", 1),
            ("rate_per_sec", 0),
            ("duplicate_window", 1),
        ):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low}, got {getattr(self, name)}: raise it.")
        for name in ("duplicate_rate", "late_rate", "malformed_rate", "stale_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}: e.g. 0.05 for 5%.")
        trouble = self.duplicate_rate + self.late_rate + self.malformed_rate
        if trouble >= 1.0:
            raise ValueError(
                f"duplicate_rate + late_rate + malformed_rate must be below 1, got {trouble:g}: "
                "lower them so that some records are ordinary events."
            )
        if self.start_time.utcoffset() != timedelta(0):
            raise ValueError(
                f"start_time must be timezone-aware UTC, got {self.start_time!r}: "
                "pass e.g. datetime(2026, 11, 22, tzinfo=UTC)."
            )

    def kind_counts(self) -> dict[Kind, int]:
        """The exact number of records of each kind ``generate_clickstream`` yields."""
        # The epsilon keeps e.g. 100 * 0.29 (28.999999999999996) at 29.
        rates = (self.duplicate_rate, self.late_rate, self.malformed_rate)
        dup, late, bad = (int(self.events * rate + 1e-9) for rate in rates)
        return dict(zip(KINDS, (self.events - dup - late - bad, dup, late, bad), strict=True))


@dataclass(frozen=True)
class ProducedRecord:
    """One Kafka record: ``key`` is the user id (None if the record lost it), ``value`` JSON."""

    key: bytes | None
    value: bytes
    kind: Kind


@dataclass(frozen=True)
class ProduceSummary:
    """What ``produce`` delivered: records per kind and how long it took."""

    counts: dict[Kind, int]
    elapsed_s: float

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def rate_per_sec(self) -> float:
        return self.total / self.elapsed_s if self.elapsed_s > 0 else 0.0


def _session_script(rng: random.Random) -> list[_Step]:
    steps: list[_Step] = []
    if rng.random() < 0.3:
        failures = rng.choices([0, 1, 2, 6], weights=[70, 18, 7, 5])[0]
        steps += [("login_failed", "/login", None)] * failures
        if failures >= 5 and rng.random() < 0.7:
            return steps  # a brute-force attempt that gives up
        steps.append(("login_success", "/login", None))
    steps.append(("page_view", "/home", None))
    cart: list[float] = []
    for _ in range(rng.randint(1, 6)):
        product = rng.randint(1, 40)
        steps.append(("page_view", f"/product/{product}", None))
        if rng.random() < 0.3:
            steps.append(("add_to_cart", f"/product/{product}", None))
            cart.append(round(4.99 + (product * 37 % 100) * 1.5, 2))  # a fixed price per product
    if cart:
        steps.append(("page_view", "/cart", None))
        if rng.random() < 0.6:
            steps.append(("checkout", "/checkout", None))
            if rng.random() < 0.8:
                steps.append(("purchase", "/checkout", round(sum(cart), 2)))
    if rng.random() < 0.4:
        steps.append(("logout", "/logout", None))
    return steps


class _Simulation:
    """Users on one event-time clock: always emits the user whose next event comes first."""

    def __init__(self, cfg: ClickstreamConfig, rng: random.Random) -> None:
        self.rng, self.start, self.clock = rng, cfg.start_time, 0
        self.users = [f"user-{i:05d}" for i in range(cfg.users)]
        self.due = [(rng.randint(0, 10 * _MINUTE), i) for i in range(cfg.users)]
        heapq.heapify(self.due)
        self.scripts: dict[int, deque[_Step]] = {}

    def next_event(self) -> dict[str, Any]:
        at, user = heapq.heappop(self.due)
        self.clock = at
        script = self.scripts.get(user) or deque(_session_script(self.rng))
        step = script.popleft()
        self.scripts[user] = script
        heapq.heappush(self.due, (at + self._pause(ended=not script), user))
        return self._event(user, step, at)

    def late_event(self, stale: bool) -> dict[str, Any]:
        low, high = (120 * _MINUTE, 360 * _MINUTE) if stale else (30_000, 10 * _MINUTE - 1)
        behind = self.rng.randint(low, high)
        page = f"/product/{self.rng.randint(1, 40)}"
        user = self.rng.randrange(len(self.users))
        return self._event(user, ("page_view", page, None), self.clock - behind)

    def _pause(self, ended: bool) -> int:
        if not ended:
            return self.rng.randint(5_000, 120_000)
        if self.rng.random() < 0.3:
            return self.rng.randint(1 * _MINUTE, 20 * _MINUTE)
        return self.rng.randint(31 * _MINUTE, 180 * _MINUTE)

    def _event(self, user: int, step: _Step, at_ms: int) -> dict[str, Any]:
        event_type, page, amount = step
        return {
            "event_id": str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
            "user_id": self.users[user],
            "event_type": event_type,
            "page": page,
            "amount": amount,
            "event_time": _iso(self.start + timedelta(milliseconds=at_ms)),
        }


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _encode(event: dict[str, Any]) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode()


def _corrupt(event: dict[str, Any], rng: random.Random) -> bytes:
    how = rng.randrange(3)
    if how == 0:  # a proper prefix of a JSON object never parses
        raw = _encode(event)
        return raw[: rng.randint(1, len(raw) - 2)]
    if how == 1:
        del event[rng.choice(CLICKSTREAM_REQUIRED)]
        return _encode(event)
    # Strings only: Spark reads a JSON number in a timestamp field as epoch seconds.
    event["event_time"] = rng.choice(["yesterday", "not-a-timestamp", "2026-13-45T99:00:00Z"])
    return _encode(event)


def _kind_plan(cfg: ClickstreamConfig, rng: random.Random) -> list[Kind]:
    plan: list[Kind] = [kind for kind, n in cfg.kind_counts().items() for _ in range(n)]
    rng.shuffle(plan)
    if plan and plan[0] == "duplicate":  # a duplicate needs an earlier record to copy
        first = next(i for i, kind in enumerate(plan) if kind in ("ok", "late"))
        plan[0], plan[first] = plan[first], plan[0]
    return plan


def generate_clickstream(cfg: ClickstreamConfig) -> Iterator[ProducedRecord]:
    """Yield ``cfg.events`` records, deterministic for ``cfg`` (no clock, no global randomness).

    Example:
        >>> records = list(generate_clickstream(ClickstreamConfig(events=10, late_rate=0.2)))
        >>> [r.kind for r in records].count("late"), records[0].key
        (2, b'user-00015')
    """
    rng = random.Random(cfg.seed)
    plan = _kind_plan(cfg, rng)
    n_late = plan.count("late")
    stale = set(rng.sample(range(n_late), int(n_late * cfg.stale_share + 1e-9)))
    recent = deque[ProducedRecord](maxlen=cfg.duplicate_window)
    sim, late_seen = _Simulation(cfg, rng), 0
    for kind in plan:
        if kind == "duplicate":
            original = recent[rng.randrange(len(recent))]
            yield ProducedRecord(original.key, original.value, "duplicate")
            continue
        if kind == "late":
            event, late_seen = sim.late_event(late_seen in stale), late_seen + 1
        else:
            event = sim.next_event()
        value = _corrupt(event, rng) if kind == "malformed" else _encode(event)
        key = event["user_id"].encode() if "user_id" in event else None
        record = ProducedRecord(key, value, kind)
        if kind != "malformed":
            recent.append(record)
        yield record


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[ProducedRecord],
    rate_per_sec: float = 0,
    progress: Callable[[int], None] | None = None,
    security: KafkaSecurity | None = None,
) -> ProduceSummary:
    """Send ``records`` (paced to ``rate_per_sec`` if > 0), flush, and confirm every delivery.

    ``progress`` is called with the number of records sent so far after each send. The producer
    authenticates as ``security`` says, else as the ``PLATFORM_KAFKA_*`` environment says.

    Raises:
        KafkaAccessError: the broker refused the TLS handshake or the credentials.
        KafkaError: some records were not acknowledged by the broker.
    """
    counts = dict.fromkeys(KINDS, 0)
    failures: list[BaseException] = []
    producer = connect(KafkaProducer, bootstrap, security, acks="all", linger_ms=5)
    started = time.monotonic()
    try:
        for sent, record in enumerate(records, start=1):
            if rate_per_sec > 0:
                time.sleep(max(0.0, started + (sent - 1) / rate_per_sec - time.monotonic()))
            future = producer.send(topic, value=record.value, key=record.key)
            future.add_errback(failures.append)
            counts[record.kind] += 1
            if progress is not None:
                progress(sent)
        producer.flush()
    finally:
        producer.close()
    if failures:
        total = sum(counts.values())
        raise KafkaError(f"{len(failures)} of {total} records to {topic} failed: {failures[0]!r}")
    return ProduceSummary(counts=counts, elapsed_s=time.monotonic() - started)


def produce_events(
    bootstrap: str,
    topic: str,
    events: Iterable[dict[str, Any] | bytes],
    key_field: str = "user_id",
    security: KafkaSecurity | None = None,
) -> ProduceSummary:
    """Send hand-written events: a dict as JSON keyed by ``event[key_field]``, bytes as they are."""
    records = (_as_record(event, key_field) for event in events)
    return produce(bootstrap, topic, records, security=security)


def _as_record(event: dict[str, Any] | bytes, key_field: str) -> ProducedRecord:
    if isinstance(event, bytes):
        return ProducedRecord(None, event, "ok")
    key = event.get(key_field)
    return ProducedRecord(None if key is None else str(key).encode(), _encode(event), "ok")
