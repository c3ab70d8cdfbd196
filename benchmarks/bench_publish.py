"""How long a batch's alerts take to reach their topic: from the driver, or by Spark's writer.

``streams.publish`` sends a batch of up to ``DRIVER_ROWS`` rows from the driver through one
kept producer, and a bigger one through Spark's Kafka writer (a job whose tasks write from the
executors). On one ``local[2]`` session and its own broker, a cached DataFrame of ``--rows``
alert-like rows (as the stage writer hands over a batch's output) is published ``--sends``
times each way, the two ways taking turns; each call is timed until the broker acknowledged
every record. The publish is the last step of an alert on the topic.

Usage:
    .venv/bin/python benchmarks/bench_publish.py --rows 1 --sends 100
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks.harness.stats import percentile
from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.broker import LocalKafkaBroker
from platform_pipelines.spark.session import SparkOptions, build_spark_session
from platform_pipelines.streams.publish import DRIVER_ROWS, Publisher

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "publish.json"
console = Console()


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__)
@click.option("--rows", default=1, show_default=True, help="Rows per batch (at most 1,000).")
@click.option("--sends", default=100, show_default=True, help="Batches published each way.")
@click.option("--output", type=click.Path(path_type=Path), default=RESULTS, show_default=True)
def main(rows: int, sends: int, output: Path) -> None:
    if not 1 <= rows <= DRIVER_ROWS:
        raise click.BadParameter(f"{rows}: give 1 to {DRIVER_ROWS:,}", param_hint="--rows")
    work = Path(tempfile.mkdtemp(prefix="bench-publish-"))
    broker = LocalKafkaBroker(work / "kafka")
    try:
        bootstrap = broker.start()
        spark = build_spark_session(
            SparkOptions(master="local[2]", state_partitions=4, ui_enabled=False)
        )
        frame = spark.createDataFrame(
            [(f"user-{n}", f"user-{n}-1795343040000", 5) for n in range(rows)],
            "user_id string, alert_id string, failures int",
        ).persist()
        frame.count()
        ways = {"driver": rows, "executors (Spark's writer)": None}
        seconds: dict[str, list[float]] = {way: [] for way in ways}
        for way in ways:  # each way's first call makes its producers: not timed
            topic = f"publish-{way.split()[0]}"
            create_topics(bootstrap, {topic: 3})
            Publisher(bootstrap, topic, ["user_id"])(frame, ways[way])
        with console.status(f"{sends} batches of {rows} row(s) each way...") as status:
            for n in range(sends):
                for way, count in ways.items():
                    publish = Publisher(bootstrap, f"publish-{way.split()[0]}", ["user_id"])
                    started = time.perf_counter()
                    publish(frame, count)
                    seconds[way].append(time.perf_counter() - started)
                status.update(f"{n + 1} of {sends} batches of {rows} row(s) each way...")
        load = round(os.getloadavg()[0], 2)
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    figures = {
        way: {
            "p50_ms": round((percentile(values, 50) or 0) * 1000, 1),
            "p95_ms": round((percentile(values, 95) or 0) * 1000, 1),
            "max_ms": round(max(values) * 1000, 1),
        }
        for way, values in seconds.items()
    }
    table = Table("way", "p50 ms", "p95 ms", "max ms", title=f"Publishing {rows} row(s)")
    for way, f in figures.items():
        table.add_row(way, f"{f['p50_ms']:.1f}", f"{f['p95_ms']:.1f}", f"{f['max_ms']:.1f}")
    console.print(table)
    console.print(f"load average at the end {load:.2f}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True)
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit.stdout.decode().strip(),
        "command": " ".join(["benchmarks/bench_publish.py", *sys.argv[1:]]),
        "rows": rows,
        "sends": sends,
        "load_average_end": load,
        "figures": figures,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"wrote {output}")


if __name__ == "__main__":
    main()
