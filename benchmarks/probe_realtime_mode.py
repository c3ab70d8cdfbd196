"""Probe: how soon would an alert reach its topic under Spark 4.3's Real-time Mode, on this machine?

The platform pins Spark 4.2.0, whose Real-time Mode runs stateless queries only; 4.3.0 adds
deduplication and aggregation, but no Delta release runs on it yet (docs/benchmarks/latency.md,
"What does not apply"). This probe measures what the move would give the alert topic, before
it can be made: it installs the Spark to probe into a separate environment
(``.local/spark-<version>-venv``, created on first use), starts its own Kafka broker, and runs
the failed-login alert as one query of Spark's built-in operators
(``benchmarks/realtime/query.py``: parse, logins only, copies dropped, failures counted per user
in a tumbling window, Kafka sink) in each mode: ``realtime`` (``trigger(realTime=...)``) and
``microbatch`` (a trigger of 0, as ``security_alerts`` runs). Each mode gets the reaction
bench's input: a live background clickstream at ``--rate`` and a burst of five failed logins of
a new user every 5 s; measured is each burst's completing send to its alert's arrival on the
topic, and the CPU the query's processes used while the input ran.

Spark 4.3.0's Kafka connector is not on Maven Central as of 2026-11-28: the query uses the
platform's (4.2.0) connector jars, an untested pairing, which is why this is a probe and not a
platform feature.

Usage:
    .venv/bin/python benchmarks/probe_realtime_mode.py                  # 2,000/s for 60 s, both modes
    .venv/bin/python benchmarks/probe_realtime_mode.py --modes realtime --seconds 300
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import click  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from benchmarks.harness.bursts import Bursts, TopicListener  # noqa: E402
from benchmarks.harness.env import load  # noqa: E402
from benchmarks.harness.inputs import clickstream  # noqa: E402
from benchmarks.harness.latency import produce_in_subprocess  # noqa: E402
from benchmarks.harness.processes import CpuSampler, spark_python, threads  # noqa: E402
from benchmarks.harness.reaction_figures import topic_figures  # noqa: E402
from platform_pipelines.jvm import ensure_jars  # noqa: E402
from platform_pipelines.kafka.admin import create_topics  # noqa: E402
from platform_pipelines.kafka.broker import LocalKafkaBroker  # noqa: E402

QUERY = REPO / "benchmarks" / "realtime" / "query.py"
RESULTS = REPO / "benchmarks" / "results" / "realtime-mode-probe.json"
KAFKA_JARS = ("spark-sql-kafka-", "spark-token-provider-kafka-", "kafka-clients-", "commons-pool2-")
INPUT_PARTITIONS = 3  # as the reaction bench's topics
SHUFFLE_PARTITIONS = 2
# Real-time Mode runs a query's stages at once, each task for the whole batch: a slot per input
# partition and per partition of each of the two shuffles (dropping copies, counting failures)
SLOTS = INPUT_PARTITIONS + 2 * SHUFFLE_PARTITIONS
console = Console()


def measure(
    python: Path, work: Path, bootstrap: str, mode: str, cfg: dict[str, Any], jars: str
) -> dict[str, Any]:
    """One run of the alert query in ``mode``: its alerts' figures and its CPU while loaded.

    Bursts are timed only while the background runs: one sent after its last record (the
    producer returns once it has written what it sent) would be timed beside no load."""
    topics = {"clicks": f"{mode}-clicks", "alerts": f"{mode}-alerts"}
    create_topics(bootstrap, {topics["clicks"]: INPUT_PARTITIONS, topics["alerts"]: 1})
    log = work / f"{mode}.log"
    with _query(python, work, bootstrap, mode, topics, jars, cfg["checkpoint_every"]) as proc:
        _warm_up(bootstrap, topics, mode, proc, log)
        listener = TopicListener(bootstrap, topics["alerts"], id_field="alert_id")
        bursts = Bursts(bootstrap, topics["clicks"], prefix=mode)
        cpu = CpuSampler(proc)
        background = clickstream(int(cfg["rate"] * cfg["seconds"]), 10_000, 11, clean=True)
        load_before = load()
        with threads(listener, cpu) as start:
            sending: list[threading.Thread] = []
            try:
                sent = produce_in_subprocess(
                    work,
                    bootstrap,
                    topics["clicks"],
                    cfg["rate"],
                    asdict(background),
                    "jvm",
                    live=True,
                    on_sending=lambda: sending.append(start(bursts)),
                )
            finally:
                bursts.stop()
                for thread in sending:
                    thread.join(30)  # its burst under way is sent whole
            if not bursts.sent_ms:
                raise click.ClickException(f"{mode}: the producer ended before a burst was sent")
            first, last = min(sent["sent_ms"].values()), max(sent["sent_ms"].values())
            timed = {u: at for u, at in bursts.sent_ms.items() if at <= last}
            deadline = time.monotonic() + 60
            while set(timed) - set(listener.received_ms) and time.monotonic() < deadline:
                _alive(proc, mode, log)
                time.sleep(0.2)
            _alive(proc, mode, log)
    figures = topic_figures(listener, timed)
    # every alert on the topic, the background's users' too: update mode writes a window's
    # record again for each failure past the threshold, with the same alert_id
    figures["all_records"], figures["all_distinct_ids"] = len(listener.ids), len(set(listener.ids))
    return {
        "mode": mode,
        "rate": cfg["rate"],
        "achieved_rate": round(sent["rate"], 1),
        "alerts": figures,
        "bursts_after_the_input_not_timed": len(bursts.sent_ms) - len(timed),
        "query_cpu_cores": cpu.cores_between(first, last),
        "input_seconds": round(sent["elapsed_s"], 1),
        "load_before": load_before,
        "load_after": load(),
    }


def _alive(proc: subprocess.Popen[bytes], mode: str, log: Path) -> None:
    if proc.poll() is not None:
        raise click.ClickException(f"the {mode} query stopped (exit {proc.returncode}): see {log}")


@contextlib.contextmanager
def _query(
    python: Path,
    work: Path,
    bootstrap: str,
    mode: str,
    topics: dict[str, str],
    jars: str,
    checkpoint_every: str,
) -> Iterator[subprocess.Popen[bytes]]:
    """The alert query of ``mode`` in its own process, stopped at the end of the block."""
    started = work / f"{mode}.started"
    command = [
        str(python),
        str(QUERY),
        f"--bootstrap={bootstrap}",
        f"--input={topics['clicks']}",
        f"--output={topics['alerts']}",
        f"--checkpoint={work / f'{mode}-checkpoint'}",
        f"--jars={jars}",
        f"--mode={mode}",
        f"--master=local[{SLOTS}]",
        f"--shuffle-partitions={SHUFFLE_PARTITIONS}",
        f"--started={started}",
        f"--checkpoint-every={checkpoint_every}",
    ]
    log = work / f"{mode}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        with console.status(f"{mode}: starting the query (its output: {log})"):
            while not started.exists():
                if proc.poll() is not None:
                    raise click.ClickException(f"the {mode} query ended at its start: see {log}")
                time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def _warm_up(
    bootstrap: str, topics: dict[str, str], mode: str, proc: subprocess.Popen[bytes], log: Path
) -> None:
    """Bursts until one's alert is on the topic: the query has run before anything is timed."""
    listener = TopicListener(bootstrap, topics["alerts"], id_field="alert_id")
    warm = Bursts(bootstrap, topics["clicks"], prefix=f"{mode}-warm", every=10)
    deadline = time.monotonic() + 300
    with (
        threads(listener, warm),
        console.status(f"{mode}: waiting for a warm-up burst's alert"),
    ):
        while not listener.received_ms:
            _alive(proc, mode, log)
            if time.monotonic() > deadline:
                raise click.ClickException(
                    f"{mode}: no alert for 300 s of warm-up bursts: see {log}"
                )
            time.sleep(0.2)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__)
@click.option("--spark-version", default="4.3.0", show_default=True, help="pyspark to probe.")
@click.option("--modes", default="realtime,microbatch", show_default=True)
@click.option("--rate", default=2_000.0, show_default=True, help="Background events/s.")
@click.option("--seconds", default=60.0, show_default=True, help="Input per mode, in seconds.")
@click.option(
    "--checkpoint-every",
    default="60 seconds",
    show_default=True,
    help="Real-time Mode's batch: how often it checkpoints (at least 5 seconds).",
)
@click.option("--output", type=click.Path(path_type=Path), default=RESULTS, show_default=True)
@click.option("--keep", is_flag=True, help="Keep the run's folder (the queries' logs).")
def main(
    spark_version: str,
    modes: str,
    rate: float,
    seconds: float,
    checkpoint_every: str,
    output: Path,
    keep: bool,
) -> None:
    wanted = [m.strip() for m in modes.split(",") if m.strip()]
    if not wanted or set(wanted) - {"realtime", "microbatch"}:
        raise click.BadParameter(
            f"{modes!r}: give realtime, microbatch or both", param_hint="--modes"
        )
    python = spark_python(spark_version, console.print)
    jars = ",".join(str(p) for p in ensure_jars("spark") if p.name.startswith(KAFKA_JARS))
    cfg = {"spark_version": spark_version, "rate": rate, "seconds": seconds}
    cfg |= {"checkpoint_every": checkpoint_every, "input_partitions": INPUT_PARTITIONS}
    cfg |= {"shuffle_partitions": SHUFFLE_PARTITIONS, "master": f"local[{SLOTS}]"}
    work = Path(tempfile.mkdtemp(prefix="realtime-probe-"))
    broker = LocalKafkaBroker(work / "kafka")
    samples = []
    try:
        bootstrap = broker.start()
        for mode in wanted:
            console.print(f"{mode}: {rate:,.0f} events/s for {seconds:.0f} s, a burst every 5 s")
            samples.append(measure(python, work, bootstrap, mode, cfg, jars))
            alerts = samples[-1]["alerts"]
            console.print(f"{mode}: alert p50 {_s(alerts['p50_seconds'])}")
    except BaseException:
        keep = True  # the queries' logs say what went wrong
        raise
    finally:
        broker.stop()
        if keep:
            console.print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    _print(samples, spark_version)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True)
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit.stdout.decode().strip(),
        "command": " ".join(["benchmarks/probe_realtime_mode.py", *sys.argv[1:]]),
        "config": cfg,
        "samples": samples,
    }
    output.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"results: {output}")


def _print(samples: list[dict[str, Any]], spark_version: str) -> None:
    table = Table(title=f"The alert topic under Spark {spark_version}, one query, this machine")
    for column in ("mode", "alerts", "p50", "p95", "max", "query CPU (cores)", "events/s"):
        table.add_column(column, justify="right")
    for sample in samples:
        a = sample["alerts"]
        seen = f"{a['visible_rows']} of {a['produced_rows']}"
        cells = (_s(a["p50_seconds"]), _s(a["p95_seconds"]), _s(a["max_seconds"]))
        cores = sample["query_cpu_cores"]
        cpu = "-" if cores is None else f"{cores:.2f}"
        table.add_row(sample["mode"], seen, *cells, cpu, f"{sample['achieved_rate']:,.0f}")
    console.print(table)


if __name__ == "__main__":
    main()
