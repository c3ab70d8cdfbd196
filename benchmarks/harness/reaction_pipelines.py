"""The pipelines the reaction section measures: the platform's continuous run with the launch
config's defaults, or the plain queries doing the same work; and services that go silent."""

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
from typing import Any

from kafka import KafkaProducer

from benchmarks.harness.env import Env
from benchmarks.plain import alerts, dedup, fused
from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.defs.config import StreamOverride, StreamRunConfig
from platform_pipelines.health.evaluate import evaluate_all
from platform_pipelines.health.runs import RunState
from platform_pipelines.kafka.heartbeats import heartbeat
from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.run_options import trigger_seconds
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext

START_TIMEOUT_S = 300
BEATS = 5  # heartbeats a service sends, one a second, before the first one falls silent
# Services that fall silent, the last heartbeats SILENCE_SPACING_S apart: their timeouts fall at
# every phase of a trigger of up to 10 s, so the worst of them is the worst a trigger gives (one
# service per run moved between 3 and 16 s past its timeout from run to run).
SILENT_SERVICES = 6
SILENCE_SPACING_S = 2.0
# The verdicts of the health sensor a sample keeps for each stream: what an operator would see.
HEALTH_CHECKS = ("liveness", "falling_behind")
Health = dict[str, dict[str, Any]]  # stream -> {check: {status, summary}, lag_records}


@dataclass
class Silence:
    """Services that sent heartbeats and then stopped, the last dated ``last_beat_ms``."""

    table: Path
    last_beat_ms: dict[str, float]  # service -> its last heartbeat's own time (epoch ms)
    timeout: timedelta
    alive: Callable[[], None]

    def seconds_past_timeout(self) -> list[float | None]:
        """Per service (in the order they fell silent): seconds from its timeout (its last
        heartbeat's time + the timeout, as ``service_status`` counts it) to the commit that
        showed it ``stale``, waiting up to a minute past the last timeout (or past now, when
        asked later than that); None for one that was never shown stale."""
        timeout_ms = self.timeout.total_seconds() * 1000
        last_timeout = (max(self.last_beat_ms.values()) + timeout_ms) / 1000
        deadline = max(last_timeout, time.time()) + 60
        shown: dict[str, float] = {}
        while len(shown) < len(self.last_beat_ms) and time.time() < deadline:
            self.alive()
            shown = first_stale_ms(self.table, set(self.last_beat_ms))
            time.sleep(0.5)
        return [
            round((shown[s] - beat - timeout_ms) / 1000, 2) if s in shown else None
            for s, beat in self.last_beat_ms.items()
        ]


@dataclass
class Heartbeats:
    """``SILENT_SERVICES`` services beating once a second, falling silent one by one."""

    bootstrap: str
    topic: str
    prefix: str
    last_beat_ms: dict[str, float] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def run(self) -> None:
        """Send the heartbeats (about ``BEATS`` + 2 x ``SILENT_SERVICES`` seconds); ``done`` is
        set once every one was sent, ``error`` holds what stopped it otherwise."""
        last_round = {
            f"{self.prefix}-{i}": BEATS - 1 + round(i * SILENCE_SPACING_S)
            for i in range(SILENT_SERVICES)
        }
        try:
            producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=0)
            try:
                for beat in range(max(last_round.values()) + 1):
                    if beat:
                        time.sleep(1.0)
                    for service in [s for s, last in last_round.items() if beat <= last]:
                        at = datetime.now(UTC)
                        value = json.dumps(heartbeat(service, at)).encode()
                        producer.send(self.topic, key=service.encode(), value=value)
                        producer.flush(10)
                        self.last_beat_ms[service] = at.timestamp() * 1000
            finally:
                producer.close(5)
            self.done.set()
        except BaseException as error:  # the thread's caller reads it in Pipeline.silence
            self.error = error


@dataclass
class Pipeline:
    """A running pipeline: where its dedup and alert rows land, and a check that it still runs."""

    events_table: Path
    alerts_table: Path
    alive: Callable[[], None]
    status_table: Path | None = None
    stale_after: timedelta = timedelta(minutes=5)
    visible_before: int = 0
    health: Callable[[], Health] | None = None  # the sensor's verdicts now (platform only)

    def heartbeats(self, bootstrap: str, topic: str) -> Heartbeats | None:
        """The services that beat and fall silent (platform only): ``run`` them, then ask
        ``silence`` how late each was shown stale."""
        if self.status_table is None:
            return None
        return Heartbeats(bootstrap, topic, f"svc-{uuid.uuid4().hex[:6]}")

    def silence(self, beats: Heartbeats) -> Silence:
        """The services of ``beats``, once every heartbeat was sent (their thread has ended)."""
        assert self.status_table is not None
        if not beats.done.wait(60) or len(beats.last_beat_ms) != SILENT_SERVICES:
            raise RuntimeError(
                f"the silent services' heartbeats were not all sent ({beats.error!r}): "
                "the stale figure would not be the worst of six"
            )
        return Silence(self.status_table, dict(beats.last_beat_ms), self.stale_after, self.alive)


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
    store = ProgressStore(lake.root / "progress")
    recorder = ProgressRecorder(
        store, f"bench-{uuid.uuid4().hex}", {s: trigger_seconds(o) for s, o in options.items()}
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

    def health() -> Health:
        """The health sensor's cheap verdicts on every stream of the run, as it would judge them
        now (the run runs every stream), and each stream's lag in records."""
        running = RunState("running", "the bench's run")
        found = evaluate_all(streams, lake, store, lambda s, r: running, env.bootstrap)
        return {
            h.stream.name: {
                **{
                    v.check: {"status": v.status.value, "summary": v.summary}
                    for v in h.verdicts
                    if v.check in HEALTH_CHECKS
                },
                "lag_records": h.lag.records if h.lag else None,
            }
            for h in found
        }

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
            health=health,
        )
    finally:
        stop.why = "the end of the reaction measurement"
        thread.join(180)


@contextlib.contextmanager
def plain_pipeline(
    env: Env,
    name: str,
    topics: Mapping[str, str],
    stale_after: timedelta,
    say: Callable,
    one_query: bool = False,
) -> Iterator[Pipeline]:
    """The plain alerts query and the plain dedup query, side by side on the clickstream topic;
    with ``one_query``, both in one query (``benchmarks.plain.fused``)."""
    out = env.work / name
    topic = topics["clickstream"]
    if one_query:
        queries = [fused.start_from_kafka(env.spark, env.bootstrap, topic, out, 0.0)]
    else:
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


def first_stale_ms(table: Path, services: set[str]) -> dict[str, float]:
    """For each of ``services`` shown ``stale`` in ``table``: when (epoch ms) the first commit
    holding that row was published. One pass over the table."""
    from urllib.parse import unquote

    import pyarrow.parquet as pq

    from benchmarks.harness.visibility import _adds, _commits

    found: dict[str, float] = {}
    for commit in _commits(table):
        for add in _adds(commit):
            rows = pq.read_table(table / unquote(str(add["path"])), columns=["service", "status"])
            for row in rows.to_pylist():
                if row["status"] == "stale" and row["service"] in services - found.keys():
                    found[row["service"]] = commit.stat().st_mtime_ns / 1e6
    return found
