"""One executor of a cluster application SIGKILLed while a task of it is held mid-batch, and that
task's retries let through.

The executors load the crash points (``jvm/faults``, ``platform_pipelines.runtime.crash_points``)
with the relative folder ``.``: each executor's own work dir (``<worker>/work/<app>/<executor>``,
its current directory), so a pause names the executor that holds it. A task that reaches the point
waits there (its batch uncommitted) until the executor is killed; a retry of it in another executor
pauses at the same point and is resumed at once.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from pathlib import Path

import psutil

from platform_pipelines.runtime.crash_points import CrashPoints, pauses, resume

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
# The first commit of user_sessions' state partition 1 (its changelog complete, not yet renamed):
# one task of the sessions' first batch, on whichever executor runs it.
SESSIONS_FIRST_COMMIT = r"temp:/checkpoints/user_sessions/state/0/1/1\.changelog$"


def crash_point_conf(point: str) -> dict[str, str]:
    """Spark settings that make every executor pause at ``point``, with its pause files in its
    own work dir (the driver, without these variables, never pauses)."""
    env = CrashPoints(Path("."), pause_at=(point,)).environment()
    return {**CrashPoints.spark_conf(), **{f"spark.executorEnv.{k}": v for k, v in env.items()}}


@dataclass(frozen=True)
class KilledExecutor:
    """The executor that was killed: where it ran, its ids, and the write its task held."""

    worker: int
    app_id: str
    executor_id: str
    pid: int
    held_write: str


def executor_process(executor_dir: Path) -> psutil.Process:
    """The executor JVM of ``<app id>/<executor id>`` (``executor_dir``), by its command line."""
    wanted = {"--app-id": executor_dir.parent.name, "--executor-id": executor_dir.name}
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        flags = dict(itertools.pairwise(cmdline))
        if EXECUTOR_CLASS in cmdline and all(flags.get(k) == v for k, v in wanted.items()):
            return proc
    raise LookupError(f"no executor JVM runs for {executor_dir}")


class ExecutorKiller:
    """Watches the workers' work dirs from a thread: kills the first executor that pauses (SIGKILL,
    no chance to clean up) and resumes every later pause, until ``stop``."""

    def __init__(self, work_dirs: dict[int, Path]) -> None:
        self.work_dirs = work_dirs
        self.killed: KilledExecutor | None = None
        self.resumed: list[Path] = []
        self._error: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the watch; raises what went wrong in it."""
        self._stopping.set()
        self._thread.join(30)
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        try:
            while not self._stopping.wait(0.1):
                for worker, work_dir in self.work_dirs.items():
                    for executor_dir in {m.parent for m in work_dir.glob("*/*/paused-*.txt")}:
                        self._handle(worker, executor_dir)
        except BaseException as error:  # handed to stop(), in the test's thread
            self._error = error

    def _handle(self, worker: int, executor_dir: Path) -> None:
        held = [
            p for p in pauses(executor_dir) if not (executor_dir / f"resume-{p.number}").exists()
        ]
        if not held:
            return
        if self.killed is None:
            proc = executor_process(executor_dir)
            proc.kill()
            proc.wait(30)
            app_id, executor_id = executor_dir.parent.name, executor_dir.name
            self.killed = KilledExecutor(worker, app_id, executor_id, proc.pid, held[0].path)
        elif self.killed.executor_id != executor_dir.name:
            for pause in held:
                resume(executor_dir, pause)
                self.resumed.append(executor_dir)
