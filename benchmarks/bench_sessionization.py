"""Benchmark the sessions stream: transformWithState vs applyInPandasWithState vs session_window.

Generates synthetic clickstream events into a parquet folder (one file per time slice, read one
file per micro-batch so that state is carried across batches), then runs each variant with
``availableNow`` into a Delta table on the platform's own SparkSession and reports wall time and
input rows per second. The JVM start and a warm-up job are excluded from the timings.

``session_window`` is Spark's native (JVM-only) sessionization: the cost floor, not the same
semantics (it knows nothing of logouts and keeps no page list beyond ``collect_list``).

Usage:
    .venv/bin/python benchmarks/bench_sessionization.py --events 200000 --users 2000
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from rich.console import Console
from rich.table import Table

from platform_pipelines.spark.session import SparkOptions, build_spark_session
from platform_pipelines.streams.schemas import CLICKSTREAM
from platform_pipelines.streams.sessions import sessionize
from platform_pipelines.streams.watermark import with_watermark

VARIANTS = ("jvm", "transform_with_state", "apply_in_pandas_with_state", "session_window")
RESULTS = Path(__file__).parent / "results" / "sessionization.json"
START = pd.Timestamp("2026-11-22T00:00:00Z")
EVENT_TYPES = ["page_view", "add_to_cart", "checkout", "purchase", "logout"]
EVENT_WEIGHTS = [0.80, 0.08, 0.05, 0.03, 0.04]


@dataclass(frozen=True)
class Result:
    """One variant's run: rows in, sessions out, micro-batches, and time."""

    variant: str
    input_rows: int
    sessions: int
    batches: int
    wall_seconds: float
    rows_per_second: float


def generate(folder: Path, events: int, users: int, files: int, seed: int = 7) -> None:
    """Write ``events`` synthetic events of ``users`` users as ``files`` time-ordered parquet files.

    Each user clicks with exponential pauses (mean 4 minutes); one pause in 20 is a long break
    (mean 2 hours), which closes the session by gap or, at the end, by timeout.
    """
    rng = np.random.default_rng(seed)
    user = rng.integers(0, users, events)
    pause_s = np.where(
        rng.random(events) < 0.05, rng.exponential(7200, events), rng.exponential(240, events)
    )
    frame = pd.DataFrame({"user": user, "pause": pause_s})
    offset_s = frame.groupby("user")["pause"].cumsum().to_numpy()
    kind = rng.choice(EVENT_TYPES, events, p=EVENT_WEIGHTS)
    pages = rng.choice([f"/p/{i}" for i in range(50)], events)
    prices = rng.integers(100, 10_000, events) / 100
    times = START + pd.to_timedelta(np.round(offset_s * 1000), unit="ms")
    frame = pd.DataFrame(
        {
            "event_id": [f"e{i}" for i in range(events)],
            "user_id": [f"user-{u}" for u in user],
            "event_type": kind,
            "page": np.where(kind == "logout", None, pages),
            "amount": pd.array(np.where(kind == "purchase", prices, np.nan), dtype="Float64"),
            # Spark's parquet reader refuses nanosecond timestamps.
            "event_time": times.astype("datetime64[ms, UTC]"),
        }
    ).sort_values("event_time")
    folder.mkdir(parents=True)
    bounds = np.linspace(0, events, files + 1).astype(int)
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        frame.iloc[lo:hi].to_parquet(folder / f"part-{i:03d}.parquet", index=False)


def session_window_baseline(events: DataFrame, gap: timedelta) -> DataFrame:
    """Spark's native sessionization, aggregating what ``sessionize`` reports."""
    is_purchase = F.col("event_type") == "purchase"
    window = F.session_window("event_time", f"{int(gap.total_seconds())} seconds")
    return events.groupBy("user_id", window.alias("session")).agg(
        F.count("*").alias("event_count"),
        F.max(F.col("event_time")).alias("session_end"),
        F.bool_or(F.col("event_type") == "checkout").alias("reached_checkout"),
        F.bool_or(is_purchase).alias("purchased"),
        F.sum(F.when(is_purchase, F.col("amount")).otherwise(0.0)).alias("revenue"),
        F.collect_list("page").alias("pages"),
    )


def run_variant(spark: SparkSession, variant: str, source: Path, work: Path, rows: int) -> Result:
    """Run one variant with availableNow over the whole folder; time it from start to finish."""
    raw = spark.readStream.schema(CLICKSTREAM).option("maxFilesPerTrigger", 1).parquet(str(source))
    gap = timedelta(minutes=30)
    if variant == "session_window":
        sessions = session_window_baseline(raw.withWatermark("event_time", "10 minutes"), gap)
    else:  # the platform's stream: the watermark on its capped column, as the sessions stream has it
        events = with_watermark(raw, "event_time", timedelta(minutes=10))
        sessions = sessionize(events, gap, api=variant)  # type: ignore[arg-type]
    began = time.perf_counter()
    query = (
        sessions.writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", str(work / variant / "checkpoint"))
        .trigger(availableNow=True)
        .start(str(work / variant / "table"))
    )
    try:
        query.awaitTermination()
    finally:
        query.stop()
    wall = time.perf_counter() - began
    out = spark.read.format("delta").load(str(work / variant / "table")).count()
    batches = len(query.recentProgress)
    return Result(variant, rows, out, batches, round(wall, 2), round(rows / wall))


def warm_up(spark: SparkSession, variants: list[str], work: Path) -> None:
    """Run every variant's query once over a small input, outside the timings: the JVM compiles
    each operator's code paths on first use, and without this the first variant timed pays for it
    (measured: the JVM port 0.54x session_window when run first, 1.19x when run second)."""
    source = work / "warm_up_events"
    generate(source, 4_000, 400, 2, seed=1)
    for variant in variants:
        run_variant(spark, variant, source, work / "warm_up", 4_000)


def render(results: list[Result], console: Console) -> None:
    """Print the results as a table."""
    table = Table(title="Sessionization, availableNow into Delta")
    for header in ("variant", "input rows", "sessions", "batches", "wall s", "rows/s"):
        table.add_column(header, justify="left" if header == "variant" else "right", no_wrap=True)
    for r in results:
        table.add_row(
            r.variant,
            f"{r.input_rows:,}",
            f"{r.sessions:,}",
            str(r.batches),
            f"{r.wall_seconds:.1f}",
            f"{r.rows_per_second:,}",
        )
    console.print(table)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="synthetic events")
    parser.add_argument("--users", type=int, default=2_000, help="distinct user_id keys")
    parser.add_argument("--files", type=int, default=8, help="parquet files = micro-batches")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Generate, warm up, run every variant, print and save the results."""
    args = parse_args(argv)
    console = Console()
    work = Path(tempfile.mkdtemp(prefix="bench_sessions_"))
    source = work / "events"
    generate(source, args.events, args.users, args.files)
    options = SparkOptions(master="local[2]", ui_enabled=False, state_partitions=4)
    spark = build_spark_session(options)
    try:
        with console.status("Warming up every variant on 4,000 events..."):
            warm_up(spark, args.variants, work)
        results = []
        for variant in args.variants:
            results.append(run_variant(spark, variant, source, work, args.events))
            console.print(f"[dim]{results[-1]}[/dim]")
    finally:
        spark.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    render(results, console)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "config": {**vars(args), "out": str(args.out), "spark_options": asdict(options)},
        "load_average_at_end": os.getloadavg(),
        "cpus": os.cpu_count(),
        "results": [asdict(r) for r in results],
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
