"""What a running query's ``foreachBatch`` needs from its own checkpoint: the batch's clock.

Spark writes ``offsets/<n>`` before batch ``n`` runs; its second line holds the batch's metadata,
``{"batchWatermarkMs": .., "batchTimestampMs": .., "conf": {..}}``. Reading it inside the batch
gives values that a replay of the batch (after a crash) reads again unchanged.

Two watermarks matter for batch ``n`` (checked against Spark 4.2, see ``tests/spark``):

- rows whose watermark column is at or before the watermark of batch ``n - 1`` (0 for the first
  batch) are dropped as late by every stateful operator;
- timers fire and state is evicted by the watermark of batch ``n`` itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platform_pipelines.core.storage import location, replace_text


@dataclass(frozen=True)
class BatchClock:
    """The clock of one micro-batch.

    Attributes:
        timestamp_ms: the batch's processing time (``current_timestamp()`` inside the query).
        watermark_ms: the batch's own watermark (timers and eviction).
        late_until_ms: rows at or before this are late for this batch (the previous batch's
            watermark).
    """

    timestamp_ms: int
    watermark_ms: int
    late_until_ms: int


def offsets_metadata(checkpoint: Path, batch_id: int) -> dict[str, Any] | None:
    """The metadata line of ``offsets/<batch_id>``; None when the file is absent or unreadable."""
    try:
        lines = (location(checkpoint) / "offsets" / str(batch_id)).read_text().splitlines()
        return dict(json.loads(lines[1]))
    except (OSError, IndexError, ValueError):
        return None


def batch_clock(checkpoint: Path, batch_id: int) -> BatchClock:
    """The clock of ``batch_id``, which is running (its offsets file exists).

    Raises:
        RuntimeError: the offsets file of the batch is missing: the checkpoint is not the one the
            query runs on.
    """
    meta = offsets_metadata(checkpoint, batch_id)
    if meta is None:
        raise RuntimeError(
            f"Batch {batch_id} has no readable offsets file in {checkpoint}: the stream's sink was "
            "given another checkpoint than its query's."
        )
    previous = offsets_metadata(checkpoint, batch_id - 1) if batch_id > 0 else None
    return BatchClock(
        timestamp_ms=int(meta.get("batchTimestampMs", 0)),
        watermark_ms=int(meta.get("batchWatermarkMs", 0)),
        late_until_ms=int((previous or {}).get("batchWatermarkMs", 0)),
    )


PLAN_FILE = "_platform.json"


@dataclass(frozen=True)
class StartPlan:
    """How a new checkpoint starts, written by ``platform stream reset-watermark`` and
    ``platform reprocess``.

    Attributes:
        starting_version: the first upstream Delta version the new checkpoint reads.
        guard_until_ms: until its batches' watermark passes this, the stream's writer drops
            output rows whose unique key its table already holds (a replay must not duplicate).
        replaces: the query id of the checkpoint it replaced.
        starting_timestamp_ms: a bronze stream reads its Kafka topic from this time (0: from
            the earliest offset).
    """

    starting_version: int
    guard_until_ms: int = 0
    replaces: str = ""
    starting_timestamp_ms: int = 0


def read_plan(checkpoint: Path) -> StartPlan | None:
    """The start plan of ``checkpoint``; None for a checkpoint that starts from the beginning."""
    try:
        data = json.loads((location(checkpoint) / PLAN_FILE).read_text())
    except (OSError, ValueError):
        return None
    return StartPlan(
        int(data["starting_version"]),
        int(data.get("guard_until_ms", 0)),
        str(data.get("replaces", "")),
        int(data.get("starting_timestamp_ms", 0)),
    )


def write_plan(checkpoint: Path, plan: StartPlan) -> None:
    location(checkpoint).mkdir(parents=True, exist_ok=True)
    text = json.dumps(
        {
            "starting_version": plan.starting_version,
            "guard_until_ms": plan.guard_until_ms,
            "replaces": plan.replaces,
            "starting_timestamp_ms": plan.starting_timestamp_ms,
        }
    )
    replace_text(location(checkpoint) / PLAN_FILE, text + "\n")  # a crash leaves old or new


def batch_ids(checkpoint: Path, log: str = "offsets") -> list[int]:
    """The batch ids of a checkpoint's ``offsets`` (or ``commits``) log, oldest first."""
    folder = location(checkpoint) / log
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def query_id_of(checkpoint: Path) -> str:
    """The query id in a checkpoint's ``metadata`` (empty when it has none yet)."""
    try:
        return str(
            json.loads((location(checkpoint) / "metadata").read_text().splitlines()[0])["id"]
        )
    except (OSError, ValueError, IndexError, KeyError):
        return ""


# Where a checkpoint keeps the declaration it started with (``streams.evolution``).
DECLARATION_FILE = "_declaration.json"


def recorded_time_mode(checkpoint: Path) -> str | None:
    """The time mode ``checkpoint`` runs its logic in (None: not recorded)."""
    try:
        mode = json.loads((location(checkpoint) / DECLARATION_FILE).read_text()).get("time_mode")
    except (OSError, ValueError):
        return None
    return str(mode) if mode else None


KafkaOffsets = dict[str, dict[int, int]]  # topic -> partition -> offset


def kafka_batch_offsets(checkpoint: Path, batch_id: int) -> tuple[KafkaOffsets, KafkaOffsets]:
    """The Kafka offsets ``[start, end)`` that ``batch_id`` read: the previous batch's end
    offsets (for batch 0, the ones the query started from, ``sources/0/0``) and its own. A
    partition missing from the start (new since) is absent from it: read it from its beginning.

    Raises:
        RuntimeError: the checkpoint has no Kafka offsets for the batch.
    """
    end = _kafka_source_offsets(checkpoint, batch_id)
    start = _kafka_source_offsets(checkpoint, batch_id - 1) if batch_id > 0 else None
    if batch_id == 0:
        start = initial_kafka_offsets(checkpoint)
    if end is None or start is None:
        raise RuntimeError(
            f"Batch {batch_id} of {checkpoint} has no Kafka source offsets "
            f"(offsets/{batch_id}, and offsets/{batch_id - 1} or sources/0/0)."
        )
    return start, end


def initial_kafka_offsets(checkpoint: Path) -> KafkaOffsets | None:
    """``sources/0/0``: a NUL byte, ``v1`` and the JSON of the offsets the query started from."""
    try:
        text = (location(checkpoint) / "sources" / "0" / "0").read_bytes().lstrip(b"\x00")
        return _partition_map(json.loads(text.decode().splitlines()[-1]))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _kafka_source_offsets(checkpoint: Path, batch_id: int) -> KafkaOffsets | None:
    """The Kafka source's end offsets in ``offsets/<batch_id>`` (the lines after the metadata)."""
    try:
        lines = (location(checkpoint) / "offsets" / str(batch_id)).read_text().splitlines()
    except OSError:
        return None
    for line in lines[2:]:
        try:
            return _partition_map(json.loads(line))
        except (ValueError, AttributeError):
            continue
    return None


def _partition_map(data: Any) -> KafkaOffsets:
    """``{"topic": {"0": 12}}`` with int partitions and offsets.

    >>> _partition_map({"clicks": {"1": 7, "0": 3}})
    {'clicks': {1: 7, 0: 3}}
    """
    return {str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in data.items()}
