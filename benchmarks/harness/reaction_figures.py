"""A reaction run's figures: per alert (a burst's user) or per row (an event id), the seconds
from its Kafka send to the commit (or the topic record) that showed it, with the p50 of the
first and of the last tenth of the run (does a backlog grow?). A key never shown counts as shown
when the figures are read (a lower bound)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.harness.bursts import TopicListener
from benchmarks.harness.stats import latency_figures, percentile
from benchmarks.harness.visibility import first_visible_ms, latencies


def alert_figures(table: Path, sent_ms: dict[str, float]) -> dict[str, Any]:
    visible = first_visible_ms(table, key="user_id")
    lat = latencies(sent_ms, visible, time.time() * 1000)
    return with_tenths(lat, len(sent_ms), sum(1 for u in sent_ms if u in visible))


def topic_figures(listener: TopicListener, sent_ms: dict[str, float]) -> dict[str, Any]:
    lat = latencies(sent_ms, listener.received_ms, time.time() * 1000)
    seen = sum(1 for u in sent_ms if u in listener.received_ms)
    figures = with_tenths(lat, len(sent_ms), seen)
    ids = [i for i in listener.ids if any(i.startswith(u) for u in sent_ms)]
    figures["records"] = len(ids)
    figures["distinct_alert_ids"] = len(set(ids))
    return figures


def dedup_figures(table: Path, sent_ms: dict[str, float]) -> dict[str, Any]:
    visible = first_visible_ms(table)
    lat = latencies(sent_ms, visible, time.time() * 1000)
    return with_tenths(lat, len(sent_ms), sum(1 for k in sent_ms if k in visible))


def with_tenths(lat: list[float], produced: int, seen: int) -> dict[str, Any]:
    tenth = max(len(lat) // 10, 1)
    first, last = percentile(lat[:tenth], 50), percentile(lat[-tenth:], 50)
    return {
        **latency_figures(lat, produced, seen),
        "first_tenth_p50_seconds": first,
        "last_tenth_p50_seconds": last,
        "last_over_first_tenth_p50": round(last / first, 2) if first and last else None,
    }
