"""A first start that dies half-way leaves nothing that breaks the next start."""

from __future__ import annotations

from pathlib import Path

import pytest

from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.streams.schemas import EVENTS

pytestmark = [pytest.mark.spark]


def test_a_table_folder_without_a_commit_is_rebuilt_on_the_next_start(spark, tmp_path: Path):
    lake = Lakehouse(tmp_path / "lake")
    broken = lake.table("events")
    (broken / "_delta_log" / "_staged_commits").mkdir(parents=True)
    (broken / "part-00000-left-by-a-killed-writer.snappy.parquet").write_bytes(b"PAR1 partial")

    lake.ensure_table(spark, "events", EVENTS)

    assert has_commit(broken)
    table = spark.read.format("delta").load(str(broken))
    assert table.count() == 0 and table.schema.fieldNames() == EVENTS.fieldNames()
    assert not (broken / "part-00000-left-by-a-killed-writer.snappy.parquet").exists()


def test_an_existing_table_is_left_alone(spark, tmp_path: Path):
    lake = Lakehouse(tmp_path / "lake")
    lake.ensure_table(spark, "events", EVENTS)
    log = sorted(p.name for p in (lake.table("events") / "_delta_log").iterdir())

    lake.ensure_table(spark, "events", EVENTS)

    assert sorted(p.name for p in (lake.table("events") / "_delta_log").iterdir()) == log
