"""The pipelines the reaction section measures: the platform's continuous run with the launch
config's defaults, or the plain queries doing the same work; and a service that goes silent."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kafka import KafkaProducer

from benchmarks.harness.env import Env
from benchmarks.plain import alerts, dedup
from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.defs.config import StreamOverride, StreamRunConfig
from platform_pipelines.kafka.heartbeats import heartbeat
from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext

START_TIMEOUT_S = 300
BEATS = 5  # heartbeats of the service that then goes silent, one a second


@dataclass
class Silence:
    """A service that sent ``BEATS`` heartbeats, the last at ``last_sent_ms``, then stopped."""

    table: Path
    service: str
    last_sent_ms: float
    timeout: timedelta
    alive: Callable[[], None]

    def seconds_past_timeout(self) -> float | None:
        """Seconds from the heartbeat timeout to the commit that showed ``stale`` (waits up to
        a minute past the timeout); None if it never came."""
        timeout_ms = self.last_sent_ms + self.timeout.total_seconds() * 1000
        deadline = time.time() + max(timeout_ms / 1000 - time.time(), 0) + 60
        while time.time() < deadline:
            self.alive()
            shown = first_row_ms(self.table, {"service": self.service, "status": "stale"})
            if shown is not None:
                return round((shown - timeout_ms) / 1000, 2)
            time.sleep(0.5)
        return None


@dataclass
class Pipeline:
    """A running pipeline: where its dedup and alert rows land, and a check that it still runs."""

    events_table: Path
    alerts_table: Path
    alive: Callable[[], None]
    status_table: Path | None = None
    stale_after: timedelta = timedelta(minutes=5)
    visible_before: int = 0
    service: str = field(default_factory=lambda: f"svc-{uuid.uuid4().hex[:6]}")

    def heartbeat(self, bootstrap: str, topic: str) -> Silence | None:
        """Send the service's heartbeats, one a second, then fall silent (platform only)."""
        if self.status_table is None:
            return None
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        try:
            for beat in range(BEATS):
                if beat:
                    time.sleep(1.0)  # a heartbeat a second, as a service sends them
                event = heartbeat(self.service, datetime.now(UTC))
                producer.send(topic, key=self.service.encode(), value=json.dumps(event).encode())
                producer.flush(10)
                last = time.time() * 1000
        finally:
            producer.close(5)
        return Silence(self.status_table, self.service, last, self.stale_after, self.alive)


@contextlib.contextmanager
def platform_pipeline(
    env: Env,
    name: str,
    topics: Mapping[str, str],
    stale_after: timedelta,
    say: Callable,
    triggers: Mapping[str, int] | None = None,
) -> Iterator[Pipeline]:
    """Every built-in stream, continuously, each with the launch config's defaults (or the
    trigger interval ``triggers`` gives it, as a per-stream override in the launchpad would)."""
    lake = env.lakehouse(name)
    cfg = BuiltinSettings(
        clickstream_topic=topics["clickstream"],
        heartbeats_topic=topics["heartbeats"],
        alerts_topic=topics["alerts"],
        stale_after=stale_after,
    )
    registry = builtin_streams(cfg)
    streams = registry.in_dependency_order()
    launch = StreamRunConfig(
        streams={
            stream: StreamOverride(trigger_interval_seconds=seconds)
            for stream, seconds in (triggers or {}).items()
        }
    )
    options = {s.name: launch.run_options(s) for s in streams}
    recorder = ProgressRecorder(
        ProgressStore(lake.root / "progress"),
        f"bench-{uuid.uuid4().hex}",
        {s: 0.0 for s in options},
    )
    ctx = StreamContext(env.spark, lake, env.bootstrap, on_batch=recorder.record_batch)
    stop, running, errors = StopRequest(), threading.Event(), []

    def started(stream: str, phase: str) -> None:
        if stream == "security_alerts" and phase == "continuous":
            running.set()

    def body() -> None:
        try:
            run_streams(
                ctx,
                streams,
                options,
                lambda *_: None,
                on_start=started,
                recorder=recorder,
                stop=stop,
            )
        except GracefulStop:
            pass
        except BaseException as error:
            errors.append(error)
        finally:
            running.set()

    def alive() -> None:
        if errors or not thread.is_alive():
            raise RuntimeError(f"the platform's pipeline stopped: {errors[:1]}")

    thread = threading.Thread(target=body, name=f"bench-{name}", daemon=True)
    thread.start()
    try:
        running.wait(START_TIMEOUT_S)
        alive()
        say(f"{name}: every stream runs ({', '.join(sorted(options))})")
        yield Pipeline(
            lake.table("events"),
            lake.table("security_alerts"),
            alive,
            status_table=lake.table("service_status"),
            stale_after=stale_after,
        )
    finally:
        stop.why = "the end of the reaction measurement"
        thread.join(180)


@contextlib.contextmanager
def plain_pipeline(
    env: Env, name: str, topics: Mapping[str, str], stale_after: timedelta, say: Callable
) -> Iterator[Pipeline]:
    """The plain alerts query and the plain dedup query, side by side on the clickstream topic."""
    out = env.work / name
    topic = topics["clickstream"]
    queries = [
        alerts.start_from_kafka(env.spark, env.bootstrap, topic, out / "alerts", 0.0),
        dedup.start_from_kafka(env.spark, env.bootstrap, topic, out / "dedup", None, 0.0),
    ]

    def alive() -> None:
        for query in queries:
            if not query.isActive:
                raise RuntimeError(f"a plain reaction query died: {query.exception()}")

    try:
        yield Pipeline(out / "dedup" / "table", out / "alerts" / "table", alive)
    finally:
        for query in queries:
            query.stop()


def first_row_ms(table: Path, where: Mapping[str, str]) -> float | None:
    """When (epoch ms) the first commit holding a row with the ``where`` values was published."""
    from urllib.parse import unquote

    import pyarrow.parquet as pq

    from benchmarks.harness.visibility import _adds, _commits

    for commit in _commits(table):
        for add in _adds(commit):
            rows = pq.read_table(table / unquote(str(add["path"])), columns=list(where))
            for row in rows.to_pylist():
                if all(row.get(k) == v for k, v in where.items()):
                    return commit.stat().st_mtime_ns / 1e6
    return None
