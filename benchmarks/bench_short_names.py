"""What py4j's lookup of PySpark's short class names costs, and what binding them once saves.

PySpark reaches some Java helpers by short name (``sc._jvm.PythonUtils`` in every ``select`` of
several columns), and py4j resolves such a name at each use by guessing its package, each wrong
guess searching every jar (``platform_pipelines.spark.short_names``). On one session, first as
PySpark leaves it, then with the names bound: the mean time of a ``select`` with an array of two
columns (built on the driver, not run) and of one lookup of ``PythonUtils`` and of
``PythonSQLUtils``, over ``--calls`` calls each.

Usage:
    .venv/bin/python benchmarks/bench_short_names.py --calls 500
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from rich.console import Console
from rich.table import Table

from platform_pipelines.spark.session import SparkOptions, build_spark_session
from platform_pipelines.spark.short_names import PYSPARK_SHORT_NAMES

RESULTS = Path(__file__).parent / "results" / "short_names.json"


def _mean_ms(call: Callable[[], object], calls: int) -> float:
    for _ in range(min(calls, 50)):  # warm up
        call()
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return round((time.perf_counter() - started) / calls * 1000, 3)


def _measure(df: DataFrame, jvm: Any, calls: int) -> dict[str, float]:
    return {
        "select_with_array_ms": _mean_ms(
            lambda: df.select(F.col("a"), F.array("a", "b").alias("c")), calls
        ),
        "PythonUtils_lookup_ms": _mean_ms(lambda: jvm.PythonUtils, calls),
        "PythonSQLUtils_lookup_ms": _mean_ms(lambda: jvm.PythonSQLUtils, calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    spark = build_spark_session(
        SparkOptions(master="local[2]", state_partitions=2, ui_enabled=False)
    )
    jvm = spark.sparkContext._jvm
    df = spark.range(3).select(F.col("id").alias("a"), F.col("id").alias("b"))
    for name in PYSPARK_SHORT_NAMES:  # the session bound them: measure PySpark's own way first
        vars(jvm).pop(name, None)
    results = {"as PySpark leaves them": _measure(df, jvm, args.calls)}
    for name in PYSPARK_SHORT_NAMES:
        vars(jvm)[name] = type(jvm).__getattr__(jvm, name)
    results["bound once"] = _measure(df, jvm, args.calls)
    load = os.getloadavg()[0]
    spark.stop()

    columns = ("select with an array, ms", "PythonUtils, ms", "PythonSQLUtils, ms")
    table = Table("names", *columns, title=f"Mean of {args.calls} calls")
    for label, figures in results.items():
        table.add_row(label, *(f"{v:.3f}" for v in figures.values()))
    console = Console()
    console.print(table)
    console.print(f"load average {load:.2f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"calls": args.calls, "load": load, "results": results}, indent=2) + "\n"
    )
    console.print(f"Results written to {RESULTS}")


if __name__ == "__main__":
    main()
