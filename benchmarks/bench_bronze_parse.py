"""Bronze's parse alone: the platform's record checks against the plain script's ``from_json``.

No Kafka and no Delta: the synthetic clickstream (1 % malformed) is put in memory as Kafka rows
once, and each variant's parse is run over it into Spark's ``noop`` sink, in alternating order,
``--rounds`` times after one warm-up round. Each JIT setting runs in a JVM of its own:

- ``platform``: ``streams.bronze.RecordParser`` (Variant parse, JSON types checked per field,
  undeclared fields rescued, every reason spelled out);
- ``plain``: ``benchmarks/plain/bronze.parse`` (``from_json`` with a fixed schema, short reasons).

``huge methods: interpreted`` is HotSpot's default (``-XX:+DontCompileHugeMethods``): generated
methods over 8,000 bytes of bytecode are never compiled. The platform's sessions turn that off.

Usage:
    .venv/bin/python benchmarks/bench_bronze_parse.py --events 300000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
RESULTS = REPO / "benchmarks" / "results" / "bronze_parse.json"
SETTINGS = {"compiled": "-XX:-DontCompileHugeMethods", "interpreted": "-XX:+DontCompileHugeMethods"}


def measure(events: int, rounds: int, huge_methods: str) -> dict[str, list[float]]:
    """Seconds per round of each variant, in a session whose JVM has ``huge_methods``."""
    from benchmarks.harness.inputs import clickstream
    from benchmarks.plain.bronze import parse as plain_parse
    from platform_pipelines.kafka.producer import generate_clickstream
    from platform_pipelines.spark.session import SparkOptions, build_spark_session
    from platform_pipelines.streams.bronze import RecordParser
    from platform_pipelines.streams.builtin import clickstream_source

    flag = SETTINGS[huge_methods]
    extra = {"spark.driver.extraJavaOptions": flag, "spark.executor.extraJavaOptions": flag}
    spark = build_spark_session(
        SparkOptions(master="local[2]", state_partitions=2, ui_enabled=False, extra_conf=extra)
    )
    now = datetime.now(UTC)
    records = generate_clickstream(clickstream(events, max(events // 30, 1), seed=42))
    rows = [(r.value, i % 3, i, now.replace(tzinfo=None)) for i, r in enumerate(records)]
    kafka = spark.createDataFrame(
        rows, "value binary, partition int, offset long, timestamp timestamp"
    ).repartition(2)
    kafka = kafka.persist()
    kafka.count()
    parser = RecordParser(clickstream_source("bench"))
    variants = {"platform": lambda: parser.parse(kafka, now), "plain": lambda: plain_parse(kafka)}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for round_ in range(rounds + 1):  # round 0 warms up
        order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
        for name in order:
            started = time.perf_counter()
            variants[name]().write.format("noop").mode("overwrite").save()
            if round_:
                seconds[name].append(time.perf_counter() - started)
    spark.stop()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000, help="records parsed per round")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per variant")
    parser.add_argument("--huge-methods", choices=sorted(SETTINGS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.huge_methods:  # a child: one JVM setting, JSON on the last line
        print(json.dumps(measure(args.events, args.rounds, args.huge_methods)))
        return

    from rich.console import Console
    from rich.table import Table

    console = Console()
    results: dict[str, dict[str, object]] = {}
    for setting in SETTINGS:
        console.print(f"huge methods {setting}: {args.rounds} rounds of {args.events:,} records…")
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--events",
                str(args.events),
                "--rounds",
                str(args.rounds),
                "--huge-methods",
                setting,
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        if child.returncode != 0:
            console.print(child.stderr[-3000:])
            raise SystemExit(f"the {setting} run failed (exit {child.returncode})")
        for variant, samples in json.loads(child.stdout.strip().splitlines()[-1]).items():
            median = statistics.median(samples)
            results[f"{variant}, huge methods {setting}"] = {
                "median_seconds": round(median, 3),
                "samples": [round(s, 3) for s in samples],
                "rows_per_second": round(args.events / median),
            }
    table = Table("variant", "median s", "rows/s", title=f"Bronze parse, {args.events:,} records")
    for name, figures in results.items():
        table.add_row(name, f"{figures['median_seconds']:.2f}", f"{figures['rows_per_second']:,}")
    console.print(table)
    platform = results["platform, huge methods compiled"]["median_seconds"]
    plain = results["plain, huge methods compiled"]["median_seconds"]
    interpreted = results["platform, huge methods interpreted"]["median_seconds"]
    doc = {
        "events": args.events,
        "rounds": args.rounds,
        "variants": results,
        "platform_vs_plain_ratio": round(plain / platform, 2),  # type: ignore[operator]
        "compiled_vs_interpreted_ratio": round(interpreted / platform, 2),  # type: ignore[operator]
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    console.print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
