"""The Kafka offsets a checkpoint committed, and the lag behind the broker's end offsets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from platform_pipelines.health.checkpoint.files import is_number
from platform_pipelines.health.checkpoint.model import CheckpointFacts


def kafka_committed_offsets(facts: CheckpointFacts) -> dict[str, dict[int, int]]:
    """Per Kafka topic and partition, the next offset to read: the end offsets of the newest
    committed batch. Two sources on one topic: the one further behind wins."""
    committed: dict[str, dict[int, int]] = {}
    for source in facts.latest_source_offsets:
        for topic, partitions in _kafka_offsets(source).items():
            known = committed.setdefault(topic, {})
            for partition, offset in partitions.items():
                known[partition] = min(offset, known.get(partition, offset))
    return committed


def _kafka_offsets(source: Mapping[str, Any]) -> dict[str, dict[int, int]]:
    """A Kafka source's offsets (``{"topic": {"0": 12}}``); empty for any other source."""
    if not source or not all(_is_partition_map(v) for v in source.values()):
        return {}
    return {topic: {int(p): int(o) for p, o in parts.items()} for topic, parts in source.items()}


def _is_partition_map(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and bool(value)
        and all(is_number(k) and isinstance(v, int) for k, v in value.items())
    )


def kafka_lag(
    committed: Mapping[str, Mapping[int, int]], end_offsets: Mapping[str, Mapping[int, int]]
) -> int:
    """Records on the broker not processed yet: per partition of ``end_offsets`` the end offset
    minus the committed one (a partition the checkpoint does not know counts from 0), never
    negative, summed."""
    return sum(
        max(0, end - committed.get(topic, {}).get(partition, 0))
        for topic, partitions in end_offsets.items()
        for partition, end in partitions.items()
    )


# --- judgements -----------------------------------------------------------------------------------
