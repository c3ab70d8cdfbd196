"""Judge every recorded health scenario again and publish the confusion matrix.

Replays the fixtures under ``tests/data/health_scenarios/`` through the health sensor's own
evaluation (no JVM, no broker: a few seconds), prints the matrix per check and the verdicts per
scenario, writes ``benchmarks/results/health_eval.json`` and the docs page
``docs/operating/health-eval.md``. Exits 1 when a target is missed.

Usage:
    .venv/bin/python benchmarks/health_eval/evaluate.py
    .venv/bin/python benchmarks/health_eval/evaluate.py --output /tmp/health_eval.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402

from benchmarks.health_eval.fixture import Fixture  # noqa: E402
from benchmarks.health_eval.markdown import PAGE, page  # noqa: E402
from benchmarks.health_eval.matrix import (  # noqa: E402
    document,
    print_matrix,
    print_scenarios,
    print_targets,
)
from benchmarks.health_eval.replay import replay_all  # noqa: E402
from benchmarks.health_eval.scenarios import SCENARIOS  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "health_eval.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--docs", type=Path, default=REPO / PAGE, help="the page to write")
    args = parser.parse_args(argv)
    console = Console()
    missing = [s.name for s in SCENARIOS if not Fixture.of(s.name).exists]
    if missing:
        console.print(
            f"[red]No fixture for {', '.join(missing)}[/]: record them with "
            f"`.venv/bin/python benchmarks/health_eval/record.py --only {','.join(missing)}`"
        )
    outcomes = replay_all(SCENARIOS)
    print_matrix(console, outcomes)
    print_scenarios(console, outcomes)
    print_targets(console, outcomes)
    doc = document(outcomes)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=1) + "\n")
    args.docs.write_text(page(outcomes))
    console.print(f"results: {args.output}; page: {args.docs}")
    return 0 if doc["targets"]["met"] and not missing else 1


if __name__ == "__main__":
    raise SystemExit(main())
