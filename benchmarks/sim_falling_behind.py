"""How ``falling_behind``'s rates judge batches that run back to back, on modelled streams.

On a trigger of 0 (``events`` and ``security_alerts`` by default) each batch reads what arrived
while the one before ran. A batch costs ``overhead`` seconds plus a cost per row, so with
``utilisation`` = input rate x cost per row the next batch runs ``overhead + utilisation x this
one`` (times a noise factor, a real machine's spread). Below 1 the batches settle at
``overhead / (1 - utilisation)``; at 1 or more they grow without end. This script builds the
progress records Spark would report for such streams (healthy ones at several utilisations, an
absorbed surge, a step in the overhead; faulty ones a few percent too slow) and judges them with
the real ``judge_falling_behind`` after every batch, without the lag (the rates only). It prints
how many runs were warned at some moment and at their end, and writes the results file.

It is the evidence for the limit stated on ``docs/operating/checks/falling_behind.md``: the
rates warn a stream 10 % too slow once, then pass it when its batches are long; and for why a
judgement on the window's growth was not kept (it warned healthy streams, see the commit that
reverted it).

Usage:
    .venv/bin/python benchmarks/sim_falling_behind.py                 # 200 runs per case
    .venv/bin/python benchmarks/sim_falling_behind.py --runs 50 --noise 0.2
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from platform_pipelines.core.records import ProgressRecord  # noqa: E402
from platform_pipelines.core.verdict import Status  # noqa: E402
from platform_pipelines.health.runs import RunState  # noqa: E402
from platform_pipelines.health.throughput import judge_falling_behind  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "sim_falling_behind.json"
RATE = 500.0  # rows per second in
OVERHEAD = 4.0  # seconds a batch costs whatever its rows (this machine's, roughly)
RUNNING = RunState("running", "sim")
T0 = 1_800_000_000.0


@dataclass(frozen=True)
class Case:
    """A modelled stream: its utilisation and overhead at batch ``k``, and whether it is healthy."""

    name: str
    healthy: bool
    utilisation: Callable[[int], float]
    overhead: Callable[[int], float] = lambda k: OVERHEAD
    batches: int = 100


CASES = [
    Case("steady at 50 %", True, lambda k: 0.5),
    Case("steady at 80 %", True, lambda k: 0.8),
    Case("steady at 90 %", True, lambda k: 0.9),
    Case("surge from 10 % to 50 % at batch 30", True, lambda k: 0.1 if k < 30 else 0.5),
    Case("surge from 10 % to 80 % at batch 30", True, lambda k: 0.1 if k < 30 else 0.8),
    Case("surge from 10 % to 90 % at batch 30", True, lambda k: 0.1 if k < 30 else 0.9),
    Case(
        "overhead 4 s -> 8 s at batch 30, 50 %", True, lambda k: 0.5, lambda k: 4 if k < 30 else 8
    ),
    Case("3 % too slow from batch 30", False, lambda k: 0.9 if k < 30 else 1.03, batches=60),
    Case("10 % too slow from batch 30", False, lambda k: 0.5 if k < 30 else 1.1, batches=60),
    Case("20 % too slow from batch 30", False, lambda k: 0.5 if k < 30 else 1.2, batches=60),
]


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def records(case: Case, noise: float, seed: int) -> list[ProgressRecord]:
    """The progress records of one run of ``case``, starting settled at its first utilisation."""
    rng = random.Random(seed)
    before = case.overhead(0) / (1 - min(case.utilisation(0), 0.99))
    now, out = T0, []
    for k in range(case.batches):
        rows = round(RATE * before)
        seconds = case.overhead(k) + rows * case.utilisation(k) / RATE
        seconds *= 1 + rng.uniform(-noise, noise)
        progress = {
            "id": "q",
            "runId": "r",
            "batchId": k,
            "timestamp": iso(now),
            "numInputRows": rows,
            "inputRowsPerSecond": rows / before,
            "processedRowsPerSecond": rows / seconds,
            "durationMs": {"triggerExecution": round(seconds * 1000)},
        }
        now += seconds
        out.append(ProgressRecord(now, "progress", "s", "run", progress, 0.0, phase="continuous"))
        before = seconds
    return out


def judge(case: Case, noise: float, seed: int) -> tuple[bool, bool]:
    """Whether a run of ``case`` was warned at some batch from its 10th on, and at its end."""
    run = records(case, noise, seed)
    warned = [
        judge_falling_behind(run[: k + 1], None, run=RUNNING).status is not Status.PASS
        for k in range(9, len(run))
    ]
    return any(warned), warned[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="runs per case (default 200)")
    parser.add_argument("--noise", type=float, default=0.1, help="each batch +- this share")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    console = Console()
    table = Table(
        title=f"falling_behind's rates on back-to-back batches (noise +-{args.noise:.0%})"
    )
    for column in ("case", "label", "runs warned at some batch", "runs warned at their end"):
        table.add_column(column)
    rows = []
    with console.status("judging...") as status:
        for case in CASES:
            status.update(f"judging {case.name}")
            outcomes = [judge(case, args.noise, seed) for seed in range(args.runs)]
            some = sum(any_ for any_, _ in outcomes) / args.runs
            end = sum(last for _, last in outcomes) / args.runs
            label = "healthy" if case.healthy else "too slow"
            table.add_row(case.name, label, f"{some:.0%}", f"{end:.0%}")
            rows.append({"case": case.name, "healthy": case.healthy, "warned": some, "end": end})
    console.print(table)
    config = {"runs": args.runs, "noise": args.noise, "rate": RATE, "overhead": OVERHEAD}
    args.output.write_text(json.dumps({"config": config, "cases": rows}, indent=2) + "\n")
    console.print(f"results: {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
