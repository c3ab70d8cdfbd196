"""The benchmark suite of issue 10: the platform's built-in streams against plain PySpark and
Spark's native operators, on the same input, in one run.

Sections: catch-up throughput per stream and for the whole dedup path (Kafka -> events), end-to-end
latency at a fixed rate, scaling with keys and the first batch after a restart. It starts its own
Kafka broker and SparkSession (``local[2]``) in a temporary folder and stops them however it ends;
it writes ``benchmarks/results/suite.json`` and a PNG chart per run.

Usage:
    .venv/bin/python benchmarks/suite.py --quick        # a smoke run, a few minutes
    .venv/bin/python benchmarks/suite.py                # the full suite, under ~30 min idle
    .venv/bin/python benchmarks/suite.py --repeat 3 --sections throughput
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# Spark's Python workers unpickle the plain scripts' processors by module name.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

import click  # noqa: E402
from rich.console import Console  # noqa: E402

from benchmarks.harness.options import counts  # noqa: E402
from benchmarks.harness.results import Figures, build_document, shape_problems  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
SECTIONS = ("throughput", "latency", "scaling")
# mode -> option -> default; an option given on the command line wins.
DEFAULTS: dict[str, dict[str, Any]] = {
    "full": {
        "events": 300_000,
        "users": 10_000,
        "rate": 10_000.0,
        "latency_seconds": 30.0,
        "latency_users": 10_000,
        "drain_seconds": 90.0,
        "keys": "10000,100000,1000000",
        "warmup": True,
    },
    "quick": {
        "events": 6_000,
        "users": 300,
        "rate": 500.0,
        "latency_seconds": 8.0,
        "latency_users": 300,
        "drain_seconds": 30.0,
        "keys": "2000,8000",
        "warmup": False,
    },
}
console = Console()


def _say(began: float) -> Any:
    def say(line: str) -> None:
        console.print(f"[dim]{time.monotonic() - began:6.0f} s[/dim] {line}", soft_wrap=True)

    return say


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option("--quick", is_flag=True, help="Tiny inputs: a smoke run of every section (~4 min).")
@click.option(
    "--repeat",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="Runs of each measurement; tables show the median, JSON min/median/max.",
)
@click.option(
    "--sections",
    default=",".join(SECTIONS),
    show_default=True,
    help="Which sections to run, comma-separated.",
)
@click.option("--events", type=int, help="Throughput input records [300,000; quick 6,000].")
@click.option(
    "--users", type=int, help="Distinct users in the throughput input [10,000; quick 300]."
)
@click.option("--rate", type=float, help="Latency input rate, events/s [10,000; quick 500].")
@click.option(
    "--latency-seconds", type=float, help="How long the latency input is produced [30; quick 8]."
)
@click.option(
    "--latency-users", type=int, help="Distinct users in the latency input [10,000; quick 300]."
)
@click.option(
    "--trigger-seconds",
    default=1.0,
    show_default=True,
    help="Trigger interval of the continuous latency runs (0: back to back).",
)
@click.option(
    "--drain-seconds", type=float, help="How long to wait for the last latency rows [90; quick 30]."
)
@click.option(
    "--producer",
    type=click.Choice(["jvm", "python"]),
    default="jvm",
    show_default=True,
    help="The latency input's producer: Kafka's Java client, or kafka-python (~4,000/s here).",
)
@click.option(
    "--keys",
    help="Key counts of the scaling curve [10000,100000,1000000; quick 2000,8000]; "
    "the restart is measured at the largest.",
)
@click.option("--partitions", default=3, show_default=True, help="Partitions of every input topic.")
@click.option(
    "--max-offsets",
    default=50_000,
    show_default=True,
    help="Kafka records per catch-up batch (platform and plain alike).",
)
@click.option("--master", default="local[2]", show_default=True, help="Spark master.")
@click.option(
    "--warmup/--no-warmup",
    default=None,
    help="Before timing anything, run every query once on a small topic; --no-warmup runs only "
    "the plain bronze, dedup and sessions (Kafka, Delta, RocksDB, Python workers loaded) "
    "[full: on; quick: off].",
)
@click.option(
    "--warmup-rounds",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="With the warm-up on: the most rounds of the dedup path (platform and plain pair), "
    "repeated until each one's time settles within 5 % (1: no rounds).",
)
@click.option("--seed", default=42, show_default=True, help="Seeds the synthetic inputs.")
@click.option(
    "--out-dir",
    type=click.Path(path_type=Path),
    default=RESULTS,
    show_default="benchmarks/results",
    help="Where suite.json and the charts go (--quick: suite-quick.json).",
)
@click.option("--keep", is_flag=True, help="Keep the temporary folder (topics, tables, logs).")
def main(
    quick: bool, repeat: int, sections: str, keep: bool, out_dir: Path, **options: Any
) -> None:
    """Benchmark the platform's streams against plain PySpark and Spark's native operators:
    throughput, the dedup path, end-to-end latency, scaling with keys, restart."""
    mode = "quick" if quick else "full"
    cfg: dict[str, Any] = {k: DEFAULTS[mode].get(k) if v is None else v for k, v in options.items()}
    cfg.update(mode=mode, repeat=repeat, sections=[s.strip() for s in sections.split(",")])
    unknown = set(cfg["sections"]) - set(SECTIONS)
    if unknown:
        raise click.BadParameter(f"unknown {', '.join(sorted(unknown))}; choose from {SECTIONS}")
    cfg["keys"] = counts(str(cfg["keys"]), "key counts", "10000,100000,1000000")
    signal.signal(signal.SIGTERM, _interrupt)
    if not sys.stdout.isatty():
        console.width = 150
    began, started_at = time.monotonic(), datetime.now(UTC)
    work = Path(tempfile.mkdtemp(prefix="bench_suite_"))
    log = work / "spark.log"
    figures, error, machine = Figures(), None, {}
    say = _say(began)
    from benchmarks.harness.env import output_to

    try:
        with output_to(log) as terminal:
            console.file = terminal
            say(f"{mode} run in {work}; Spark's and the broker's output go to {log.name} there")
            machine = _run(cfg, work, figures, say)
    except Exception as failure:  # the figures so far are still written, with the error
        error = f"{type(failure).__name__}: {failure}"
        _keep_log(log, started_at, failure)
    except KeyboardInterrupt:
        console.file = sys.stdout
        console.print("[yellow]Interrupted: the broker and Spark are stopped; nothing written.[/]")
        raise SystemExit(130) from None
    finally:
        console.file = sys.stdout
        if keep:
            console.print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    _write(cfg, machine, figures, started_at, time.monotonic() - began, out_dir, error)
    if error:
        raise SystemExit(1)


def _keep_log(log: Path, started_at: datetime, failure: Exception) -> None:
    """Print the failure and keep Spark's output under .local/bench/ (the work folder goes)."""
    from platform_pipelines.settings import get_settings

    kept = get_settings().local_dir / "bench" / f"suite-{started_at:%Y%m%d-%H%M%S}.log"
    kept.parent.mkdir(parents=True, exist_ok=True)
    with kept.open("w") as out:
        out.write(log.read_text(errors="replace") if log.exists() else "")
        out.write("\n" + "".join(traceback.format_exception(failure)))
    console.file = sys.stdout
    console.print(
        f"[bold red]The suite failed:[/] {type(failure).__name__}: {failure}", soft_wrap=True
    )
    console.print(f"Spark's output and the traceback: {_shown(kept)}")


def _run(cfg: dict[str, Any], work: Path, figures: Figures, say: Any) -> dict[str, Any]:
    from benchmarks.harness import latency, scaling, throughput
    from benchmarks.harness.env import bench_env, machine_facts

    repeat = cfg["repeat"]
    with bench_env(work, cfg["master"], cfg["partitions"], cfg["max_offsets"], say) as env:
        machine = machine_facts(env.spark)
        machine["state_partitions"] = env.options.state_partitions
        cfg["spark_options"] = asdict(env.options)
        # A full catch-up batch per query, so the JIT has compiled each one's per-record code
        # before anything is timed: with 1,000 records the first timed run paid for it.
        warm = (cfg["max_offsets"] or 50_000) if cfg["warmup"] else 300
        rounds = cfg["warmup_rounds"] if cfg["warmup"] else 1
        cfg["warmup_seconds"] = throughput.warm_up(env, say, cfg["warmup"], warm, rounds)
        if "throughput" in cfg["sections"]:
            tcfg = throughput.ThroughputConfig(cfg["events"], cfg["users"], cfg["seed"])
            cfg["throughput_input"] = throughput.produce_input(env, tcfg, "bench-input", say)
            throughput.run_streams_side_by_side(env, figures, "bench-input", repeat, say)
            throughput.run_dedup_path(env, figures, "bench-input", cfg["events"], repeat, say)
        if "latency" in cfg["sections"]:
            lcfg = latency.LatencyConfig(
                cfg["rate"],
                cfg["latency_seconds"],
                cfg["latency_users"],
                cfg["trigger_seconds"],
                cfg["drain_seconds"],
                producer=cfg["producer"],
            )
            latency.run_latency(env, figures, lcfg, repeat, say)
        if "scaling" in cfg["sections"]:
            scaling.run_scaling(env, figures, scaling.ScalingConfig(cfg["keys"]), repeat, say)
    return machine


def _write(
    cfg: dict[str, Any],
    machine: dict[str, Any],
    figures: Figures,
    started_at: datetime,
    seconds: float,
    out_dir: Path,
    error: str | None,
) -> None:
    from benchmarks.harness import chart, report
    from benchmarks.harness.env import machine_facts

    machine = machine or machine_facts()
    machine["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    stamp = started_at.strftime("%Y%m%d-%H%M%S")
    name = "suite" if cfg["mode"] == "full" else "suite-quick"
    out_dir.mkdir(parents=True, exist_ok=True)
    charts = [out_dir / f"{name}-{stamp}.png", out_dir / f"{name}.png"]
    doc = build_document(
        config={**cfg, "keys": list(cfg["keys"])},
        machine=machine,
        figures=figures,
        charts=[_shown(p) for p in charts],
        started_at=started_at.isoformat(timespec="seconds"),
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=seconds,
    )
    if error:
        doc["error"] = error
    for problem in shape_problems(doc):
        console.print(f"[yellow]results shape: {problem}[/]")
    try:
        chart.draw(doc, charts)
    except ImportError:
        doc["charts"] = []
        console.print("[yellow]No chart: matplotlib is not installed (pip install matplotlib).[/]")
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    report.render(doc, console)
    console.print(
        f"wrote {_shown(path)}" + (f" and {', '.join(doc['charts'])}" if doc["charts"] else "")
    )


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    main()
