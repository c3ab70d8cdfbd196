"""Section ``reaction``: how soon an operator sees what a continuous pipeline is for.

One run per input rate (2,000 and 10,000 events/s by default) and variant, each on fresh topics
and lakehouse, for ``seconds`` of input:

- ``platform``: every built-in stream (clickstream and heartbeats) in one continuous run, each
  with the launch config's defaults, as a run launched from the Dagster launchpad;
- ``plain``: one plain query Kafka -> parse -> dedup -> failed-login alerts -> Delta and one plain
  query Kafka -> parse -> dedup -> Delta beside it (Spark's default trigger: back to back);
- ``plain-one-query``: the same work in one plain query (one read and parse of the topic, the
  two stateful branches unioned and written from one ``foreachBatch``: ``benchmarks.plain.fused``).

While a background clickstream is produced at the rate (event times on the wall clock), a burst
of failed logins of a new user is sent every ``burst_every`` seconds. Measured, from the Kafka
send of the record that completes the rule or of each background record:

- alert: the Delta commit that made the alert row visible, and (platform) the alert record's
  arrival on the alerts topic;
- dedup path: the commit that made each background record visible in ``events``; p50 of the
  first and the last tenth of the records sent, whose ratio says whether the run fell behind;
- health (platform): the health sensor's ``liveness`` and ``falling_behind`` verdicts on every
  stream, and its lag, as the last input record is sent (when a backlog, if any, is largest);
- stale services (platform): six services send heartbeats while the clickstream runs, then
  stop one by one, 2 s apart (their timeouts fall at every phase of the status stream's
  trigger); how long after each one's timeout ``service_status`` has its ``stale`` row, and the
  worst of them.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.harness.bursts import Bursts, TopicListener
from benchmarks.harness.env import Env, load
from benchmarks.harness.inputs import clickstream
from benchmarks.harness.latency import _wait_visible, produce_in_subprocess
from benchmarks.harness.reaction_figures import alert_figures, dedup_figures, topic_figures
from benchmarks.harness.reaction_pipelines import (
    START_TIMEOUT_S,
    Pipeline,
    plain_pipeline,
    platform_pipeline,
)
from benchmarks.harness.visibility import first_visible_ms
from platform_pipelines.kafka.admin import create_topics
from platform_pipelines.kafka.producer import ClickstreamConfig

Say = Callable[[str], None]
VARIANTS = ("platform", "plain")  # the defaults; also "plain-one-query"
ALL_VARIANTS = ("platform", "plain", "plain-one-query")


@dataclass(frozen=True)
class ReactionConfig:
    """What the section runs; every duration in seconds."""

    rates: tuple[float, ...] = (2_000.0, 10_000.0)
    seconds: float = 300.0
    users: int = 10_000
    burst_every: float = 5.0
    drain_seconds: float = 90.0
    stale_after_seconds: float = 300.0
    producer: str = "jvm"
    seed: int = 11
    variants: tuple[str, ...] = VARIANTS
    triggers: tuple[tuple[str, int], ...] = ()  # (stream, seconds): the platform's overrides
    # Background at the run's rate before anything is timed, waited for until it is all in
    # ``events``: the first minute of a JVM is slow (JIT), and a pipeline runs for hours.
    warm_seconds: float = 60.0


def run_reaction(env: Env, cfg: ReactionConfig, repeat: int, say: Say) -> list[dict[str, Any]]:
    """Every (rate, variant) ``repeat`` times, variants alternating; one sample each."""
    samples = []
    for r in range(repeat):
        for rate in cfg.rates:
            for variant in reversed(cfg.variants) if r % 2 else cfg.variants:
                sample = measure(env, cfg, variant, rate, r, say)
                samples.append(sample)
                say(summary_line(sample))
    return samples


def summary_line(sample: dict[str, Any]) -> str:
    """One line of a sample for the run log."""
    alert, dedup = sample["alert_delta"], sample["dedup"]
    topic = sample.get("alert_topic") or {}
    return (
        f"reaction {sample['variant']} at {sample['rate']:,.0f}/s: alert p50 "
        f"{_s(alert['p50_seconds'])} (topic {_s(topic.get('p50_seconds'))}), dedup p50 "
        f"{_s(dedup['p50_seconds'])} (first/last tenth {_s(dedup['first_tenth_p50_seconds'])}/"
        f"{_s(dedup['last_tenth_p50_seconds'])}), load {sample['load_after']}"
        f"{_unhealthy(sample.get('health_at_end_of_input'))}"
    )


def _unhealthy(health: dict[str, dict[str, Any]] | None) -> str:
    """The verdicts that did not pass, for the summary line.

    >>> ok = {"status": "pass", "summary": "keeps up"}
    >>> _unhealthy({"events": {"falling_behind": ok, "lag_records": 0}})
    ', health: every stream passes'
    >>> behind = {"status": "warn", "summary": "12,000 records behind"}
    >>> _unhealthy({"bronze": {"falling_behind": behind, "liveness": ok, "lag_records": 12000}})
    ', health: bronze falling_behind warn (12,000 records behind)'
    >>> _unhealthy(None)
    ''
    """
    if health is None:
        return ""
    bad = [
        f"{stream} {check} {v['status']} ({v['summary']})"
        for stream, checks in health.items()
        for check, v in checks.items()
        if isinstance(v, dict) and v["status"] != "pass"
    ]
    return f", health: {'; '.join(bad) or 'every stream passes'}"


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def _worst(seconds: list[float | None] | None) -> float | None:
    """The largest delay of the services shown stale; None when none was.

    >>> _worst([3.1, 4.2, 0.8]), _worst([3.1, None]), _worst(None), _worst([None])
    (4.2, 3.1, None, None)
    """
    shown = [s for s in seconds or [] if s is not None]
    return max(shown) if shown else None


def measure(
    env: Env, cfg: ReactionConfig, variant: str, rate: float, r: int, say: Say
) -> dict[str, Any]:
    """One run of ``variant`` at ``rate``: its figures (see the module docstring)."""
    name = f"reaction-{variant}-{int(rate)}-{r}"
    topics = {"clickstream": f"{name}-clicks", "heartbeats": f"{name}-beats"}
    topics["alerts"] = f"{name}-alerts"
    create_topics(env.bootstrap, {t: env.partitions for t in topics.values()})
    records = int(rate * cfg.seconds)
    background = clickstream(records, cfg.users, cfg.seed + r, clean=True)
    stale_after = timedelta(seconds=cfg.stale_after_seconds)
    if variant == "platform":
        started = platform_pipeline(env, name, topics, stale_after, say, dict(cfg.triggers))
    else:
        one_query = variant == "plain-one-query"
        started = plain_pipeline(env, name, topics, stale_after, say, one_query)
    with started as pipeline:
        _warm_up(env, pipeline, topics["clickstream"], f"{name}-warm", say)
        if cfg.warm_seconds:
            warm = clickstream(
                int(rate * cfg.warm_seconds), cfg.users, cfg.seed + 1000 + r, clean=True
            )
            _warm_load(env, cfg, pipeline, topics["clickstream"], rate, warm, f"{name}-warm", say)
        listener = _listen(env, topics["alerts"]) if variant == "platform" else None
        bursts = Bursts(env.bootstrap, topics["clickstream"], prefix=name, every=cfg.burst_every)
        beats = pipeline.heartbeats(env.bootstrap, topics["heartbeats"])
        load_before = load()
        with (
            _running(listener.run if listener else None, join=False),  # stopped below
            contextlib.ExitStack() as beside_the_load,
        ):

            def start_beside() -> None:  # once sending starts: making the records is not load
                beside_the_load.enter_context(_running(bursts.run))
                beside_the_load.enter_context(_running(beats.run if beats else None))

            try:
                sent = produce_in_subprocess(
                    env.work,
                    env.bootstrap,
                    topics["clickstream"],
                    rate,
                    asdict(background),
                    cfg.producer,
                    live=True,
                    on_sending=start_beside,
                )
            finally:
                bursts.stop()
        produced = time.perf_counter()
        health = pipeline.health() if pipeline.health else None
        # the bursts' events land in ``events`` too: without them the wait ended early
        dedup_rows = pipeline.visible_before + len(sent["sent_ms"]) + bursts.records
        _wait_visible(pipeline.events_table, dedup_rows, cfg.drain_seconds, pipeline.alive)
        _wait_alerts(pipeline, bursts.sent_ms, cfg.drain_seconds)
        drained = time.perf_counter() - produced
        try:
            stale = pipeline.silence(beats).seconds_past_timeout() if beats else None
        finally:
            if listener:
                listener.stop()
        load_after = load()
    say(f"{name}: reading which commit made each row visible")
    return {
        "variant": variant,
        "rate": rate,
        "achieved_rate": round(sent["rate"], 1),
        "alert_delta": alert_figures(pipeline.alerts_table, bursts.sent_ms),
        "alert_topic": topic_figures(listener, bursts.sent_ms) if listener else None,
        "dedup": dedup_figures(pipeline.events_table, sent["sent_ms"]),
        # the worst service shown stale, each of them (None: never shown), and how many never
        "stale_service_seconds_after_timeout": _worst(stale),
        "stale_services_seconds_after_timeout": stale,
        "stale_services_never_shown": sum(s is None for s in stale) if stale else 0,
        "health_at_end_of_input": health,
        "drain_seconds": round(drained, 2),
        "load_before": load_before,
        "load_after": load_after,
    }


@contextlib.contextmanager
def _running(target: Callable[[], None] | None, join: bool = True) -> Iterator[None]:
    """``target`` on a thread for the block; waited for at its end unless ``join`` is False (a
    thread stopped later, which would otherwise hold the measurement for the join's 30 s)."""
    thread = threading.Thread(target=target, daemon=True) if target else None
    if thread:
        thread.start()
    try:
        yield
    finally:
        if thread and join:
            thread.join(30)


def _listen(env: Env, topic: str) -> TopicListener:
    return TopicListener(env.bootstrap, topic, id_field="alert_id")


def _warm_up(env: Env, pipeline: Pipeline, topic: str, prefix: str, say: Say) -> None:
    """A burst and 2 s of background, until its alert is visible: every query has run a batch
    with rows (JIT, Python workers, state stores) before anything is timed."""
    warm = Bursts(env.bootstrap, topic, prefix=prefix, every=3600)
    warm_thread = threading.Thread(target=warm.run, daemon=True)
    warm_thread.start()
    deadline = time.monotonic() + 300
    while not first_visible_ms(pipeline.alerts_table, key="user_id"):
        pipeline.alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{prefix}: the warm-up burst raised no alert within 300 s")
        time.sleep(0.5)
    warm.stop()
    warm_thread.join(30)
    pipeline.visible_before = _rows(pipeline.events_table)
    say(f"{prefix}: warm (an alert in {pipeline.alerts_table.name})")


def _warm_load(
    env: Env,
    cfg: ReactionConfig,
    pipeline: Pipeline,
    topic: str,
    rate: float,
    warm: ClickstreamConfig,
    prefix: str,
    say: Say,
) -> None:
    """``cfg.warm_seconds`` of background at ``rate``, untimed, then a wait until every record
    of it is in ``events``: the measured input starts on a warmed JVM and no backlog.

    Measured on 2 cores (docs/benchmarks/latency.md): the first sample of a JVM took an alert
    6.2 s and a row of ``events`` 14.4 s (p50), the next one in the same JVM 4.5 and 5.9 s."""
    sent = produce_in_subprocess(
        env.work, env.bootstrap, topic, rate, asdict(warm), cfg.producer, live=True
    )
    rows = pipeline.visible_before + len(sent["sent_ms"])
    if not _wait_visible(pipeline.events_table, rows, START_TIMEOUT_S, pipeline.alive):
        raise RuntimeError(f"{prefix}: the warm-up's records were not all in the table")
    pipeline.visible_before = _rows(pipeline.events_table)
    say(
        f"{prefix}: {len(sent['sent_ms']):,} records of warm-up load in {pipeline.events_table.name}"
    )


def _rows(table: Path) -> int:
    from benchmarks.harness.visibility import visible_rows

    return visible_rows(table)


def _wait_alerts(pipeline: Pipeline, sent_ms: dict[str, float], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not set(sent_ms) <= set(first_visible_ms(pipeline.alerts_table, key="user_id")):
        pipeline.alive()
        if time.monotonic() > deadline:
            return
        time.sleep(0.5)
