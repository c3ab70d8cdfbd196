"""The results of one suite run as one JSON document, built and checked without a JVM.

Every timed run is a *sample* (a flat dict of numbers, with the 1-minute load average before and
after it); the samples of one thing measured (section, name, variant, parameters) form a
``Measurement``, reported with min / median / max over the repeats. Ratios compare the platform
with a reference run in the same repeat and are named ``*_ratio``:

- ``*_overhead_ratio``: platform time / reference time (1.0 = as fast; 1.03 = 3 % slower; for
  latency, platform seconds / reference seconds).
- ``*_vs_<reference>_ratio``: platform rows/s / reference rows/s (1.0 = as fast; above is faster).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness.stats import paired_ratios, spread, spreads_of

SCHEMA = "bench-suite/1"
SECTIONS = ("throughput", "dedup_path", "latency", "scaling", "restart")
LOAD_FIELDS = ("load_before", "load_after")


@dataclass
class Measurement:
    """Every repeat of one thing measured."""

    section: str
    name: str
    variant: str
    params: dict[str, Any] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""

    def values(self, name: str) -> list[Any]:
        return [s.get(name) for s in self.samples]

    def median(self, name: str) -> float | None:
        return spread(self.values(name))["median"]

    def as_json(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "name": self.name,
            "variant": self.variant,
            "params": self.params,
            "note": self.note,
            "samples": self.samples,
            "stats": spreads_of(self.samples),
        }


class Figures:
    """The measurements of a run, found by what they measured."""

    def __init__(self) -> None:
        self.measurements: list[Measurement] = []

    def add(
        self,
        section: str,
        name: str,
        variant: str,
        sample: Mapping[str, Any],
        note: str = "",
        **params: Any,
    ) -> Measurement:
        """Add one sample; repeats of the same measurement gather in one ``Measurement``."""
        found = self.get(section, name, variant, **params)
        if found is None:
            found = Measurement(section, name, variant, dict(params), note=note)
            self.measurements.append(found)
        found.samples.append(dict(sample))
        return found

    def get(self, section: str, name: str, variant: str, **params: Any) -> Measurement | None:
        for m in self.measurements:
            if (m.section, m.name, m.variant) == (section, name, variant) and (
                not params or m.params == params
            ):
                return m
        return None

    def section(self, section: str) -> list[Measurement]:
        return [m for m in self.measurements if m.section == section]


@dataclass(frozen=True)
class RatioSpec:
    """``name`` = ``ours.field`` / ``reference.field``, paired repeat by repeat."""

    name: str
    section: str
    stream: str
    ours: str
    reference: str
    field: str


def _both(
    prefix: str,
    stream: str,
    reference: str,
    section: str = "throughput",
    speed_name: str | None = None,
) -> list[RatioSpec]:
    speed = speed_name or f"{prefix}_vs_{reference}_ratio"
    return [
        RatioSpec(
            f"{prefix}_overhead_ratio", section, stream, "platform", reference, "wall_seconds"
        ),
        RatioSpec(speed, section, stream, "platform", reference, "rows_per_second"),
    ]


RATIOS: tuple[RatioSpec, ...] = (
    *_both("bronze", "clickstream_raw", "plain"),
    *_both("dedup", "events", "plain", speed_name="dedup_vs_native_ratio"),
    *_both("sessions", "user_sessions", "plain"),
    RatioSpec(
        "sessions_vs_native_ratio",
        "throughput",
        "user_sessions",
        "platform",
        "native",
        "rows_per_second",
    ),
    *_both("alerts", "security_alerts", "plain"),
    *_both("dedup_path", "kafka_to_events", "plain", section="dedup_path"),
    RatioSpec(
        "dedup_path_vs_single_query_ratio",
        "dedup_path",
        "kafka_to_events",
        "platform",
        "plain_single_query",
        "rows_per_second",
    ),
    RatioSpec(
        "dedup_latency_p50_overhead_ratio",
        "latency",
        "kafka_to_events",
        "platform",
        "plain_single_query",
        "p50_seconds",
    ),
    RatioSpec(
        "dedup_latency_p95_overhead_ratio",
        "latency",
        "kafka_to_events",
        "platform",
        "plain_single_query",
        "p95_seconds",
    ),
    # events reading Kafka beside bronze, against the plain pair doing the same
    *[
        RatioSpec(
            f"{name}_ratio",
            section,
            "kafka_to_events",
            "platform_events_from_kafka",
            "plain_side_by_side",
            field,
        )
        for name, section, field in (
            ("dedup_path_from_kafka_overhead", "dedup_path", "wall_seconds"),
            ("dedup_latency_from_kafka_p50_overhead", "latency", "p50_seconds"),
            ("dedup_latency_from_kafka_p95_overhead", "latency", "p95_seconds"),
        )
    ],
    RatioSpec(
        "dedup_latency_from_kafka_vs_bronze_p50_ratio",
        "latency",
        "kafka_to_events",
        "platform_events_from_kafka",
        "platform",
        "p50_seconds",
    ),
)


def compute_ratios(figures: Figures) -> dict[str, dict[str, Any]]:
    """Every ratio of ``RATIOS`` whose two measurements exist: its median over the repeats (the
    reported value) and its min / max."""
    found: dict[str, dict[str, Any]] = {}
    for spec in RATIOS:
        ours = figures.get(spec.section, spec.stream, spec.ours)
        ref = figures.get(spec.section, spec.stream, spec.reference)
        if ours is None or ref is None:
            continue
        pairs = paired_ratios(ours.values(spec.field), ref.values(spec.field))
        found[spec.name] = {
            **spread(pairs),
            "of": f"{spec.stream} {spec.ours} / {spec.reference} {spec.field}",
        }
    return found


@dataclass(frozen=True)
class Target:
    """A goal of issue 10: ``figure`` ``op`` ``bound``; ``applies`` says when the run measured it
    as the goal states it (e.g. at 10k events/s, with 1M keys)."""

    figure: str
    op: str
    bound: float
    what: str


TARGETS = (
    Target("sessions_vs_native_ratio", ">=", 1.0, "sessions, full semantics, vs session_window"),
    Target("dedup_path_events_per_second", ">=", 50_000, "Kafka -> events, bronze included"),
    Target("bronze_overhead_ratio", "<=", 1.03, "platform overhead on bronze"),
    Target("dedup_path_overhead_ratio", "<=", 1.03, "platform overhead, Kafka -> events"),
    Target("dedup_latency_p50_seconds", "<=", 1.0, "dedup p50 end to end at 10k events/s"),
    Target("restart_first_batch_seconds", "<=", 5.0, "first batch after a restart, 1M keys"),
)
# The throughput targets hold for the input size: on a few thousand records a run is
# mostly its fixed costs (a first start, table creation), so a smoke run's ratios say nothing.
THROUGHPUT_TARGETS = (
    "sessions_vs_native_ratio",
    "dedup_path_events_per_second",
    "bronze_overhead_ratio",
    "dedup_path_overhead_ratio",
)
THROUGHPUT_RECORDS = 300_000


def headline_figures(figures: Figures) -> dict[str, Any]:
    """The figures the targets judge, with the conditions they were measured under."""
    path = figures.get("dedup_path", "kafka_to_events", "platform")
    latency = figures.get("latency", "kafka_to_events", "platform")
    from_kafka = figures.get("latency", "kafka_to_events", "platform_events_from_kafka")
    restarts = figures.section("restart")
    heads: dict[str, Any] = {
        "dedup_path_events_per_second": path.median("rows_per_second") if path else None,
        "throughput_records": path.median("rows") if path else None,
        "dedup_latency_p50_seconds": latency.median("p50_seconds") if latency else None,
        "dedup_latency_p95_seconds": latency.median("p95_seconds") if latency else None,
        "dedup_latency_rate": latency.params.get("rate") if latency else None,
        "dedup_latency_achieved_rate": latency.median("achieved_rate") if latency else None,
        "dedup_latency_p50_seconds_events_from_kafka": from_kafka.median("p50_seconds")
        if from_kafka
        else None,
        "dedup_latency_p95_seconds_events_from_kafka": from_kafka.median("p95_seconds")
        if from_kafka
        else None,
    }
    for m in restarts:
        heads[f"restart_first_batch_seconds_{m.name}"] = m.median("first_batch_seconds")
    worst = [m.median("first_batch_seconds") for m in restarts]
    heads["restart_first_batch_seconds"] = max((w for w in worst if w is not None), default=None)
    heads["restart_keys"] = min((m.params.get("keys", 0) for m in restarts), default=None)
    return heads


def evaluate_targets(
    heads: Mapping[str, Any], ratios: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Each target with the run's value and whether it was met (None: not measured, or not under
    the target's conditions: a throughput input under 300,000 records, fewer than 9,500 events/s
    reached by the producer, fewer than 1M keys)."""
    values = {**heads, **{name: r.get("median") for name, r in ratios.items()}}
    at_scale = (heads.get("throughput_records") or 0) >= THROUGHPUT_RECORDS
    applies = {
        **{figure: at_scale for figure in THROUGHPUT_TARGETS},
        # the rate the producer reached, not the one asked for
        "dedup_latency_p50_seconds": (heads.get("dedup_latency_achieved_rate") or 0) >= 9_500,
        "restart_first_batch_seconds": (heads.get("restart_keys") or 0) >= 1_000_000,
    }
    rows = []
    for t in TARGETS:
        value = values.get(t.figure)
        met = None
        if applies.get(t.figure, True) and value is not None:
            met = value >= t.bound if t.op == ">=" else value <= t.bound
        rows.append(
            {
                "figure": t.figure,
                "op": t.op,
                "target": t.bound,
                "value": value,
                "met": met,
                "applies": applies.get(t.figure, True),
                "what": t.what,
            }
        )
    return rows


def build_document(
    *,
    config: Mapping[str, Any],
    machine: Mapping[str, Any],
    figures: Figures,
    charts: Sequence[str],
    started_at: str,
    finished_at: str,
    seconds: float,
) -> dict[str, Any]:
    """The whole results document (``suite.json``)."""
    ratios = compute_ratios(figures)
    heads = headline_figures(figures)
    return {
        "schema": SCHEMA,
        "started_at": started_at,
        "finished_at": finished_at,
        "duration_seconds": round(seconds, 1),
        "config": dict(config),
        "machine": dict(machine),
        **{s: [m.as_json() for m in figures.section(s)] for s in SECTIONS},
        "ratios": {name: r["median"] for name, r in ratios.items()},
        "ratio_spreads": ratios,
        "figures": heads,
        "targets": evaluate_targets(heads, ratios),
        "charts": list(charts),
    }


def shape_problems(doc: Mapping[str, Any]) -> list[str]:
    """What is wrong with a results document's shape (empty when it is well-formed)."""
    problems = [
        f"missing key {k!r}"
        for k in (
            "schema",
            "config",
            "machine",
            "ratios",
            "targets",
            "figures",
            "charts",
            *SECTIONS,
        )
        if k not in doc
    ]
    if problems:
        return problems
    if doc["schema"] != SCHEMA:
        problems.append(f"schema is {doc['schema']!r}, expected {SCHEMA!r}")
    for key in ("cores", "load_average_start", "versions"):
        if key not in doc["machine"]:
            problems.append(f"machine lacks {key!r}")
    for name, value in doc["ratios"].items():
        if not name.endswith("_ratio"):
            problems.append(f"ratio {name!r} is not named *_ratio")
        if value is not None and not isinstance(value, int | float):
            problems.append(f"ratio {name!r} is {value!r}, not a number")
    for section in SECTIONS:
        problems += _section_problems(section, doc[section])
    return problems


def _section_problems(section: str, entries: Iterable[Mapping[str, Any]]) -> list[str]:
    problems = []
    for entry in entries:
        where = f"{section}/{entry.get('name')}/{entry.get('variant')}"
        if not entry.get("samples"):
            problems.append(f"{where}: no samples")
        for sample in entry.get("samples", []):
            missing = [k for k in LOAD_FIELDS if not isinstance(sample.get(k), int | float)]
            if missing:
                problems.append(f"{where}: a sample lacks {', '.join(missing)}")
        for figure, stats in entry.get("stats", {}).items():
            if set(stats) != {"min", "median", "max", "n"}:
                problems.append(f"{where}: stats of {figure} are not min/median/max/n")
    return problems
