"""A pipeline driver of its own, as a deployment runs one: the clickstream streams in catch-up mode
on the Spark master of ``PLATFORM_SPARK_MASTER``, tables under ``PLATFORM_LOCAL_DIR``.

``python -m tests.cluster.driver --bootstrap HOST:PORT --topic T --report FILE`` writes to FILE
(JSON) the application id, where the executors' Python workers imported the platform from, and
how long the session start and the pipeline took.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path

from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.runtime.runner import RunOptions, run_streams
from platform_pipelines.settings import get_settings
from platform_pipelines.spark.session import SparkOptions, build_spark_session
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.query import StreamContext

STREAMS = ("clickstream_raw", "events", "user_sessions", "security_alerts")


def platform_origin(_: Iterator[int]) -> Iterator[str]:
    """Runs in an executor's Python worker: the file its ``platform_pipelines`` comes from."""
    import platform_pipelines

    yield str(platform_pipelines.__file__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--report", type=Path, required=True)
    args = parser.parse_args()
    settings, began = get_settings(), time.monotonic()
    spark = build_spark_session(SparkOptions.from_settings(settings, app_name="cluster_test"))
    session_s = time.monotonic() - began
    try:
        registry = builtin_streams(BuiltinSettings(clickstream_topic=args.topic))
        ctx = StreamContext(spark, Lakehouse(settings.lakehouse_dir), args.bootstrap)
        run_streams(ctx, [registry.get(s) for s in STREAMS], RunOptions(mode="catch_up"),
                    lambda *_: None)  # fmt: skip
        pipeline_s = time.monotonic() - began - session_s
        origins = spark.sparkContext.parallelize(range(4), 4).mapPartitions(platform_origin)
        report = {
            "application_id": spark.sparkContext.applicationId,
            "master": spark.sparkContext.master,
            "platform_imported_from": sorted(set(origins.collect())),
            "seconds": {"session": round(session_s, 1), "pipeline": round(pipeline_s, 1)},
        }
        args.report.write_text(json.dumps(report, indent=2))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
