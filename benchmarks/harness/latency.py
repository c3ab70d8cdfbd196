"""Section 2: end-to-end latency of the dedup path at a fixed input rate, continuous mode.

Per variant, on a fresh topic and lakehouse:

- ``platform``: the platform's ``clickstream_raw`` + ``events`` run continuously by its runner,
  ``events`` reading the bronze table (the default);
- ``platform_events_from_kafka``: the same, ``events`` reading the topic beside bronze;
- ``plain_single_query``: one plain query Kafka -> parse -> dedup -> Delta, no bronze;
- ``plain_side_by_side``: that query with a plain bronze query beside it on the same topic.

Each goes through:

1. start the pipeline and wait until its continuous triggers run;
2. warm up: 2 s worth of records at the rate (event times a day earlier, so the measured records
   are never behind the watermark), wait until they are visible;
3. a producer process sends ``rate x seconds`` records at the rate, noting when it sent each;
4. wait until every one is visible in the ``events`` table (or ``drain_seconds`` pass), stop.

Latency of a record = when the Delta commit that added its row was published (the commit file's
modification time, see ``visibility``) - when it was sent. Duplicates count from their first send.
A record still not visible at the end counts with the time waited (a lower bound), and
``visible_rows`` < ``produced_rows`` shows it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from benchmarks.harness.env import REPO, Env, cpu_seconds, load
from benchmarks.harness.inputs import clickstream, span
from benchmarks.harness.platform_run import BRONZE, DEDUP, run_platform
from benchmarks.harness.results import Figures
from benchmarks.harness.stats import latency_figures, percentile
from benchmarks.harness.visibility import first_visible_ms, latencies, visible_rows
from benchmarks.plain import bronze, dedup
from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.producer import generate_clickstream, produce
from platform_pipelines.runtime.interrupts import StopRequest
from platform_pipelines.streams.builtin import builtin_streams

Say = Callable[[str], None]
START_TIMEOUT_S = 300


@dataclass(frozen=True)
class LatencyConfig:
    rate: float
    seconds: float
    users: int
    trigger_seconds: float
    drain_seconds: float
    seed: int = 7
    producer: str = "jvm"  # or "python" (kafka-python; ~4,000 records/s beside Spark)


def run_latency(env: Env, figures: Figures, cfg: LatencyConfig, repeat: int, say: Say) -> None:
    """Both variants, ``repeat`` times (the order alternates)."""
    for r in range(repeat):
        variants = [
            "platform",
            "platform_events_from_kafka",
            "plain_single_query",
            "plain_side_by_side",
        ]
        for variant in reversed(variants) if r % 2 else variants:
            sample = _measure(env, cfg, variant, r, say)
            figures.add(
                "latency",
                "kafka_to_events",
                variant,
                sample,
                rate=cfg.rate,
                trigger_seconds=cfg.trigger_seconds,
            )
            say(
                f"latency {variant}: p50 {_s(sample['p50_seconds'])}, p95 "
                f"{_s(sample['p95_seconds'])} at {sample['achieved_rate']:,.0f}/s, "
                f"{sample['visible_rows']:,} of {sample['produced_rows']:,} visible "
                f"(load {sample['load_after']})"
            )


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def _measure(env: Env, cfg: LatencyConfig, variant: str, r: int, say: Say) -> dict[str, Any]:
    topic = f"latency-{variant}-{r}"
    create_topics(env.bootstrap, {topic: env.partitions})
    records = int(cfg.rate * cfg.seconds)
    measured = clickstream(records, cfg.users, cfg.seed + r, clean=True)
    warm = clickstream(
        max(int(cfg.rate * 2), 200),
        cfg.users,
        cfg.seed + 1000 + r,
        clean=True,
        before=span(records, cfg.users) + span(0, 1),
    )
    with _pipeline(env, variant, topic, cfg.trigger_seconds, r) as (table, alive):
        produce(env.bootstrap, topic, generate_clickstream(warm), rate_per_sec=cfg.rate)
        if not _wait_visible(table, warm.kind_counts()["ok"], START_TIMEOUT_S, alive):
            raise RuntimeError(f"latency {variant}: the warm-up records never became visible")
        before = visible_rows(table)
        load_before = load()
        start: dict[str, float | None] = {}  # wall and CPU clocks as sending starts

        def sending() -> None:
            start.update(wall=time.perf_counter(), cpu=cpu_seconds())

        sent = produce_in_subprocess(
            env.work,
            env.bootstrap,
            topic,
            cfg.rate,
            asdict(measured),
            cfg.producer,
            on_sending=sending,
        )
        produced = time.perf_counter()
        _wait_visible(table, before + len(sent["sent_ms"]), cfg.drain_seconds, alive)
        ended, cpu_after = time.perf_counter(), cpu_seconds()
        began, cpu_before = start.get("wall") or produced, start.get("cpu")
        load_after = load()
    until_ms = time.time() * 1000
    say(f"latency {variant}: reading which commit made each row visible")
    visible = first_visible_ms(table)
    lat = latencies(sent["sent_ms"], visible, until_ms)
    seen = sum(1 for key in sent["sent_ms"] if key in visible)
    return {
        **latency_figures(lat, len(sent["sent_ms"]), seen),
        "first_tenth_p50_seconds": percentile(lat[: max(len(lat) // 10, 1)], 50),
        "last_tenth_p50_seconds": percentile(lat[-max(len(lat) // 10, 1) :], 50),
        "achieved_rate": round(sent["rate"], 1),
        "drain_seconds": round(ended - produced, 2),
        "wall_seconds": round(ended - began, 2),
        "cpu_seconds": None if cpu_before is None else round((cpu_after or 0) - cpu_before, 2),
        "load_before": load_before,
        "load_after": load_after,
    }


@contextlib.contextmanager
def _pipeline(
    env: Env, variant: str, topic: str, trigger: float, r: int
) -> Iterator[tuple[Path, Callable[[], None]]]:
    """Run the variant continuously; yields its ``events`` table and a check that raises if it
    died. Stopped on exit."""
    if variant.startswith("platform"):
        reads = "kafka" if variant == "platform_events_from_kafka" else "bronze"
        with _platform(env, topic, trigger, r, reads) as running:
            yield running
        return
    out = env.work / f"latency-{variant}-{r}"
    queries = [dedup.start_from_kafka(env.spark, env.bootstrap, topic, out, None, trigger)]
    if variant == "plain_side_by_side":  # plain bronze beside it, reading the same topic
        queries.append(bronze.start(env.spark, env.bootstrap, topic, out / "bronze", None, trigger))

    def alive() -> None:
        for query in queries:
            if not query.isActive:
                raise RuntimeError(f"a plain latency query died: {query.exception()}")

    try:
        yield out / "table", alive
    finally:
        for query in queries:
            query.stop()


@contextlib.contextmanager
def _platform(
    env: Env, topic: str, trigger: float, r: int, reads: Literal["bronze", "kafka"]
) -> Iterator[tuple[Path, Callable[[], None]]]:
    lake = env.lakehouse(f"latency-platform-{reads}-{r}")
    stop, continuous, errors = StopRequest(), threading.Event(), []

    def on_start(name: str, phase: str) -> None:
        if name == DEDUP and phase == "continuous":
            continuous.set()

    def body() -> None:
        try:
            run_platform(
                env,
                lake,
                topic,
                [BRONZE, DEDUP],
                continuous_trigger_seconds=trigger,
                stop=stop,
                on_start=on_start,
                events_reads=reads,
            )
        except BaseException as error:
            errors.append(error)
        finally:
            continuous.set()

    def alive() -> None:
        if errors or not thread.is_alive():
            raise RuntimeError(f"the platform's pipeline stopped: {errors[:1]}")

    thread = threading.Thread(target=body, name="bench-latency-platform", daemon=True)
    thread.start()
    try:
        continuous.wait(START_TIMEOUT_S)
        alive()
        yield lake.table(builtin_streams().get(DEDUP).table), alive
    finally:
        stop.why = "the end of the latency measurement"
        thread.join(180)


def produce_in_subprocess(
    work: Path,
    bootstrap: str,
    topic: str,
    rate: float,
    config: dict[str, Any],
    producer: str,
    live: bool = False,
    on_sending: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run the paced producer in its own process; what it sent and when (``live``: every record
    dated when it is sent). ``on_sending`` is called once the producer starts sending (making
    the records came first: minutes for a five-minute run at 10,000/s on 2 cores)."""
    folder = work / f"latency-producer-{topic}"
    folder.mkdir(parents=True, exist_ok=True)
    config["start_time"] = config["start_time"].isoformat()
    spec = {
        "bootstrap": bootstrap,
        "topic": topic,
        "rate": rate,
        "config": config,
        "out": str(folder / "sent.json"),
        "producer": producer,
        "live": live,
        "started": str(folder / "started.txt"),
    }
    (folder / "started.txt").unlink(missing_ok=True)
    (folder / "spec.json").write_text(json.dumps(spec))
    command = [sys.executable, "-m", "benchmarks.harness.produce_worker", str(folder / "spec.json")]
    with (folder / "producer.log").open("wb") as log:
        proc = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        try:
            while proc.poll() is None and not (folder / "started.txt").exists():
                time.sleep(0.1)
            if on_sending and proc.poll() is None:
                on_sending()
            if proc.wait() != 0:
                raise RuntimeError(f"the producer failed; see {folder / 'producer.log'}")
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
    return dict(json.loads((folder / "sent.json").read_text()))


def _wait_visible(table: Path, rows: int, timeout_s: float, alive: Callable[[], None]) -> bool:
    """Until ``table`` holds ``rows`` rows; False when ``timeout_s`` passed first."""
    deadline = time.monotonic() + timeout_s
    while visible_rows(table) < rows:
        alive()
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
