"""Where a stream's results land: Delta tables and checkpoints under one lakehouse folder.

One name per stream: the Delta table ``tables/<name>``, the checkpoint ``checkpoints/<name>``, the
Dagster asset key and the Spark query name are all ``<name>``.
"""

from __future__ import annotations

import fcntl
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import cast

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from platform_pipelines.core.names import check_name, quote_column
from platform_pipelines.core.storage import on_object_store, remove_tree
from platform_pipelines.lakehouse.delta_log import last_written_batch
from platform_pipelines.lakehouse.pointers import current_folder
from platform_pipelines.spark.together import run_together

# MERGE takes the commit's user metadata from the session, not from a writer option.
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
# A batch's commits come after its planning on the same clock; a minute covers any skew between
# the driver that planned it and the writer's commit timestamp.
_CLOCK_SKEW_MS = 60_000


@dataclass(frozen=True)
class Lakehouse:
    """The folder that holds every Delta table and checkpoint of the platform."""

    root: Path

    def table(self, name: str) -> Path:
        """The folder of the table's current generation: ``tables/<name>``, or the one its
        pointer names after a rebuild (``lakehouse.pointers``). A name that could leave the
        folder is refused (``InvalidName``)."""
        tables = self.root / "tables"
        return tables / current_folder(tables, check_name("table", name))

    def checkpoint(self, name: str) -> Path:
        """``checkpoints/<name>``, or the folder its pointer names after a rebuild; a name that
        could leave the folder is refused."""
        checkpoints = self.root / "checkpoints"
        return checkpoints / current_folder(checkpoints, check_name("stream", name))

    def ensure_table(self, spark: SparkSession, name: str, schema: StructType) -> Path:
        """Create an empty Delta table if there is none, so downstream streams can start first.

        A table exists once its first commit does. A folder without one is what a process killed
        during its first start leaves behind (data files or ``_delta_log/_staged_commits`` but no
        commit): nothing in it was ever committed, so it is removed and the table created anew.
        Creation holds a lock, so two processes creating a shared table never see each other's
        half-made folder. On an object store there is no such lock: nothing is removed there
        (leftover files of a killed first start stay unreferenced until VACUUM), and tables are
        created by one process at a time by running streams in one driver (README "Object
        storage").
        """
        self.ensure_tables(spark, {name: schema})
        return self.table(name)

    def ensure_tables(self, spark: SparkSession, schemas: Mapping[str, StructType]) -> None:
        """``ensure_table`` for several tables: the missing ones are created under one hold of
        the lock, their commits overlapping (a stream's first start creates up to four)."""
        if all(has_commit(self.table(n)) for n in schemas):
            return
        with self._creating():
            missing = {n: s for n, s in schemas.items() if not has_commit(self.table(n))}
            run_together(*[partial(self._create, spark, n, s) for n, s in missing.items()])

    def _create(self, spark: SparkSession, name: str, schema: StructType) -> None:
        path = self.table(name)
        if path.exists() and not on_object_store(path):
            remove_tree(path)
        # A metadata-only commit: half the time of writing an empty DataFrame, which plans and
        # runs a Spark job. Nullable as a DataFrame write makes it, so no NOT NULL constraint.
        from delta.tables import DeltaTable

        builder = DeltaTable.createIfNotExists(spark).location(str(path))
        builder.addColumns(nullable(schema)).execute()

    @contextmanager
    def _creating(self) -> Iterator[None]:
        if on_object_store(self.root):
            yield
            return
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / ".create.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield


def nullable(schema: StructType) -> StructType:
    """``schema`` with every field, array element and map value nullable, as Spark's
    ``asNullable`` makes a DataFrame's schema when Delta writes it.

    >>> from pyspark.sql.types import ArrayType, StringType, StructField
    >>> nullable(StructType([StructField("a", ArrayType(StringType(), False), False)])).simpleString()
    'struct<a:array<string>>'
    >>> nullable(StructType([StructField("a", StringType(), False)])).fields[0].nullable
    True
    """
    return cast(StructType, _nullable(schema))


def _nullable(kind: DataType) -> DataType:
    if isinstance(kind, StructType):
        return StructType(
            [StructField(f.name, _nullable(f.dataType), True, f.metadata) for f in kind.fields]
        )
    if isinstance(kind, ArrayType):
        return ArrayType(_nullable(kind.elementType), True)
    if isinstance(kind, MapType):
        return MapType(kind.keyType, _nullable(kind.valueType), True)
    return kind


def has_commit(table: Path) -> bool:
    """Whether ``table`` is a Delta table: its log holds a commit or a checkpoint."""
    log = table / "_delta_log"
    return log.is_dir() and any(
        p.name.endswith(".json") or p.name.endswith(".checkpoint.parquet") for p in log.iterdir()
    )


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


def batch_tag(app_id: str, batch_id: int) -> str:
    """What a write records in its commit (``commitInfo.userMetadata``) to be found on a replay.

    >>> batch_tag("events/q1", 7)
    '{"appId": "events/q1", "batch": 7}'
    """
    return json.dumps({"appId": app_id, "batch": batch_id})


def written_already(path: Path, app_id: str, batch_id: int, planned_ms: int) -> bool:
    """Whether batch ``batch_id`` of writer ``app_id`` (planned at ``planned_ms``) is in ``path``."""
    last = last_written_batch(path, app_id, planned_ms - _CLOCK_SKEW_MS)
    return last is not None and last >= batch_id


def append_exactly_once(
    df: DataFrame,
    path: Path,
    app_id: str,
    batch_id: int,
    planned_ms: int,
    *,
    merge_schema: bool = False,
) -> None:
    """Append one micro-batch to a Delta table; a replay of the same batch id writes nothing.

    The batch is tagged in its commit (``batch_tag``) and looked up in the log before writing
    (``planned_ms``: when the batch was planned; the lookup reads commits back to then). Only
    one writer per ``app_id`` runs at a time (the checkpoint lock), so the check and the write
    need no transaction of their own. Delta's own idempotent writes (``txnAppId``/``txnVersion``)
    do the same, but rebuild the table's state in three Spark jobs on every write: about 1.5 s
    per commit on 2 cores, against a few milliseconds of reading JSON here.
    ``merge_schema`` lets a platform table gain the columns a newer version added.
    """
    if written_already(path, app_id, batch_id, planned_ms):
        return
    writer = (
        df.write.format("delta").mode("append").option("userMetadata", batch_tag(app_id, batch_id))
    )
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    writer.save(str(path))


def upsert_exactly_once(
    df: DataFrame, path: Path, keys: Sequence[str], app_id: str, batch_id: int, planned_ms: int
) -> None:
    """MERGE one micro-batch into a Delta table by the ``keys`` columns (null-safe: a null key
    value matches a null); of several rows of one key in the batch, the last one emitted wins
    (``df``'s partition order, which is emission order). A replay of the same batch id writes
    nothing (as ``append_exactly_once``).
    """
    from delta.tables import DeltaTable

    if written_already(path, app_id, batch_id, planned_ms):
        return
    spark = df.sparkSession
    order = Window.partitionBy(*keys).orderBy(F.desc("_emitted"))
    latest = (
        df.withColumn("_emitted", F.monotonically_increasing_id())
        .withColumn("_n", F.row_number().over(order))
        .where("_n = 1")
        .drop("_emitted", "_n")
    )
    spark.conf.set(_USER_METADATA, batch_tag(app_id, batch_id))
    try:
        (
            DeltaTable.forPath(spark, str(path))
            .alias("t")
            .merge(latest.alias("s"), merge_condition(keys))
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
    finally:
        spark.conf.unset(_USER_METADATA)


def merge_condition(keys: Sequence[str]) -> str:
    """The MERGE condition matching a target row to a source row on every key column.

    >>> merge_condition(["user_id", "activity"])
    't.`user_id` <=> s.`user_id` AND t.`activity` <=> s.`activity`'
    """
    return " AND ".join(f"t.{quote_column(k)} <=> s.{quote_column(k)}" for k in keys)
