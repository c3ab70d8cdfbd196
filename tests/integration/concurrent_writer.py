"""A driver of its own that writes the shared tables the way every stream's batch does: its rows
to ``late_events``, then its ``stream_ledger`` row, each a commit tagged with the batch id
(``streams.sink.Target``, ``lakehouse.delta.append_exactly_once``).

``python -m tests.integration.concurrent_writer --writer NAME --writers A B --rounds N --ready DIR``
starts a SparkSession with the deployment's settings (the environment); the first of
``--writers`` creates the shared tables. Each writer then writes ``DIR/NAME`` and waits until
every writer has, and so again before each round, so that the writers commit at the same moment
every round (without it they drift apart after the first and rarely race): round n is batch n of
a stream called NAME, with ``rows_in(n)`` rows, all of them late.
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
    target = Target(lakehouse, args.writer, query_id(args.writer))
    late_app = f"{LATE_TABLE}/{target.query_id}/{args.writer}"
    for n in range(args.rounds):
        _all_ready(args.ready, args.writer, args.writers, n)
        now_ms = int(time.time() * 1000)
        clock = BatchClock(now_ms, now_ms, now_ms)
        batch = spark.createDataFrame(late_rows(args.writer, n, datetime.now()), LATE_EVENTS)
        target.append(batch, LATE_TABLE, late_app, n, clock)
        counts = BatchCounts(rows_in=rows_in(n), rows_out=0, rows_late=rows_in(n))
        target.record(batch, n, counts, clock, watermarked=True)


def _all_ready(folder: Path, writer: str, writers: list[str], round_: int) -> None:
    """Say ``writer`` is ready for ``round_``, then wait until every writer is (a barrier)."""
    (folder / f"{writer}.{round_}").write_text("ready")
    ready = [folder / f"{w}.{round_}" for w in writers]
    wait_for(lambda: all(p.exists() for p in ready), READY_TIMEOUT_S, f"round {round_}", 0.01)


if __name__ == "__main__":
    main()
