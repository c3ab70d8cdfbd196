"""Maintaining the streams' tables: one table at a time, compacted, then vacuumed safely.

``maintain_table`` compacts one table (``OPTIMIZE``), then vacuums it with a retention that keeps
every file a declared stream may still read (``runtime.vacuum_retention``), and says what it did
(``MaintenanceResult``). ``table_layers`` and ``maintenance_job`` say which tables there are and
which job of their layer maintains them; ``files_verdict`` whether one needs it.

**Locks.** One process maintains a table at a time (``table_lock``). No checkpoint lock is taken:
streams keep running (appends never conflict with ``OPTIMIZE``) and a stream starting meanwhile is
never refused. A table a running stream upserts is not compacted: its MERGE would fail.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from platform_pipelines.core.storage import require_local
from platform_pipelines.core.times import to_ms
from platform_pipelines.core.units import count, duration, size
from platform_pipelines.core.verdict import Verdict
from platform_pipelines.health.files import judge_files
from platform_pipelines.lakehouse.compaction import Compaction, CompactionConflict, compact
from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.lakehouse.table_files import TableFiles, table_files
from platform_pipelines.lakehouse.tables import LEDGER_TABLE, PLATFORM_TABLES
from platform_pipelines.lakehouse.vacuum import RetentionRefused, Vacuum, vacuum
from platform_pipelines.runtime.lock import locked_streams
from platform_pipelines.runtime.vacuum_retention import Retention, reader_holds, retention_for
from platform_pipelines.streams.declare import StatefulStream, Stream

PLATFORM_LAYER = "platform"


@dataclass(frozen=True)
class MaintenanceOptions:
    """How tables are maintained.

    Attributes:
        retention: VACUUM keeps files replaced less than this long ago (more when a reader needs
            them). Delta's default is 7 days; less also shortens time travel.
        compact: run ``OPTIMIZE`` first. ``dry_run``: change nothing, report what VACUUM would do.
        margin: added to what a reader needs (clock differences, the time maintenance takes).
        min_retention: the least retention ever used, whatever is configured.
    """

    retention: timedelta = timedelta(hours=168)
    compact: bool = True
    dry_run: bool = False
    margin: timedelta = timedelta(hours=1)
    min_retention: timedelta = timedelta(hours=1)


@dataclass(frozen=True)
class MaintenanceResult:
    """What maintaining one table did."""

    table: str
    before: TableFiles | None
    after: TableFiles | None
    compaction: Compaction | None
    compaction_note: str
    retention: Retention
    vacuum: Vacuum | None
    seconds: float
    dry_run: bool = False
    vacuum_note: str = ""  # why VACUUM did not run

    def line(self) -> str:
        """One readable line for logs and the CLI."""
        if self.before is None or self.after is None:
            return f"{self.table}: no table yet, nothing to do"
        text = f"{self.table}: {count(self.before.files)} -> {count(self.after.files)} files"
        text += f" ({self.compaction_note})" if self.compaction_note else ""
        if self.vacuum is not None:
            verb = "would delete" if self.dry_run else "deleted"
            text += (
                f"; VACUUM kept {self.retention.hours:,.0f} h ({self.retention.reason}), "
                f"{verb} {count(self.vacuum.files_deleted)} files "
                f"({size(self.vacuum.bytes_deleted)})"
            )
        return (
            f"{text}{'; ' + self.vacuum_note if self.vacuum_note else ''}; {duration(self.seconds)}"
        )


class MaintenanceBusy(RuntimeError):
    """Another process maintains the table right now."""


@contextmanager
def table_lock(
    lake: Lakehouse,
    table: str,
    owner: str,
    wait_seconds: float = 0.0,
) -> Iterator[None]:
    """Hold ``table``'s maintenance lock (an exclusive ``flock``), waiting up to ``wait_seconds``.

    Raises:
        MaintenanceBusy: another process held it all that time (the message names it).
    """
    path = lake.root / ".maintenance" / f"{Path(lake.table(table)).name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, deadline = os.open(path, os.O_CREAT | os.O_RDWR), time.monotonic() + wait_seconds
    try:
        while not _locked(fd):
            if time.monotonic() >= deadline:
                raise MaintenanceBusy(
                    f"Table {table!r} is being maintained by {_holder(path)}; two maintenance runs "
                    "on one table would conflict. Wait for it to finish, then run again."
                )
            time.sleep(0.5)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"owner": owner, "pid": os.getpid()}).encode())
        yield
    finally:
        os.close(fd)  # releases the flock


def _holder(path: Path) -> str:
    try:
        held = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):  # being written
        held = {}
    return f"{held.get('owner') or 'another process'} (pid {held.get('pid', '?')})"


def _locked(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def maintenance_job(layer: str) -> str:
    """The Dagster job that maintains a layer's tables (the shared platform tables: bronze's)."""
    return f"table_maintenance_{'bronze' if layer == PLATFORM_LAYER else layer}"


def files_verdict(lake: Lakehouse, table: str, layer: str) -> Verdict:
    """``files_healthy`` of ``table``, from its Delta log (no JVM)."""
    found = table_files(lake.table(table))
    files, total = (found.files, found.bytes) if found else (None, 0)
    return judge_files(table, files, total, maintenance_job(layer))


def table_layers(streams: Iterable[Stream]) -> dict[str, str]:
    """Every table the streams write, with its layer: the writing stream's (bronze, silver, gold),
    or ``platform`` for the shared tables (quarantine, late_events, stream_ledger)."""
    layers: dict[str, str] = {}
    for stream in streams:
        for table in stream.outputs:
            layers.setdefault(table, PLATFORM_LAYER if table in PLATFORM_TABLES else stream.layer)
    if layers:
        layers[LEDGER_TABLE] = PLATFORM_LAYER
    return layers


def maintain_table(
    spark: SparkSession,
    lake: Lakehouse,
    streams: Iterable[Stream],
    table: str,
    options: MaintenanceOptions,
    owner: str = "",
) -> MaintenanceResult:
    """Compact ``table`` (unless told not to), then VACUUM it keeping what readers need.

    Raises:
        MaintenanceBusy: another process maintains the table.
    """
    require_local(lake.root, "Table maintenance (OPTIMIZE and VACUUM)")
    streams, started, path = list(streams), time.monotonic(), lake.table(table)
    if not has_commit(path):
        return MaintenanceResult(
            table,
            None,
            None,
            None,
            "no table yet",
            Retention(options.retention, "no table"),
            None,
            0.0,
            options.dry_run,
        )
    with table_lock(lake, table, owner or f"pid {os.getpid()}"):
        before = table_files(path)
        compaction, note = _compact(spark, lake, streams, table, options)
        now_ms = to_ms(datetime.now(UTC))
        retention = retention_for(options, reader_holds(lake, streams, table, now_ms), now_ms)
        try:
            done, skipped = vacuum(spark, path, retention.duration, options.dry_run, True), ""
        except RetentionRefused as refused:  # longer than the log remembers replaced files
            fix = "lower the retention" if retention.reason == "configured" else "let it catch up"
            done, skipped = (
                None,
                (
                    f"{refused} Asked for: {retention.reason}; {fix}, or raise "
                    "the table's delta.deletedFileRetentionDuration."
                ),
            )
        after = table_files(path)
    return MaintenanceResult(
        table,
        before,
        after,
        compaction,
        note,
        retention,
        done,
        time.monotonic() - started,
        options.dry_run,
        skipped,
    )


def _compact(
    spark: SparkSession,
    lake: Lakehouse,
    streams: list[Stream],
    table: str,
    options: MaintenanceOptions,
) -> tuple[Compaction | None, str]:
    """Compact ``table``, or say why not."""
    if not options.compact:
        return None, "compaction off"
    if options.dry_run:
        return None, "dry run: not compacted"
    upserting = [
        s.name
        for s in streams
        if isinstance(s, StatefulStream) and s.output_mode == "update" and s.table == table
    ]
    running = locked_streams((n, lake.checkpoint(n)) for n in upserting)
    if running:
        return None, (
            f"not compacted: {', '.join(running)} upserts it and runs; its MERGE "
            "would fail if OPTIMIZE committed meanwhile. Run this while it is stopped"
        )
    try:
        return compact(spark, lake.table(table)), ""
    except CompactionConflict as conflict:
        return None, f"not compacted: {conflict}"
