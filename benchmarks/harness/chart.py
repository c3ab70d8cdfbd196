"""One PNG per run: throughput side by side, latency, bytes per key against keys, restart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Entry = Mapping[str, Any]
COLORS = {
    "platform": "#1f77b4",
    "plain": "#ff7f0e",
    "native": "#2ca02c",
    "plain_single_query": "#9467bd",
    "platform_events_from_kafka": "#17becf",
    "plain_side_by_side": "#8c564b",
}


def _stat(entry: Entry, figure: str, which: str = "median") -> float:
    value = (entry.get("stats", {}).get(figure) or {}).get(which)
    return float(value) if value is not None else 0.0


def _bars(ax: Any, entries: Sequence[Entry], figure: str, label: str) -> None:
    """Grouped bars: one group per name, one bar per variant, min-max as error bars."""
    names = list(dict.fromkeys(e["name"] for e in entries))
    variants = list(dict.fromkeys(e["variant"] for e in entries))
    width = 0.8 / max(len(variants), 1)
    for j, variant in enumerate(variants):
        xs, heights, low, high = [], [], [], []
        for i, name in enumerate(names):
            found = [e for e in entries if e["name"] == name and e["variant"] == variant]
            if found:
                mid = _stat(found[0], figure)
                xs.append(i + j * width)
                heights.append(mid)
                low.append(mid - _stat(found[0], figure, "min"))
                high.append(_stat(found[0], figure, "max") - mid)
        ax.bar(
            xs,
            heights,
            width,
            yerr=[low, high],
            label=variant,
            color=COLORS.get(variant),
            capsize=3,
        )
    ax.set_xticks(
        [i + width * (len(variants) - 1) / 2 for i in range(len(names))], names, fontsize=8
    )
    ax.set_ylabel(label)
    if variants:
        ax.legend(fontsize=7)


def _scaling(ax: Any, entries: Sequence[Entry]) -> None:
    """Bytes per key on disk (solid) and in memory (dashed) against keys, per stream."""
    for n, name in enumerate(dict.fromkeys(e["name"] for e in entries)):
        for figure, style, where in (
            ("bytes_per_key_disk", "-", "disk"),
            ("bytes_per_key_memory", "--", "memory"),
        ):
            points = sorted(
                (e["params"]["keys"], _stat(e, figure))
                for e in entries
                if e["name"] == name and figure in e.get("stats", {})
            )
            if points:
                ax.plot(
                    *zip(*points, strict=True),
                    style,
                    marker="o",
                    color=f"C{n}",
                    label=f"{name} ({where})",
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("keys")
    ax.set_ylabel("state bytes per key")
    if entries:
        ax.legend(fontsize=7)


def draw(doc: Entry, paths: Sequence[Path]) -> None:
    """Draw the run's chart and save it to every path in ``paths``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(14, 9))
    (throughput, latency), (scaling, restart) = axes
    _bars(throughput, [*doc["throughput"], *doc["dedup_path"]], "rows_per_second", "rows/s")
    throughput.set_title("Catch-up throughput (median, min-max)")
    _bars(
        latency,
        [
            *_as_variants(doc["latency"], "p50_seconds", "p50"),
            *_as_variants(doc["latency"], "p95_seconds", "p95"),
        ],
        "seconds",
        "seconds",
    )
    rate = doc["latency"][0]["params"].get("rate") if doc["latency"] else None
    latency.set_title(f"Produce -> visible in events at {rate or '-'} events/s")
    _scaling(scaling, doc["scaling"])
    scaling.set_title("State size per key")
    _bars(restart, doc["restart"], "first_batch_seconds", "seconds")
    restart.axhline(5.0, color="red", linestyle="--", linewidth=1)
    restart.set_title("First batch after a restart (target 5 s, red)")
    loads = [
        s["load_after"]
        for section in ("throughput", "dedup_path", "latency", "scaling", "restart")
        for e in doc[section]
        for s in e["samples"]
    ]
    load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
    fig.suptitle(
        f"bench suite {doc['started_at']} ({doc['config'].get('mode')}): "
        f"{doc['machine']['cores']} cores, 1-min load average {load}"
    )
    fig.tight_layout()
    for path in paths:
        fig.savefig(path, dpi=90)
    plt.close(fig)


def _as_variants(entries: Sequence[Entry], figure: str, label: str) -> list[dict[str, Any]]:
    """Latency entries as bars named by percentile, one per variant."""
    return [
        {
            "name": label,
            "variant": e["variant"],
            "stats": {"seconds": e.get("stats", {}).get(figure) or {}},
        }
        for e in entries
    ]
