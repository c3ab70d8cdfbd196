"""Is a stream's checkpoint positioned in the upstream Delta table it reads today?

A Delta source's offsets name the table they are positions in (``reservoirId``, the table's
``metaData.id``). When the upstream table is replaced by another one (``platform reprocess``
rebuilt it as a new generation, or it was deleted and created again), the positions mean nothing
in the new table and Spark refuses to start the stream on its checkpoint. The checkpoint check
fails as soon as that is so, whether the stream runs or not, so the operator learns it before the
next start fails.
"""

from __future__ import annotations

from platform_pipelines.core.verdict import Verdict, failed
from platform_pipelines.health.checkpoint.model import CheckpointFacts

CHECK = "checkpoint_upstream"


def positioned_in(facts: CheckpointFacts) -> str | None:
    """The id of the Delta table the newest committed batch's offsets are positions in."""
    for offset in facts.latest_source_offsets:
        if isinstance(offset, dict) and offset.get("reservoirId"):
            return str(offset["reservoirId"])
    return None


def judge_upstream(
    facts: CheckpointFacts, stream: str, upstream: str, current_id: str | None
) -> Verdict | None:
    """A failure when ``stream``'s checkpoint holds positions in another table than the one
    ``upstream`` is now (``current_id``); None when they agree or either is unknown."""
    read = positioned_in(facts)
    if read is None or current_id is None or read == current_id:
        return None
    return failed(
        CHECK,
        f"its positions are in a table {upstream} that was replaced (Delta table id {read}; "
        f"{upstream} is now {current_id}): Spark refuses to start {stream} on this checkpoint",
        f"Rebuild {stream} from the new {upstream}: `platform reprocess {stream}` (it reads the "
        f"new table from its start; `--from timestamp --timestamp ISO-TIME` skips older rows).",
        {"upstream_replaced": 1},
    )
