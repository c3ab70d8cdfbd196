"""Section 1: catch-up throughput, Kafka -> Delta, side by side on one input.

One synthetic clickstream is produced once into a topic. Per repeat, in a fresh lakehouse, each
built-in stream runs alone in catch-up mode (``availableNow``), upstream first, through the
platform's runner; right before or after it (the order alternates per repeat) its plain PySpark
script runs over the same input (the bronze script over the topic, the others over the table the
platform's upstream stream just wrote), and for sessions Spark's native ``session_window``. Then
the whole dedup path, Kafka -> ``events`` with bronze: the platform's two streams in one run,
the plain bronze + dedup scripts, and the single plain query Kafka -> parse -> dedup -> Delta.

A sample's wall time runs from the start of the query (for the platform: of ``run_streams``,
table creation included) to its end; rows are Spark's ``numInputRows`` summed over batches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pyspark.sql.streaming.query import StreamingQuery

from benchmarks.harness.env import Env, timed
from benchmarks.harness.inputs import clickstream
from benchmarks.harness.platform_run import ALERTS, BRONZE, DEDUP, SESSIONS, run_platform
from benchmarks.harness.results import Figures
from benchmarks.harness.stats import settled
from benchmarks.plain import alerts, bronze, dedup, sessions
from platform_pipelines.kafka.producer import generate_clickstream
from platform_pipelines.streams.builtin import builtin_streams

Say = Callable[[str], None]


@dataclass(frozen=True)
class ThroughputConfig:
    events: int
    users: int
    seed: int = 42


def produce_input(env: Env, cfg: ThroughputConfig, topic: str, say: Say) -> dict[str, Any]:
    """Fill ``topic`` once; what was produced."""
    seconds = env.topic(topic, generate_clickstream(clickstream(cfg.events, cfg.users, cfg.seed)))
    say(f"produced {cfg.events:,} records into {topic} in {seconds:.1f} s")
    return {"topic": topic, "records": cfg.events, "produce_seconds": round(seconds, 1)}


def run_query(query: StreamingQuery) -> StreamingQuery:
    """Wait for an availableNow query to end; raise its error if it failed."""
    try:
        query.awaitTermination()
    finally:
        if query.isActive:
            query.stop()
    error = query.exception()
    if error is not None:
        raise RuntimeError(f"plain query {query.name} failed: {error}")
    return query


def plain_sample(start: Callable[[], StreamingQuery], out_table: Path, env: Env) -> dict[str, Any]:
    query, sample = timed(lambda: run_query(start()))
    progress = query.recentProgress
    rows = sum(int(p["numInputRows"] or 0) for p in progress)
    trigger = sum(float(p["durationMs"].get("triggerExecution", 0)) for p in progress) / 1000
    return _finish(
        sample, rows, sum(1 for p in progress if p["numInputRows"]), trigger, env.rows(out_table)
    )


def platform_sample(
    env: Env,
    lake_name: str,
    topic: str,
    streams: list[str],
    rows_from: str | None = None,
    rows: int | None = None,
    events_reads: Literal["bronze", "kafka"] = "bronze",
) -> dict[str, Any]:
    """Time the platform's ``streams`` in one catch-up run; rows are those ``rows_from`` read
    (default: the last stream), or ``rows``."""
    lake = env.lakehouse(lake_name)
    run, sample = timed(lambda: run_platform(env, lake, topic, streams, events_reads=events_reads))
    main = streams[-1]
    table = builtin_streams().get(main).table
    read = rows if rows is not None else run.rows_in(rows_from or main)
    return _finish(
        sample, read, run.batches(main), run.trigger_seconds(main), env.rows(lake.table(table))
    )


def _finish(
    sample: dict[str, Any], rows: int, batches: int, trigger_s: float, rows_out: int | None
) -> dict[str, Any]:
    wall = sample["wall_seconds"]
    return {
        **sample,
        "rows": rows,
        "rows_per_second": round(rows / wall, 1) if wall else None,
        "rows_out": rows_out,
        "batches": batches,
        "trigger_seconds": round(trigger_s, 2),
    }


def _pair(
    figures: Figures,
    section: str,
    name: str,
    runs: dict[str, Callable[[], dict[str, Any]]],
    flip: bool,
    say: Say,
    notes: dict[str, str] | None = None,
) -> None:
    """Run the variants back to back (reversed when ``flip``) and record each sample."""
    order = list(runs)
    for variant in reversed(order) if flip else order:
        sample = runs[variant]()
        figures.add(section, name, variant, sample, note=(notes or {}).get(variant, ""))
        say(
            f"{section} {name} {variant}: {sample['rows']:,} rows in {sample['wall_seconds']:.1f} s"
            f" = {sample['rows_per_second'] or 0:,.0f} rows/s (load {sample['load_after']})"
        )


def run_streams_side_by_side(env: Env, figures: Figures, topic: str, repeat: int, say: Say) -> None:
    """Every stream against its references, ``repeat`` times."""
    for r in range(repeat):
        _streams_once(env, figures, topic, r, say)


def _streams_once(env: Env, figures: Figures, topic: str, r: int, say: Say) -> None:
    registry = builtin_streams()
    lake_name, plain, flip = f"throughput-{r}", env.work / f"plain-{r}", r % 2 == 1
    lake = env.lakehouse(lake_name)
    spark, boot, most = env.spark, env.bootstrap, env.max_offsets
    bronze_table = lake.table(registry.get(DEDUP).source_table)  # type: ignore[attr-defined]
    events = lake.table(registry.get(DEDUP).table)

    def platform(stream: str) -> Callable[[], dict[str, Any]]:
        return lambda: platform_sample(env, lake_name, topic, [stream])

    def ref(
        start: Callable[[Path], StreamingQuery], name: str, table: str = "table"
    ) -> Callable[[], dict[str, Any]]:
        return lambda: plain_sample(lambda: start(plain / name), plain / name / table, env)

    _pair(
        figures,
        "throughput",
        BRONZE,
        {
            "platform": platform(BRONZE),
            "plain": ref(lambda out: bronze.start(spark, boot, topic, out, most), "bronze", "raw"),
        },
        flip,
        say,
    )
    _pair(
        figures,
        "throughput",
        DEDUP,
        {
            "platform": platform(DEDUP),
            "plain": ref(lambda out: dedup.start(spark, bronze_table, out), "dedup"),
        },
        flip,
        say,
        {"plain": "= native: dropDuplicatesWithinWatermark"},
    )
    _pair(
        figures,
        "throughput",
        SESSIONS,
        {
            "platform": platform(SESSIONS),
            "plain": ref(lambda out: sessions.start(spark, events, out), "sessions"),
            "native": ref(lambda out: sessions.start_native(spark, events, out), "native"),
        },
        flip,
        say,
        {"native": "session_window: no logout rule"},
    )
    _pair(
        figures,
        "throughput",
        ALERTS,
        {
            "platform": platform(ALERTS),
            "plain": ref(lambda out: alerts.start(spark, events, out), "alerts"),
        },
        flip,
        say,
    )


def run_dedup_path(
    env: Env, figures: Figures, topic: str, records: int, repeat: int, say: Say
) -> None:
    """Kafka -> ``events``, bronze included; rows are the records in the topic."""
    for r in range(repeat):
        _path_once(env, figures, topic, records, r, say)


def _path_once(env: Env, figures: Figures, topic: str, records: int, r: int, say: Say) -> None:
    out = env.work / f"path-{r}"
    spark, boot, most = env.spark, env.bootstrap, env.max_offsets

    def plain_two() -> dict[str, Any]:
        def both() -> StreamingQuery:
            run_query(bronze.start(spark, boot, topic, out / "bronze", most))
            return dedup.start(spark, out / "bronze" / "raw", out / "dedup")

        sample = plain_sample(both, out / "dedup" / "table", env)
        wall = sample["wall_seconds"]
        return {**sample, "rows": records, "rows_per_second": round(records / wall, 1)}

    def single() -> dict[str, Any]:
        return plain_sample(
            lambda: dedup.start_from_kafka(spark, boot, topic, out / "single", most),
            out / "single" / "table",
            env,
        )

    def plain_side_by_side() -> dict[str, Any]:
        def both() -> StreamingQuery:
            raw = bronze.start(spark, boot, topic, out / "beside-bronze", most)
            query = run_query(dedup.start_from_kafka(spark, boot, topic, out / "beside", most))
            run_query(raw)
            return query

        sample = plain_sample(both, out / "beside" / "table", env)
        wall = sample["wall_seconds"]
        return {**sample, "rows": records, "rows_per_second": round(records / wall, 1)}

    def platform(reads: Literal["bronze", "kafka"]) -> Callable[[], dict[str, Any]]:
        return lambda: platform_sample(
            env,
            f"path-{r}-platform-{reads}",
            topic,
            [BRONZE, DEDUP],
            rows=records,
            events_reads=reads,
        )

    _pair(
        figures,
        "dedup_path",
        "kafka_to_events",
        {
            "platform": platform("bronze"),
            "plain": plain_two,
            "platform_events_from_kafka": platform("kafka"),
            "plain_side_by_side": plain_side_by_side,
            "plain_single_query": single,
        },
        r % 2 == 1,
        say,
        {
            "plain": "plain bronze (raw + quarantine), then plain dedup",
            "platform_events_from_kafka": "events reads Kafka beside bronze",
            "plain_side_by_side": "plain bronze and the single query at once",
            "plain_single_query": "Kafka -> parse -> dedup -> Delta, no bronze",
        },
    )


def warm_up(
    env: Env,
    say: Say,
    full: bool = True,
    records: int = 1000,
    rounds: int = 1,
    tolerance: float = 0.05,
) -> dict[str, list[float]]:
    """Run the queries once on a topic of ``records``, outside the timings, so that no
    measurement pays for loading Kafka's, Delta's and RocksDB's classes, starting the Python
    workers or the JIT compiling a query's per-record code: every query (``full``), or only the
    plain bronze, dedup and sessions (which load most of it).

    With ``rounds`` > 1 the dedup path (the platform's and the plain pair) then runs again until
    each one's wall time settles (two rounds within ``tolerance``) or ``rounds`` ran. Meant to
    take the drift out of the ratios, it did not (README, "Benchmarks"): the rounds never settled
    and the timed runs kept getting faster on both sides, so the suite leaves it off by default.
    Returns each one's wall seconds per round, for the results."""
    topic = "bench-warmup"
    env.topic(topic, generate_clickstream(clickstream(records, max(records // 20, 1), 99)))
    out = env.work / "warmup-plain"
    run_query(bronze.start(env.spark, env.bootstrap, topic, out / "bronze", env.max_offsets))
    run_query(dedup.start(env.spark, out / "bronze" / "raw", out / "dedup"))
    run_query(sessions.start(env.spark, out / "dedup" / "table", out / "sessions"))
    if full:
        lake = env.lakehouse("warmup")
        run_platform(env, lake, topic, [BRONZE, DEDUP, SESSIONS, ALERTS])
        events = lake.table(builtin_streams().get(DEDUP).table)
        run_query(sessions.start_native(env.spark, events, out / "native"))
        run_query(alerts.start(env.spark, events, out / "alerts"))
    say(
        f"warmed up on {records:,} records: {'every query' if full else 'plain bronze, dedup, sessions'}"
    )
    times: dict[str, list[float]] = {"platform": [], "plain": []}

    def platform_path(r: int) -> None:
        run_platform(env, env.lakehouse(f"warmup-{r}"), topic, [BRONZE, DEDUP])

    def plain_pair(r: int) -> None:
        raw = out / f"bronze-{r}"
        run_query(bronze.start(env.spark, env.bootstrap, topic, raw, env.max_offsets))
        run_query(dedup.start(env.spark, raw / "raw", out / f"dedup-{r}"))

    for r in range(1, rounds):
        if all(settled(t, tolerance) for t in times.values()):
            break
        for name, run in (("platform", platform_path), ("plain", plain_pair)):
            times[name].append(timed(partial(run, r))[1]["wall_seconds"])
        say(
            f"warm-up round {r}: dedup path platform {times['platform'][-1]:.1f} s, plain pair "
            f"{times['plain'][-1]:.1f} s"
        )
    return times
