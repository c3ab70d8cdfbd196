"""What an exactly-once Delta write costs: Delta's own idempotent write against the platform's.

Every micro-batch writes a one-row ``stream_ledger`` append and one append per output table, so
the fixed cost of one write decides small-batch throughput and latency. Three ways to append the
same one-row DataFrame, interleaved round by round so that all three see the same load:

- ``txn``: Delta's idempotent write (``txnAppId``/``txnVersion`` options);
- ``tagged``: the platform's (``lakehouse.delta.append_exactly_once``: the commit tagged with its
  batch, the log read back to the batch's planning time);
- ``plain``: an append with no idempotency at all (the floor).

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
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from platform_pipelines.lakehouse.delta import append_exactly_once
from platform_pipelines.lakehouse.tables import LEDGER
from platform_pipelines.spark.session import SparkOptions, build_spark_session

RESULTS = Path(__file__).parent / "results" / "delta_commit.json"
WARM_UP = 2  # rounds left out: the first writes create the tables and load classes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    spark = build_spark_session(
        SparkOptions(master="local[2]", state_partitions=2, ui_enabled=False)
    )
    folder = Path(tempfile.mkdtemp(prefix="bench_delta_commit_"))
    seconds: dict[str, list[float]] = {"txn": [], "tagged": [], "plain": []}
    loads = []
    for batch in range(args.rounds):
        row = ("s", "q", batch, 1, 1, 0, 0, None, datetime(2026, 1, 1))
        for variant, samples in seconds.items():
            df = spark.createDataFrame([row], LEDGER)
            path = folder / variant
            started = time.perf_counter()
            if variant == "txn":
                df.write.format("delta").mode("append").option("txnAppId", "app").option(
                    "txnVersion", batch
                ).save(str(path))
            elif variant == "tagged":
                append_exactly_once(df, path, "app", batch, int(time.time() * 1000))
            else:
                df.write.format("delta").mode("append").save(str(path))
            samples.append(time.perf_counter() - started)
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
    console.print(
        f"Delta's idempotent write costs {ratio:.1f}x the tagged one "
        f"(load average {min(loads):.1f}-{max(loads):.1f})."
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "rounds": args.rounds,
                "warm_up": WARM_UP,
                "variants": summary,
                "txn_vs_tagged_ratio": round(ratio, 2),
                "load": [min(loads), max(loads)],
            },
            indent=2,
        )
        + "\n"
    )
    console.print(f"Results written to {RESULTS}")


if __name__ == "__main__":
    main()
