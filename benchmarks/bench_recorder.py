"""Does recording progress slow a stream? The same stateful query with and without the
``ProgressRecorder`` listener, on the platform's SparkSession.

A rate source (``--rows-per-second``) into ``dropDuplicatesWithinWatermark`` (RocksDB state) and
the noop sink, ``--batches`` micro-batches of ``--trigger-ms`` each, run once without and once with
the recorder (the order alternates with ``--repeat``). Reports the batch duration Spark measured
(``triggerExecution``) and the records written, and writes ``benchmarks/results/recorder.json``.

Usage:
    .venv/bin/python benchmarks/bench_recorder.py --batches 30 --repeat 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from platform_pipelines.core.progress_store import ProgressStore  # noqa: E402
from platform_pipelines.runtime.recorder import ProgressRecorder  # noqa: E402
from platform_pipelines.spark.session import SparkOptions, build_spark_session  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "recorder.json"


def run_once(spark, root: Path, recorded: bool, args: argparse.Namespace) -> dict[str, float]:
    name = f"bench_{'with' if recorded else 'without'}_{time.monotonic_ns()}"
    store = ProgressStore(root / "progress")
    recorder = ProgressRecorder(store, "bench", {name: args.trigger_ms / 1000})
    if recorded:
        spark.streams.addListener(recorder)
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", args.rows_per_second)
        .load()
        .withWatermark("timestamp", "10 seconds")
        .dropDuplicatesWithinWatermark(["value"])
        .writeStream.format("noop")
        .queryName(name)
        .trigger(processingTime=f"{args.trigger_ms} milliseconds")
        .option("checkpointLocation", str(root / name))
        .start()
    )
    try:
        while len(query.recentProgress) < args.batches + 2:
            time.sleep(0.2)
        durations = [p["durationMs"]["triggerExecution"] for p in query.recentProgress[2:]]
    finally:
        query.stop()
        if recorded:
            time.sleep(1)
            spark.streams.removeListener(recorder)
    return {
        "mean_ms": statistics.mean(durations),
        "p50_ms": statistics.median(durations),
        "max_ms": max(durations),
        "records": len(store.recent(name, 10_000)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, default=30, help="batches measured per run")
    parser.add_argument("--trigger-ms", type=int, default=500)
    parser.add_argument("--rows-per-second", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=2, help="pairs of runs")
    args = parser.parse_args()
    spark = build_spark_session(
        SparkOptions(
            master="local[2]", state_partitions=2, ui_enabled=False, app_name="bench_recorder"
        )
    )
    runs: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
    with tempfile.TemporaryDirectory(prefix="bench_recorder_") as tmp:
        for i in range(args.repeat):
            for recorded in [False, True] if i % 2 == 0 else [True, False]:
                runs["with" if recorded else "without"].append(
                    run_once(spark, Path(tmp), recorded, args)
                )
    spark.stop()
    result = {
        "batches": args.batches,
        "trigger_ms": args.trigger_ms,
        "rows_per_second": args.rows_per_second,
        **{
            f"{kind}_{key}": round(statistics.mean(r[key] for r in rs), 1)
            for kind, rs in runs.items()
            for key in ("mean_ms", "p50_ms", "max_ms", "records")
        },
    }
    table = Table(
        "recorder",
        "mean batch ms",
        "p50 ms",
        "max ms",
        "records written",
        title=f"{args.batches} batches x {args.repeat}, rate {args.rows_per_second}/s",
    )
    for kind in ("without", "with"):
        table.add_row(
            kind, *(str(result[f"{kind}_{k}"]) for k in ("mean_ms", "p50_ms", "max_ms", "records"))
        )
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
