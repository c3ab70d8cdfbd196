"""How a stream runs in a run: catch up and end, or catch up and keep going on a trigger."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from platform_pipelines.spark.pools import REACT, Pool

# Kafka records per catch-up batch. Each batch has a fixed cost (bronze's count and three commits,
# the offsets and commit logs, planning: 1.0-1.5 s on 2 cores), so a backlog catches up faster in
# fewer, larger batches: over 300,000 records the pipeline took 24.5 s at 50,000 per batch, 18.1 s
# at 200,000 and 15.8 s in one batch (benchmarks/bench_tuning.py). 200,000 bounds what one batch
# holds in memory and redoes after a failure.
CATCH_UP_BATCH_RECORDS = 200_000

Mode = Literal["continuous", "catch_up"]


@dataclass(frozen=True)
class RunOptions:
    """How a stream runs.

    Attributes:
        mode: ``catch_up`` processes what is available now and ends; ``continuous`` does the
            same first, then triggers every ``processing_time`` until stopped.
        processing_time: the trigger interval of the continuous phase, e.g. ``"10 seconds"``.
        max_offsets_per_trigger: at most this many Kafka records per catch-up batch (None: no
            limit). Continuous triggers read every partition to its end (see ``streams.query``).
        pool: the fair scheduler pool its jobs run in (``spark.pools``).
    """

    mode: Mode = "continuous"
    processing_time: str = "10 seconds"
    max_offsets_per_trigger: int | None = CATCH_UP_BATCH_RECORDS
    pool: Pool = REACT


def trigger_seconds(options: RunOptions) -> float:
    """The trigger interval in seconds (0 for a catch-up run, which has none)."""
    if options.mode == "catch_up":
        return 0.0
    number, _, unit = options.processing_time.strip().partition(" ")
    scale = {"second": 1, "minute": 60, "hour": 3600, "millisecond": 0.001}
    return float(number) * scale.get(unit.rstrip("s") or "second", 1)
