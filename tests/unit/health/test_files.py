"""files_healthy: many small files warn, then fail, naming the maintenance job; large files or few
files pass whatever the count."""

from __future__ import annotations

from platform_pipelines.core.verdict import Status
from platform_pipelines.health.files import FILES_HEALTHY, FilePolicy, judge_files

POLICY = FilePolicy(warn_files=100, fail_files=1_000, small_file_bytes=1024**2)
JOB = "table_maintenance_bronze"


def test_few_files_pass_with_their_count_and_average_size():
    verdict = judge_files("clickstream_raw", 100, 100 * 4096, JOB, POLICY)

    assert verdict.status is Status.PASS
    assert verdict.check == FILES_HEALTHY
    assert verdict.summary == "clickstream_raw has 100 files averaging 4.0 KiB (400.0 KiB in all)"
    assert verdict.evidence == {"files": 100, "avg_file_size_bytes": 4096, "bytes": 409_600}


def test_many_small_files_warn_and_name_the_job_and_the_command():
    verdict = judge_files("clickstream_raw", 101, 101 * 4096, JOB, POLICY)

    assert verdict.status is Status.WARN
    assert verdict.summary == (
        "clickstream_raw has 101 files averaging 4.0 KiB (404.0 KiB in all): every read opens "
        "them all"
    )
    assert verdict.remedy == (
        "Run the table_maintenance_bronze job (or `platform table maintain clickstream_raw`): it "
        "compacts them into a few large files."
    )


def test_past_the_fail_count_small_files_fail():
    verdict = judge_files("events", 1_001, 1_001 * 4096, "table_maintenance_silver", POLICY)

    assert verdict.status is Status.FAIL
    assert verdict.evidence["files"] == 1_001
    assert "table_maintenance_silver" in verdict.remedy


def test_many_files_that_are_large_on_average_pass():
    verdict = judge_files("events", 5_000, 5_000 * 2 * 1024**2, JOB, POLICY)

    assert verdict.status is Status.PASS
    assert verdict.evidence["avg_file_size_bytes"] == 2 * 1024**2


def test_a_table_without_a_commit_passes_with_nothing_to_judge():
    verdict = judge_files("late_events", None, 0, JOB, POLICY)

    assert verdict.status is Status.PASS
    assert verdict.summary == "late_events has no commit yet"
    assert verdict.evidence == {"files": 0}


def test_an_empty_table_passes_with_a_zero_average():
    verdict = judge_files("quarantine", 0, 0, JOB, POLICY)

    assert verdict.status is Status.PASS
    assert verdict.evidence["avg_file_size_bytes"] == 0
