"""Reaction time of a continuous pipeline: alerts, the dedup path and stale services (issue 25).

Starts its own Kafka broker and SparkSession (``local[2]``) in a temporary folder, runs the
``reaction`` section (``benchmarks/harness/reaction.py``: the platform's continuous run with the
launchpad's defaults beside plain queries doing the same work), prints the figures with each
target judged, and writes ``benchmarks/results/reaction.json``.

Usage:
    .venv/bin/python benchmarks/bench_reaction.py                  # 2k and 10k events/s, 5 min each
    .venv/bin/python benchmarks/bench_reaction.py --quick          # 2k events/s for 60 s (~7 min)
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

import click  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from benchmarks.harness.options import counts  # noqa: E402
from benchmarks.harness.reaction_pipelines import SILENT_SERVICES  # noqa: E402
from benchmarks.harness.reaction_targets import judge  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
console = Console()


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option("--quick", is_flag=True, help="One rate (2,000/s) for 60 s: a smoke run.")
@click.option("--rates", default="2000,10000", show_default=True, help="Input rates, events/s.")
@click.option("--seconds", default=300.0, show_default=True, help="Input per run, in seconds.")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(1))
@click.option(
    "--stale-after", default=300.0, show_default=True, help="service_status timeout, seconds."
)
@click.option("--users", default=10_000, show_default=True, help="Distinct users of the input.")
@click.option("--master", default="local[2]", show_default=True, help="Spark master.")
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=RESULTS / "reaction.json",
    show_default="benchmarks/results/reaction.json",
)
@click.option(
    "--variants",
    default="platform,plain",
    show_default=True,
    help="Which pipelines to run, comma-separated: platform, plain (the same work in two plain "
    "queries), plain-one-query (in one).",
)
@click.option(
    "--trigger",
    "triggers",
    multiple=True,
    metavar="STREAM=SECONDS",
    help="A stream's trigger interval in the platform's run (repeatable), as a launchpad "
    "override would set it, e.g. --trigger user_sessions=30.",
)
@click.option(
    "--warm-seconds",
    default=60.0,
    show_default=True,
    help="Untimed background at the run's rate before each measured input, waited for until "
    "it is all in events (0: measure from a JVM's first minute, as runs before 2026-11-28 did).",
)
@click.option("--keep", is_flag=True, help="Keep the temporary folder (topics, tables, logs).")
def main(
    quick: bool,
    rates: str,
    seconds: float,
    repeat: int,
    stale_after: float,
    users: int,
    master: str,
    output: Path,
    variants: str,
    triggers: tuple[str, ...],
    warm_seconds: float,
    keep: bool,
) -> None:
    """Measure how soon alerts, deduplicated events and stale services become visible."""
    from benchmarks.harness.env import bench_env, machine_facts, output_to
    from benchmarks.harness.reaction import ReactionConfig, run_reaction

    chosen = (2000,) if quick else counts(rates, "rates", "2000,10000")
    cfg = ReactionConfig(
        rates=tuple(float(r) for r in chosen),
        seconds=60.0 if quick else seconds,
        users=users,
        stale_after_seconds=30.0 if quick else stale_after,
        variants=_variants(variants),
        triggers=tuple(_trigger(t) for t in triggers),
        warm_seconds=warm_seconds,
    )
    if not sys.stdout.isatty():
        console.width = 160
    began, started_at = time.monotonic(), datetime.now(UTC)
    work = Path(tempfile.mkdtemp(prefix="bench_reaction_"))

    def say(line: str) -> None:
        console.print(f"[dim]{time.monotonic() - began:6.0f} s[/dim] {line}", soft_wrap=True)

    try:
        with output_to(work / "spark.log") as terminal:
            console.file = terminal
            say(f"reaction run in {work}; Spark's and the broker's output go to spark.log there")
            with bench_env(work, master, 3, 200_000, say) as env:
                machine = machine_facts(env.spark)
                samples = run_reaction(env, cfg, repeat, say)
    finally:
        console.file = sys.stdout
        if keep:
            console.print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    verdicts = judge(samples, cfg.stale_after_seconds)
    doc = {
        "config": {**cfg.__dict__, "repeat": repeat, "master": master},
        "machine": {**machine, "load_average_end": [round(x, 2) for x in os.getloadavg()]},
        "started_at": started_at.isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - began, 1),
        "samples": samples,
        "targets": verdicts,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    console.print(_samples_table(samples))
    console.print(_targets_table(verdicts))
    console.print(f"wrote {output}")


def _variants(text: str) -> tuple[str, ...]:
    from benchmarks.harness.reaction import ALL_VARIANTS

    chosen = tuple(v.strip() for v in text.split(",") if v.strip())
    unknown = sorted(set(chosen) - set(ALL_VARIANTS))
    if unknown or not chosen:
        raise click.BadParameter(
            f"unknown {unknown}: give some of {', '.join(ALL_VARIANTS)}, comma-separated",
            param_hint="--variants",
        )
    return chosen


def _trigger(text: str) -> tuple[str, int]:
    stream, _, seconds = text.partition("=")
    if not stream or not seconds.strip().isdigit():
        raise click.BadParameter(
            f"{text!r}: give STREAM=SECONDS, e.g. user_sessions=30", param_hint="--trigger"
        )
    return stream.strip(), int(seconds)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _samples_table(samples: list[dict[str, Any]]) -> Table:
    table = Table(
        "variant",
        "rate/s",
        "alert p50 s",
        "alert p95 s",
        "topic p50 s",
        "dedup p50 s",
        "dedup p95 s",
        "dedup last/first tenth",
        "alerts last/first tenth",
        f"stale s past timeout (worst of {SILENT_SERVICES})",
        "load",
        title="Reaction (from the Kafka send to the Delta commit, or to the alert on its topic)",
    )
    for s in samples:
        alert, dedup, topic = s["alert_delta"], s["dedup"], s.get("alert_topic") or {}
        table.add_row(
            s["variant"],
            f"{s['achieved_rate']:,.0f}",
            _s(alert["p50_seconds"]),
            _s(alert["p95_seconds"]),
            _s(topic.get("p50_seconds")),
            _s(dedup["p50_seconds"]),
            _s(dedup["p95_seconds"]),
            _s(dedup["last_over_first_tenth_p50"]),
            _s(alert["last_over_first_tenth_p50"]),
            _stale(s),
            f"{s['load_before']}-{s['load_after']}",
        )
    return table


def _stale(sample: dict[str, Any]) -> str:
    """The worst delay, and how many services were never shown stale."""
    never = sample.get("stale_services_never_shown")
    worst = _s(sample["stale_service_seconds_after_timeout"])
    return f"{worst} ({never} never shown)" if never else worst


def _targets_table(verdicts: list[dict[str, Any]]) -> Table:
    table = Table("target", "wanted", "measured", "met", title="Targets (issue 25)")
    for v in verdicts:
        met = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[v["met"]]
        table.add_row(v["target"], v["wanted"], _s(v["measured"]), met)
    return table


if __name__ == "__main__":
    main()
