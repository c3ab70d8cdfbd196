"""``platform.locallog.LinkLogStore``: Delta's commits on a disk, each published by a hard link.

A commit file appears whole or not at all, a second writer of the same version is refused with
the exception Delta retries on (the first commit stays), an overwrite replaces the file (and
drops a stale Hadoop checksum beside it), a log whose folder is gone is not started again, and
no temporary file is left behind. The session's tables use it. (The fallback for a disk that
refuses hard links is not tested: this machine's disks all take them.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _store(spark: SparkSession):  # type: ignore[no-untyped-def]
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    return jvm.platform.locallog.LinkLogStore(conf), conf  # type: ignore[union-attr]


def _write(spark: SparkSession, path: Path, lines: list[str], overwrite: bool) -> None:
    """Write ``lines`` as the file at ``path`` through the store (Delta creates a table's log
    folder before its first commit: the store does not)."""
    store, conf = _store(spark)
    jvm = spark.sparkContext._jvm
    actions = jvm.java.util.ArrayList()  # type: ignore[union-attr]
    for line in lines:
        actions.add(line)
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path.as_uri())  # type: ignore[union-attr]
    store.write(hadoop_path, actions.iterator(), overwrite, conf)


def test_a_second_commit_of_a_version_is_refused_and_the_first_stays(
    spark: SparkSession, tmp_path: Path
) -> None:
    commit = tmp_path / "_delta_log" / "00000000000000000007.json"
    commit.parent.mkdir()

    _write(spark, commit, ['{"commitInfo":{"by":"first"}}', '{"add":{}}'], overwrite=False)
    with pytest.raises(Py4JJavaError) as refused:
        _write(spark, commit, ['{"commitInfo":{"by":"second"}}'], overwrite=False)

    java_error = refused.value.java_exception
    assert java_error.getClass().getName() == "java.nio.file.FileAlreadyExistsException"
    assert commit.read_text() == '{"commitInfo":{"by":"first"}}\n{"add":{}}\n'
    assert sorted(p.name for p in commit.parent.iterdir()) == [commit.name]


def test_an_overwrite_replaces_the_file(spark: SparkSession, tmp_path: Path) -> None:
    last = tmp_path / "_delta_log" / "_last_checkpoint"
    last.parent.mkdir()
    (last.parent / "._last_checkpoint.crc").write_bytes(b"a checksum of an older file")

    _write(spark, last, ['{"version":10}'], overwrite=True)
    _write(spark, last, ['{"version":20}'], overwrite=True)

    assert last.read_text() == '{"version":20}\n'
    assert sorted(p.name for p in last.parent.iterdir()) == ["_last_checkpoint"]


def test_a_log_whose_folder_is_gone_is_not_started_again(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A writer whose table was deleted under it fails, as with Delta's own store, instead of
    starting a log without its first versions."""
    commit = tmp_path / "table" / "_delta_log" / "00000000000000000042.json"

    with pytest.raises(Py4JJavaError, match="NoSuchFileException"):
        _write(spark, commit, ['{"commitInfo":{}}'], overwrite=False)

    assert not (tmp_path / "table").exists()


def test_the_session_s_tables_commit_through_it(spark: SparkSession, tmp_path: Path) -> None:
    table = tmp_path / "table"
    for n in range(3):
        spark.createDataFrame([(n,)], "n INT").write.format("delta").mode("append").save(str(table))

    jvm = spark.sparkContext._jvm
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(table))  # type: ignore[union-attr]
    used = log.store().getDelegate(log.logPath()).logStoreImpl().getClass().getName()
    assert used == "platform.locallog.LinkLogStore"
    assert sorted(r.n for r in spark.read.format("delta").load(str(table)).collect()) == [0, 1, 2]
    assert not [p.name for p in (table / "_delta_log").iterdir() if p.name.endswith(".tmp")]
