"""Checkpoint folders read and judged without a JVM.

Folders are built in tmp_path with files shaped like the ones Spark 4.2 writes (copied from real
checkpoints: offsets/commits logs, Hadoop .crc files, RocksDB changelogs and snapshot zips); one test
reads a real checkpoint copied into tests/unit/data/checkpoints/.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from platform_pipelines.core.verdict import Status, Verdict
from platform_pipelines.health.checkpoint import (
    CheckpointExpectations,
    CheckpointFacts,
    DamagedFile,
    checkpoint_verdict,
    inspect_checkpoint,
    judge_checkpoint,
    kafka_committed_offsets,
    kafka_lag,
)

DATA = Path(__file__).parents[2] / "data" / "checkpoints"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
CONF = {  # the conf Spark 4.2 froze into the platform's checkpoints
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.streaming.stateStore.rocksdb.formatVersion": "5",
    "spark.sql.streaming.stateStore.encodingFormat": "unsaferow",
    "spark.sql.streaming.statefulOperator.useStrictDistribution": "true",
    "spark.sql.streaming.multipleWatermarkPolicy": "min",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.streaming.stateStore.compression.codec": "lz4",
}
DELTA_SOURCE = {
    "sourceVersion": 1,
    "reservoirId": "bbd030cc-a47c-4b14-9fc6-6c355a13fe79",
    "reservoirVersion": 3,
    "index": -1,
    "isStartingVersion": False,
}
# A real changelog of a version without changes: one LZ4 block, then the LZ4 end block.
EMPTY_CHANGELOG = bytes.fromhex(
    "4c5a34426c6f636b1505000000050000009a20460200027632004c5a34426c6f636b15000000000000000000000000"
)
SST = "000008-1cead6f0-5263-4797-8625-06d04fab3902.sst"
TWS = "transformWithStateInPySparkExec"


def hadoop_crc(data: bytes) -> bytes:
    """What Hadoop's local file system writes to ``.<name>.crc``."""
    sums = [zlib.crc32(data[i : i + 512]) for i in range(0, len(data), 512)]
    return b"crc\x00" + struct.pack(">i", 512) + b"".join(struct.pack(">I", s) for s in sums)


@dataclass
class Checkpoint:
    """Writes checkpoint files the way Spark lays them out."""

    root: Path

    def file(self, rel: str, data: bytes | str, checksum: bool = True) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        if checksum:
            path.with_name(f".{path.name}.crc").write_bytes(hadoop_crc(path.read_bytes()))
        return path

    def offsets(
        self, batch: int, sources: Iterable[dict[str, Any]] = (DELTA_SOURCE,), **conf: str
    ) -> None:
        meta = {
            "batchWatermarkMs": 0,
            "batchTimestampMs": 1795313468366 + batch,
            "conf": CONF | conf,
        }
        lines = ["v1", json.dumps(meta, separators=(",", ":"))]
        self.file(f"offsets/{batch}", "\n".join(lines + [json.dumps(s) for s in sources]))

    def commit(self, batch: int) -> None:
        self.file(f"commits/{batch}", 'v1\n{"nextBatchWatermarkMs":0}')

    def batches(self, committed: Iterable[int], in_flight: Iterable[int] = (), **conf: str) -> None:
        for batch in committed:
            self.offsets(batch, **conf)
            self.commit(batch)
        for batch in in_flight:
            self.offsets(batch, **conf)

    def changelog(self, partition: int, version: int, data: bytes = EMPTY_CHANGELOG) -> None:
        self.file(f"state/0/{partition}/{version}.changelog", data)

    def snapshot(self, partition: int, version: int) -> None:
        """A RocksDB snapshot zip and the SST file its metadata names."""
        self.file(f"state/0/{partition}/SSTs/{SST}", b"\x01" * 1322)
        metadata = {
            "sstFiles": [{"localFileName": "000008.sst", "dfsSstFileName": SST, "sizeBytes": 1322}],
            "numKeys": 3,
        }
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("CURRENT", "MANIFEST-000005\n")
            archive.writestr("MANIFEST-000005", b"\x16=~0'")
            archive.writestr("metadata", "v1\n" + json.dumps(metadata))
        self.file(f"state/0/{partition}/{version}.zip", buffer.getvalue())

    def operator(
        self,
        partitions: Iterable[int] = range(4),
        versions: Iterable[int] = range(1, 4),
        snapshots: Iterable[int] = (1,),
        num_partitions: int = 4,
    ) -> None:
        """Operator 0 (a transformWithState) with its metadata, changelogs and snapshots."""
        info = {
            "operatorInfo": {"operatorId": 0, "operatorName": TWS},
            "stateStoreInfo": [{"storeName": "default", "numPartitions": num_partitions}],
        }
        self.file("state/0/_metadata/v2/0", "v2\n" + json.dumps(info))
        for partition in partitions:
            for version in versions:
                self.changelog(partition, version)
            for version in snapshots:
                self.snapshot(partition, version)


def healthy(tmp_path: Path) -> Checkpoint:
    """A stateful stream after 3 committed batches: 4 partitions, a snapshot at version 1."""
    cp = Checkpoint(tmp_path / "stream")
    cp.file("metadata", '{"id":"1750e225-9f35-49bd-aaf8-76c8e5ac792d"}')
    cp.batches(committed=range(3))
    cp.operator()
    return cp


def judged(
    cp: Checkpoint, expected: CheckpointExpectations = CheckpointExpectations()
) -> dict[str, Verdict]:
    return {v.check: v for v in judge_checkpoint(inspect_checkpoint(cp.root), expected)}


def statuses(verdicts: dict[str, Verdict]) -> dict[str, str]:
    return {check: v.status.value for check, v in verdicts.items() if v.status is not Status.PASS}


def test_a_healthy_checkpoint_passes_every_judgement_with_its_numbers(tmp_path):
    cp = healthy(tmp_path)
    facts = inspect_checkpoint(cp.root)

    assert facts.exists and facts.query_id == "1750e225-9f35-49bd-aaf8-76c8e5ac792d"
    assert (facts.offsets, facts.commits) == ([0, 1, 2], [0, 1, 2])
    assert facts.checkpoint_conf == CONF
    assert facts.latest_source_offsets == [DELTA_SOURCE]
    op = facts.operators["0"]
    assert (op.name, op.partitions, op.metadata_partitions) == (TWS, (0, 1, 2, 3), 4)
    assert [(s.snapshots, s.changelogs, s.snapshot_lag) for s in op.stores] == [
        ((1,), (1, 2, 3), 2)
    ] * 4
    assert facts.all_damaged == []

    verdict = checkpoint_verdict(facts)
    assert verdict.check == "checkpoint" and verdict.status is Status.PASS and verdict.remedy == ""
    assert "batches 0-2, last committed 2" in verdict.summary
    numbers = {
        "latest_offset_batch": 2,
        "latest_committed_batch": 2,
        "uncommitted_batches": 0,
        "offset_gaps": 0,
        "commit_gaps": 0,
        "damaged_files": 0,
        "retained_offsets": 3,
        "retained_state_versions": 3,
        "max_snapshot_lag": 2,
        "checkpoint_partitions": 4,
        "partition_dirs_op0": 4,
        "configured_partitions": 4,
    }
    assert {k: verdict.evidence[k] for k in numbers} == numbers
    assert verdict.evidence["total_bytes"] == sum(
        p.stat().st_size for p in cp.root.rglob("*") if p.is_file()
    )


def test_one_batch_in_flight_is_normal(tmp_path):
    cp = healthy(tmp_path)
    cp.offsets(3)

    batches = judged(cp)["checkpoint_batches"]

    assert batches.status is Status.PASS
    assert batches.summary == "batches 0-3, last committed 2, batch 3 in flight"
    assert batches.evidence["uncommitted_batches"] == 1


def test_two_batches_without_commit_fail_and_say_which(tmp_path):
    cp = healthy(tmp_path)
    cp.batches(committed=range(3, 7), in_flight=[7, 8])

    verdict = checkpoint_verdict(inspect_checkpoint(cp.root))

    assert verdict.status is Status.FAIL
    assert verdict.line().startswith("fail checkpoint: 2 batches (7, 8) have offsets but no commit")
    assert verdict.remedy == (
        "On restart Spark would count batch 7 as done without running it: stop the stream and "
        "delete the offsets files newer than the last commit (6): 7, 8, so Spark plans those "
        "batches again; or rebuild the stream on a new checkpoint (`platform reprocess STREAM`)."
    )
    assert (
        verdict.evidence["uncommitted_batches"],
        verdict.evidence["latest_committed_batch"],
    ) == (2, 6)


def test_a_gap_in_the_offsets_fails(tmp_path):
    cp = healthy(tmp_path)
    cp.batches(committed=range(3, 6))
    (cp.root / "offsets" / "3").unlink()

    batches = judged(cp)["checkpoint_batches"]

    assert batches.status is Status.FAIL
    assert batches.summary == "offsets/ is missing 1 batch (3) between 0 and 5"
    assert (batches.evidence["offset_gaps"], batches.evidence["commit_gaps"]) == (1, 0)


def test_a_gap_in_the_commits_fails(tmp_path):
    cp = healthy(tmp_path)
    cp.batches(committed=range(3, 6))
    (cp.root / "commits" / "2").unlink()
    (cp.root / "commits" / "3").unlink()

    batches = judged(cp)["checkpoint_batches"]

    assert batches.status is Status.FAIL
    assert batches.summary == (
        "2 batches (2, 3) have offsets but no commit; commits/ is missing 2 batches (2, 3) between 0 and 5"
    )
    assert "commits/ lost files" in batches.remedy
    assert (batches.evidence["commit_gaps"], batches.evidence["uncommitted_batches"]) == (2, 2)


def test_a_commit_without_offsets_fails(tmp_path):
    cp = healthy(tmp_path)
    cp.commit(3)

    batches = judged(cp)["checkpoint_batches"]

    assert batches.status is Status.FAIL
    assert batches.summary == "1 batch (3) committed without an offsets file"


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ("empty_zip", "state/0/1/1.zip is empty (0 bytes)"),
        ("corrupt_zip", "state/0/1/1.zip is a corrupt zip (File is not a zip file)"),
        ("empty_changelog", "state/0/1/3.changelog is empty (0 bytes)"),
        ("cut_changelog", "state/0/1/3.changelog is cut short (its LZ4 stream has no end block)"),
        ("missing_sst", f"state/0/1/1.zip needs SSTs/{SST}, which is missing"),
        (
            "changed_commit",
            "commits/2 does not match its .crc checksum (changed or cut short; 29 bytes now)",
        ),
        ("empty_offsets", "offsets/2 is empty (0 bytes)"),
    ],
)
def test_a_damaged_file_fails_and_is_named(tmp_path, damage, problem):
    cp = healthy(tmp_path)
    state = cp.root / "state" / "0" / "1"
    if damage == "empty_zip":
        cp.file("state/0/1/1.zip", b"")
    elif damage == "corrupt_zip":
        cp.file("state/0/1/1.zip", b"PK\x03\x04 not really a zip")
    elif damage == "empty_changelog":
        cp.file("state/0/1/3.changelog", b"")
    elif damage == "cut_changelog":
        cp.file("state/0/1/3.changelog", EMPTY_CHANGELOG[:-10])
    elif damage == "missing_sst":
        (state / "SSTs" / SST).unlink()
    elif damage == "changed_commit":  # written behind Spark's back: the .crc no longer matches
        (cp.root / "commits" / "2").write_text('v1\n{"nextBatchWatermarkMs":9}')
    elif damage == "empty_offsets":
        cp.file("offsets/2", b"", checksum=False)

    files = judged(cp)["checkpoint_files"]

    assert files.status is Status.FAIL
    assert files.summary == f"1 damaged file: {problem}"
    assert files.evidence["damaged_files"] == 1
    assert "restore its newest savepoint" in files.remedy


def test_a_store_missing_a_changelog_after_its_snapshot_cannot_be_rebuilt(tmp_path):
    cp = healthy(tmp_path)
    (cp.root / "state" / "0" / "2" / "2.changelog").unlink()

    files = judged(cp)["checkpoint_files"]

    assert files.status is Status.FAIL
    assert (
        files.summary == "state/0/2 lacks changelog 2 needed to rebuild version 3 from snapshot 1"
    )
    assert files.evidence["stores_missing_versions"] == 1


def test_partition_folders_that_do_not_match_the_checkpoint_fail(tmp_path):
    cp = healthy(tmp_path)
    shutil.rmtree(cp.root / "state" / "0" / "3")

    partitions = judged(cp)["checkpoint_state_partitions"]

    assert partitions.status is Status.FAIL
    assert partitions.summary == (
        "operator 0 has 3 partition folders, the checkpoint records 4 (missing 3)"
    )
    assert (
        partitions.evidence["partition_dirs_op0"],
        partitions.evidence["checkpoint_partitions"],
    ) == (3, 4)


def test_operator_metadata_disagreeing_with_the_checkpoint_fails(tmp_path):
    cp = Checkpoint(tmp_path / "stream")
    cp.batches(committed=range(2))
    cp.operator(num_partitions=8)

    partitions = judged(cp)["checkpoint_state_partitions"]

    assert partitions.status is Status.FAIL
    assert "(its metadata records 8)" in partitions.summary


def test_a_checkpoint_created_with_other_partitions_than_configured_warns_with_both(tmp_path):
    cp = Checkpoint(tmp_path / "stream")
    cp.batches(committed=range(3), **{"spark.sql.shuffle.partitions": "8"})
    cp.operator(partitions=range(8), num_partitions=8)

    verdicts = judged(cp, CheckpointExpectations(state_partitions=4))

    assert statuses(verdicts) == {"checkpoint_partition_config": "warn"}
    config = verdicts["checkpoint_partition_config"]
    assert config.summary == (
        "checkpoint was created with 8 state partitions but 4 are configured; "
        "Spark keeps 8 for this stream"
    )
    assert config.remedy == (
        "Keep state_partitions=8 for this stream, or rebuild it on a new checkpoint "
        "(`platform reprocess STREAM`) to use 4."
    )
    assert verdicts["checkpoint_state_partitions"].evidence["checkpoint_partitions"] == 8


def test_a_stateless_checkpoint_ignores_partition_count_and_provider(tmp_path):
    cp = Checkpoint(tmp_path / "stream")
    cp.batches(committed=range(2), **{"spark.sql.shuffle.partitions": "200"})

    assert statuses(judged(cp, CheckpointExpectations(state_provider=HDFS))) == {}


def test_another_state_store_provider_fails(tmp_path):
    cp = Checkpoint(tmp_path / "stream")
    cp.batches(committed=range(3), **{"spark.sql.streaming.stateStore.providerClass": HDFS})
    for partition in range(4):  # HDFSBackedStateStoreProvider's files
        for version in (1, 2, 3):
            cp.file(f"state/0/{partition}/{version}.delta", EMPTY_CHANGELOG)

    verdicts = judged(cp)

    assert statuses(verdicts) == {"checkpoint_provider": "fail"}
    provider = verdicts["checkpoint_provider"]
    assert provider.summary.startswith(
        "checkpoint state was written by HDFSBackedStateStoreProvider but "
        "RocksDBStateStoreProvider is configured"
    )
    assert provider.evidence == {
        "checkpoint_provider": "HDFSBackedStateStoreProvider",
        "configured_provider": "RocksDBStateStoreProvider",
    }


def test_a_store_far_past_its_snapshot_warns(tmp_path):
    cp = Checkpoint(tmp_path / "stream")
    cp.batches(committed=range(60))
    cp.operator(versions=range(1, 61), snapshots=(1,))
    cp.operator(partitions=[2], versions=(), snapshots=(40,))

    verdicts = judged(cp, CheckpointExpectations(min_batches_to_retain=60))

    assert statuses(verdicts) == {"checkpoint_snapshots": "warn"}
    snapshots = verdicts["checkpoint_snapshots"]
    assert snapshots.summary == (
        "3 of 4 state stores are up to 59 versions past their newest snapshot "
        "(state/0/0, state/0/1, state/0/3; warning above 50)"
    )
    assert (snapshots.evidence["max_snapshot_lag"], snapshots.evidence["lagging_stores"]) == (59, 3)


def test_far_more_batches_than_retained_warns(tmp_path):
    cp = Checkpoint(tmp_path / "stream")
    cp.batches(committed=range(40))
    cp.operator(versions=range(1, 101), snapshots=(90,))

    verdicts = judged(cp)

    assert statuses(verdicts) == {"checkpoint_retention": "warn"}
    retention = verdicts["checkpoint_retention"]
    assert retention.summary == (
        "40 offsets and 40 commits kept (Spark keeps 21, warning above 31); "
        "a state store keeps 100 versions (warning above 80)"
    )
    assert "spark.sql.streaming.minBatchesToRetain (expected 20)" in retention.remedy
    assert retention.evidence["retained_state_versions"] == 100


def test_size_is_evidence_and_warns_only_beyond_the_maxima(tmp_path):
    cp = healthy(tmp_path)
    facts = inspect_checkpoint(cp.root)

    size = {v.check: v for v in judge_checkpoint(facts)}["checkpoint_size"]
    assert size.status is Status.PASS
    assert size.evidence["bytes_per_batch"] == facts.bytes_per_batch
    changelog = len(EMPTY_CHANGELOG)
    log = sum(
        (cp.root / d / str(b)).stat().st_size for d in ("offsets", "commits") for b in range(3)
    )
    assert facts.bytes_per_batch == round(log / 3 + 4 * changelog)

    small = CheckpointExpectations(max_total_bytes=1000)
    size = {v.check: v for v in judge_checkpoint(facts, small)}["checkpoint_size"]
    assert size.status is Status.WARN and size.summary.endswith(": over 1000 B")


def test_no_folder_is_no_checkpoint_yet(tmp_path):
    facts = inspect_checkpoint(tmp_path / "never_ran")

    assert facts == CheckpointFacts(str(tmp_path / "never_ran"), exists=False)
    assert checkpoint_verdict(facts).line() == "pass checkpoint: no checkpoint yet"


def test_a_file_where_the_folder_should_be_fails(tmp_path):
    (tmp_path / "stream").write_text("oops")

    facts = inspect_checkpoint(tmp_path / "stream")

    assert facts.damaged == [DamagedFile(".", "is not a folder")]
    assert checkpoint_verdict(facts).status is Status.FAIL


def test_odd_files_are_reported_or_ignored_never_raised(tmp_path):
    cp = healthy(tmp_path)
    cp.offsets(3)
    cp.file("offsets/3", "garbage")  # no longer matches Spark's format (nor its .crc)
    cp.file("offsets/.3.crc", b"", checksum=False)
    cp.file("offsets/notes.txt", "not a batch")
    cp.file("state/0/tmp/1.changelog", EMPTY_CHANGELOG)  # not a partition
    cp.file("state/0/0/left-keyToNumValues/1.delta", EMPTY_CHANGELOG)  # a store with a name
    cp.file("state/0/_metadata/v2/2", "v2\n[]")

    facts = inspect_checkpoint(cp.root)

    assert facts.offsets == [0, 1, 2, 3]
    assert facts.checkpoint_conf == CONF  # from offsets/2, the newest readable one
    assert facts.damaged == [DamagedFile("offsets/3", "has a damaged .crc checksum file")]
    assert facts.operators["0"].damaged == (
        DamagedFile(
            "state/0/_metadata/v2/2",
            "is unreadable operator metadata (ValueError('the metadata line is not a JSON object'))",
        ),
    )
    assert facts.operators["0"].partitions == (0, 1, 2, 3)
    assert [(s.path, s.name) for s in facts.operators["0"].stores[:2]] == [
        ("state/0/0", "default"),
        ("state/0/0/left-keyToNumValues", "left-keyToNumValues"),
    ]
    (cp.root / "offsets" / ".3.crc").unlink()
    assert inspect_checkpoint(cp.root).damaged == [
        DamagedFile("offsets/3", "is unreadable (no v1/v2 version line at the start)")
    ]


def test_kafka_offsets_of_the_newest_committed_batch_and_the_lag(tmp_path):
    cp = Checkpoint(tmp_path / "stream")
    cp.offsets(0, sources=[{"clicks": {"0": 10, "1": 7}}])
    cp.commit(0)
    cp.offsets(1, sources=[{"clicks": {"0": 12, "1": 9}}])
    cp.commit(1)
    cp.offsets(2, sources=[{"clicks": {"0": 20, "1": 15}}])  # in flight: not processed yet

    committed = kafka_committed_offsets(inspect_checkpoint(cp.root))

    assert committed == {"clicks": {0: 12, 1: 9}}
    end = {"clicks": {0: 20, 1: 9, 2: 5}, "other": {0: 3}}
    assert kafka_lag(committed, end) == 8 + 0 + 5 + 3  # new partition 2 and topic count from 0
    assert kafka_lag({"clicks": {0: 30}}, {"clicks": {0: 20}}) == 0  # never negative


def test_delta_sources_and_offsets_format_v2(tmp_path):
    cp = Checkpoint(tmp_path / "stream")
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": CONF})
    sources = f'0:{{"clicks":{{"0":4}}}}\n1:{json.dumps(DELTA_SOURCE)}\n2:-\n3:17'
    cp.file("offsets/0", f"v2\n{meta}\n{sources}")  # sourceId:offset; "-" is no offset yet
    cp.commit(0)

    facts = inspect_checkpoint(cp.root)

    assert facts.latest_source_offsets == [{"clicks": {"0": 4}}, DELTA_SOURCE, {"offset": 17}]
    assert kafka_committed_offsets(facts) == {"clicks": {0: 4}}


def test_real_spark_checkpoints_are_read(tmp_path):
    """Checkpoints pyspark 4.2 wrote (RocksDB, changelog checkpointing, transformWithState; a
    Kafka bronze stream), copied from .local/lakehouse with every file kept."""
    status = inspect_checkpoint(DATA / "service_status")

    assert (status.offsets, status.commits) == ([0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4])
    assert status.query_id == "9ef3533e-37f1-4661-8d05-8f44657c1d38"
    assert status.checkpoint_conf["spark.sql.shuffle.partitions"] == "4"
    assert status.latest_source_offsets[0]["reservoirVersion"] == 3
    op = status.operators["0"]
    assert (op.name, op.partitions, op.metadata_partitions) == (TWS, (0, 1, 2, 3), 4)
    assert [(s.snapshots, s.changelogs) for s in op.stores] == [((1,), (1, 2, 3, 4, 5))] * 4
    assert status.all_damaged == []
    verdict = checkpoint_verdict(status)
    assert verdict.status is Status.PASS, verdict.line()
    assert "last committed 4, batch 5 in flight" in verdict.summary

    bronze = inspect_checkpoint(DATA / "clickstream_raw")
    assert kafka_committed_offsets(bronze) == {"clickstream": {0: 3388, 1: 3359, 2: 3253}}
    assert bronze.operators == {} and checkpoint_verdict(bronze).status is Status.PASS

    copy = shutil.copytree(DATA / "service_status", tmp_path / "service_status")
    (copy / "state" / "0" / "2" / "4.changelog").write_bytes(b"LZ4Block")  # behind Spark's back
    damaged = inspect_checkpoint(copy).all_damaged
    assert [d.path for d in damaged] == ["state/0/2/4.changelog"]
    assert "does not match its .crc checksum" in damaged[0].problem
