"""``table_id``: the id a Delta table's log gives it, read without a JVM, wherever it is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from platform_pipelines.lakehouse.delta_log import table_id


def _commit(log: Path, version: int, *actions: dict[str, object]) -> None:
    log.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(a) for a in actions]
    (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")


def _metadata(table: str) -> dict[str, object]:
    return {"metaData": {"id": table, "format": {"provider": "parquet"}, "schemaString": "{}"}}


ADD = {"add": {"path": "part-0.parquet", "dataChange": True}}


def test_the_id_is_the_one_version_0_gave_the_table(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    _commit(log, 0, {"protocol": {"minReaderVersion": 1}}, _metadata("first"))
    _commit(log, 1, ADD)
    (log / "00000000000000000002.checkpoint.0a1b.json").write_text("{}\n")  # not a commit

    assert table_id(tmp_path) == "first"


def test_after_the_log_is_cleaned_up_the_checkpoint_names_it(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    _commit(log, 11, ADD)
    rows = [{"metaData": None}, {"metaData": {"id": "kept"}}]
    schema = pa.schema([("metaData", pa.struct([("id", pa.string())]))])
    pq.write_table(pa.Table.from_pylist(rows, schema), log / f"{10:020d}.checkpoint.parquet")

    assert table_id(tmp_path) == "kept"


def test_a_newer_metadata_commit_wins_and_a_table_without_a_log_has_none(
    tmp_path: Path,
) -> None:
    log = tmp_path / "_delta_log"
    _commit(log, 0, _metadata("old"))
    _commit(log, 1, ADD, _metadata("replaced"))

    assert table_id(tmp_path) == "replaced"
    assert table_id(tmp_path / "nothing") is None
