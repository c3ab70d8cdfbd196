"""Partitions and micro-batch size: the platform's pipeline over one input, per setting.

Issue 10 names "partitions matched to cores; micro-batch size" as directions to measure. This runs
the platform's stateful pipeline (``clickstream_raw`` -> ``events`` -> ``user_sessions``, catch-up,
through its own runner) over the same 300,000 records once per combination of state partitions
(``spark.sql.shuffle.partitions``, fixed into a new checkpoint) and Kafka records per catch-up
batch (``maxOffsetsPerTrigger``), each in a fresh lakehouse. The order of the combinations is
reversed on every other repeat, so drift over the run does not favour one end. It prints a
table (median wall seconds and events/s, with each stream's query time) and writes
``benchmarks/results/tuning.json``.

Usage:
    .venv/bin/python benchmarks/bench_tuning.py                      # 2, 4, 8 x 25k, 50k, 100k
    .venv/bin/python benchmarks/bench_tuning.py --partitions 2,4 --batches 50000 --repeat 3
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# Spark's Python workers unpickle the plain scripts' processors by module name.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

import click  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from benchmarks.harness.options import counts  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "tuning.json"
STREAMS = ("clickstream_raw", "events", "user_sessions")
console = Console()


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option(
    "--partitions",
    "partitions_text",
    default="2,4,8",
    show_default=True,
    help="State partitions to try (spark.sql.shuffle.partitions), comma-separated.",
)
@click.option(
    "--batches",
    "batches_text",
    default="25000,50000,100000",
    show_default=True,
    help="Kafka records per catch-up batch to try, comma-separated.",
)
@click.option("--events", default=300_000, show_default=True, help="Records in the input topic.")
@click.option("--users", default=10_000, show_default=True, help="Distinct users in the input.")
@click.option(
    "--repeat",
    default=2,
    show_default=True,
    type=click.IntRange(1),
    help="Runs of each combination; the table shows the median.",
)
@click.option("--master", default="local[2]", show_default=True, help="Spark master.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=RESULTS,
    show_default="benchmarks/results/tuning.json",
    help="Where the results JSON goes.",
)
def main(
    partitions_text: str,
    batches_text: str,
    events: int,
    users: int,
    repeat: int,
    master: str,
    out: Path,
) -> None:
    """Time the platform's pipeline per state-partition count and catch-up batch size."""
    from benchmarks.harness.env import bench_env, load, machine_facts, output_to, timed
    from benchmarks.harness.platform_run import run_platform
    from benchmarks.harness.throughput import ThroughputConfig, produce_input, warm_up

    partitions = counts(partitions_text, "state partitions", "2,4,8")
    batches = counts(batches_text, "records per batch", "50000,100000")
    combos = [(p, b) for p in partitions for b in batches]
    if not sys.stdout.isatty():
        console.width = 150
    began, started_at = time.monotonic(), datetime.now(UTC)
    work = Path(tempfile.mkdtemp(prefix="bench_tuning_"))

    def say(line: str) -> None:
        console.print(f"[dim]{time.monotonic() - began:6.0f} s[/dim] {line}", soft_wrap=True)

    samples: dict[tuple[int, int], list[dict[str, Any]]] = {c: [] for c in combos}
    try:
        with output_to(work / "spark.log") as terminal:
            console.file = terminal
            say(f"{len(combos)} combinations x {repeat}; Spark's output goes to {work}/spark.log")
            with bench_env(work, master, 3, max(batches), say) as env:
                machine = machine_facts(env.spark)
                warm_up(env, say, full=True, records=min(50_000, events))
                produce_input(env, ThroughputConfig(events, users), "tuning-input", say)
                for r in range(repeat):
                    for p, b in combos if r % 2 == 0 else reversed(combos):
                        env.spark.conf.set("spark.sql.shuffle.partitions", str(p))
                        env.spark.conf.set("spark.databricks.delta.snapshotPartitions", str(p))
                        lake = env.lakehouse(f"p{p}-b{b}-r{r}")
                        run, sample = timed(
                            lambda lake=lake, b=b: run_platform(
                                replace(env, max_offsets=b), lake, "tuning-input", STREAMS
                            )
                        )
                        sample.update(
                            events=events,
                            batches={s: run.batches(s) for s in STREAMS},
                            query_seconds={s: round(run.trigger_seconds(s), 2) for s in STREAMS},
                        )
                        seen = _state_partitions(run.progress["events"])
                        if seen != p:  # the checkpoint must have been made with the setting
                            raise click.ClickException(
                                f"events ran {seen} state partitions, not {p}"
                            )
                        samples[(p, b)].append(sample)
                        say(
                            f"{p} partitions, {b:,} per batch: {sample['wall_seconds']:.1f} s "
                            f"({events / sample['wall_seconds']:,.0f} events/s, load {load()})"
                        )
    finally:
        console.file = sys.stdout
        shutil.rmtree(work, ignore_errors=True)
    _report(samples, events, machine, started_at, time.monotonic() - began, out)


def _state_partitions(progresses: list[dict[str, Any]]) -> int | None:
    """The state partitions a query's stateful operator ran with, from its progress."""
    for progress in progresses:
        for operator in progress.get("stateOperators") or []:
            if operator.get("numShufflePartitions"):
                return int(operator["numShufflePartitions"])
    return None


def _report(
    samples: dict[tuple[int, int], list[dict[str, Any]]],
    events: int,
    machine: dict[str, Any],
    started_at: datetime,
    seconds: float,
    out: Path,
) -> None:
    table = Table(
        "state partitions",
        "records / batch",
        "wall s (median)",
        "events/s",
        *(f"{s} query s" for s in STREAMS),
        "batches",
        title=f"The pipeline over {events:,} records, catch-up",
    )
    rows = []
    for (p, b), runs in samples.items():
        wall = statistics.median(s["wall_seconds"] for s in runs)
        query = {s: statistics.median(r["query_seconds"][s] for r in runs) for s in STREAMS}
        rows.append(
            {
                "state_partitions": p,
                "max_offsets_per_trigger": b,
                "wall_seconds": {
                    "median": wall,
                    "min": min(s["wall_seconds"] for s in runs),
                    "max": max(s["wall_seconds"] for s in runs),
                },
                "events_per_second": round(events / wall, 1),
                "query_seconds": query,
                "batches": runs[0]["batches"],
                "samples": runs,
            }
        )
        table.add_row(
            str(p),
            f"{b:,}",
            f"{wall:.1f}",
            f"{events / wall:,.0f}",
            *(f"{query[s]:.1f}" for s in STREAMS),
            "/".join(str(runs[0]["batches"][s]) for s in STREAMS),
        )
    console.print(table)
    best = min(rows, key=lambda row: row["wall_seconds"]["median"])
    loads = [v for row in rows for s in row["samples"] for v in (s["load_before"], s["load_after"])]
    console.print(
        f"fastest: {best['state_partitions']} state partitions, "
        f"{best['max_offsets_per_trigger']:,} records per batch "
        f"({best['events_per_second']:,.0f} events/s); load average "
        f"{min(loads):.1f}-{max(loads):.1f}; took {seconds / 60:.1f} min"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "started_at": started_at.isoformat(),
                "seconds": round(seconds, 1),
                "events": events,
                "streams": list(STREAMS),
                "machine": machine,
                "results": rows,
            },
            indent=2,
            default=str,
        )
        + "\n"
    )
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
