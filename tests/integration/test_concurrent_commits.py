"""Two drivers writing the shared tables at once, on S3 (moto's S3 server, through Hadoop's S3A)
and on a disk: with ``PLATFORM_S3_COMMIT_COORDINATION=conditional-put`` (the default) on S3, and
the platform's log store on a disk (each commit published by a hard link), every commit of both
is in each table's log exactly once, at consecutive versions, every row is there, and each
writer's ledger balances.

Each driver is a process of its own (``tests.integration.concurrent_writer``), with its own JVM
and only the deployment's settings, writing one batch per round as every stream's writer does:
its late rows to ``late_events``, then its row to ``stream_ledger``. The log and the rows are read
back here without Spark: the commit files, and the Parquet files they add.

The S3 server holds each Delta commit's PUT a while before storing it, as a slower network would
(``--commit-delay-ms``): a driver that checks for a version while the other's commit of it is on
its way finds none, and only the conditional PUT keeps it from writing over that commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from platform_pipelines.health.loss import Counted, LedgerTotals, judge_balance
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import added_files, commit_file, latest_version
from platform_pipelines.lakehouse.tables import LATE_TABLE, LEDGER_TABLE
from platform_pipelines.settings import REPO_ROOT, PlatformSettings, get_settings
from tests.fixtures.s3 import S3Store, moto_server, new_bucket
from tests.integration.concurrent_writer import query_id, rows_in

WRITERS = ["first", "second"]
ROUNDS = 10
DRIVER_TIMEOUT_S = 600
COMMIT_DELAY_MS = 200


@pytest.fixture
def racy_s3_bucket() -> Iterator[S3Store]:
    """A bucket on an S3 server of its own that holds each Delta commit before storing it."""
    with moto_server("--commit-delay-ms", str(COMMIT_DELAY_MS)) as endpoint:
        yield new_bucket(endpoint)


def writer_env(tmp_path: Path, lakehouse: dict[str, str]) -> dict[str, str]:
    """A small driver's settings, its lakehouse where ``lakehouse`` (settings) says."""
    return {
        **os.environ,
        **lakehouse,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "PLATFORM_LOCAL_DIR": str(tmp_path / "driver"),
        "PLATFORM_JARS_DIR": str(get_settings().jars_dir),
        "PLATFORM_SPARK_MASTER": "local[1]",
        "PLATFORM_STATE_PARTITIONS": "1",
        "PLATFORM_DRIVER_MEMORY": "768m",
        "PLATFORM_SPARK_UI_ENABLED": "false",
    }


def write_at_once(env: dict[str, str], ready: Path) -> None:
    """Run every writer, each in its own driver process, and wait for all of them to succeed."""
    ready.mkdir()
    command = [sys.executable, "-m", "tests.integration.concurrent_writer", "--writers", *WRITERS]
    command += ["--rounds", str(ROUNDS), "--ready", str(ready)]
    drivers = [
        subprocess.Popen(
            [*command, "--writer", writer],
            cwd=ready.parent,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for writer in WRITERS
    ]
    try:
        for driver in drivers:
            out, err = driver.communicate(timeout=DRIVER_TIMEOUT_S)
            assert driver.returncode == 0, f"a writer failed:\n{out[-2000:]}\n{err[-6000:]}"
    finally:
        for driver in drivers:
            if driver.poll() is None:
                driver.kill()
                driver.wait()


def commit_tags(table: Path) -> list[tuple[str, int]]:
    """The (writer id, batch id) of each of ``table``'s commits after its creation, in order."""
    tags = []
    for version in range(1, (latest_version(table) or 0) + 1):
        for line in commit_file(table, version).read_text().splitlines():
            info = json.loads(line).get("commitInfo") or {}
            if info.get("userMetadata"):
                tag = json.loads(info["userMetadata"])
                tags.append((tag["appId"], tag["batch"]))
    return tags


def rows(table: Path) -> list[dict[str, Any]]:
    """Every row of ``table``: the Parquet files its commits added."""
    files = added_files(table, 0, (latest_version(table) or 0) + 1)
    found: list[dict[str, Any]] = []
    for added in files:
        with (table / added.path).open("rb") as parquet:
            found += pq.read_table(parquet).to_pylist()
    return found


@pytest.mark.s3
@pytest.mark.spark
def test_two_drivers_writing_the_shared_tables_at_once_lose_no_commit(
    racy_s3_bucket, tmp_path, monkeypatch
):
    env = writer_env(tmp_path, racy_s3_bucket.env("lakehouse"))
    write_at_once(env, tmp_path / "ready")

    for key, value in racy_s3_bucket.env("lakehouse").items():
        monkeypatch.setenv(key, value)
    assert_no_commit_lost(Lakehouse(PlatformSettings().lakehouse_dir))


@pytest.mark.spark
def test_two_drivers_writing_the_shared_tables_on_a_disk_at_once_lose_no_commit(tmp_path):
    """The same on a disk, where each commit is published by a hard link (LinkLogStore)."""
    lake = tmp_path / "lake"
    env = writer_env(tmp_path, {"PLATFORM_LAKEHOUSE_DIR": str(lake)})
    write_at_once(env, tmp_path / "ready")

    assert_no_commit_lost(Lakehouse(lake))


def assert_no_commit_lost(lakehouse: Lakehouse) -> None:
    """Every commit of both writers is in each table's log once, at consecutive versions, the
    writers' commits interleave, every row is there and each writer's ledger balances."""
    late, ledger = lakehouse.table(LATE_TABLE), lakehouse.table(LEDGER_TABLE)
    late_ids = {w: f"{LATE_TABLE}/{query_id(w)}/{w}" for w in WRITERS}
    ledger_ids = {w: f"{LEDGER_TABLE}/{w}/{query_id(w)}" for w in WRITERS}
    for table, ids in ((late, late_ids), (ledger, ledger_ids)):
        tags = commit_tags(table)
        assert latest_version(table) == len(tags)  # one commit per batch after the creation
        assert sorted(tags) == sorted((ids[w], n) for w in WRITERS for n in range(ROUNDS))
        # The drivers ran at once: their commits interleave in the log.
        assert tags != sorted(tags, key=lambda tag: list(ids.values()).index(tag[0]))

    late_rows, ledger_rows = Counter(row["stream"] for row in rows(late)), rows(ledger)
    for writer in WRITERS:
        batches = [row for row in ledger_rows if row["stream"] == writer]
        assert sorted(row["batch_id"] for row in batches) == list(range(ROUNDS))
        totals = LedgerTotals(
            rows_in=sum(row["rows_in"] for row in batches),
            rows_late=sum(row["rows_late"] for row in batches),
        )
        consumed = sum(rows_in(n) for n in range(ROUNDS))
        counted = Counted(consumed, totals.rows_in, late_rows=late_rows[writer])
        verdict = judge_balance(totals, counted, absorbs=None)
        assert verdict.passed, verdict.line()
        assert totals.rows_in == consumed == late_rows[writer]
