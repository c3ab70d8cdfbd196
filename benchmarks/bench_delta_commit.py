"""What an exactly-once Delta write costs: Delta's own idempotent write against the platform's,
and Delta's default commit log store on a disk against the platform's.

Every micro-batch writes a one-row ``stream_ledger`` append and one append per output table, so
the fixed cost of one write decides small-batch throughput and latency. Four ways to append the
same one-row DataFrame, interleaved round by round so that all see the same load:

- ``txn``: Delta's idempotent write (``txnAppId``/``txnVersion`` options);
- ``tagged``: the platform's (``lakehouse.delta.append_exactly_once``: the commit tagged with its
  batch, the log read back to the batch's planning time), with the platform's log store
  (``platform.locallog.LinkLogStore``: each commit published by a hard link);
- ``tagged, HDFSLogStore``: the same write with Delta's default log store for a disk (each
  commit renamed through Hadoop's FileContext);
- ``plain``: an append with no idempotency at all (the floor).

A Delta table takes its log store when the session first opens it: each variant writes its own
table, opened once with the log store it is measured with.

Usage:
    .venv/bin/python benchmarks/bench_delta_commit.py --rounds 15
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from rich.console import Console
from rich.table import Table

from platform_pipelines.lakehouse.delta import append_exactly_once
from platform_pipelines.lakehouse.tables import LEDGER
from platform_pipelines.spark.session import (
    DELTA_DISK_LOG_STORE,
    LINK_LOG_STORE,
    SparkOptions,
    build_spark_session,
)

RESULTS = Path(__file__).parent / "results" / "delta_commit.json"
WARM_UP = 2  # rounds left out: the first writes create the tables and load classes
HDFS_LOG_STORE = "io.delta.storage.HDFSLogStore"
Write = Callable[[DataFrame, Path, int], None]


def txn(df: DataFrame, path: Path, batch: int) -> None:
    df.write.format("delta").mode("append").option("txnAppId", "app").option(
        "txnVersion", batch
    ).save(str(path))


def tagged(df: DataFrame, path: Path, batch: int) -> None:
    append_exactly_once(df, path, "app", batch, int(time.time() * 1000))


def plain(df: DataFrame, path: Path, batch: int) -> None:
    df.write.format("delta").mode("append").save(str(path))


# variant -> (its log store, its write)
VARIANTS: dict[str, tuple[str, Write]] = {
    "txn": (LINK_LOG_STORE, txn),
    "tagged": (LINK_LOG_STORE, tagged),
    "tagged, HDFSLogStore": (HDFS_LOG_STORE, tagged),
    "plain": (LINK_LOG_STORE, plain),
}


def open_with(spark: SparkSession, path: Path, log_store: str) -> str:
    """Open the Delta table at ``path`` with ``log_store``; the class Delta took."""
    spark.sparkContext._jsc.sc().conf().set(DELTA_DISK_LOG_STORE, log_store)  # type: ignore[union-attr]
    jvm = spark.sparkContext._jvm
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(path))  # type: ignore[union-attr]
    adaptor = log.store().getDelegate(log.logPath())  # Delta's wrapper of a Java log store
    return str(adaptor.logStoreImpl().getClass().getName())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    spark = build_spark_session(
        SparkOptions(master="local[2]", state_partitions=2, ui_enabled=False)
    )
    folder = Path(tempfile.mkdtemp(prefix="bench_delta_commit_"))
    stores = {v: open_with(spark, folder / v, store) for v, (store, _) in VARIANTS.items()}
    seconds: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    loads = []
    for batch in range(args.rounds):
        row = ("s", "q", batch, 1, 1, 0, 0, None, datetime(2026, 1, 1))
        for variant, (_, write) in VARIANTS.items():
            df = spark.createDataFrame([row], LEDGER)
            started = time.perf_counter()
            write(df, folder / variant, batch)
            seconds[variant].append(time.perf_counter() - started)
        loads.append(os.getloadavg()[0])
    spark.stop()

    table = Table("variant", "median ms", "min ms", "max ms", title="One-row Delta append")
    summary = {}
    for variant, samples in seconds.items():
        kept = samples[WARM_UP:]
        summary[variant] = {
            "median_ms": round(statistics.median(kept) * 1000, 1),
            "min_ms": round(min(kept) * 1000, 1),
            "max_ms": round(max(kept) * 1000, 1),
        }
        table.add_row(variant, *(f"{v:,.0f}" for v in summary[variant].values()))
    console = Console()
    console.print(table)
    ratio = summary["txn"]["median_ms"] / summary["tagged"]["median_ms"]
    saved = summary["tagged, HDFSLogStore"]["median_ms"] - summary["tagged"]["median_ms"]
    console.print(
        f"Delta's idempotent write costs {ratio:.1f}x the tagged one; the platform's log store "
        f"saves {saved:,.0f} ms a commit against HDFSLogStore "
        f"(load average {min(loads):.1f}-{max(loads):.1f})."
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "rounds": args.rounds,
                "warm_up": WARM_UP,
                "log_stores": stores,
                "variants": summary,
                "txn_vs_tagged_ratio": round(ratio, 2),
                "log_store_saves_ms": round(saved, 1),
                "load": [min(loads), max(loads)],
            },
            indent=2,
        )
        + "\n"
    )
    console.print(f"Results written to {RESULTS}")


if __name__ == "__main__":
    main()
