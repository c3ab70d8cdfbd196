"""Is a table cheap to read? (check ``files_healthy``)

Every micro-batch of a stream adds files to its tables (one per Kafka or shuffle partition with
rows), so a table written every 10 s gains thousands of small files a day; every query opens
all of them, and a new reader first loads a log that lists them. The judgement takes the live
file count and bytes of the table's newest version (read from its Delta log by the caller) and
names the remedy: the table maintenance job, which compacts them (``runtime.maintainer``).
"""

from __future__ import annotations

from dataclasses import dataclass

from platform_pipelines.core.units import count, size
from platform_pipelines.core.verdict import Verdict, failed, passed, warned

FILES_HEALTHY = "files_healthy"


@dataclass(frozen=True)
class FilePolicy:
    """When a table has too many small files. Measured (``benchmarks/bench_maintenance.py``): a
    full scan costs about 1 ms per file warm and 2 ms cold on 2 cores; a 10 s bronze stream on 3
    Kafka partitions adds about 26,000 files a day, so with the daily maintenance a table stays
    under ``warn_files`` and a warning means a run was missed.

    Attributes:
        warn_files: warn above this many live files...
        fail_files: ...fail above this many...
        small_file_bytes: ...when they average less than this. A table whose files are this large
            on average is large, not fragmented: compaction would not make it cheaper to read.
    """

    warn_files: int = 30_000
    fail_files: int = 100_000
    small_file_bytes: int = 32 * 1024**2


DEFAULT_FILE_POLICY = FilePolicy()


def judge_files(
    table: str,
    files: int | None,
    total_bytes: int,
    remedy_job: str,
    policy: FilePolicy = DEFAULT_FILE_POLICY,
) -> Verdict:
    """Judge ``table``'s live files: ``files`` None means the table has no commit yet.

    Example:
        >>> judge_files("events", 40_000, 40_000 * 2048, "table_maintenance_silver").line()
        'warn files_healthy: events has 40,000 files averaging 2.0 KiB (78.1 MiB in all): every read opens them all -> Run the table_maintenance_silver job (or `platform table maintain events`): it compacts them into a few large files.'
    """
    if files is None:
        return passed(FILES_HEALTHY, f"{table} has no commit yet", {"files": 0})
    average = total_bytes / files if files else 0.0
    evidence = {"files": files, "avg_file_size_bytes": round(average), "bytes": total_bytes}
    shape = f"{count(files)} files averaging {size(average)} ({size(total_bytes)} in all)"
    if files <= policy.warn_files or average >= policy.small_file_bytes:
        return passed(FILES_HEALTHY, f"{table} has {shape}", evidence)
    summary = f"{table} has {shape}: every read opens them all"
    remedy = (
        f"Run the {remedy_job} job (or `platform table maintain {table}`): it compacts "
        "them into a few large files."
    )
    if files > policy.fail_files:
        return failed(FILES_HEALTHY, summary, remedy, evidence)
    return warned(FILES_HEALTHY, summary, remedy, evidence)
