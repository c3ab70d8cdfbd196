"""The failed-login alert as one query of Spark's built-in operators, run by a newer Spark.

Run by ``benchmarks/probe_realtime_mode.py`` with the Python of a separate environment that has
the Spark to probe (4.3.0, whose Real-time Mode runs deduplication and aggregation); it imports
nothing of the platform. The query: the clickstream topic, parsed; ``login_failed`` events only;
copies of an ``event_id`` dropped (the event time is part of the key, so the watermark evicts
it); failures counted per user in tumbling windows of ``--window-seconds``; the count reaching
``--threshold`` is an alert, written to a Kafka topic keyed by user with ``alert_id`` =
``<user>|<window start>``. That is the shape of the platform's rule in the operators Real-time
Mode allows; the platform's own rule (a window from the first failure, on
``flatMapGroupsWithState``) is not one of them.

``--mode realtime`` runs it with ``trigger(realTime=...)`` (its duration is a checkpoint
interval, not a latency target), ``--mode microbatch`` with a trigger of 0, as the platform's
``security_alerts`` runs. It writes ``--started`` once the query runs, and stops on SIGTERM.

Usage (what the probe runs)::

    .local/spark-4.3.0-venv/bin/python benchmarks/realtime/query.py --bootstrap HOST:PORT \
        --input clicks --output alerts --checkpoint DIR --jars a.jar,b.jar --mode realtime
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

SCHEMA = "event_id string, user_id string, event_type string, event_time timestamp"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input", required=True, help="the clickstream topic")
    parser.add_argument("--output", required=True, help="the alerts topic")
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--jars", required=True, help="the Kafka connector's jars, comma-separated")
    parser.add_argument("--mode", choices=["realtime", "microbatch"], required=True)
    parser.add_argument(
        "--master",
        default="local[7]",
        help="a slot per input partition and per "
        "shuffle partition in Real-time Mode: they run at once",
    )
    parser.add_argument("--shuffle-partitions", type=int, default=2)
    parser.add_argument("--threshold", type=int, default=5)
    parser.add_argument("--window-seconds", type=int, default=60)
    parser.add_argument("--watermark-seconds", type=int, default=60)
    parser.add_argument(
        "--checkpoint-every",
        default="5 minutes",
        help="Real-time Mode's batch duration (at least 5 seconds)",
    )
    parser.add_argument("--started", type=Path, help="a file written once the query runs")
    args = parser.parse_args(argv)

    spark = (
        SparkSession.builder.master(args.master)
        .appName(f"alerts-{args.mode}")
        .config("spark.jars", args.jars)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.input)
        .option("startingOffsets", "latest")
        .load()
    )
    events = raw.select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("e")).select("e.*")
    failures = (
        events.where(
            "event_type = 'login_failed' AND user_id IS NOT NULL AND event_time IS NOT NULL"
        )
        .withWatermark("event_time", f"{args.watermark_seconds} seconds")
        .dropDuplicates(["event_id", "event_time"])
    )
    counted = failures.groupBy("user_id", F.window("event_time", f"{args.window_seconds} seconds"))
    # in update mode a later failure in the window updates the count again: its record repeats
    # the alert_id, which is how a consumer drops it
    alerts = counted.count().where(F.col("count") >= args.threshold)
    alert_id = F.concat_ws("|", "user_id", F.col("window.start").cast("string"))
    out = alerts.select(
        F.col("user_id").alias("key"),
        F.to_json(
            F.struct(
                alert_id.alias("alert_id"),
                "user_id",
                F.col("count").alias("failures"),
                F.col("window.start").alias("window_start"),
            )
        ).alias("value"),
    )
    writer = (
        out.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.output)
        .option("checkpointLocation", str(args.checkpoint))
        .outputMode("update")
    )
    if args.mode == "realtime":
        writer = writer.trigger(realTime=args.checkpoint_every)
    else:
        writer = writer.trigger(processingTime="0 seconds")
    query = writer.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.started:
        args.started.write_text(spark.version)
    while not stop.wait(1.0):
        if not query.isActive:
            print(f"the query stopped: {query.exception()}", file=sys.stderr)
            return 1
    query.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
