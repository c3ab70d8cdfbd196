"""How much a continuous run spends compiling generated code, and which code it compiles again.

Spark generates Java for each plan and compiles it with Janino; its code cache compiles a piece
of code once, as long as the code is the same. Code that holds a value of its micro-batch (a
literal clock, watermark or count) differs every batch and is compiled every batch. This runs
``bench_reaction.py --quick --variants platform`` (the platform's continuous run at 2,000
events/s for 60 s) with Spark's ``CodeGenerator`` logging every compile, then prints the compile
count and time once warmed up, and the code compiled most often again (the same code up to its
numbers), with the line that differed. Writes ``benchmarks/results/codegen.json``.

Usage:
    .venv/bin/python benchmarks/bench_codegen.py            # ~3 min
    .venv/bin/python benchmarks/bench_codegen.py --keep     # keep the log in the temporary folder
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
CODEGEN = "org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator"
LOG4J = """rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss.SSS}} %t: %m%n
logger.codegen.name = {logger}
logger.codegen.level = debug
"""
RECORD = re.compile(r"\n(?=\d\d:\d\d:\d\d\.\d{3} )")
console = Console()


@dataclass
class Shape:
    """Generated code that is the same up to its numbers, and each compile of it."""

    example: str
    compiles: list[tuple[float, float]] = field(default_factory=list)  # (seconds, ms)
    variants: set[str] = field(default_factory=set)

    def differing_line(self) -> str:
        """The first line in which two compiled variants differ ("" when all were equal)."""
        bodies = sorted(self.variants)
        if len(bodies) < 2:
            return ""
        for a, b in zip(bodies[0].splitlines(), bodies[-1].splitlines(), strict=False):
            if a != b:
                return a.strip()[:100]
        return ""

    def kind(self) -> str:
        found = re.search(r"class (\w+?)(?:\d*) extends|class (Specific\w+)", self.example)
        return next((g for g in found.groups() if g), "") if found else ""


def parse_log(text: str) -> dict[str, Shape]:
    """Each compile's code (its DEBUG record) and time (the INFO line after it), by shape."""
    shapes: dict[str, Shape] = {}
    pending: dict[str, str] = defaultdict(str)  # thread -> code compiling on it
    for record in RECORD.split(text):
        head, _, body = record.partition("\n")
        stamp, thread = head[:12], head[13:].split(":", 1)[0]
        seconds = sum(float(x) * m for x, m in zip(stamp.split(":"), (3600, 60, 1), strict=True))
        if body and "class " in body:
            pending[thread] = re.sub(r"/\* \d+ \*/", "", body)
            continue
        took = re.search(r"Code generated in ([\d.]+) ms", head)
        if took and pending.get(thread):
            code = pending.pop(thread)
            shape = shapes.setdefault(re.sub(r"-?\d+L?", "N", code), Shape(code))
            shape.compiles.append((seconds, float(took.group(1))))
            shape.variants.add(code)
    return shapes


def summary(shapes: dict[str, Shape], warmup: float) -> dict[str, object]:
    """Compiles and their time after ``warmup`` seconds from the first one, and the shapes
    compiled most often then."""
    every = [c for s in shapes.values() for c in s.compiles]
    if not every:
        return {"compiles": 0}
    start, end = min(t for t, _ in every), max(t for t, _ in every)
    steady = [(t, ms) for t, ms in every if t >= start + warmup]
    span = max(end - start - warmup, 1.0)
    top = sorted(
        shapes.values(), key=lambda s: -sum(ms for t, ms in s.compiles if t >= start + warmup)
    )
    return {
        "compiles": len(every),
        "compile_seconds": round(sum(ms for _, ms in every) / 1000, 2),
        "steady_seconds": round(span, 1),
        "steady_compiles": len(steady),
        "steady_compile_seconds": round(sum(ms for _, ms in steady) / 1000, 2),
        "steady_compile_share": round(sum(ms for _, ms in steady) / 1000 / span, 3),
        "repeated": [
            {
                "kind": s.kind(),
                "compiles": sum(1 for t, _ in s.compiles if t >= start + warmup),
                "seconds": round(sum(ms for t, ms in s.compiles if t >= start + warmup) / 1000, 2),
                "variants": len(s.variants),
                "differs_in": s.differing_line(),
            }
            for s in top[:8]
        ],
    }


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option(
    "--warmup", default=40.0, show_default=True, help="Seconds of first compiles left out."
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=RESULTS / "codegen.json",
    show_default="benchmarks/results/codegen.json",
)
@click.option("--keep", is_flag=True, help="Keep the temporary folder with the compile log.")
def main(warmup: float, output: Path, keep: bool) -> None:
    """Measure the compiling of generated code in the platform's continuous run."""
    folder = Path(tempfile.mkdtemp(prefix="bench-codegen-"))
    log = folder / "codegen.log"
    (folder / "log4j2.properties").write_text(LOG4J.format(log=log, logger=CODEGEN))
    extra = json.loads(os.environ.get("PLATFORM_SPARK_EXTRA_CONF") or "{}")
    option = f"-Dlog4j2.configurationFile=file:{folder / 'log4j2.properties'}"
    extra["spark.driver.extraJavaOptions"] = " ".join(
        filter(None, [extra.get("spark.driver.extraJavaOptions"), option])
    )
    env = {**os.environ, "PLATFORM_SPARK_EXTRA_CONF": json.dumps(extra)}
    command = [sys.executable, str(REPO / "benchmarks" / "bench_reaction.py"), "--quick"]
    command += ["--variants", "platform", "--output", str(folder / "reaction.json")]
    console.print(f"running {' '.join(command[1:])} (about 3 min), compiles logged to {log}")
    subprocess.run(command, env=env, check=True)
    result = summary(parse_log(log.read_text(errors="replace")), warmup)
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    show(result)
    result["at"] = datetime.now(UTC).isoformat(timespec="seconds")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"wrote {output}")


def show(result: dict[str, object]) -> None:
    table = Table(title="Compiling generated code, once warmed up")
    for column in ("compiles", "compile s", "of s", "share of one core", "all compiles", "all s"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{result.get('steady_compiles', 0):,}",
        f"{result.get('steady_compile_seconds', 0)}",
        f"{result.get('steady_seconds', 0)}",
        f"{float(result.get('steady_compile_share', 0) or 0):.1%}",
        f"{result.get('compiles', 0):,}",
        f"{result.get('compile_seconds', 0)}",
    )
    console.print(table)
    repeated = Table(title="Compiled most (same code up to its numbers)")
    for column in ("kind", "compiles", "seconds", "variants", "first differing line"):
        repeated.add_column(column)
    for row in result.get("repeated", []) or []:  # type: ignore[union-attr]
        repeated.add_row(
            row["kind"],
            str(row["compiles"]),
            str(row["seconds"]),
            str(row["variants"]),
            row["differs_in"],
        )
    console.print(repeated)


if __name__ == "__main__":
    main()
