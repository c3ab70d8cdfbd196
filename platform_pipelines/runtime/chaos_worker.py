"""The process ``platform chaos`` kills: the clickstream pipeline on one lakehouse, continuously.

``python -m platform_pipelines.runtime.chaos_worker --lake DIR --bootstrap HOST:PORT --topic T``
runs bronze, dedup, sessions and alerts (catch-up first, then 1 s triggers) and records every
query event under ``DIR/progress`` so the parent can see when it makes progress. SIGTERM stops it
gracefully; SIGKILL is what the parent uses to test recovery. ``--crash-dir`` with ``--pause-at``
or ``--pause-every`` stops it at chosen checkpoint writes (``runtime.crash_points``). ``--master``
runs it on a Spark cluster (one core and 512 MB on each of two executors). Its JVMs, the
executors' too, carry ``-Dplatform.chaos.lake=DIR``: the parent finds them by it.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.events import ALERTS_TOPIC
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.crash_points import CrashPoints
from platform_pipelines.runtime.interrupts import GracefulStop, stop_requests
from platform_pipelines.runtime.recorder import ProgressRecorder
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.spark.session import JVM_OPTION_KEYS, SparkOptions, build_spark_session
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext

STREAMS = ("clickstream_raw", "events", "user_sessions", "security_alerts")
# The chaos JVMs live for a few minutes and start several at once on a small machine: C2's
# compiles would cost them more CPU than they return (as the cluster tests' JVMs). C1's frames are
# bigger: a 4 MiB thread stack keeps the deep recursion of java.util.regex on a query's thread (a
# StackOverflowError was seen once with the default 1 MiB) as safe as it is under C2.
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1 -Xss4m"
SPARK = SparkOptions(
    master="local[2]",
    state_partitions=2,
    ui_enabled=False,
    extra_conf={
        "spark.sql.streaming.pollingDelay": "10ms",
        **dict.fromkeys(JVM_OPTION_KEYS, SHORT_LIVED_JVM),
    },
)
# An application's share of a local cluster: several chaos workers run on it at once.
ON_CLUSTER = {"spark.cores.max": "2", "spark.executor.cores": "1", "spark.executor.memory": "512m"}
LAKE_MARKER = "-Dplatform.chaos.lake="


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lake", type=Path, required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--master", default=SPARK.master, help="a Spark master URL")
    parser.add_argument("--mode", choices=("continuous", "catch_up"), default="continuous")
    parser.add_argument("--streams", default=",".join(STREAMS), help="comma-separated, in order")
    parser.add_argument("--alerts-topic", default=ALERTS_TOPIC, help="where alerts are published")
    parser.add_argument("--crash-dir", type=Path, help="trace checkpoint writes here")
    parser.add_argument("--pause-at", action="append", default=[], help="<phase>:<regex>")
    parser.add_argument("--pause-every", default="", help="pause every write matching this")
    args = parser.parse_args()
    conf = worker_conf(args)
    registry = builtin_streams(
        BuiltinSettings(clickstream_topic=args.topic, alerts_topic=args.alerts_topic)
    )
    streams = [registry.get(name) for name in args.streams.split(",")]
    spark = build_spark_session(replace(SPARK, master=args.master, extra_conf=conf))
    store = ProgressStore(args.lake / "progress")
    options = RunOptions(mode=args.mode, processing_time="1 second", max_offsets_per_trigger=500)
    recorder = ProgressRecorder(store, f"chaos-{os.getpid()}", {s.name: 1.0 for s in streams})
    ctx = StreamContext(
        spark, Lakehouse(args.lake / "lakehouse"), args.bootstrap, on_batch=recorder.record_batch
    )
    with stop_requests() as stop:
        try:
            run_streams(
                ctx, streams, options, lambda *_: None, recorder=recorder, stop=stop, on_note=note
            )
        except GracefulStop as done:
            print(done.line(), flush=True)
    spark.stop()


def worker_conf(args: argparse.Namespace) -> dict[str, str]:
    """The worker's Spark settings: its marker, its share of a cluster, its crash points."""
    marker = f"{SHORT_LIVED_JVM} {LAKE_MARKER}{args.lake}"
    conf = {**SPARK.extra_conf, **dict.fromkeys(JVM_OPTION_KEYS, marker)}
    on_cluster = args.master != SPARK.master
    if on_cluster:
        conf.update(ON_CLUSTER)
    if args.crash_dir:
        points = CrashPoints(args.crash_dir, tuple(args.pause_at), args.pause_every)
        args.crash_dir.mkdir(parents=True, exist_ok=True)
        os.environ.update(points.environment())  # the JVM started below inherits them
        conf.update(points.spark_conf())
        if on_cluster:  # executors write state files too; they get their environment from Spark
            conf.update({f"spark.executorEnv.{k}": v for k, v in points.environment().items()})
    return conf


def note(stream: str, text: str) -> None:
    print(f"{stream}: {text}", flush=True)


if __name__ == "__main__":
    main()
