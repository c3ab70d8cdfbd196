"""Record the health scenarios' fixtures on a real Kafka broker and SparkSession.

Each scenario runs through the platform's runner (``recipes.py``) and leaves what the health
sensor would read under ``tests/data/health_scenarios/<scenario>/``. Run it again when Spark (or
anything that changes what a stream writes) changes; ``evaluate.py`` then judges the new traces.

Usage:
    .venv/bin/python benchmarks/health_eval/record.py                     # every scenario
    .venv/bin/python benchmarks/health_eval/record.py --only stuck_query,state_leak
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("PLATFORM_SPARK_LOG_LEVEL", "ERROR")  # before the settings are read

from rich.console import Console  # noqa: E402

from benchmarks.health_eval.fixture import FIXTURES  # noqa: E402
from benchmarks.health_eval.harness import Recording, recording_env  # noqa: E402
from benchmarks.health_eval.recipes import RECIPES  # noqa: E402
from benchmarks.health_eval.scenarios import BY_NAME, SCENARIOS  # noqa: E402


def folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--keep", action="store_true", help="keep the work folder (broker, lake)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or [s.name for s in SCENARIOS]
    unknown = [n for n in names if n not in BY_NAME or n not in RECIPES]
    if unknown:
        parser.error(f"no such scenario (or no recipe): {', '.join(unknown)}")
    console = Console()
    work = Path(tempfile.mkdtemp(prefix="health_eval-"))
    failed: list[str] = []
    try:
        with recording_env(work, console.print) as env:
            for name in names:
                started = time.monotonic()
                rec = Recording(env, BY_NAME[name], work / name, args.fixtures)
                try:
                    RECIPES[name](rec)
                    if not rec.captured:
                        rec.capture()
                except Exception:  # the next scenarios still get recorded
                    console.print_exception()
                    failed.append(name)
                    continue
                folder = args.fixtures / name
                console.print(
                    f"[bold]{name}[/]: {rec.batches} batches, fixture "
                    f"{folder_size(folder) / 1024:.1f} KiB, {time.monotonic() - started:.0f} s"
                )
    finally:
        if args.keep:
            console.print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if failed:
        console.print(f"[red]not recorded: {', '.join(failed)}[/]")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
