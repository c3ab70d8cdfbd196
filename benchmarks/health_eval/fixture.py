"""A recorded scenario on disk: what the health sensor would read at the moment of judgement.

``tests/data/health_scenarios/<scenario>/``:

``progress.jsonl``
    The judged stream's progress records (``core.records``), as the running op persisted them,
    but for the state store's ``customMetrics``: only those the platform reads are kept (the
    RocksDB metrics are half of every record).
``lake/checkpoints/<stream>/``
    The stream's checkpoint folder (no lock file, no temporary files), read by
    ``inspect_checkpoint``; ``lake/tables/<table>/_delta_log/*.json`` and the pointer files for a
    stream that reads a table (its lag is counted from the upstream table's log).
``facts.json``
    What was measured when the recording ended (``Facts``): the broker's answer to the sensor's
    own question (``ask_broker``), the configuration the checkpoint is judged against, when the
    fault started; and, copied from the scenario's definition, the run facts no recording holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.health_eval.model import RunFacts
from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import SST_METRIC
from platform_pipelines.health.evaluate import Broker
from platform_pipelines.kafka.replication import PartitionReplicas, ReplicationFacts
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.streams.declare import Stream

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "data" / "health_scenarios"
PROGRESS = "progress.jsonl"
FACTS = "facts.json"
LAKE = "lake"
Offsets = dict[str, dict[int, int]]
READ_METRICS = frozenset({SST_METRIC})  # the custom metrics core.spark_progress reads


@dataclass(frozen=True)
class Facts:
    """What a recording measured, beside its records and checkpoint.

    Attributes:
        stream: the judged stream.
        spark_version: the Spark that wrote the records and the checkpoint.
        state_partitions: ``spark.sql.shuffle.partitions`` configured when judged.
        min_batches_to_retain: ``spark.sql.streaming.minBatchesToRetain`` configured when judged.
        ended_at: when the recording ended (epoch seconds): the broker was asked then.
        fault_at: when the fault was injected (None for a healthy scenario).
        broker: the broker's answer (``ask_broker``) at ``ended_at``; None for a stream that
            reads no topic.
        run: the run facts the scenario states, with a failed run's error as recorded.
        declared: what the judged stream was declared with (``declared``): a scenario whose
            declaration changed since must be recorded again.
        end_offsets: the broker's end offsets of the stream's topic, asked about once a second
            while the recording ran: ``(time, {topic: {partition: offset}})``, None when the
            broker did not answer. The lag at any moment of the recording comes from them.
    """

    stream: str
    spark_version: str
    state_partitions: int
    min_batches_to_retain: int
    ended_at: float
    fault_at: float | None
    broker: Broker | None
    run: RunFacts
    declared: dict[str, Any]
    end_offsets: list[tuple[float, Offsets | None]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Facts:
        return cls(
            stream=data["stream"],
            spark_version=data["spark_version"],
            state_partitions=int(data["state_partitions"]),
            min_batches_to_retain=int(data["min_batches_to_retain"]),
            ended_at=float(data["ended_at"]),
            fault_at=None if data["fault_at"] is None else float(data["fault_at"]),
            broker=broker_from_json(data["broker"]),
            run=RunFacts(**data["run"]),
            declared=dict(data["declared"]),
            end_offsets=[
                (float(ts), None if ends is None else offsets_from_json(ends))
                for ts, ends in data.get("end_offsets", [])
            ],
        )


def declared(stream: Stream) -> dict[str, Any]:
    """What the judgements read of a stream's declaration: its input, its watermark and how
    long it keeps a key."""

    def seconds(value: timedelta | None) -> float | None:
        return None if value is None else value.total_seconds()

    return {
        "name": stream.name,
        "upstream": stream.upstream,
        "topic": stream.topic,
        "watermark_seconds": seconds(stream.watermark),
        "timeout": getattr(stream, "timeout", None),
        "key_lifetime_seconds": seconds(getattr(stream, "key_lifetime", None)),
    }


def offsets_from_json(data: Mapping[str, Mapping[str, int]]) -> Offsets:
    """``{topic: {partition: offset}}`` (JSON turned the partition numbers into text)."""
    return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in data.items()}


def broker_from_json(data: Mapping[str, Any] | None) -> Broker | None:
    """A ``Broker`` as ``asdict`` wrote it."""
    if data is None:
        return None
    ends = data["end_offsets"]
    replication = data["replication"]
    return Broker(
        address=data["address"],
        end_offsets=None if ends is None else offsets_from_json(ends),
        error=data["error"],
        replication=None if replication is None else replication_from_json(replication),
    )


def replication_from_json(data: Mapping[str, Any]) -> ReplicationFacts:
    return ReplicationFacts(
        brokers=tuple(data["brokers"]),
        alive=tuple(data["alive"]),
        quorum_leader=data["quorum_leader"],
        partitions=tuple(
            PartitionReplicas(
                p["topic"], p["partition"], p["leader"], tuple(p["replicas"]), tuple(p["isr"])
            )
            for p in data["partitions"]
        ),
        min_insync=dict(data["min_insync"]),
    )


@dataclass(frozen=True)
class Fixture:
    """One scenario's recorded folder."""

    folder: Path

    @classmethod
    def of(cls, scenario: str, root: Path = FIXTURES) -> Fixture:
        return cls(root / scenario)

    @property
    def exists(self) -> bool:
        return (self.folder / FACTS).is_file()

    @property
    def lakehouse(self) -> Lakehouse:
        """The recorded checkpoint (and upstream table logs) where the sensor looks for them."""
        return Lakehouse(self.folder / LAKE)

    def facts(self) -> Facts:
        return Facts.from_json(json.loads((self.folder / FACTS).read_text()))

    def records(self) -> list[ProgressRecord]:
        lines = (self.folder / PROGRESS).read_text().splitlines()
        return [ProgressRecord.from_json(line) for line in lines if line.strip()]

    def write(self, facts: Facts, records: list[ProgressRecord]) -> None:
        """Write ``facts.json`` and ``progress.jsonl`` (the lake is copied in by the recorder)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(facts.to_json(), indent=1, sort_keys=True)
        (self.folder / FACTS).write_text(text + "\n")
        lines = "".join(trimmed(r).to_json() + "\n" for r in records)
        (self.folder / PROGRESS).write_text(lines)


def trimmed(record: ProgressRecord) -> ProgressRecord:
    """``record`` with only the state store custom metrics the platform reads."""
    if record.progress is None:
        return record
    operators = [
        {
            **op,
            "customMetrics": {
                k: v for k, v in (op.get("customMetrics") or {}).items() if k in READ_METRICS
            },
        }
        for op in record.progress.get("stateOperators") or []
    ]
    return replace(record, progress={**record.progress, "stateOperators": operators})
