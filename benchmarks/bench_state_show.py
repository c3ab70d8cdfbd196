"""How long `platform state show` takes, against the JVM's own start.

The command starts a local JVM, reads a stream's state from its checkpoint and stops the JVM. Its
floor is a bare SparkSession started and stopped with the same settings; the difference is the
reading itself (on a cold JVM). Each repeat runs, in fresh processes and in turn: the bare
session, then `platform state show` for every stateful stream with a committed batch in the
lakehouse (`PLATFORM_LAKEHOUSE_DIR`; `make demo` fills the default one).

Usage:
    make demo && .venv/bin/python benchmarks/bench_state_show.py --repeat 3
"""

from __future__ import annotations

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

import click  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from benchmarks.harness.env import machine_facts  # noqa: E402
from platform_pipelines.settings import get_settings  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "state_show.json"
PLATFORM = Path(sys.executable).with_name("platform")
STREAMS = ("events", "user_sessions", "security_alerts", "service_status", "key_counts")
BARE_SESSION = (
    "from platform_pipelines.settings import get_settings\n"
    "from platform_pipelines.spark.session import SparkOptions, build_spark_session\n"
    "build_spark_session(SparkOptions.from_settings(get_settings(), ui_enabled=False)).stop()\n"
)


def timed(command: list[str]) -> float:
    """Wall seconds of ``command``, which must succeed."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise click.ClickException(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return seconds


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=RESULTS,
    show_default="benchmarks/results/state_show.json",
)
def main(repeat: int, output: Path) -> None:
    """Time `platform state show` for each stateful stream and a bare JVM start and stop."""
    lake = get_settings().lakehouse_dir
    streams = [s for s in STREAMS if any((lake / "checkpoints" / s / "commits").glob("[0-9]*"))]
    if not streams:
        raise click.ClickException(f"No stream has committed a batch in {lake}: run `make demo`.")
    console = Console(stderr=True)
    samples: dict[str, list[float]] = {"bare session": [], **{s: [] for s in streams}}
    loads = []
    for round_ in range(1, repeat + 1):
        samples["bare session"].append(timed([sys.executable, "-c", BARE_SESSION]))
        for stream in streams:
            samples[stream].append(timed([str(PLATFORM), "state", "show", stream, "--json"]))
        loads.append(os.getloadavg()[0])
        console.print(f"round {round_}/{repeat} done (load {loads[-1]:.2f})")
    floor = statistics.median(samples["bare session"])
    table = Table("what", "median s", "min s", "max s", "over bare session s")
    summary = {}
    for what, seconds in samples.items():
        median = statistics.median(seconds)
        summary[what] = {
            "median_seconds": round(median, 2),
            "min_seconds": round(min(seconds), 2),
            "max_seconds": round(max(seconds), 2),
            "over_bare_session_seconds": round(median - floor, 2),
        }
        table.add_row(what, *(f"{v:.2f}" for v in summary[what].values()))
    Console().print(table)
    document = {
        "config": {"repeat": repeat, "lakehouse": str(lake)},
        "machine": {**machine_facts(), "load_average_during": loads},
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "samples": samples,
        "summary": summary,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(document, indent=2) + "\n")
    console.print(f"wrote {output}")


if __name__ == "__main__":
    main()
