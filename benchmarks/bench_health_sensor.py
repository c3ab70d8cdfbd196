"""Benchmark one evaluation of the stream health sensor over a fleet of streams, and prove it
starts no JVM.

Builds ``--streams`` synthetic streams under a temporary local dir: each with 60 progress records
(real Spark 4.2 progress from ``tests/unit/data/progress``, renumbered) and a copy of a real RocksDB
checkpoint (``tests/unit/data/checkpoints``). Then runs ``health_tick`` (what the sensor runs:
read progress, inspect checkpoints, ask the broker, judge, build the Dagster events) against a
throwaway Dagster instance, ``--repeat`` times, and reports the time per evaluation.

Usage:
    .venv/bin/python benchmarks/bench_health_sensor.py --streams 20 --repeat 20
    .venv/bin/python benchmarks/bench_health_sensor.py --bootstrap 127.0.0.1:9092  # with a broker
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import dagster as dg  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from platform_pipelines.core.progress_store import ProgressStore  # noqa: E402
from platform_pipelines.core.records import ProgressRecord  # noqa: E402
from platform_pipelines.defs.health.sensor import health_tick  # noqa: E402
from platform_pipelines.health.checkpoint import CheckpointExpectations  # noqa: E402
from platform_pipelines.health.evaluate import HealthConfig  # noqa: E402
from platform_pipelines.lakehouse.delta import Lakehouse  # noqa: E402
from platform_pipelines.settings import PlatformSettings  # noqa: E402
from platform_pipelines.streams.declare import (  # noqa: E402
    IngestStream,
    KafkaSource,
    StatefulStream,
    Stream,
    TableSource,
)

RESULTS = REPO / "benchmarks" / "results" / "health_sensor.json"
# The sample checkpoint was written with 4 state partitions.
CONFIG = HealthConfig(expectations=CheckpointExpectations(state_partitions=4))
SAMPLES = REPO / "tests" / "unit" / "data" / "progress" / "kafka_running_count.json"
CHECKPOINT = REPO / "tests" / "unit" / "data" / "checkpoints" / "service_status"


def fleet_stream(name: str, topic: str | None) -> Stream:
    """A bronze stream of ``topic`` (its lag asked of the broker), or a stream of a table."""
    if topic:
        return IngestStream(KafkaSource(topic=topic, schema={"key": "string"}, raw_table=name))
    return StatefulStream(
        name=name,
        description="bench",
        source=TableSource("bench_input"),
        key="key",
        output_schema={"key": "string"},
    )


def build_fleet(local_dir: Path, streams: int, topic: str | None) -> list[Stream]:
    """``streams`` streams with 60 recorded batches and a real checkpoint each."""
    samples = json.loads(SAMPLES.read_text())
    store = ProgressStore(local_dir / "progress")
    now = time.time()
    targets = []
    for i in range(streams):
        name = f"stream_{i:02d}"
        for batch in range(60):
            progress = dict(samples[batch % len(samples)], batchId=batch, name=name)
            store.append(
                ProgressRecord(
                    ts=now - (60 - batch) * 2,
                    event="progress",
                    stream=name,
                    run_id="bench",
                    progress=progress,
                    trigger_seconds=1.0,
                    pid=os.getpid(),
                    host=os.uname().nodename,
                )
            )
        checkpoint = local_dir / "lakehouse" / "checkpoints" / name
        shutil.copytree(CHECKPOINT, checkpoint)
        targets.append(fleet_stream(name, topic))
    return targets


def jvm_started() -> bool:
    """Whether this process started a JVM: pyspark's gateway, or any java child process."""
    from pyspark import SparkContext

    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    kids = children.read_text().split() if children.exists() else []
    java = [
        k
        for k in kids
        if "java" in Path(f"/proc/{k}/cmdline").read_bytes().decode(errors="replace")
    ]
    return SparkContext._gateway is not None or bool(java)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=20, help="streams in the fleet")
    parser.add_argument("--repeat", type=int, default=20, help="evaluations to time")
    parser.add_argument("--bootstrap", default=None, help="a Kafka broker to ask for end offsets")
    parser.add_argument("--topic", default="clickstream", help="the topic every stream reads")
    parser.add_argument("--no-save", action="store_true", help="do not write the results file")
    args = parser.parse_args()
    console = Console()
    root = Path(tempfile.mkdtemp(prefix="bench_health_"))
    try:
        topic = args.topic if args.bootstrap else None
        targets = build_fleet(root, args.streams, topic)
        settings = PlatformSettings(
            local_dir=root, kafka_bootstrap_servers=args.bootstrap or "127.0.0.1:1"
        )
        times, cursor, events = [], None, 0
        with dg.instance_for_test() as instance:
            for _ in range(args.repeat + 1):
                start = time.perf_counter()
                tick = health_tick(
                    instance, targets, Lakehouse(root / "lakehouse"), settings, CONFIG, None
                )
                times.append(time.perf_counter() - start)
                events, cursor = len(tick.events), tick.cursor
        times = times[1:]  # the first evaluation warms imports and caches
        statuses: dict[str, int] = {}
        for health in tick.results:
            statuses[health.status.value] = statuses.get(health.status.value, 0) + 1
        result = {
            "streams": args.streams,
            "repeat": args.repeat,
            "broker": bool(args.bootstrap),
            "mean_ms": round(statistics.mean(times) * 1000, 1),
            "p50_ms": round(statistics.median(times) * 1000, 1),
            "max_ms": round(max(times) * 1000, 1),
            "per_stream_ms": round(statistics.mean(times) * 1000 / args.streams, 2),
            "events_per_tick": events,
            "health": statuses,
            "jvm_started": jvm_started(),
            "cursor_bytes": len(cursor or ""),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    table = Table("measure", "value", title=f"Health sensor evaluation, {args.streams} streams")
    for key, value in result.items():
        table.add_row(key, str(value))
    console.print(table)
    if not args.no_save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n")
        console.print(f"Results written to {RESULTS.relative_to(REPO)}")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
