"""Where a stream's results land: Delta tables and checkpoints under one lakehouse folder.

One name per stream: the Delta table ``tables/<name>``, the checkpoint ``checkpoints/<name>``, the
Dagster asset key and the Spark query name are all ``<name>``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType


@dataclass(frozen=True)
class Lakehouse:
    """The folder that holds every Delta table and checkpoint of the platform."""

    root: Path

    def table(self, name: str) -> Path:
        return self.root / "tables" / name

    def checkpoint(self, name: str) -> Path:
        return self.root / "checkpoints" / name

    def ensure_table(self, spark: SparkSession, name: str, schema: StructType) -> Path:
        """Create an empty Delta table if there is none, so downstream streams can start first."""
        path = self.table(name)
        if not (path / "_delta_log").exists():
            spark.createDataFrame([], schema).write.format("delta").mode("ignore").save(str(path))
        return path


def checkpoint_query_id(checkpoint: Path) -> str:
    """The query id stored in a checkpoint, creating the checkpoint's metadata file if it is new.

    Spark keeps a query's id in ``<checkpoint>/metadata`` and reuses it on every restart. Writing the
    file first lets a ``foreachBatch`` sink know the id before the query starts: its idempotent Delta
    writes are keyed by it, so a new checkpoint (new id) never has its batches mistaken for replays.
    """
    meta = checkpoint / "metadata"
    if not meta.exists():
        checkpoint.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({"id": str(uuid.uuid4())}) + "\n")
    return str(json.loads(meta.read_text().splitlines()[0])["id"])


def append_exactly_once(df: DataFrame, path: Path, app_id: str, batch_id: int) -> None:
    """Append one micro-batch to a Delta table; a replay of the same batch id writes nothing.

    Delta records (txnAppId, txnVersion) in the commit and skips a write whose version it has seen.
    """
    (
        df.write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .save(str(path))
    )


def upsert_exactly_once(df: DataFrame, path: Path, key: str, app_id: str, batch_id: int) -> None:
    """MERGE one micro-batch into a Delta table by ``key`` (the latest row per key wins).

    For MERGE, Delta reads the idempotency pair from the session settings of the same names; they
    are set for this one statement and cleared afterwards.
    """
    from delta.tables import DeltaTable

    spark = df.sparkSession
    latest = df.dropDuplicates([key])  # an update-mode batch has one row per key; be safe
    spark.conf.set("spark.databricks.delta.write.txnAppId", app_id)
    spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
    try:
        (
            DeltaTable.forPath(spark, str(path))
            .alias("t")
            .merge(latest.alias("s"), f"t.`{key}` = s.`{key}`")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
    finally:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")
