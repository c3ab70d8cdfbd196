"""A pipeline driver of its own, as a deployment runs one: the clickstream streams in catch-up mode
on the Spark master of ``PLATFORM_SPARK_MASTER``, tables and checkpoints in the lakehouse of the
settings (``PLATFORM_LOCAL_DIR``, or ``PLATFORM_LAKEHOUSE_DIR`` on S3), with the checkpoint locks.

``python -m tests.cluster.driver --bootstrap HOST:PORT --topic T --report FILE`` writes to FILE
(JSON) the application id, where the executors' Python workers imported the platform from, how
long the session start and the pipeline took and, with ``--tables``, every row of each table
(JSON-safe, sorted) and what the health layer reads from each stream's checkpoint.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql import SparkSession

from platform_pipelines.health.checkpoint.facts import inspect_checkpoint
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.run_options import RunOptions
from platform_pipelines.runtime.runner import run_streams
from platform_pipelines.settings import get_settings
from platform_pipelines.spark.session import SparkOptions, build_spark_session
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext

STREAMS = ("clickstream_raw", "events", "user_sessions", "security_alerts")


def platform_origin(_: Iterator[int]) -> Iterator[str]:
    """Runs in an executor's Python worker: the file its ``platform_pipelines`` comes from."""
    import platform_pipelines

    yield str(platform_pipelines.__file__)


def table_rows(spark: SparkSession, lake: Lakehouse, name: str) -> list[dict]:
    """Every row of a lakehouse table, values as ``repr`` strings (JSON-safe, comparable)."""
    rows = spark.read.format("delta").load(str(lake.table(name))).collect()
    return [{k: repr(v) for k, v in r.asDict(recursive=True).items()} for r in rows]


def checkpoint_report(checkpoint: Path) -> dict:
    """What the health layer reads from a checkpoint, and its verdict."""
    facts = inspect_checkpoint(checkpoint)
    return {
        "path": facts.path,
        "commits": facts.commits,
        "state_bytes": facts.state_bytes,
        "damaged": [str(d) for d in facts.damaged],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--tables", nargs="*", default=[], help="tables whose rows to report")
    parser.add_argument("--streams", nargs="*", default=list(STREAMS), help="streams to run")
    args = parser.parse_args()
    settings, began = get_settings(), time.monotonic()
    spark = build_spark_session(SparkOptions.from_settings(settings, app_name="cluster_test"))
    session_s = time.monotonic() - began
    try:
        registry = builtin_streams(BuiltinSettings(clickstream_topic=args.topic))
        lake = Lakehouse(settings.lakehouse_dir)
        ctx = StreamContext(spark, lake, args.bootstrap)
        run_streams(
            ctx,
            [registry.get(s) for s in args.streams],
            RunOptions(mode="catch_up"),
            lambda *_: None,
        )
        pipeline_s = time.monotonic() - began - session_s
        origins = spark.sparkContext.parallelize(range(4), 4).mapPartitions(platform_origin)
        report = {
            "application_id": spark.sparkContext.applicationId,
            "master": spark.sparkContext.master,
            "platform_imported_from": sorted(set(origins.collect())),
            "seconds": {"session": round(session_s, 1), "pipeline": round(pipeline_s, 1)},
            "tables": {name: table_rows(spark, lake, name) for name in args.tables},
            "checkpoints": {s: checkpoint_report(lake.checkpoint(s)) for s in args.streams},
        }
        args.report.write_text(json.dumps(report, indent=2))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
