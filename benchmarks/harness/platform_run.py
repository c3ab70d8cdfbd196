"""The platform's streams, run the way its jobs run them: the built-in declarations
(``builtin_streams``) through ``runtime.runner.run_streams``, with the progress recorder on, in
catch-up or continuous mode. Whatever the platform does per batch is in the timings."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from benchmarks.harness.env import Env
from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.interrupts import GracefulStop, StopRequest
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext

BRONZE, DEDUP, SESSIONS, ALERTS = "clickstream_raw", "events", "user_sessions", "security_alerts"


@dataclass
class PlatformRun:
    """What a run reported: every progress of every stream, and when each phase started."""

    progress: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    phases: dict[tuple[str, str], float] = field(default_factory=dict)

    def rows_in(self, stream: str) -> int:
        return sum(int(p.get("numInputRows") or 0) for p in self.progress[stream])

    def batches(self, stream: str) -> int:
        return sum(1 for p in self.progress[stream] if p.get("numInputRows"))

    def trigger_seconds(self, stream: str) -> float:
        return sum(_trigger_ms(p) for p in self.progress[stream]) / 1000

    def state(self, stream: str) -> dict[str, Any]:
        """The state operators of the stream's last batch that ran them (summed)."""
        return state_of(self.progress[stream])


def _trigger_ms(progress: dict[str, Any]) -> float:
    return float((progress.get("durationMs") or {}).get("triggerExecution") or 0)


def state_of(progresses: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``numRowsTotal``, ``memoryUsedBytes`` and the custom metrics of the newest progress whose
    state operators report, summed over its operators."""
    for progress in reversed(progresses):
        operators = progress.get("stateOperators") or []
        if operators and progress.get("numInputRows"):
            total: dict[str, Any] = {"operators": len(operators)}
            for op in operators:
                for key in ("numRowsTotal", "memoryUsedBytes", "numRowsUpdated", "numRowsRemoved"):
                    total[key] = total.get(key, 0) + int(op.get(key) or 0)
                for key, value in (op.get("customMetrics") or {}).items():
                    total[f"custom_{key}"] = total.get(f"custom_{key}", 0) + int(value or 0)
            return total
    return {}


def completed_at(progress: dict[str, Any]) -> float:
    """When a batch finished (epoch seconds): its start time plus its trigger duration."""
    started = datetime.fromisoformat(str(progress["timestamp"]).replace("Z", "+00:00"))
    return started.timestamp() + _trigger_ms(progress) / 1000


def run_platform(
    env: Env,
    lake: Lakehouse,
    topic: str,
    streams: Sequence[str],
    *,
    continuous_trigger_seconds: float | None = None,
    stop: StopRequest | None = None,
    on_start: Callable[[str, str], None] | None = None,
    events_reads: Literal["bronze", "kafka"] = "bronze",
) -> PlatformRun:
    """Run ``streams`` of the built-in pipeline over ``topic`` in ``lake``: catch-up (returns
    when caught up), or with ``continuous_trigger_seconds`` until ``stop`` is set. ``events``
    reads the bronze table, or with ``events_reads="kafka"`` the topic beside bronze."""
    registry = builtin_streams(BuiltinSettings(clickstream_topic=topic, events_reads=events_reads))
    trigger = continuous_trigger_seconds or 0.0
    recorder = ProgressRecorder(
        ProgressStore(lake.root / "progress"),
        f"bench-{uuid.uuid4().hex}",
        {name: trigger for name in streams},
    )
    ctx = StreamContext(env.spark, lake, env.bootstrap, on_batch=recorder.record_batch)
    options = RunOptions(
        mode="catch_up" if continuous_trigger_seconds is None else "continuous",
        processing_time=f"{int(trigger * 1000)} milliseconds",
        max_offsets_per_trigger=env.max_offsets,
    )
    run = PlatformRun()

    def started(name: str, phase: str) -> None:
        import time

        run.phases[(name, phase)] = time.time()
        if on_start is not None:
            on_start(name, phase)

    try:
        run_streams(
            ctx,
            [registry.get(n) for n in streams],
            options,
            lambda name, p: run.progress[name].append(dict(p)),
            on_start=started,
            recorder=recorder,
            stop=stop,
        )
    except GracefulStop:
        if stop is None or not stop.requested:
            raise
    return run
