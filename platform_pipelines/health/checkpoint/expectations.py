"""What the platform configures for checkpoints, and the thresholds the judgements use."""

from __future__ import annotations

from dataclasses import dataclass, replace

CHECK = "checkpoint"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass"


@dataclass(frozen=True)
class CheckpointExpectations:
    """What the platform configures, and the thresholds the judgements use.

    Attributes:
        state_partitions: ``spark.sql.shuffle.partitions`` the platform configures now.
        min_batches_to_retain: ``spark.sql.streaming.minBatchesToRetain``.
        state_provider: ``spark.sql.streaming.stateStore.providerClass``.
        snapshot_lag_warn: state versions a store may be past its newest snapshot (a restart
            replays that many changelogs). 50 is what Spark's own coordinator reports as lagging:
            ``multiplierForMinVersionDiffToLog`` (5) x ``minDeltasForSnapshot`` (10).
        retention_slack: batches beyond the retention Spark keeps before over-retention is
            reported (Spark purges late: asynchronously, and state only every 30 % extra versions).
        max_total_bytes: a checkpoint bigger than this is reported (restarts and copies get slow).
        max_bytes_per_batch: batches writing more than this (offsets, commits and state changes)
            are reported: the state changes by that much every batch.
    """

    state_partitions: int = 4
    min_batches_to_retain: int = 20
    state_provider: str = ROCKSDB_PROVIDER
    snapshot_lag_warn: int = 50
    retention_slack: int = 10
    max_total_bytes: int = 10 * 1024**3
    max_bytes_per_batch: int = 256 * 1024**2

    def for_stream(self, state_partitions: int | None) -> CheckpointExpectations:
        """The expectations of a stream that declares its own ``state_partitions`` (None: the
        session's).

        >>> CheckpointExpectations(state_partitions=4).for_stream(1).state_partitions
        1
        >>> CheckpointExpectations(state_partitions=4).for_stream(None).state_partitions
        4
        """
        if state_partitions is None:
            return self
        return replace(self, state_partitions=state_partitions)

    @property
    def max_retained_batches(self) -> int:
        """Offsets (or commits) files beyond which old batches are not being purged."""
        return self.min_batches_to_retain + 1 + self.retention_slack

    @property
    def max_retained_state_versions(self) -> int:
        """State versions per store beyond which old versions are not being deleted: Spark keeps
        ``min_batches_to_retain`` versions plus those back to the snapshot they start from."""
        return self.min_batches_to_retain + self.snapshot_lag_warn + self.retention_slack
