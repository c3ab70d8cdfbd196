"""Section 3: how the stateful streams scale with keys, and how fast they restart with big state.

For each key count K, a fresh topic gets exactly one page view per user for K users, event times
spread over 15 minutes (inside the 10-minute watermarks, so no key expires): ``events`` ends with
K event ids in its dedup state and ``user_sessions`` with K users. Bronze, then each stateful
stream runs in catch-up mode through the platform's runner; per stream the sample has rows/s, and
from the last batch's state operators (Spark's progress) ``numRowsTotal`` and
``memoryUsedBytes``, plus the checkpoint's ``state/`` folder on disk; per key: those / K.

Restart, at the largest K: 1 % more events (at least ``restart_min``) for existing users go into
the topic and through bronze; then each stateful stream starts again on its checkpoint (a new
query in the same SparkSession: its state store loads from the checkpoint files, the JVM start
is not counted). ``first_batch_seconds`` runs from the call that starts it to the end of its
first batch with input (Spark's batch start + its trigger duration).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.harness.env import Env, folder_bytes, timed
from benchmarks.harness.inputs import scaling_records
from benchmarks.harness.platform_run import (
    BRONZE,
    DEDUP,
    SESSIONS,
    PlatformRun,
    completed_at,
    run_platform,
)
from benchmarks.harness.results import Figures

Say = Callable[[str], None]


@dataclass(frozen=True)
class ScalingConfig:
    keys: tuple[int, ...]
    streams: tuple[str, ...] = (DEDUP, SESSIONS)
    restart_share: float = 0.01
    restart_min: int = 500


def scaling_start(now: datetime | None = None) -> datetime:
    """Two days before today's midnight (UTC): the same all day, never ahead of the clock."""
    today = (now or datetime.now(UTC)).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=2)


def run_scaling(env: Env, figures: Figures, cfg: ScalingConfig, repeat: int, say: Say) -> None:
    """Every key count, ``repeat`` times; the restart at the largest."""
    for r in range(repeat):
        for keys in sorted(cfg.keys):
            _point(env, figures, cfg, keys, r, say)


def _point(env: Env, figures: Figures, cfg: ScalingConfig, keys: int, r: int, say: Say) -> None:
    name, start = f"scale-{keys}-{r}", scaling_start()
    seconds = env.topic(name, scaling_records(keys, start))
    say(f"scaling: produced {keys:,} keys into {name} in {seconds:.1f} s")
    lake = env.lakehouse(name)
    for stream in (BRONZE, *cfg.streams):
        run, sample = timed(lambda s=stream: run_platform(env, lake, name, [s]))  # type: ignore[misc]
        sample = {**sample, **_state_sample(run, stream, keys, env, name)}
        wall = float(sample["wall_seconds"] or 0)
        sample["rows_per_second"] = round(int(sample["rows"] or 0) / wall, 1) if wall else None
        figures.add("scaling", stream, "platform", sample, keys=keys)
        per_key = sample.get("bytes_per_key_disk")
        state = "" if per_key is None else f", state {per_key:,.0f} B/key on disk"
        say(
            f"scaling {stream} at {keys:,} keys: {sample['rows_per_second'] or 0:,.0f} rows/s"
            f"{state} (load {sample['load_after']})"
        )
    if keys == max(cfg.keys):
        _restart(env, figures, cfg, keys, name, start, say)


def _state_sample(run: PlatformRun, stream: str, keys: int, env: Env, name: str) -> dict[str, Any]:
    rows = run.rows_in(stream)
    state = run.state(stream)
    disk = folder_bytes(env.lakehouse(name).checkpoint(stream) / "state")
    memory = state.get("memoryUsedBytes")
    sample: dict[str, Any] = {"keys": keys, "rows": rows, "batches": run.batches(stream)}
    if state:
        sample.update(
            {
                "state_rows": state.get("numRowsTotal"),
                "state_rows_per_key": round(state.get("numRowsTotal", 0) / keys, 3),
                "memory_used_bytes": memory,
                "bytes_per_key_memory": round(memory / keys, 1) if memory is not None else None,
                "sst_bytes": state.get("custom_rocksdbSstFileSize"),
                "state_disk_bytes": disk,
                "bytes_per_key_disk": round(disk / keys, 1),
            }
        )
    return sample


def _restart(
    env: Env, figures: Figures, cfg: ScalingConfig, keys: int, name: str, start: datetime, say: Say
) -> None:
    extra = min(max(int(keys * cfg.restart_share), cfg.restart_min), keys)
    # Later than the first events (which set the watermarks), so none is late: every one reaches
    # the state.
    env.topic(
        name,
        scaling_records(
            keys, start, count=extra, stride=max(keys // extra, 1), tag="restart", late_part=0.7
        ),
    )
    lake = env.lakehouse(name)
    run_platform(env, lake, name, [BRONZE])
    for stream in cfg.streams:
        began = time.time()
        run, sample = timed(lambda s=stream: run_platform(env, lake, name, [s]))  # type: ignore[misc]
        first = next((p for p in run.progress[stream] if p.get("numInputRows")), None)
        durations = (first or {}).get("durationMs") or {}
        sample = {
            **sample,
            "keys": keys,
            "restart_rows": extra,
            "first_batch_seconds": round(completed_at(first) - began, 2) if first else None,
            "first_batch_trigger_ms": durations.get("triggerExecution"),
            "first_batch_add_ms": durations.get("addBatch"),
            "state_rows": run.state(stream).get("numRowsTotal"),
        }
        figures.add("restart", stream, "platform", sample, keys=keys)
        say(
            f"restart {stream} with {keys:,} keys: first batch after {sample['first_batch_seconds']}"
            f" s (load {sample['load_after']})"
        )
