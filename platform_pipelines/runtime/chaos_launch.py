"""The chaos worker processes of a run: launched, killed, stopped, and watched until they recover.

``Fleet`` knows every worker while it lives (each leads a process group: its Python driver, its
JVM and the JVM's Python workers), so that an interrupted run kills them all at once; its cancel
switch also ends every wait of the trials. A relaunched pipeline has *recovered* when it records a
batch after the launch, or when every stream started again and the input is all consumed (a
pipeline killed after it caught up has no batch left to run).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from platform_pipelines.core.progress_store import ProgressStore
from platform_pipelines.core.spark_progress import batch_id, watermark_owed
from platform_pipelines.core.times import iso
from platform_pipelines.health.checkpoint import inspect_checkpoint, kafka_committed_offsets
from platform_pipelines.kafka.admin import end_offsets
from platform_pipelines.lakehouse.checkpoints import batch_ids
from platform_pipelines.lakehouse.delta import Lakehouse
from platform_pipelines.lakehouse.delta_log import committed_version, latest_version
from platform_pipelines.runtime.chaos_worker import STREAMS
from platform_pipelines.runtime.crash_points import CrashPoints, pauses
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams

# A relaunch starts a JVM and catches up before its first batch is recorded: seconds when the
# machine is free, minutes when other JVMs compete for its cores.
FIRST_BATCH_TIMEOUT_S = 600
CATCH_UP_TIMEOUT_S = 600  # the last launch's catch-up, once the input is all produced
BATCH_EVENTS = ("progress", "batch")
WORKER_LOG = "worker.log"  # in a trial's folder: the output of every launch of its worker, appended


class ChaosCancelled(Exception):
    """The chaos run was interrupted (Ctrl-C, SIGTERM): its trials end at once."""


class Fleet:
    """The run's live worker processes, and its cancel switch."""

    def __init__(self) -> None:
        self._live: dict[int, subprocess.Popen[bytes]] = {}
        self._lock = threading.RLock()
        self._cancelled = threading.Event()

    def launch(self, command: list[str], log: Path) -> subprocess.Popen[bytes]:
        """Start ``command`` in a session of its own, all its output appended to ``log``.

        Raises:
            ChaosCancelled: the run was cancelled.
        """
        # Verbose: its JVM's output goes to ``log`` too, not to the platform's log file, so that
        # a trial's log says why its pipeline failed.
        env = {**os.environ, "PLATFORM_VERBOSE": "true"}
        with self._lock, log.open("ab") as out:
            self.check()
            worker = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env
            )
            self._live[worker.pid] = worker
        return worker

    def kill(self, worker: subprocess.Popen[bytes]) -> None:
        """SIGKILL the worker's process group (driver and JVM, no chance to clean up)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        with self._lock:
            self._live.pop(worker.pid, None)

    def stop(self, worker: subprocess.Popen[bytes], timeout_s: float = 120) -> int | None:
        """SIGTERM the driver only (it stops its queries gracefully, then its JVM); its exit
        code, or None when it was still running after ``timeout_s`` (then it is killed)."""
        os.kill(worker.pid, signal.SIGTERM)
        try:
            code: int | None = worker.wait(timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        self.kill(worker)
        return code

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` unless the run is cancelled first (then raise ``ChaosCancelled``)."""
        if self._cancelled.wait(seconds):
            raise ChaosCancelled

    def check(self) -> None:
        """Raise ``ChaosCancelled`` when the run was cancelled."""
        if self._cancelled.is_set():
            raise ChaosCancelled

    def cancel(self) -> list[int]:
        """End the run: every wait raises from now on, every live worker group is SIGKILLed;
        returns their pids."""
        self._cancelled.set()
        with self._lock:
            live = list(self._live.values())
            for worker in live:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(worker.pid, signal.SIGKILL)
            for worker in live:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    worker.wait(10)
            self._live.clear()
        return [worker.pid for worker in live]


def worker_command(
    lake_dir: Path,
    bootstrap: str,
    topic: str,
    crash: CrashPoints | None = None,
    master: str | None = None,
) -> list[str]:
    """The chaos worker on ``lake_dir``, paused at ``crash``'s points when given, on the Spark
    ``master`` when given (else in its own JVM)."""
    command = [sys.executable, "-m", "platform_pipelines.runtime.chaos_worker"]
    command += ["--lake", str(lake_dir), "--bootstrap", bootstrap, "--topic", topic]
    command += ["--alerts-topic", f"{topic}-alerts"]
    if master:
        command += ["--master", master]
    if crash is not None:
        command += ["--crash-dir", str(crash.folder)]
        command += [arg for point in crash.pause_at for arg in ("--pause-at", point)]
    return command


def until_paused(
    crash: CrashPoints, worker: subprocess.Popen[bytes], log: Path, fleet: Fleet
) -> float:
    """Seconds until the worker paused at its crash point.

    Raises:
        RuntimeError: it exited first, or never got there (its log says why).
    """
    began = time.monotonic()
    while not pauses(crash.folder):
        if worker.poll() is not None or time.monotonic() - began > FIRST_BATCH_TIMEOUT_S:
            raise RuntimeError(
                f"the pipeline never reached its crash point {crash.pause_at[0]} "
                f"(exit code {worker.poll()}); see {log}"
            )
        fleet.sleep(0.02)
    return time.monotonic() - began


def first_batch_after(lake_dir: Path, since: float, worker: subprocess.Popen[bytes]) -> float:
    """Seconds from a launch (``since``, monotonic) to its first recorded batch (of any stream).

    Raises:
        RuntimeError: the worker exited, or made no batch in ``FIRST_BATCH_TIMEOUT_S``.
    """
    seconds, _ = recovered_after(lake_dir, since, worker, caught_up=lambda: False)
    return seconds


def recovered_after(
    lake_dir: Path,
    since: float,
    worker: subprocess.Popen[bytes],
    caught_up: Callable[[], bool],
    fleet: Fleet | None = None,
    restarted: bool = True,
) -> tuple[float, str]:
    """Seconds from ``since`` (monotonic) until the pipeline recovered, and how: ``batch`` (a
    batch recorded after ``since``) or ``caught up`` (``caught_up()`` holds and, when it
    ``restarted``, every stream recorded its start after ``since``).

    Raises:
        RuntimeError: the worker exited, or did not recover in ``FIRST_BATCH_TIMEOUT_S``.
    """
    store, wall = ProgressStore(lake_dir / "progress"), time.time() - (time.monotonic() - since)
    started: set[str] = set() if restarted else set(STREAMS)
    while time.monotonic() < since + FIRST_BATCH_TIMEOUT_S:
        if worker.poll() is not None:
            raise RuntimeError(
                f"the pipeline exited with {worker.returncode}; see {lake_dir / WORKER_LOG}"
            )
        newest = {s: [r for r in store.recent(s, 20) if r.ts > wall] for s in STREAMS}
        if any(r.event in BATCH_EVENTS for records in newest.values() for r in records):
            return round(time.monotonic() - since, 1), "batch"
        started |= {
            s for s, records in newest.items() if any(r.event == "started" for r in records)
        }
        if started >= set(STREAMS) and caught_up():
            return round(time.monotonic() - since, 1), "caught up"
        if fleet is not None:
            fleet.sleep(0.5)
        else:
            time.sleep(0.5)
    raise RuntimeError(
        f"no batch within {FIRST_BATCH_TIMEOUT_S} s of a launch, and the input was not all "
        f"consumed (a starved or hung pipeline); see {lake_dir / WORKER_LOG}"
    )


def caught_up(lake: Lakehouse, bootstrap: str, topic: str) -> bool:
    """Every stream of the chaos worker committed all its input: those reading ``topic`` its
    end offsets, those reading a table its newest version."""
    streams = builtin_streams(BuiltinSettings(clickstream_topic=topic))
    ends = end_offsets(bootstrap, topic)
    for name in STREAMS:
        stream, checkpoint = streams.get(name), lake.checkpoint(name)
        if stream.topic is not None:
            committed = kafka_committed_offsets(inspect_checkpoint(checkpoint))
            if committed.get(stream.topic) != ends:
                return False
        elif (
            committed_version(checkpoint) != (latest_version(lake.table(stream.upstream)) or 0) + 1
        ):
            return False
    return True


def watermarks_owed(lake_dir: Path) -> dict[str, str]:
    """The chaos worker's streams that will still run the batch applying a watermark their
    rows imply (``core.spark_progress.watermark_owed``), with what they owe; a stream whose
    recorded progress is behind its checkpoint's last commit is named too (not judged yet).

    A stream whose current launch has run no batch owes nothing it will pay: a restarted
    query runs no batch without new input, whatever an earlier launch left owed.
    """
    store, streams = ProgressStore(lake_dir / "progress"), builtin_streams(BuiltinSettings())
    lake, owed = Lakehouse(lake_dir / "lakehouse"), {}
    for name in STREAMS:
        delay, records = streams.get(name).watermark, store.recent(name, 200)
        starts = [i for i, r in enumerate(records) if r.event == "started"]
        batches = [(i, r.progress) for i, r in enumerate(records) if r.progress is not None]
        if delay is None or not batches or (starts and starts[-1] > batches[-1][0]):
            continue
        committed = batch_ids(lake.checkpoint(name), "commits")
        if committed and batch_id(batches[-1][1]) < committed[-1]:
            owed[name] = f"batch {committed[-1]} committed, its progress not recorded yet"
        elif gap := watermark_owed([p for _, p in batches], delay.total_seconds()):
            owed[name] = f"its batches ran to the watermark {_at(gap[0])}, {_at(gap[1])} is owed"
    return owed


def _at(seconds: float | None) -> str:
    return "none" if seconds is None else iso(datetime.fromtimestamp(seconds, UTC))


def wait_caught_up(
    lake_dir: Path,
    bootstrap: str,
    topic: str,
    worker: subprocess.Popen[bytes],
    fleet: Fleet,
) -> None:
    """Wait until the pipeline in ``lake_dir`` is ``caught_up`` and owes no watermark
    (``watermarks_owed``): stopped before the batch that applies one, its sessions and alerts
    would wait for input that never comes, and the comparison with a clean run would call them
    lost.

    Raises:
        RuntimeError: the worker exited first, or did not catch up in ``CATCH_UP_TIMEOUT_S``;
            the message names its log.
    """
    lake, log = Lakehouse(lake_dir / "lakehouse"), lake_dir / WORKER_LOG
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while not caught_up(lake, bootstrap, topic) or watermarks_owed(lake_dir):
        if worker.poll() is not None:
            raise RuntimeError(
                f"the last launch exited with {worker.returncode} before it caught up; see {log}"
            )
        if time.monotonic() > deadline:
            owed = "; ".join(f"{n}: {what}" for n, what in watermarks_owed(lake_dir).items())
            raise RuntimeError(
                f"the last launch did not catch up within {CATCH_UP_TIMEOUT_S} s"
                f"{f' ({owed})' if owed else ''}; see {log}"
            )
        fleet.sleep(1)
