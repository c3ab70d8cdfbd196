"""A checkpoint whose first batch was never planned is cleared; any other is left alone."""

from __future__ import annotations

from pathlib import Path

from platform_pipelines.lakehouse.first_start import (
    clear_unplanned_first_start,
    unplanned_leftovers,
)


def _files(root: Path, *names: str) -> Path:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    return root


def _all(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_temporary_offsets_file_without_a_batch_is_cleared(tmp_path: Path):
    checkpoint = _files(
        tmp_path,
        "metadata",
        "sources/0/0",
        "_declaration.json",
        "offsets/.0.3f2a.tmp",
        "offsets/..0.3f2a.tmp.crc",
    )

    removed = clear_unplanned_first_start(checkpoint)

    assert removed == ["offsets/..0.3f2a.tmp.crc", "offsets/.0.3f2a.tmp"]
    assert _all(checkpoint) == ["_declaration.json", "metadata", "sources/0/0"]


def test_state_and_commits_without_a_planned_batch_are_cleared_too(tmp_path: Path):
    checkpoint = _files(tmp_path, "metadata", "state/0/_metadata/.schema.tmp", "commits/.0.tmp")

    assert [p.name for p in unplanned_leftovers(checkpoint)] == ["commits", "state"]
    clear_unplanned_first_start(checkpoint)

    assert _all(checkpoint) == ["metadata"]


def test_a_planned_batch_is_left_for_spark_to_run_again(tmp_path: Path):
    checkpoint = _files(
        tmp_path, "metadata", "offsets/0", "state/0/0/1.changelog", "commits/.0.tmp"
    )

    assert clear_unplanned_first_start(checkpoint) == []
    assert _all(checkpoint) == ["commits/.0.tmp", "metadata", "offsets/0", "state/0/0/1.changelog"]


def test_new_and_metadata_only_checkpoints_need_nothing(tmp_path: Path):
    assert clear_unplanned_first_start(tmp_path / "never-started") == []
    started = _files(tmp_path / "started", "metadata", "sources/0/.0.tmp")
    (started / "offsets").mkdir()

    assert clear_unplanned_first_start(started) == []
    assert _all(started) == ["metadata", "sources/0/.0.tmp"]
