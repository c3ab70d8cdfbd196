"""What table maintenance buys: files and read time of a bronze table after a day of 10 s batches.

A bronze stream on a 10 s trigger appends to ``clickstream_raw`` 8,640 times a day, one file per
Kafka partition that had records in the batch (3 on the demo topic). That table is built, then
read -- a full scan (the page views among all rows, counted) and a typical filtered read (one
user's events of the last hour) -- before and after the platform's maintenance
(``runtime.maintainer.maintain_table``: OPTIMIZE, then VACUUM with the default 168 h retention).
Each read is timed cold (Delta's log cache cleared: what a new job or process pays) and warm
(median of ``--repeats``).

How the appends are made: the rows are the platform's synthetic clickstream
(``kafka.producer.generate_clickstream``, malformed records left out as bronze would quarantine
them), ``--rows`` per batch, with event times spread over the batch's 10 s. The table is created
by the platform (``Lakehouse.ensure_table``, the bronze schema); each of the first appends is a
plain Delta commit written by this script (one Parquet file per partition with pyarrow, and a
commit with the ``add`` actions and statistics Delta writes), because a Spark append costs 0.3 s
to 4 s on 2 cores and 8,640 of them would take hours; the last append goes through the
platform's writer (``append_exactly_once``), which makes Delta write its checkpoint, as it does
every 10 commits of a stream.

``--auto-compact-appends N`` also measures Delta's auto compaction (table property
``delta.autoOptimize.autoCompact``): N real one-file Spark appends to a table with it and one
without, interleaved, timing each append.

Usage:
    .venv/bin/python benchmarks/bench_maintenance.py                 # 8,640 appends
    .venv/bin/python benchmarks/bench_maintenance.py --appends 870 --auto-compact-appends 0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from rich.console import Console
from rich.table import Table

from platform_pipelines.core.times import iso, to_ms
from platform_pipelines.core.units import count, size
from platform_pipelines.kafka.producer import ClickstreamConfig, generate_clickstream
from platform_pipelines.lakehouse.delta import Lakehouse, append_exactly_once, batch_tag
from platform_pipelines.lakehouse.table_files import data_files, table_files
from platform_pipelines.runtime.maintainer import MaintenanceOptions, maintain_table
from platform_pipelines.spark.session import SparkOptions, build_spark_session
from platform_pipelines.streams.builtin import builtin_streams

RESULTS = Path(__file__).parent / "results" / "maintenance.json"
TABLE = "clickstream_raw"
T0 = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)
BATCH = timedelta(seconds=10)
_ARROW = {
    "string": pa.string(),
    "double": pa.float64(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def bronze_rows(appends: int, rows: int, partitions: int) -> list[list[dict[str, Any]]]:
    """``appends`` batches of ``rows`` parsed clickstream records, with their Kafka position."""
    cfg = ClickstreamConfig(events=appends * rows * 2, users=2000, malformed_rate=0.0)
    records = (r for r in generate_clickstream(cfg) if r.kind != "malformed")
    offsets = [0] * partitions
    batches = []
    for b in range(appends):
        start = T0 + b * BATCH
        batch = []
        for i in range(rows):
            record = next(records)
            row = json.loads(record.value)
            at = start + BATCH * i / rows
            if record.kind == "late":
                at -= timedelta(seconds=30 + zlib.crc32(record.value) % 570)
            partition = zlib.crc32(row["user_id"].encode()) % partitions
            offsets[partition] += 1
            batch.append(
                {
                    **row,
                    "event_time": at,
                    "kafka_partition": partition,
                    "kafka_offset": offsets[partition],
                    "kafka_timestamp": start + BATCH,
                    "_rescued_data": None,
                }
            )
        batches.append(batch)
    return batches


class PlainAppender:
    """Appends to a Delta table the way a Spark append does, without Spark: Parquet files and a
    commit (``_delta_log/<version>.json``) with commitInfo and one ``add`` per file."""

    def __init__(self, table: Path, schema: StructType) -> None:
        self.table = table
        self.schema = schema
        self.arrow = pa.schema(
            [pa.field(f.name, _ARROW[f.dataType.simpleString()], f.nullable) for f in schema.fields]
        )

    def append(self, version: int, rows: list[dict[str, Any]], partitions: int) -> None:
        now = to_ms(datetime.now(UTC))
        adds = []
        for p in range(partitions):
            part = [r for r in rows if r["kafka_partition"] == p]
            if not part:
                continue
            name = f"part-{p:05d}-{uuid.uuid4()}-c000.snappy.parquet"
            pq.write_table(
                pa.Table.from_pylist(part, schema=self.arrow),
                self.table / name,
                compression="snappy",
            )
            adds.append(
                {
                    "add": {
                        "path": name,
                        "partitionValues": {},
                        "size": (self.table / name).stat().st_size,
                        "modificationTime": now,
                        "dataChange": True,
                        "stats": json.dumps(self._stats(part)),
                    }
                }
            )
        info = {
            "commitInfo": {
                "timestamp": now,
                "operation": "WRITE",
                "operationParameters": {"mode": "Append", "partitionBy": "[]"},
                "readVersion": version - 1,
                "isolationLevel": "Serializable",
                "isBlindAppend": True,
                "userMetadata": batch_tag("bench", version),
                "engineInfo": "bench_maintenance",
            }
        }
        lines = [json.dumps(a) for a in (info, *adds)]
        log = self.table / "_delta_log" / f"{version:020d}.json"
        log.write_text("\n".join(lines) + "\n")

    def _stats(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        low: dict[str, Any] = {}
        high: dict[str, Any] = {}
        nulls: dict[str, int] = {}
        for name in self.schema.fieldNames():
            values = [r[name] for r in rows if r[name] is not None]
            nulls[name] = len(rows) - len(values)
            if not values or any(isinstance(v, str) and len(v) > 32 for v in values):
                continue  # Delta truncates long strings' statistics; leaving them out is valid
            low[name], high[name] = min(values), max(values)
        return {
            "numRecords": len(rows),
            "minValues": _json(low),
            "maxValues": _json(high),
            "nullCount": nulls,
        }


def _json(values: dict[str, Any]) -> dict[str, Any]:
    return {k: iso(v) if isinstance(v, datetime) else v for k, v in values.items()}


def build_table(spark: SparkSession, lake: Lakehouse, args: argparse.Namespace) -> float:
    """The bronze table after ``args.appends`` appends; returns the seconds it took."""
    started = time.monotonic()
    schema = builtin_streams().get(TABLE).outputs[TABLE]
    path = lake.ensure_table(spark, TABLE, schema)
    batches = bronze_rows(args.appends, args.rows, args.partitions)
    appender = PlainAppender(path, schema)
    for version, rows in enumerate(batches[:-1], start=1):
        appender.append(version, rows, args.partitions)
    last = spark.createDataFrame(
        [tuple(r[c] for c in schema.fieldNames()) for r in batches[-1]], schema
    ).repartition(args.partitions, "kafka_partition")
    append_exactly_once(last, path, "bench", args.appends, to_ms(datetime.now(UTC)))
    return time.monotonic() - started


def timed(spark: SparkSession, query: DataFrame, cold: bool) -> tuple[float, int]:
    if cold:
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # type: ignore[union-attr]
    started = time.perf_counter()
    rows = query.count()
    return time.perf_counter() - started, rows


def read_times(spark: SparkSession, path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Cold and warm seconds of the full scan and the filtered read, and their row counts."""
    end = T0 + args.appends * BATCH

    def queries() -> dict[str, DataFrame]:
        table = spark.read.format("delta").load(str(path))
        return {
            "full_scan": table.where(F.col("event_type") == "page_view"),
            "last_hour_of_one_user": table.where(
                (F.col("event_time") >= F.lit(end - timedelta(hours=1)))
                & (F.col("user_id") == "user-00042")
            ),
        }

    figures: dict[str, Any] = {}
    for name in queries():
        cold, rows = timed(spark, queries()[name], cold=True)
        warm = [timed(spark, queries()[name], cold=False)[0] for _ in range(args.repeats)]
        figures[name] = {
            "cold_seconds": round(cold, 2),
            "warm_seconds": round(statistics.median(warm), 2),
            "rows": rows,
        }
    return figures


def file_figures(path: Path) -> dict[str, Any]:
    live = table_files(path)
    assert live is not None
    disk = data_files(path)
    return {
        "version": live.version,
        "live_files": live.files,
        "live_bytes": live.bytes,
        "avg_file_bytes": round(live.avg_bytes),
        "files_on_disk": len(disk),
        "bytes_on_disk": sum(disk.values()),
    }


def auto_compaction(spark: SparkSession, folder: Path, appends: int) -> dict[str, Any]:
    """Per-append seconds and final files with and without ``delta.autoOptimize.autoCompact``."""
    tables = {"plain": folder / "plain", "auto_compact": folder / "auto_compact"}
    seconds: dict[str, list[float]] = {name: [] for name in tables}
    rows = spark.range(100).select(F.col("id"), F.lit("x" * 40).alias("payload")).coalesce(1)
    for name, path in tables.items():
        rows.limit(0).write.format("delta").save(str(path))
        if name == "auto_compact":
            spark.sql(
                f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES "
                "('delta.autoOptimize.autoCompact' = 'true')"
            )
    for _ in range(appends):
        for name, path in tables.items():
            started = time.perf_counter()
            rows.write.format("delta").mode("append").save(str(path))
            seconds[name].append(time.perf_counter() - started)
    figures = {}
    for name, path in tables.items():
        kept = sorted(seconds[name])
        live = table_files(path)
        figures[name] = {
            "append_p50_seconds": round(statistics.median(kept), 3),
            "append_p95_seconds": round(kept[int(0.95 * (len(kept) - 1))], 3),
            "append_max_seconds": round(kept[-1], 3),
            "append_total_seconds": round(sum(kept), 1),
            "live_files": live.files if live else 0,
        }
    return {"appends": appends, **figures}


def report(console: Console, result: dict[str, Any]) -> None:
    table = Table(
        "",
        "files",
        "avg file",
        "full scan cold",
        "full scan warm",
        "filtered cold",
        "filtered warm",
        title=f"{TABLE} after {count(result['appends'])} appends",
    )
    for label in ("without_maintenance", "with_maintenance"):
        files, reads = result[label]["files"], result[label]["reads"]
        full, one = reads["full_scan"], reads["last_hour_of_one_user"]
        table.add_row(
            label.replace("_", " "),
            count(files["live_files"]),
            size(files["avg_file_bytes"]),
            f"{full['cold_seconds']:.1f} s",
            f"{full['warm_seconds']:.1f} s",
            f"{one['cold_seconds']:.1f} s",
            f"{one['warm_seconds']:.1f} s",
        )
    console.print(table)
    console.print(
        f"maintenance took {result['maintenance']['seconds']:.0f} s "
        f"(retention {result['maintenance']['retention_hours']:.0f} h)"
    )
    if auto := result.get("auto_compaction"):
        console.print(f"auto compaction over {auto['appends']} appends: {auto}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=8640, help="a multiple of 10")
    parser.add_argument("--rows", type=int, default=100, help="rows per append")
    parser.add_argument("--partitions", type=int, default=3, help="Kafka partitions (files)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--auto-compact-appends", type=int, default=100)
    args = parser.parse_args()
    console = Console()
    spark = build_spark_session(
        SparkOptions(master="local[2]", state_partitions=2, ui_enabled=False)
    )
    lake = Lakehouse(Path(tempfile.mkdtemp(prefix="bench_maintenance_")))
    loads = [os.getloadavg()[0]]
    with console.status(f"Writing {count(args.appends)} appends..."):
        built = build_table(spark, lake, args)
    path = lake.table(TABLE)
    result: dict[str, Any] = {
        "appends": args.appends,
        "rows_per_append": args.rows,
        "kafka_partitions": args.partitions,
        "build_seconds": round(built),
    }
    with console.status("Reading without maintenance..."):
        result["without_maintenance"] = {
            "files": file_figures(path),
            "reads": read_times(spark, path, args),
        }
    loads.append(os.getloadavg()[0])
    with console.status("Maintaining..."):
        done = maintain_table(spark, lake, [], TABLE, MaintenanceOptions())
    result["maintenance"] = {
        "seconds": round(done.seconds, 1),
        "retention_hours": done.retention.hours,
        "files_compacted": done.compaction.files_removed if done.compaction else 0,
        "files_vacuumed": done.vacuum.files_deleted if done.vacuum else 0,
    }
    with console.status("Reading with maintenance..."):
        result["with_maintenance"] = {
            "files": file_figures(path),
            "reads": read_times(spark, path, args),
        }
    loads.append(os.getloadavg()[0])
    if args.auto_compact_appends:
        with console.status("Auto compaction..."):
            result["auto_compaction"] = auto_compaction(
                spark, lake.root / "auto", args.auto_compact_appends
            )
        loads.append(os.getloadavg()[0])
    spark.stop()
    result["load_average"] = [round(min(loads), 2), round(max(loads), 2)]
    report(console, result)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"Results written to {RESULTS}")


if __name__ == "__main__":
    main()
