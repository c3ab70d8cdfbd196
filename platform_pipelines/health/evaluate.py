"""One health evaluation of every stream: the cheap judgements, joined with what they judge.

Reads only files (progress records, checkpoints, Delta logs) and asks the Kafka broker for its
end offsets: no JVM, so the sensor and the CLI call it every few seconds. The caller supplies the
run state of each stream (from Dagster, or from the records alone).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import batch_id
from platform_pipelines.core.verdict import Status, Verdict, warned, worst
from platform_pipelines.health.checkpoint import (
    CheckpointExpectations,
    CheckpointFacts,
    checkpoint_verdict,
    inspect_checkpoint,
    kafka_committed_offsets,
    kafka_lag,
)
from platform_pipelines.health.checkpoint.upstream import judge_upstream
from platform_pipelines.health.history import batches
from platform_pipelines.health.key_horizon import key_horizon
from platform_pipelines.health.late_data import judge_late_data
from platform_pipelines.health.liveness import create_topic_command, judge_liveness
from platform_pipelines.health.metrics import stream_metrics
from platform_pipelines.health.policy import HealthPolicy
from platform_pipelines.health.replication import KAFKA_REPLICATION, judge_replication
from platform_pipelines.health.runs import RunState
from platform_pipelines.health.state_growth import judge_state_growth
from platform_pipelines.health.throughput import Lag, judge_falling_behind
from platform_pipelines.kafka.reachability import reachable
from platform_pipelines.kafka.replication import ReplicationFacts, gather_replication
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import committed_version, rows_behind, table_id
from platform_pipelines.streams.declare import Stream, asset_key

# The cheap checks, evaluated by the sensor from files (and, for streams that read Kafka, the
# broker's own view of the topic's replicas); their names are the asset checks' names.
CHEAP_CHECKS = ("liveness", "falling_behind", "state_growth", "late_data", "checkpoint")
RECORDS_PER_EVALUATION = 80
RunStates = Callable[[Stream, Sequence[ProgressRecord]], RunState]


@dataclass(frozen=True)
class HealthConfig:
    """Thresholds of the progress judgements and what the checkpoint must match."""

    policy: HealthPolicy = field(default_factory=HealthPolicy)
    expectations: CheckpointExpectations = field(default_factory=CheckpointExpectations)


@dataclass(frozen=True)
class Broker:
    """What the broker said: end offsets by topic, or why it said nothing."""

    address: str
    end_offsets: Mapping[str, Mapping[int, int]] | None
    error: str = ""
    replication: ReplicationFacts | None = None  # None: not asked, or the broker did not say
    answered_at: float | None = None  # when it gave the end offsets (epoch seconds)

    @property
    def down(self) -> str:
        return f"the Kafka broker at {self.address} does not answer ({self.error})"


@dataclass(frozen=True)
class StreamHealth:
    """The verdicts on one stream, and the numbers for the UI's plots."""

    stream: Stream
    verdicts: list[Verdict]
    metrics: dict[str, float | int]
    latest: ProgressRecord | None
    checkpoint: CheckpointFacts
    run: RunState
    lag: Lag | None = None
    last_batch_id: int = -1
    last_batch_at: float | None = None

    @property
    def asset(self) -> str:
        return asset_key(self.stream)

    @property
    def status(self) -> Status:
        return worst(self.verdicts)

    def verdict(self, check: str) -> Verdict:
        return next(v for v in self.verdicts if v.check == check)


def ask_broker(
    bootstrap: str | None, topics: Sequence[str], timeout_s: float = 2.0
) -> Broker | None:
    """End offsets of ``topics`` in one connection; None without a broker address or topics."""
    from platform_pipelines.kafka.admin import end_offsets_many
    from platform_pipelines.kafka.clients import KafkaAccessError

    if not bootstrap or not topics:
        return None
    if not reachable(bootstrap):
        return Broker(bootstrap, None, "connection refused")
    try:
        ends = end_offsets_many(bootstrap, sorted(set(topics)), timeout_s, skip_missing=True)
        answered_at = time.time()
    except KafkaAccessError as error:  # TLS or credentials: the message names the setting to fix
        return Broker(bootstrap, None, str(error))
    except Exception as error:  # timed out, unknown topic...: lag is unknown, say why
        return Broker(bootstrap, None, type(error).__name__)
    try:
        replication = gather_replication(bootstrap, sorted(set(topics)), timeout_s=timeout_s)
    except Exception as error:  # the offsets came: say why the copies are unknown
        return Broker(
            bootstrap, ends, f"replicas unknown: {type(error).__name__}", answered_at=answered_at
        )
    return Broker(bootstrap, ends, replication=replication, answered_at=answered_at)


def replication_verdict(topic: str, broker: Broker | None) -> Verdict:
    """``kafka_replication`` of ``topic``: are its partitions led and their copies in sync?"""
    if broker is not None and broker.replication is not None:
        return judge_replication(broker.replication, topic)
    why = (
        "no Kafka address is configured"
        if broker is None
        else (broker.down if broker.end_offsets is None else broker.error)
    )
    return warned(
        KAFKA_REPLICATION,
        f"replication of {topic} unknown: {why}",
        remedy="Check that the brokers run and answer (platform kafka status).",
    )


def stream_lag(
    stream: Stream, lakehouse: Lakehouse, facts: CheckpointFacts, broker: Broker | None
) -> Lag | None:
    """How far ``stream`` is behind its input, counted outside Spark; None when not measurable
    (or the stream never ran: it has no position to be behind from)."""
    if not facts.exists:
        return None
    if stream.topic is not None:
        what = f"Kafka topic {stream.topic}"
        if broker is None:
            return None
        if broker.end_offsets is None:
            return Lag(
                what,
                None,
                broker.down,
                f"Bring the Kafka broker at {broker.address} back (`platform kafka status` shows "
                "it), or point PLATFORM_KAFKA_BOOTSTRAP_SERVERS at brokers that run.",
            )
        if stream.topic not in broker.end_offsets:
            return Lag(
                what,
                None,
                f"the Kafka broker at {broker.address} has no topic {stream.topic}",
                f"Create the topic (`{create_topic_command(stream.topic)}`), or declare the "
                "stream with the topic its producers write to.",
            )
        committed = {stream.topic: kafka_committed_offsets(facts).get(stream.topic, {})}
        ends = {stream.topic: dict(broker.end_offsets.get(stream.topic, {}))}
        return Lag(what, kafka_lag(committed, ends))
    upstream = lakehouse.table(stream.upstream)
    position = committed_version(lakehouse.checkpoint(stream.name))
    behind = rows_behind(upstream, position if position is not None else 0)
    return None if behind is None else Lag(f"table {stream.upstream}", behind)


def _upstream(stream: Stream, lakehouse: Lakehouse, facts: CheckpointFacts) -> list[Verdict]:
    """A failure when the checkpoint's positions are in an upstream table that was replaced."""
    if stream.topic is not None or not facts.exists:
        return []
    current = table_id(lakehouse.table(stream.upstream))
    verdict = judge_upstream(facts, stream.name, stream.upstream, current)
    return [verdict] if verdict is not None else []


def lag_measured_at(
    stream: Stream, broker: Broker | None, now: float, clock: Callable[[], float] | None
) -> float:
    """When the lag of ``stream`` was true, judged live (with a ``clock``): for a topic, when
    the broker gave its end offsets; for a table, when it was read (``clock()`` right after).
    Without a clock (a replay of a recording, a test at a chosen time) it is ``now``. A lag
    stamped earlier than it was true (at the evaluation's start) makes the rate input arrives
    at look higher than it is, and a warning come late; stamped later, a warning early."""
    if clock is None:
        return now
    if stream.topic is not None:
        return broker.answered_at if broker is not None and broker.answered_at else now
    return clock()


def evaluate_stream(
    stream: Stream,
    lakehouse: Lakehouse,
    records: Sequence[ProgressRecord],
    run: RunState,
    broker: Broker | None,
    now: float,
    config: HealthConfig = HealthConfig(),
    clock: Callable[[], float] | None = None,
) -> StreamHealth:
    """Every cheap judgement of one stream, at ``now``; ``clock`` (live: ``time.time``) stamps
    a table's lag when it is read (``lag_measured_at``)."""
    facts = inspect_checkpoint(lakehouse.checkpoint(stream.name))
    lag = stream_lag(stream, lakehouse, facts, broker)
    if lag is not None:
        lag = replace(lag, measured_at=lag_measured_at(stream, broker, now, clock))
    cause = lag.unknown_because if lag is not None and lag.records is None else None
    policy = config.policy
    verdicts = [
        judge_liveness(records, run, now, policy, cause=cause),
        judge_falling_behind(records, lag, policy, run),
        judge_state_growth(records, policy, key_horizon(stream)),
        judge_late_data(records, policy, stream.name),
        checkpoint_verdict(
            facts,
            config.expectations.for_stream(stream.state_partitions),
            _upstream(stream, lakehouse, facts),
        ),
        *([replication_verdict(stream.topic, broker)] if stream.topic else []),
    ]
    done = batches(records)
    metrics = stream_metrics(records, lag, facts.total_bytes if facts.exists else None)
    last = done[-1] if done else None
    return StreamHealth(
        stream,
        verdicts,
        metrics,
        records[-1] if records else None,
        facts,
        run,
        lag,
        last_batch_id=batch_id(last.progress or {}) if last else -1,
        last_batch_at=last.ts if last else None,
    )


def evaluate_all(
    streams: Sequence[Stream],
    lakehouse: Lakehouse,
    store: ProgressStore,
    run_states: RunStates,
    bootstrap: str | None,
    now: float | None = None,
    config: HealthConfig = HealthConfig(),
    clock: Callable[[], float] | None = None,
) -> list[StreamHealth]:
    """Evaluate every stream at ``now``; the broker is asked once for all topics. With a
    ``clock`` (and always when no ``now`` is given) each table's lag is stamped when read."""
    if now is None:
        now, clock = time.time(), clock or time.time
    broker = ask_broker(bootstrap, [s.topic for s in streams if s.topic])
    results = []
    for stream in streams:
        records = store.recent(stream.name, RECORDS_PER_EVALUATION)
        run = run_states(stream, records)
        results.append(evaluate_stream(stream, lakehouse, records, run, broker, now, config, clock))
    return results
