"""Run one plain query alone, catch-up (availableNow), and print its rows/s.

Same Spark settings as the platform (its SparkOptions with ``local[2]``), nothing else of it.

Usage:
    .venv/bin/python benchmarks/plain/run.py bronze --bootstrap 127.0.0.1:9092 --topic clickstream --out /tmp/plain
    .venv/bin/python benchmarks/plain/run.py dedup --source /tmp/plain/raw --out /tmp/plain-dedup
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.plain import alerts, bronze, dedup, sessions

QUERIES = ("bronze", "kafka_dedup", "dedup", "sessions", "native_sessions", "alerts")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("query", choices=QUERIES)
    parser.add_argument("--bootstrap", help="Kafka address (bronze, kafka_dedup)")
    parser.add_argument("--topic", help="Kafka topic (bronze, kafka_dedup)")
    parser.add_argument("--source", type=Path, help="upstream Delta table (the others)")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--max-offsets", type=int, default=50_000)
    args = parser.parse_args()

    from platform_pipelines.spark.session import SparkOptions, build_spark_session

    spark = build_spark_session(SparkOptions(master="local[2]", ui_enabled=False))
    kafka = (spark, args.bootstrap, args.topic, args.out, args.max_offsets)
    starts = {
        "bronze": lambda: bronze.start(*kafka),
        "kafka_dedup": lambda: dedup.start_from_kafka(*kafka),
        "dedup": lambda: dedup.start(spark, args.source, args.out),
        "sessions": lambda: sessions.start(spark, args.source, args.out),
        "native_sessions": lambda: sessions.start_native(spark, args.source, args.out),
        "alerts": lambda: alerts.start(spark, args.source, args.out),
    }
    began = time.perf_counter()
    query = starts[args.query]()
    query.awaitTermination()
    wall = time.perf_counter() - began
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    print(f"{args.query}: {rows:,} rows in {wall:.1f} s = {rows / wall:,.0f} rows/s")
    spark.stop()


if __name__ == "__main__":
    main()
