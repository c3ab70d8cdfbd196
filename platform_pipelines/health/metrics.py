"""The numbers plotted on a stream's asset page: one name per concept, the unit in the name.

At most eight per stream, each only when known, and never a false zero: rates and durations come
from the newest batch that had input, state from the newest batch whose operators ran (an idle
batch reports a state of 0 rows), lag only when it was measured.
"""

from __future__ import annotations

from collections.abc import Sequence

from platform_pipelines.core.records import ProgressRecord
from platform_pipelines.core.spark_progress import (
    batch_id,
    batch_seconds,
    op_sum,
    processed_rate,
    state_bytes,
)
from platform_pipelines.health.history import (
    batches,
    by_time,
    progress_of,
    ran_state,
    rows_in,
    watermark_delay,
)
from platform_pipelines.health.throughput import Lag

# name -> what it is, in the order the asset page should read them.
METRICS = {
    "rows_per_second": "rows processed per second by the newest batch with input",
    "batch_duration_ms": "how long the newest batch with input took",
    "lag_records": "records written to the input that the stream has not committed yet",
    "late_rows": "rows of the newest batch that arrived after the watermark (in late_events)",
    "state_rows": "keys held in state (all stateful operators)",
    "state_bytes": "bytes of state (RocksDB SST files, or memory before the first snapshot)",
    "watermark_delay_seconds": "how far the watermark is behind the batch's clock",
    "checkpoint_bytes": "size of the checkpoint folder",
}


def stream_metrics(
    records: Sequence[ProgressRecord], lag: Lag | None, checkpoint_bytes: int | None
) -> dict[str, float | int]:
    """The curated metrics of one stream now (see ``METRICS``)."""
    done = batches(records)
    found: dict[str, float | int] = {}
    with_input = [r for r in done if rows_in(r) > 0]
    if with_input:
        newest = progress_of(with_input[-1])
        found["rows_per_second"] = round(processed_rate(newest), 1)
        found["batch_duration_ms"] = round(batch_seconds(newest) * 1000)
        found["late_rows"] = _late_rows(records, with_input[-1])
    if lag is not None and lag.records is not None:
        found["lag_records"] = lag.records
    stateful = [r for r in done if ran_state(r)]
    if stateful:
        found["state_rows"] = op_sum(progress_of(stateful[-1]), "numRowsTotal")
        found["state_bytes"] = state_bytes(progress_of(stateful[-1]))
    delays = [d for d in (watermark_delay(r) for r in done) if d is not None]
    if delays:
        found["watermark_delay_seconds"] = round(delays[-1], 1)
    if checkpoint_bytes is not None:
        found["checkpoint_bytes"] = checkpoint_bytes
    return {name: found[name] for name in METRICS if name in found}


def _late_rows(records: Sequence[ProgressRecord], batch: ProgressRecord) -> int:
    progress = progress_of(batch)
    wanted = batch_id(progress)
    for record in reversed(by_time(records)):
        if record.event == "batch" and record.batch_id == wanted and record.counts:
            return int(record.counts.get("rows_late", 0))
    return op_sum(progress, "numRowsDroppedByWatermark")
