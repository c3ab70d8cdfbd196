"""What a stream's checkpoint folder holds, read without a JVM, and health judgements over it.

The layout Spark 4.2 writes (RocksDB state store with changelog checkpointing), under ``<checkpoint>/``:

``metadata``
    ``{"id": "<query id>"}``: compact JSON from Spark, or ``json.dumps`` plus a newline and no
    ``.crc`` when the platform wrote it first (``lakehouse.delta.checkpoint_query_id``).
``offsets/<n>``
    Written when batch ``n`` is planned. Line 1 the format (``v1``; ``v2`` exists too), line 2 the
    batch metadata ``{"batchWatermarkMs", "batchTimestampMs", "conf": {...}}`` where ``conf`` holds
    the SQL settings frozen into the checkpoint (``spark.sql.shuffle.partitions``,
    ``spark.sql.streaming.stateStore.providerClass``...; on restart Spark puts these back into the
    session, overriding what is configured). Then one line per source: Kafka
    ``{"topic":{"0":12,"1":7}}`` (per partition, the next offset to read), Delta
    ``{"sourceVersion":1,"reservoirId":..,"reservoirVersion":..,"index":..,"isStartingVersion":..}``,
    ``-`` for a source without an offset; ``v2`` lines are ``<sourceId>:<json>``.
``commits/<n>``
    Written when batch ``n`` is done: ``v1`` and ``{"nextBatchWatermarkMs":..}`` (``v2``/``v3`` add
    ``stateUniqueIds``/``sinkMetadataMap``). Offsets ``n`` without commit ``n`` is a batch in flight.
    Spark keeps the newest ``minBatchesToRetain + 1`` offsets and deletes older ones (and commits).
``sources/<i>/0``
    A Kafka source's initial offsets: a NUL byte, ``v1`` and JSON. Never purged.
``state/<op>/_metadata/metadata`` or ``state/<op>/_metadata/v2/<batch>``
    The stateful operator's name and, per store, ``numPartitions``. ``_stateSchema/`` holds schemas.
``state/<op>/<partition>/``
    One RocksDB store per shuffle partition (stores with other names, e.g. a join's, in subfolders):
    ``<v>.changelog`` the changes of state version ``v`` (written by batch ``v - 1``, every batch),
    ``<v>.zip`` a snapshot of version ``v`` (RocksDB's small files and a ``metadata`` entry naming the
    data files), ``SSTs/<n>-<uuid>.sst`` and ``logs/`` the data files snapshots share.
    Checkpoint format v2 names them ``<v>_<uniqueId>.zip``/``.changelog``; the HDFS-backed provider
    writes ``<v>.delta`` and ``<v>.snapshot`` instead. Snapshots are uploaded by the maintenance task
    (every ``minDeltasForSnapshot`` = 10 versions, checked every 60 s), so a store may have none yet.
    To load version ``v``, Spark reads the newest snapshot ``<= v`` and replays every changelog after it.
``.<name>.crc``
    Hadoop's checksum of ``<name>``: ``b"crc\\0"``, the chunk size (512) and a CRC32 per chunk.
    Hadoop verifies it on read, so a mismatch means Spark cannot read the file.

``inspect_checkpoint`` turns the folder into plain ``CheckpointFacts`` (never raising). It reads
every log, metadata and state version file (checksums, zips, LZ4 end blocks) but not the SST and
log data files, which can be large: only their presence and size, against the snapshots' metadata.

``judge_checkpoint`` judges the facts against ``CheckpointExpectations``; ``checkpoint_verdict``
combines the judgements into the one ``checkpoint`` check:

- ``checkpoint_batches``: fail for more than one batch with offsets but no commit (one is a batch
  in flight), a gap in the offsets or commits, or a commit newer than every offsets file.
- ``checkpoint_files``: fail for a file Spark cannot read back (empty, checksum mismatch, corrupt
  zip, snapshot missing an SST, changelog cut short) or a store missing a changelog after its
  newest snapshot.
- ``checkpoint_retention``: warn when far more batches or state versions are kept than Spark keeps.
- ``checkpoint_size``: evidence; warn only beyond ``max_total_bytes`` or ``max_bytes_per_batch``.
- ``checkpoint_snapshots``: warn when a store is more than ``snapshot_lag_warn`` versions past its
  newest snapshot.
- ``checkpoint_state_partitions``: fail when an operator's partition folders (or its metadata)
  disagree with the checkpoint's ``spark.sql.shuffle.partitions``.
- ``checkpoint_partition_config``: warn when a stateful checkpoint's partition count differs from
  the configured one (Spark keeps the checkpoint's).
- ``checkpoint_provider``: fail when a stateful checkpoint was written by another state store
  provider than the configured one (Spark keeps the checkpoint's).
- ``checkpoint_upstream`` (``upstream``, judged with the upstream table's log): fail when the
  offsets of a stream reading a Delta table are positions in a table that was since replaced.

A missing folder passes as "no checkpoint yet": a stream never run is not unhealthy.

Modules, in the order the data flows: ``files`` and ``state`` read the folder, ``facts`` assembles
``CheckpointFacts`` (``model``), ``kafka`` reads committed offsets and lag, ``judge`` and
``judge_state`` judge the facts against ``expectations``, ``text`` words the judgements.
"""

from platform_pipelines.health.checkpoint.expectations import (
    CHECK,
    PROVIDER_CLASS,
    ROCKSDB_PROVIDER,
    SHUFFLE_PARTITIONS,
    CheckpointExpectations,
)
from platform_pipelines.health.checkpoint.facts import inspect_checkpoint
from platform_pipelines.health.checkpoint.judge import checkpoint_verdict, judge_checkpoint
from platform_pipelines.health.checkpoint.kafka import kafka_committed_offsets, kafka_lag
from platform_pipelines.health.checkpoint.model import (
    CheckpointFacts,
    DamagedFile,
    Missing,
    OperatorFacts,
    StoreFacts,
)

__all__ = [
    "CHECK",
    "PROVIDER_CLASS",
    "ROCKSDB_PROVIDER",
    "SHUFFLE_PARTITIONS",
    "CheckpointExpectations",
    "CheckpointFacts",
    "DamagedFile",
    "Missing",
    "OperatorFacts",
    "StoreFacts",
    "checkpoint_verdict",
    "inspect_checkpoint",
    "judge_checkpoint",
    "kafka_committed_offsets",
    "kafka_lag",
]
