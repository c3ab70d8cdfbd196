"""Driving a first start to a chosen checkpoint write: the worker process, its pauses, copies."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from platform_pipelines.lakehouse.delta import Lakehouse, has_commit
from platform_pipelines.runtime.chaos import VOLATILE
from platform_pipelines.runtime.crash_points import CrashPoints, Pause, pauses, resume
from tests.integration.events import MALFORMED, U1_SHOPPING, U2_BROWSING, U3_MUCH_LATER, ev

# Every kind of record each stream handles: sessions that close, an alert, a re-sent duplicate,
# bad records, and a late visit that moves the watermark.
INPUT = [
    *U1_SHOPPING,
    *U2_BROWSING,
    *[ev(f"f{m}", "u4", "login_failed", m, "/login") for m in (20, 21, 22, 23, 24)],
    U1_SHOPPING[0],
    *U3_MUCH_LATER,
    *MALFORMED,
]
# What each stream writes: its own tables, and its rows in the shared ones.
WRITES = {
    "clickstream_raw": ("clickstream_raw", "quarantine"),
    "events": ("events",),
    "user_sessions": ("user_sessions",),
    "security_alerts": ("security_alerts",),
}
SHARED = ("stream_ledger", "late_events")
# A table's first commit (its creation) is no window here: a folder without it is rebuilt by the
# next start (lakehouse.delta.ensure_tables; tested apart in test_first_start.py).
_CREATION = "/_delta_log/00000000000000000000.crc"
# Columns that say when or by which attempt a row was written, not what it is.
WHEN = {*VOLATILE, "written_at"}


def launch(
    lake_dir: Path,
    bootstrap: str,
    topic: str,
    streams: tuple[str, ...],
    mode: str = "catch_up",
    crash: CrashPoints | None = None,
) -> subprocess.Popen[bytes]:
    """The chaos worker (its own process group: driver and JVM) on ``lake_dir``."""
    lake_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "platform_pipelines.runtime.chaos_worker"]
    command += ["--lake", str(lake_dir), "--bootstrap", bootstrap, "--topic", topic]
    command += ["--alerts-topic", f"{topic}-alerts"]
    command += ["--mode", mode, "--streams", ",".join(streams)]
    if crash is not None:
        command += ["--crash-dir", str(crash.folder), "--pause-every", crash.pause_every]
        command += [arg for point in crash.pause_at for arg in ("--pause-at", point)]
    log = (lake_dir / "worker.log").open("ab")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@dataclass
class Windows:
    """Copies of a lakehouse at each kind of write of a launch's first starts, with the stream
    whose first start each interrupted.

    The launch's streams start one after the other (each reads the one before it), so the writes
    belong to the first stream that has not committed a batch yet; a write of a stream that has
    (a later batch) is no first-start window.
    """

    launch: tuple[str, ...]
    root: Path
    done: set[str] = field(default_factory=set)
    copies: dict[str, tuple[str, Path]] = field(default_factory=dict)

    def at_pause(self, lake: Path, pause: Pause) -> bool:
        """Copy ``lake`` at the first pause of each kind; False once every stream committed."""
        current = next((s for s in self.launch if s not in self.done), None)
        owner = next((s for s in self.launch if f"/checkpoints/{s}/" in pause.path), current)
        if current is None or owner in self.done:
            return current is not None
        if pause.phase == "done" and pause.path.endswith(f"/checkpoints/{owner}/commits/0"):
            self.done.add(owner)  # the first batch is committed: what follows is no first start
        elif pause.path.endswith(".crc") and (pause.phase == "done" or _CREATION in pause.path):
            pass  # a Delta commit's window is its checksum's temp file; no creations (above)
        else:
            self._take(lake, pause, owner)
        return len(self.done) < len(self.launch)

    def _take(self, lake: Path, pause: Pause, owner: str) -> None:
        # The same file of another partition is the same kind; each Delta version is its own.
        path = pause.path if pause.path.endswith(".crc") else pause.kind
        name = f"{owner}: {pause.phase} {path.split('/lakehouse/', 1)[-1]}"
        if name in self.copies:
            return
        target = self.root / str(len(self.copies))
        copy_tree(lake, target)
        self.copies[name] = (owner, target)


def pause_through(
    worker: subprocess.Popen[bytes],
    crash: CrashPoints,
    at_pause: Callable[[Pause], bool],
) -> int:
    """Resume every pause of ``worker`` after ``at_pause`` saw it, until the worker exits; returns
    its exit code. ``at_pause`` returns False once nothing more is wanted (the rest then run on)."""
    handled, wanted = 0, True
    while worker.poll() is None or len(pauses(crash.folder)) > handled:
        for pause in pauses(crash.folder)[handled:]:
            wanted = wanted and at_pause(pause)
            resume(crash.folder, pause)
            handled += 1
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(0.01)
    return worker.returncode


def copy_tree(source: Path, target: Path) -> None:
    """What is on disk now under ``source``.

    A write of the same batch on another thread (the batch's Delta commits run side by side) may
    rename or cancel its temporary file while the folder is copied: the copy then holds neither
    that file nor its final name, as if the write had not begun, which a kill can leave too.
    """
    for top, _, names in os.walk(source):
        into = target / Path(top).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in names:
            try:
                shutil.copy2(Path(top) / name, into / name)
            except FileNotFoundError:
                if not name.startswith("."):
                    raise


def rows(spark: SparkSession, lake: Lakehouse, stream: str) -> dict[str, Counter[tuple]]:
    """What ``stream`` wrote, per table, as comparable rows (when and by which attempt aside)."""
    found = {}
    for table in (*WRITES[stream], *SHARED):
        path = lake.table(table)
        if not has_commit(path):
            found[table] = Counter()
            continue
        df = spark.read.format("delta").load(str(path))
        if table in SHARED:
            df = df.where(df["stream"] == stream)
        kept = sorted(c for c in df.columns if c not in WHEN)
        found[table] = Counter(tuple(str(v) for v in r) for r in df.select(*kept).collect())
    return found
