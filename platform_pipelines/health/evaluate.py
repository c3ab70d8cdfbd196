"""One health evaluation of every stream: the judgements, joined with what they are judged on.

Reads only files (progress records, checkpoints) and asks the Kafka broker for its end offsets:
no JVM, so sensors and the CLI call it every few seconds. Dagster-specific parts (run status, check
results) live in ``defs/health.py``; this module is shared with ``platform status``.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from platform_pipelines.health.checkpoint import (
    CheckpointExpectations,
    CheckpointFacts,
    checkpoint_verdict,
    inspect_checkpoint,
    kafka_committed_offsets,
    kafka_lag,
)
from platform_pipelines.health.judgements import (
    HealthPolicy,
    RunState,
    judge_falling_behind,
    judge_late_data,
    judge_liveness,
    judge_state_growth,
    progress_observation,
)
from platform_pipelines.health.records import ProgressRecord
from platform_pipelines.health.store import ProgressStore
from platform_pipelines.health.verdict import Status, Verdict, worst

if TYPE_CHECKING:
    from platform_pipelines.lakehouse.delta import Lakehouse
    from platform_pipelines.streams.registry import StreamRegistry

# The cheap checks, evaluated by the sensor from files; their names are the asset checks' names.
CHEAP_CHECKS = ("liveness", "falling_behind", "state_growth", "late_data", "checkpoint")
RECORDS_PER_EVALUATION = 60


@dataclass(frozen=True)
class StreamTarget:
    """What the health layer knows of a declared stream (plain data, no Spark)."""

    name: str
    asset: str  # the asset key of its main output table
    checkpoint: Path
    topic: str | None = None  # the Kafka topic it reads, if any


@dataclass(frozen=True)
class StreamHealth:
    """The verdicts on one stream, and the numbers for the UI's plots."""

    target: StreamTarget
    verdicts: list[Verdict]
    observation: dict[str, float | int]
    latest: ProgressRecord | None
    checkpoint: CheckpointFacts
    run: RunState
    broker_lag: int | None = None

    @property
    def status(self) -> Status:
        return worst(self.verdicts)

    def verdict(self, check: str) -> Verdict:
        return next(v for v in self.verdicts if v.check == check)


@dataclass(frozen=True)
class HealthConfig:
    """Thresholds of the progress judgements and what the checkpoint must match."""

    policy: HealthPolicy = field(default_factory=HealthPolicy)
    expectations: CheckpointExpectations = field(default_factory=CheckpointExpectations)


def stream_targets(registry: StreamRegistry, lakehouse: Lakehouse) -> list[StreamTarget]:
    """The health layer's view of every declared stream."""
    return [
        StreamTarget(
            name=s.name,
            asset=s.name,
            checkpoint=lakehouse.checkpoint(s.name),
            topic=s.upstream if s.upstream_is_topic else None,
        )
        for s in registry
    ]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True


def process_gone(record: ProgressRecord | None, alive: Callable[[int], bool] = pid_alive) -> bool:
    """Whether the driver that wrote ``record`` ran on this host and no longer exists."""
    return (
        record is not None
        and bool(record.pid)
        and record.host == socket.gethostname()
        and not alive(record.pid)
    )


def run_state_from_records(
    records: Sequence[ProgressRecord], alive: Callable[[int], bool] = pid_alive
) -> RunState:
    """The run state as the records alone tell it (for the CLI, which has no run status)."""
    if not records:
        return RunState("never_run", "no progress recorded")
    # Progress of a query's last batch may be recorded just after its end (the listener is
    # asynchronous): the newest start or end says whether it runs.
    last = next((r for r in reversed(records) if r.event in ("started", "terminated")), records[-1])
    if last.event == "terminated":
        if last.error_class:
            return RunState("failed", f"run {last.run_id[:8]} failed: {last.error_class}")
        return RunState("stopped", f"run {last.run_id[:8]} stopped")
    if process_gone(last, alive):
        return RunState("failed", f"the process of run {last.run_id[:8]} (pid {last.pid}) is gone")
    return RunState("running", f"run {last.run_id[:8]}")


def broker_end_offsets(
    bootstrap: str, topics: Sequence[str], timeout_s: float = 2.0
) -> dict[str, dict[int, int]] | None:
    """End offsets of ``topics`` in one connection; None if the broker does not answer."""
    from platform_pipelines.kafka.admin import end_offsets_many

    if not topics:
        return {}
    if not _reachable(bootstrap):
        return None
    try:
        return end_offsets_many(bootstrap, sorted(set(topics)), timeout_s=timeout_s)
    except Exception:  # unreachable or timed out: lag is unknown, not an error of the stream
        return None


def _reachable(bootstrap: str, timeout_s: float = 0.5) -> bool:
    """A TCP connect to any bootstrap server: a down broker is noticed in milliseconds instead of
    the Kafka client's seconds of retries."""
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            socket.create_connection((host or "localhost", int(port)), timeout_s).close()
            return True
        except (OSError, ValueError):
            continue
    return False


def evaluate_stream(
    target: StreamTarget,
    records: Sequence[ProgressRecord],
    run: RunState,
    end_offsets: Mapping[str, Mapping[int, int]] | None,
    now: float,
    config: HealthConfig = HealthConfig(),
) -> StreamHealth:
    """Every cheap judgement of one stream."""
    facts = inspect_checkpoint(target.checkpoint)
    lag = None
    if target.topic and end_offsets is not None and target.topic in end_offsets:
        committed = kafka_committed_offsets(facts)
        topic_committed = {target.topic: committed.get(target.topic, {})}
        lag = kafka_lag(topic_committed, {target.topic: end_offsets[target.topic]})
    policy = config.policy
    verdicts = [
        judge_liveness(records, run, now, policy),
        judge_falling_behind(records, lag, policy),
        judge_state_growth(records, policy),
        judge_late_data(records, policy),
        checkpoint_verdict(facts, config.expectations),
    ]
    observation = progress_observation(records, lag, now)
    observation["checkpoint_bytes"] = facts.total_bytes
    return StreamHealth(target, verdicts, observation, records[-1] if records else None, facts,
                        run, lag)  # fmt: skip


def evaluate_all(
    targets: Sequence[StreamTarget],
    store: ProgressStore,
    run_states: Callable[[StreamTarget, Sequence[ProgressRecord]], RunState],
    bootstrap: str | None,
    now: float | None = None,
    config: HealthConfig = HealthConfig(),
) -> list[StreamHealth]:
    """Evaluate every stream; the broker is asked once for all topics."""
    now = time.time() if now is None else now
    topics = [t.topic for t in targets if t.topic]
    end_offsets = broker_end_offsets(bootstrap, topics) if bootstrap else None
    results = []
    for target in targets:
        records = store.recent(target.name, RECORDS_PER_EVALUATION)
        results.append(
            evaluate_stream(target, records, run_states(target, records), end_offsets, now, config)
        )
    return results
