"""A driver of its own that writes the shared tables the way every stream's batch does: its rows
to ``late_events``, then its ``stream_ledger`` row, each a commit tagged with the batch id
(``streams.sink.Target``, ``lakehouse.delta.append_exactly_once``).

``python -m tests.integration.concurrent_writer --writer NAME --writers A B --rounds N --ready DIR``
starts a SparkSession with the deployment's settings (the environment); the first of
``--writers`` creates the shared tables. Each writer then writes ``DIR/NAME`` and waits until
every writer has, so that the rounds start at once: round n is batch n of a stream called NAME,
with ``rows_in(n)`` rows, all of them late.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from pathlib import Path

from platform_pipelines.lakehouse.checkpoints import BatchClock
from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.lakehouse.tables import LATE_EVENTS, LATE_TABLE, LEDGER, LEDGER_TABLE
from platform_pipelines.settings import get_settings
from platform_pipelines.spark.session import build_spark_session
from platform_pipelines.streams.sink import BatchCounts, Target
from tests.waiting import wait_for

READY_TIMEOUT_S = 300
SHARED = {LATE_TABLE: LATE_EVENTS, LEDGER_TABLE: LEDGER}


def rows_in(round_: int) -> int:
    """How many rows round ``round_`` of every writer has: 1, 2 or 3."""
    return round_ % 3 + 1


def query_id(writer: str) -> str:
    return f"query-{writer}"


def late_rows(writer: str, round_: int, now: datetime) -> list[tuple[object, ...]]:
    """Round ``round_``'s rows of ``writer``, as its watermark would refuse them."""
    return [
        (writer, "late", now, now, 1.0, f'{{"row": {i}}}', query_id(writer), round_, now)
        for i in range(rows_in(round_))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writer", required=True)
    parser.add_argument("--writers", nargs="+", required=True)
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--ready", type=Path, required=True)
    args = parser.parse_args()
    spark = build_spark_session()
    lakehouse = Lakehouse(get_settings().lakehouse_dir)
    if args.writer == args.writers[0]:
        lakehouse.ensure_tables(spark, SHARED)
    created = [lakehouse.table(name) for name in SHARED]
    wait_for(lambda: all(map(has_commit, created)), READY_TIMEOUT_S, "the shared tables", 0.1)
    # The rounds start at once: every writer says it is ready, then waits for the others.
    (args.ready / args.writer).write_text("ready")
    ready = [args.ready / writer for writer in args.writers]
    wait_for(lambda: all(p.exists() for p in ready), READY_TIMEOUT_S, "every writer", 0.02)
    target = Target(lakehouse, args.writer, query_id(args.writer))
    late_app = f"{LATE_TABLE}/{target.query_id}/{args.writer}"
    for n in range(args.rounds):
        now_ms = int(time.time() * 1000)
        clock = BatchClock(now_ms, now_ms, now_ms)
        batch = spark.createDataFrame(late_rows(args.writer, n, datetime.now()), LATE_EVENTS)
        target.append(batch, LATE_TABLE, late_app, n, clock)
        counts = BatchCounts(rows_in=rows_in(n), rows_out=0, rows_late=rows_in(n))
        target.record(batch, n, counts, clock, watermarked=True)


if __name__ == "__main__":
    main()
