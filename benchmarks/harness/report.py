"""The results document as rich tables, one per section, and a short summary."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

Entry = Mapping[str, Any]


def num(value: Any, digits: int = 0) -> str:
    """A number with thousands separators; ``-`` for None."""
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def median(entry: Entry, figure: str) -> Any:
    return (entry.get("stats", {}).get(figure) or {}).get("median")


def span_of(entry: Entry, figure: str, digits: int = 0) -> str:
    """``min-max`` of a figure over the repeats (empty for one run)."""
    stats = entry.get("stats", {}).get(figure) or {}
    if (stats.get("n") or 0) < 2:
        return ""
    return f"{num(stats['min'], digits)}-{num(stats['max'], digits)}"


def _table(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = (0, 1)
) -> Table:
    """Text columns (``left``) left-aligned, numbers right-aligned."""
    table = Table(title=title, title_justify="left")
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i in left else "right", no_wrap=i in left)
    for row in rows:
        table.add_row(*row)
    return table


def _variant(entry: Entry) -> str:
    return f"{entry['variant']} *" if entry.get("note") else str(entry["variant"])


def notes(doc: Entry) -> list[str]:
    """The footnotes of the variants marked with ``*``."""
    found = {}
    for section in ("throughput", "dedup_path", "latency", "scaling", "restart"):
        for e in doc[section]:
            if e.get("note"):
                found[f"{e['name']} {e['variant']}"] = e["note"]
    return [f"* {what}: {note}" for what, note in found.items()]


def _throughput_rows(entries: Sequence[Entry]) -> list[list[str]]:
    return [
        [
            e["name"],
            _variant(e),
            num(median(e, "rows")),
            num(median(e, "rows_out")),
            num(median(e, "rows_per_second")),
            span_of(e, "rows_per_second"),
            num(median(e, "wall_seconds"), 1),
            num(median(e, "cpu_seconds"), 1),
            num(median(e, "load_after"), 2),
        ]
        for e in entries
    ]


THROUGHPUT = (
    "stream",
    "variant",
    "rows in",
    "rows out",
    "rows/s",
    "min-max",
    "wall s",
    "CPU s",
    "load",
)


def _latency_rows(entries: Sequence[Entry]) -> list[list[str]]:
    return [
        [
            _variant(e),
            num(e["params"].get("rate")),
            num(median(e, "achieved_rate")),
            num(median(e, "p50_seconds"), 2),
            num(median(e, "p95_seconds"), 2),
            num(median(e, "p99_seconds"), 2),
            f"{num(median(e, 'first_tenth_p50_seconds'), 2)} / "
            f"{num(median(e, 'last_tenth_p50_seconds'), 2)}",
            f"{num(median(e, 'visible_rows'))} / {num(median(e, 'produced_rows'))}",
            num(median(e, "load_after"), 2),
        ]
        for e in entries
    ]


def _scaling_rows(entries: Sequence[Entry]) -> list[list[str]]:
    return [
        [
            e["name"],
            num(e["params"].get("keys")),
            num(median(e, "rows_per_second")),
            num(median(e, "state_rows")),
            num(median(e, "bytes_per_key_memory")),
            num(median(e, "bytes_per_key_disk")),
            num(median(e, "load_after"), 2),
        ]
        for e in entries
    ]


def _restart_rows(entries: Sequence[Entry]) -> list[list[str]]:
    return [
        [
            e["name"],
            num(e["params"].get("keys")),
            num(median(e, "first_batch_seconds"), 2),
            span_of(e, "first_batch_seconds", 2),
            num(median(e, "first_batch_trigger_ms")),
            num(median(e, "first_batch_add_ms")),
            num(median(e, "load_after"), 2),
        ]
        for e in entries
    ]


def _figure(value: float | None) -> str:
    """Two decimals for ratios and seconds, none for rates."""
    return num(value, 0 if value is not None and abs(value) >= 100 else 2)


def _ratio_rows(doc: Entry) -> list[list[str]]:
    rows = []
    for name, spread in doc["ratio_spreads"].items():
        low, high = spread.get("min"), spread.get("max")
        shown = f"{num(low, 2)}-{num(high, 2)}" if (spread.get("n") or 0) > 1 else ""
        rows.append([name, num(spread.get("median"), 2), shown, spread["of"]])
    return rows


def _target_rows(doc: Entry) -> list[list[str]]:
    return [
        [
            t["figure"],
            t["what"],
            f"{t['op']} {_figure(t['target'])}",
            _figure(t["value"]),
            _verdict(t),
        ]
        for t in doc["targets"]
    ]


def _verdict(target: Entry) -> str:
    if target["value"] is None:
        return "[dim]not measured[/dim]"
    if not target["applies"]:
        return "[dim]n/a: not at the target's scale[/dim]"
    return "[green]met[/green]" if target["met"] else "[red]not met[/red]"


SECTIONS: tuple[
    tuple[str, str, Sequence[str], Callable[[Sequence[Entry]], list[list[str]]]], ...
] = (
    (
        "throughput",
        "Throughput: catch-up (availableNow), Kafka -> Delta, same input",
        THROUGHPUT,
        _throughput_rows,
    ),
    (
        "dedup_path",
        "Dedup path: Kafka -> events, bronze included (rows = records in Kafka)",
        THROUGHPUT,
        _throughput_rows,
    ),
    (
        "latency",
        "End-to-end latency: produce -> row visible in events, continuous",
        (
            "variant",
            "rate/s",
            "achieved/s",
            "p50 s",
            "p95 s",
            "p99 s",
            "p50 first/last 10 %",
            "visible / sent",
            "load",
        ),
        _latency_rows,
    ),
    (
        "scaling",
        "Scaling with keys (state after catch-up)",
        ("stream", "keys", "rows/s", "state rows", "memory B/key", "disk B/key", "load"),
        _scaling_rows,
    ),
    (
        "restart",
        "First batch after a restart on the same checkpoint",
        ("stream", "keys", "first batch s", "min-max", "batch ms", "addBatch ms", "load"),
        _restart_rows,
    ),
)


def render(doc: Entry, console: Console) -> None:
    """Every section that ran, the ratios, the targets and a summary."""
    for key, title, headers, rows in SECTIONS:
        if doc.get(key):
            left = (0,) if key == "latency" else (0, 1)
            console.print(_table(title, headers, rows(doc[key]), left))
    if doc["ratio_spreads"]:
        console.print(
            _table(
                "Ratios (*_overhead_ratio: platform time / reference time, lower is "
                "better; *_vs_*_ratio: platform rows/s / reference rows/s, higher is "
                "better)",
                ("ratio", "median", "min-max", "of"),
                _ratio_rows(doc),
                (0, 3),
            )
        )
    console.print(
        _table(
            "Targets (issue 10)",
            ("figure", "what", "target", "value", "verdict"),
            _target_rows(doc),
            (0, 1, 4),
        )
    )
    for line in notes(doc):
        console.print(f"[dim]{line}[/dim]")
    console.print(summary(doc))


def summary(doc: Entry) -> str:
    """A few lines: the machine, its load, the headline figures."""
    machine, figures = doc["machine"], doc["figures"]
    loads = [
        s["load_after"]
        for section in ("throughput", "dedup_path", "latency", "scaling", "restart")
        for e in doc[section]
        for s in e["samples"]
    ]
    met = [t for t in doc["targets"] if t["met"] is not None]
    lines = [
        f"{machine['cores']} cores; load average during the figures {num(min(loads, default=0), 1)}"
        f"-{num(max(loads, default=0), 1)} (above the core count the figures are slowed by "
        "other work: compare ratios, which pair runs made back to back)",
        f"dedup path Kafka -> events: {num(figures.get('dedup_path_events_per_second'))} events/s;"
        f" latency p50 {num(figures.get('dedup_latency_p50_seconds'), 2)} s at "
        f"{num(figures.get('dedup_latency_achieved_rate'))} events/s reached; first batch after a "
        f"restart {num(figures.get('restart_first_batch_seconds'), 2)} s with "
        f"{num(figures.get('restart_keys'))} keys",
        f"targets met: {sum(1 for t in met if t['met'])} of {len(met)} measured at their scale; "
        f"took {num(doc['duration_seconds'] / 60, 1)} min",
    ]
    return "\n".join(lines)
